package harness

import (
	"fmt"

	"ibfab/topologies"
)

// Settled reports whether st shows fabric topo as damage d leaves it once
// an SM has done its work: every node d does not kill alive, every cabled
// port of it Down when it faces a dead node or a cut cable, else Active.
// Otherwise it names the first node or port that is not, for a message.
func (st *FabricStatus) Settled(topo *topologies.Topology, d *topologies.Damage) (bool, string) {
	for i, n := range st.Nodes {
		if d != nil && d.Dead[n.Name] {
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
			if d != nil && d.Dead[topo.Node(peer.Node).Name] || d.IsCut(ref) {
				want = "Down"
			}
			if p.State != want {
				return false, fmt.Sprintf("%s[%d] %s, want %s", topo.Node(ref.Node).Name, ref.Port, p.State, want)
			}
		}
	}
	return true, ""
}
