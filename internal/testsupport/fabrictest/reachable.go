package fabrictest

import "ibfab/topologies"

// Reachable returns the hosts (CAs) still connected to node from once the
// nodes named in dead are gone and the ports for which cut reports true
// (nil: none) are unplugged, in topology order.
func Reachable(topo *topologies.Topology, from string, dead map[string]bool, cut func(topologies.PortRef) bool) []string {
	start, ok := topo.Lookup(from)
	if !ok {
		return nil
	}
	seen := map[int]bool{start: true}
	queue := []int{start}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for p := 1; p <= topo.Node(i).NumPorts; p++ {
			ref := topologies.PortRef{Node: i, Port: p}
			peer, ok := topo.Peer(ref)
			if !ok || seen[peer.Node] || dead[topo.Node(peer.Node).Name] || cut != nil && cut(ref) {
				continue
			}
			seen[peer.Node] = true
			queue = append(queue, peer.Node)
		}
	}
	var hosts []string
	for i, n := range topo.Nodes() {
		if seen[i] && n.Type == topologies.CA {
			hosts = append(hosts, n.Name)
		}
	}
	return hosts
}
