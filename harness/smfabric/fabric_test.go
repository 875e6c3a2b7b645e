package smfabric_test

import (
	"slices"
	"testing"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// link is a cabled pair of ports.
type link struct{ a, b topologies.PortRef }

// damage is what is broken in a fabric: dead nodes by name, cut links.
type damage struct {
	dead map[string]bool
	cut  []link
}

func (d *damage) isCut(p topologies.PortRef) bool {
	return slices.ContainsFunc(d.cut, func(l link) bool { return l.a == p || l.b == p })
}

// reachable returns the hosts connected to from through live nodes and
// uncut links.
func reachable(topo *topologies.Topology, from string, d *damage) []string {
	return fabrictest.Reachable(topo, from, d.dead, d.isCut)
}

// smSwitch returns the switch the SM's HCA hangs off.
func smSwitch(topo *topologies.Topology, smNode string) int {
	i, _ := topo.Lookup(smNode)
	p, _ := topo.Peer(topologies.PortRef{Node: i, Port: 1})
	return p.Node
}

// pickLink returns a link between two switches, neither the SM's, whose
// loss disconnects no host: one on a cycle, so routes move.
func pickLink(t testing.TB, topo *topologies.Topology, smNode string) link {
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
				return l
			}
		}
	}
	t.Fatal("no switch link on a cycle away from the SM's switch")
	return link{}
}

// pickVictim returns the switch with hosts, not the SM's nor at a cut
// link (a restarted switch waits for all its links to train), whose loss
// on top of d leaves the most hosts connected to the SM; of those, the one
// with the most switch links, whose loss moves the most routes.
func pickVictim(t testing.TB, topo *topologies.Topology, smNode string, d *damage) string {
	best, most, links := "", -1, 0
	home := smSwitch(topo, smNode)
	for j, n := range topo.Nodes() {
		if n.Type != topologies.Switch || j == home || len(hostsOf(topo, n.Name)) == 0 ||
			slices.ContainsFunc(d.cut, func(l link) bool { return l.a.Node == j || l.b.Node == j }) {
			continue
		}
		dd := &damage{dead: map[string]bool{n.Name: true}, cut: d.cut}
		k, l := len(reachable(topo, smNode, dd)), switchLinks(topo, j)
		if k > most || k == most && l > links {
			best, most, links = n.Name, k, l
		}
	}
	if best == "" {
		t.Fatal("no switch with hosts away from the SM's")
	}
	return best
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

// hostsOf returns the CAs cabled to switch sw.
func hostsOf(topo *topologies.Topology, sw string) []string {
	i, _ := topo.Lookup(sw)
	var out []string
	for p := 1; p <= topo.Node(i).NumPorts; p++ {
		if peer, ok := topo.Peer(topologies.PortRef{Node: i, Port: p}); ok && topo.Node(peer.Node).Type == topologies.CA {
			out = append(out, topo.Node(peer.Node).Name)
		}
	}
	return out
}

// settled reports whether every cabled port of a live node is as d makes
// it: Down when it faces a dead node or is cut, else Active. It returns
// the first port that is not, for the failure message.
func settled(f *fabrictest.Fabric, st *harness.FabricStatus, d *damage) (bool, string) {
	for i, n := range st.Nodes {
		if d.dead[n.Name] {
			continue
		}
		if !n.Alive {
			return false, n.Name + " not alive"
		}
		for _, p := range n.Ports {
			ref := topologies.PortRef{Node: i, Port: int(p.Port)}
			peer, cabled := f.Topo.Peer(ref)
			if !cabled {
				continue
			}
			want := "Active"
			if d.dead[f.Topo.Node(peer.Node).Name] || d.isCut(ref) {
				want = "Down"
			}
			if p.State != want {
				return false, fabrictest.PortName(f.Topo, ref) + " " + p.State + ", want " + want
			}
		}
	}
	return true, ""
}

// startTraffic has every host send light UD traffic to every other host
// with a LID: the background load the changes happen under, a fifth of
// CheckPairs' (the machine carries ~50k frames/s in all).
func startTraffic(f *fabrictest.Fabric, hosts []string) {
	lid := map[string]uint16{}
	for _, h := range hosts {
		lid[h] = f.Node(h).Ports[0].LID
	}
	for i, h := range hosts {
		var dests []uint16
		for _, o := range hosts {
			if o != h && lid[o] != 0 {
				dests = append(dests, lid[o])
			}
		}
		f.MustCall(h, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: fabrictest.PairLoad / 5, Payload: 256,
			Dests: dests, Seed: uint64(i + 1)}, nil)
	}
}
