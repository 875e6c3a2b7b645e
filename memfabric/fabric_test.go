package memfabric_test

import (
	"errors"
	"runtime"
	"slices"
	"testing"

	"ibfab/agent"
	"ibfab/memfabric"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

func newFabric(t *testing.T, topo *topologies.Topology) *memfabric.Fabric {
	t.Helper()
	before := runtime.NumGoroutine()
	f, err := memfabric.NewFabric(topo)
	if err != nil {
		t.Fatalf("NewFabric: %v", err)
	}
	t.Cleanup(func() {
		f.Close()
		if after := runtime.NumGoroutine(); after > before {
			t.Errorf("%d goroutines before the fabric, %d after", before, after)
		}
	})
	return f
}

func TestNewFabric(t *testing.T) {
	f := newFabric(t, topologies.Thesis8())
	if got, want := len(f.Nodes()), len(topologies.Thesis8().Nodes()); got != want {
		t.Fatalf("%d nodes, want %d", got, want)
	}
	for _, n := range f.Nodes() {
		tn := f.Topology().Node(n.Index)
		if n.Agent.NodeGUID() != tn.GUID || n.Name != tn.Name {
			t.Errorf("node %d: %s %#x, want %s %#x", n.Index, n.Name, n.Agent.NodeGUID(), tn.Name, tn.GUID)
		}
		for p := 1; p <= tn.NumPorts; p++ {
			_, cabled := f.Topology().LinkAt(topologies.PortRef{Node: n.Index, Port: p})
			ls := n.Ports.Link(uint8(p))
			if up := ls.Phys == mad.PhysStateLinkUp && ls.State == mad.PortStateInit; up != cabled {
				t.Errorf("%s port %d: %v %v, cabled %v", n.Name, p, ls.Phys, ls.State, cabled)
			}
		}
		if tn.Type == topologies.Switch && !n.Agent.PortStateChange() {
			t.Errorf("%s: PortStateChange clear after its links came up", n.Name)
		}
	}
	if n, ok := f.Lookup("sw5"); !ok || n.Name != "sw5" {
		t.Errorf("Lookup(sw5) = %v, %v", n, ok)
	}

	rt := topologies.New()
	if _, err := rt.AddNode(topologies.Node{Type: topologies.Router, Name: "r", NumPorts: 2, GUID: 9}); err != nil {
		t.Fatal(err)
	}
	if _, err := memfabric.NewFabric(rt); err == nil {
		t.Errorf("NewFabric of a router succeeded")
	}
}

func TestRoutes(t *testing.T) {
	topo := topologies.Thesis8()
	routes := memfabric.Routes(topo, 0)
	if len(routes) != len(topo.Nodes()) {
		t.Fatalf("%d routes for %d nodes", len(routes), len(topo.Nodes()))
	}
	dist := topo.Distances(0)
	for i, r := range routes {
		if r.Hops() != dist[i] || len(r.In) != len(r.Path) {
			t.Errorf("%s: %d hops (%v, %v), want %d", topo.Node(i).Name, r.Hops(), r.Path, r.In, dist[i])
		}
	}
	ca7, _ := topo.Lookup("ca7")
	if r := routes[ca7]; !slices.Equal(r.Path, []uint8{0, 1, 1, 4}) || !slices.Equal(r.In, []uint8{0, 3, 1, 1}) {
		t.Errorf("route to ca7: %v in %v", r.Path, r.In)
	}
}

// TestLinkEvents follows link changes, the fabric's and the SM's, to the
// agents at both ends.
func TestLinkEvents(t *testing.T) {
	topo := topologies.Thesis8()
	sw2, _ := topo.Lookup("sw2")
	sw5, _ := topo.Lookup("sw5")
	clear := func(f *memfabric.Fabric, i int) {
		// Clear PortStateChange as the SM would, by a local Set.
		b, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, AttrID: mad.AttrSwitchInfo,
			Data: mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{PortStateChange: true})})
		f.Send(i, agent.Request{Port: 0, MAD: b})
		f.Run()
		f.Received(i)
	}
	t.Run("cable pulled and plugged", func(t *testing.T) {
		f := newFabric(t, topo)
		clear(f, sw2)
		clear(f, sw5)
		if err := f.SetLink(sw2, 2, false); err != nil {
			t.Fatal(err)
		}
		for _, n := range []struct {
			node, port int
		}{{sw2, 2}, {sw5, 2}} {
			nd := f.Node(n.node)
			if ls := nd.Ports.Link(uint8(n.port)); ls.State != mad.PortStateDown || !nd.Agent.PortStateChange() {
				t.Errorf("%s port %d: %v, PortStateChange %v", nd.Name, n.port, ls.State, nd.Agent.PortStateChange())
			}
		}
		if err := f.SetLink(sw2, 2, true); err != nil {
			t.Fatal(err)
		}
		if ls := f.Node(sw5).Ports.Link(2); ls.State != mad.PortStateInit || ls.Phys != mad.PhysStateLinkUp {
			t.Errorf("sw5 port 2 after plugging: %v %v", ls.Phys, ls.State)
		}
		if err := f.SetLink(sw5, 4, false); err == nil {
			t.Errorf("SetLink of an uncabled port succeeded")
		}
	})
	t.Run("SM disables a port", func(t *testing.T) {
		f := newFabric(t, topo)
		clear(f, sw5)
		if err := f.Node(sw2).Ports.SetPhysState(2, mad.PhysStateDisabled); err != nil {
			t.Fatal(err)
		}
		if ls := f.Node(sw5).Ports.Link(2); ls.State != mad.PortStateDown || !f.Node(sw5).Agent.PortStateChange() {
			t.Errorf("peer of a disabled port: %v, PortStateChange %v", ls.State, f.Node(sw5).Agent.PortStateChange())
		}
		if err := f.Node(sw2).Ports.SetPhysState(2, mad.PhysStatePolling); err != nil {
			t.Fatal(err)
		}
		if ls := f.Node(sw5).Ports.Link(2); ls.State != mad.PortStateInit {
			t.Errorf("peer after re-enabling: %v", ls.State)
		}
	})
	t.Run("SM sets a port Down", func(t *testing.T) {
		f := newFabric(t, topo)
		clear(f, sw5)
		if err := f.Node(sw2).Ports.SetState(2, mad.PortStateDown); err != nil {
			t.Fatal(err)
		}
		if ls := f.Node(sw2).Ports.Link(2); ls.State != mad.PortStateInit {
			t.Errorf("port set Down: %v, want retrained to Init", ls.State)
		}
		if !f.Node(sw5).Agent.PortStateChange() {
			t.Errorf("peer of a port set Down: PortStateChange clear")
		}
	})
	t.Run("refused", func(t *testing.T) {
		f := newFabric(t, topo)
		p := f.Node(sw2).Ports
		p.Refuse(true)
		if err := p.SetState(1, mad.PortStateArmed); !errors.Is(err, memfabric.ErrRefused) {
			t.Errorf("SetState while refusing: %v", err)
		}
	})
}

