package harness_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// checkTrained asserts that every cabled port of the fabric is LinkUp and
// in state, with the peer the topology says.
func checkPorts(t *testing.T, f *fabrictest.Fabric, state string) {
	t.Helper()
	s := f.Status()
	require.Len(t, s.Nodes, f.Topo.NumNodes())
	for i, n := range s.Nodes {
		assert.True(t, n.Alive, "%s not alive", n.Name)
		assert.Equal(t, f.Topo.Node(i).Name, n.Name)
		assert.Equal(t, fmt.Sprintf("%#016x", f.Topo.Node(i).GUID), n.GUID)
		for _, p := range n.Ports {
			peer, cabled := f.Topo.Peer(topologies.PortRef{Node: i, Port: p.Port})
			if !cabled {
				assert.Empty(t, p.Peer, "%s[%d]", n.Name, p.Port)
				continue
			}
			assert.Equal(t, fabrictest.PortName(f.Topo, peer), p.Peer, "%s[%d] peer", n.Name, p.Port)
			assert.Equal(t, "LinkUp", p.Phys, "%s[%d] phys", n.Name, p.Port)
			assert.Equal(t, state, p.State, "%s[%d] state", n.Name, p.Port)
		}
	}
}

// TestDefaultFabric brings the default fabric up and plays SM on it by
// hand: directed-route discovery, LIDs and routes, activation, LID-routed
// SMPs, UD traffic, and a switch killed.
func TestDefaultFabric(t *testing.T) {
	topo := topologies.Default()
	f := fabrictest.Up(t, "def", topo, harness.UpOptions{})
	checkPorts(t, f, "Init")

	sm := f.NewSM("ca4")
	// A directed-route NodeInfo Get to a node three hops away.
	far := -1
	for i, p := range sm.Path {
		if len(p)-1 == 3 && topo.Node(i).Type == topologies.Switch {
			far = i
			break
		}
	}
	require.GreaterOrEqual(t, far, 0, "no switch 3 hops from ca4")
	guid, err := sm.NodeGUID(far)
	require.NoError(t, err)
	assert.Equal(t, topo.Node(far).GUID, guid, "NodeInfo of %s via %v", topo.Node(far).Name, sm.Path[far])

	// LIDs and routes, then Init → Armed → Active.
	require.NoError(t, sm.AssignLIDs())
	require.NoError(t, sm.Route())
	require.NoError(t, sm.SetAllPorts(mad.PortStateArmed))
	checkPorts(t, f, "Armed")
	require.NoError(t, sm.SetAllPorts(mad.PortStateActive))
	checkPorts(t, f, "Active")

	// LID-routed Gets reach every node.
	for i := range topo.NumNodes() {
		r, err := sm.LIDGet(sm.LID[i], mad.AttrNodeInfo, 0)
		require.NoError(t, err, topo.Node(i).Name)
		require.Equal(t, mad.StatusOK, mad.MAD(r).Status(), topo.Node(i).Name)
		ni, err := mad.DecodeNodeInfo(r.Data())
		require.NoError(t, err)
		assert.Equal(t, topo.Node(i).GUID, ni.NodeGUID, "LID %d", sm.LID[i])
	}
	// Status shows the LIDs.
	for i, n := range f.Status().Nodes {
		for _, p := range n.Ports {
			if _, ok := topo.LinkAt(topologies.PortRef{Node: i, Port: p.Port}); ok {
				assert.Equal(t, sm.LID[i], p.LID, "%s[%d]", n.Name, p.Port)
			}
		}
	}

	// UD traffic between two HCAs.
	src, dst := "ca11", "ca15"
	dlid := sm.LID[f.Index(dst)]
	f.MustCall(src, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 5, Payload: 256, Dests: []uint16{dlid}, Seed: 1}, nil)
	fabrictest.Wait(t, 10*time.Second, "packets at "+dst, func() bool {
		return f.Node(dst).Ports[0].Traffic.RxPackets > 50
	})
	var gs struct {
		Sent uint64 `json:"sent"`
	}
	f.MustCall(src, "traffic-stop", map[string]int{"port": 1}, &gs)
	fabrictest.Wait(t, 5*time.Second, "all sent packets received", func() bool {
		return f.Node(dst).Ports[0].Traffic.RxPackets == gs.Sent
	})
	for _, n := range f.Status().Nodes {
		for _, p := range n.Ports {
			assert.Empty(t, p.Drops, "%s[%d] drops", n.Name, p.Port)
		}
	}

	// Kill a switch: every neighbour's port goes Down, and each neighbour
	// switch whose route to the SM does not cross the victim sends Trap 128.
	victim := f.Index("sw3")
	// The traps of the bring-up are answered first, so that whatever
	// comes after the kill is new.
	after, err := sm.DrainTraps(300 * time.Millisecond)
	require.NoError(t, err)
	late, err := sm.Traps(after, 500)
	require.NoError(t, err)
	require.Empty(t, late, "traps repeated after TrapRepress")
	killed := time.Now()
	require.NoError(t, harness.Kill(f.Name, "sw3"))
	want := map[uint16]bool{}
	for p := 1; p <= topo.Node(victim).NumPorts; p++ {
		if peer, ok := topo.Peer(topologies.PortRef{Node: victim, Port: p}); ok {
			if topo.Node(peer.Node).Type == topologies.Switch && !routeCrosses(sm, topo, peer.Node, f.Index("ca4"), victim) {
				want[sm.LID[peer.Node]] = true
			}
			pp := peer
			fabrictest.Within(t, f.PeerLossBound(), fabrictest.PortName(topo, pp)+" Down", func() bool {
				return f.Node(topo.Node(pp.Node).Name).Ports[pp.Port-1].State == "Down"
			})
		}
	}
	got := map[uint16]time.Duration{}
	t.Logf("expecting Trap 128 from LIDs %v", want)
	fabrictest.Wait(t, 30*time.Second, "Trap 128 from every neighbour switch", func() bool {
		traps, err := sm.Traps(after, 100)
		require.NoError(t, err)
		for _, m := range traps {
			if lid, ok := fabrictest.TrapLID(m.MAD); ok {
				if _, seen := got[lid]; !seen {
					got[lid] = time.Unix(0, m.Time).Sub(killed)
				}
			}
		}
		for lid := range want {
			if _, ok := got[lid]; !ok {
				return false
			}
		}
		return true
	})
	require.NotEmpty(t, want)
	for lid := range want {
		d, ok := got[lid]
		require.True(t, ok, "no Trap 128 from LID %d", lid)
		t.Logf("Trap 128 from LID %d %v after the kill", lid, d)
		// The kill is loss of signal to the neighbours (peerwatch): the
		// trap comes long before the liveness timeout could have sent it.
		assert.Less(t, d, f.PeerLossBound(), "Trap 128 from LID %d", lid)
	}
}

// routeCrosses reports whether the route the SM programmed from switch
// from to node to passes through node via.
func routeCrosses(sm *fabrictest.SM, topo *topologies.Topology, from, to, via int) bool {
	n := from
	for hops := 0; n != to && hops < topo.NumNodes(); hops++ {
		if n == via {
			return true
		}
		p, ok := sm.Routes(n)[sm.LID[to]]
		if !ok {
			return false
		}
		peer, ok := topo.Peer(topologies.PortRef{Node: n, Port: int(p)})
		if !ok {
			return false
		}
		n = peer.Node
	}
	return n == via
}

// TestStatusSwitchFirst: a fabric whose first node is a switch is recorded
// in a topology file that lists a CA first (as ibsim wants); status still
// lists the nodes in the given order with the right ports and peers.
func TestStatusSwitchFirst(t *testing.T) {
	topo := fabrictest.Star(t)
	require.Equal(t, topologies.Switch, topo.Node(0).Type, "the case needs a switch first")
	f := fabrictest.Up(t, "swfirst", topo, harness.UpOptions{})
	checkPorts(t, f, "Init")
}
