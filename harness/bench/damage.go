package bench

import (
	"errors"
	"fmt"
	"slices"

	"ibfab/harness"
	"ibfab/topologies"
)

// link is a cabled pair of ports.
type link struct{ a, b topologies.PortRef }

// damage is what a fault breaks: dead nodes by name, cut links.
type damage struct {
	dead map[string]bool
	cut  []link
}

func (d *damage) isCut(p topologies.PortRef) bool {
	return slices.ContainsFunc(d.cut, func(l link) bool { return l.a == p || l.b == p })
}

// reachable returns the hosts connected to from through live nodes and
// uncut links, in topology order.
func reachable(topo *topologies.Topology, from string, d *damage) []string {
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
			if !ok || seen[peer.Node] || d.dead[topo.Node(peer.Node).Name] || d.isCut(ref) {
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

// smSwitch returns the switch the SM's HCA hangs off.
func smSwitch(topo *topologies.Topology, smNode string) int {
	i, _ := topo.Lookup(smNode)
	p, _ := topo.Peer(topologies.PortRef{Node: i, Port: 1})
	return p.Node
}

// pickLink returns a link between two switches, neither the SM's, whose
// loss disconnects no host: one on a cycle, so routes move.
func pickLink(topo *topologies.Topology, smNode string) (link, error) {
	all := len(reachable(topo, smNode, &damage{}))
	home := smSwitch(topo, smNode)
	for i, n := range topo.Nodes() {
		if n.Type != topologies.Switch || i == home {
			continue
		}
		for p := 1; p <= n.NumPorts; p++ {
			a := topologies.PortRef{Node: i, Port: p}
			b, ok := topo.Peer(a)
			if !ok || b.Node == home || topo.Node(b.Node).Type != topologies.Switch {
				continue
			}
			l := link{a, b}
			if len(reachable(topo, smNode, &damage{cut: []link{l}})) == all {
				return l, nil
			}
		}
	}
	return link{}, errors.New("no switch link on a cycle away from the SM's switch")
}

// pickVictim returns the switch with hosts, not the SM's, whose loss
// leaves the most hosts connected to the SM; of those, the one with the
// most switch links, whose loss moves the most routes.
func pickVictim(topo *topologies.Topology, smNode string) (string, error) {
	best, most, links := "", -1, 0
	home := smSwitch(topo, smNode)
	for j, n := range topo.Nodes() {
		if n.Type != topologies.Switch || j == home || len(hostsOf(topo, n.Name)) == 0 {
			continue
		}
		k, l := len(reachable(topo, smNode, &damage{dead: map[string]bool{n.Name: true}})), switchLinks(topo, j)
		if k > most || k == most && l > links {
			best, most, links = n.Name, k, l
		}
	}
	if best == "" {
		return "", errors.New("no switch with hosts away from the SM's")
	}
	return best, nil
}

// switchLinks counts the links of node i to switches.
func switchLinks(topo *topologies.Topology, i int) int {
	k := 0
	for p := 1; p <= topo.Node(i).NumPorts; p++ {
		if peer, ok := topo.Peer(topologies.PortRef{Node: i, Port: p}); ok && topo.Node(peer.Node).Type == topologies.Switch {
			k++
		}
	}
	return k
}

// portName is "node[port]", as status prints peers.
func portName(t *topologies.Topology, p topologies.PortRef) string {
	return fmt.Sprintf("%s[%d]", t.Node(p.Node).Name, p.Port)
}

// settled reports whether every cabled port of a live node is as d makes
// it: Down when it faces a dead node or is cut, else Active; else the
// first port that is not.
func settled(topo *topologies.Topology, st *harness.FabricStatus, d *damage) (bool, string) {
	for i, n := range st.Nodes {
		if d.dead[n.Name] {
			continue
		}
		if !n.Alive {
			return false, n.Name + " not alive"
		}
		for _, p := range n.Ports {
			ref := topologies.PortRef{Node: i, Port: int(p.Port)}
			peer, cabled := topo.Peer(ref)
			if !cabled {
				continue
			}
			want := "Active"
			if d.dead[topo.Node(peer.Node).Name] || d.isCut(ref) {
				want = "Down"
			}
			if p.State != want {
				return false, portName(topo, ref) + " " + p.State + ", want " + want
			}
		}
	}
	return true, ""
}