// TestRunDrops checks that what the fabric cannot carry is dropped and
// counted, never delivered.
func TestRunDrops(t *testing.T) {
	f := newFabric(t, topologies.Thesis8())
	sw1, _ := f.Topology().Lookup("sw1")
	tests := []struct {
		name string
		o    agent.Outbound
	}{
		{"uncabled port", agent.Outbound{Port: 4, DLID: mad.PermissiveLID, VL: 15}},
		{"SMP off VL15", agent.Outbound{Port: 1, DLID: mad.PermissiveLID, VL: 0}},
		{"GMP between ports in Init", agent.Outbound{Port: 1, DLID: 5, VL: 0}},
		{"unroutable LID", agent.Outbound{Port: 1, DLID: 5, VL: 15}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1}})
			if tt.o.VL != 15 {
				b = mad.AppendPMA(nil, &mad.PMAFields{Method: mad.MethodGet, AttrID: mad.AttrClassPortInfo})
				if tt.name == "SMP off VL15" {
					b = mad.AppendSMP(nil, &mad.SMPFields{Method: mad.MethodGet, AttrID: mad.AttrNodeInfo})
				}
			}
			tt.o.MAD = b
			before := f.Stats()
			f.Inject(sw1, tt.o) // as if sw1's agent had produced it
			f.Run()
			after := f.Stats()
			if after.Dropped != before.Dropped+1 || after.Delivered != before.Delivered {
				t.Errorf("stats %+v → %+v, want one more drop", before, after)
			}
		})
	}
}
