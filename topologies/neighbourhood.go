package topologies

import "slices"

// Neighbourhood returns the part of t one node needs to run: node i, the
// nodes its ports are cabled to, and node i's links, with every node as t
// has it. A node process reads this rather than the whole fabric, so that
// its start-up time and memory do not grow with the fabric's size.
func (t *Topology) Neighbourhood(i int) (*Topology, error) {
	u := New()
	idx := map[int]int{}
	add := func(j int) error {
		if _, ok := idx[j]; ok {
			return nil
		}
		n := *t.nodes[j]
		n.Ports = slices.Clone(n.Ports)
		k, err := u.AddNode(n)
		idx[j] = k
		return err
	}
	if err := add(i); err != nil {
		return nil, err
	}
	for p := 1; p <= t.nodes[i].NumPorts; p++ {
		l := t.portLink[i][p]
		if l < 0 {
			continue
		}
		peer := t.other(l, PortRef{Node: i, Port: p})
		if peer.Node == i && peer.Port < p {
			continue // a loop between two of i's ports, cabled already
		}
		if err := add(peer.Node); err != nil {
			return nil, err
		}
		if err := u.Connect(PortRef{Node: idx[i], Port: p}, PortRef{Node: idx[peer.Node], Port: peer.Port}, t.links[l].Width, t.links[l].Speed); err != nil {
			return nil, err
		}
	}
	return u, nil
}
