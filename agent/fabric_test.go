package agent_test

import (
	"bytes"
	"runtime"
	"slices"
	"testing"

	"ibfab/agent"
	"ibfab/memfabric"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// sm plays the subnet manager at one CA of a fabric of agents.
type sm struct {
	f    *memfabric.Fabric
	node int // the SM's CA; it sends from port 1
	tid  uint64
	lids map[int]uint16 // node → LID, once assigned
}

func newSM(t *testing.T, topo *topologies.Topology) *sm {
	t.Helper()
	f, err := memfabric.NewFabric(topo)
	if err != nil {
		t.Fatalf("NewFabric: %v", err)
	}
	t.Cleanup(f.Close)
	return &sm{f: f}
}

// dr sends a directed-route SMP along path and returns what came back to
// the SM, nil if nothing did.
func (s *sm) dr(t *testing.T, path []uint8, m mad.Method, attr mad.AttrID, mod uint32, data []byte) mad.DRSMP {
	t.Helper()
	s.tid++
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: m, TransactionID: s.tid, AttrID: attr,
		AttrModifier: mod, Path: path, Data: data})
	if err != nil {
		t.Fatalf("AppendDRRequest(%v): %v", path, err)
	}
	s.f.Send(s.node, agent.Request{Port: 1, MAD: b})
	s.f.Run()
	got := s.f.Received(s.node)
	switch len(got) {
	case 0:
		return nil
	case 1:
		r := mad.DRSMP(got[0].MAD)
		if r.MAD().TransactionID() != s.tid {
			t.Fatalf("response TID %#x, want %#x", r.MAD().TransactionID(), s.tid)
		}
		return r
	}
	t.Fatalf("dr(%v): %d deliveries, want at most 1", path, len(got))
	return nil
}

// mustDR is dr that insists on an OK response.
func (s *sm) mustDR(t *testing.T, path []uint8, m mad.Method, attr mad.AttrID, mod uint32, data []byte) mad.DRSMP {
	t.Helper()
	r := s.dr(t, path, m, attr, mod, data)
	if r == nil {
		t.Fatalf("%v %v %#x along %v: no response", m, attr, mod, path)
	}
	if st := r.Status(); st != mad.StatusOK {
		t.Fatalf("%v %v %#x along %v: status %v", m, attr, mod, path, st)
	}
	return r
}

// lid sends a LID-routed SMP to dlid and returns the responses.
func (s *sm) lid(t *testing.T, dlid uint16, m mad.Method, attr mad.AttrID, mod uint32, data []byte) []memfabric.Delivery {
	t.Helper()
	s.tid++
	f := mad.SMPFields{Method: m, TransactionID: s.tid, AttrID: attr, AttrModifier: mod}
	copy(f.Data[:], data)
	s.f.Send(s.node, agent.Request{Port: 1, DLID: dlid, MAD: mad.AppendSMP(nil, &f)})
	s.f.Run()
	return s.f.Received(s.node)
}

// configure does what an SM's LID assignment and routing do: every node
// gets LID node+1 (a switch on port 0, a CA on port 1) with the SM's LID
// as MasterSMLID, and every switch a min-hop LFT and LinearFDBTop.
func (s *sm) configure(t *testing.T) {
	t.Helper()
	topo := s.f.Topology()
	routes := memfabric.Routes(topo, s.node)
	s.lids = map[int]uint16{}
	for i := range topo.Nodes() {
		s.lids[i] = uint16(i + 1)
	}
	for i := range topo.Nodes() {
		path := routes[i].Path
		pi := mad.PortInfo(s.mustDR(t, path, mad.MethodGet, mad.AttrPortInfo, 0, nil).Data()).Fields()
		pi.LID, pi.MasterSMLID = s.lids[i], s.lids[s.node]
		pi.PortState, pi.PortPhysicalState = mad.PortStateNoChange, mad.PhysStateNoChange
		got := mad.PortInfo(s.mustDR(t, path, mad.MethodSet, mad.AttrPortInfo, 0, mad.AppendPortInfo(nil, &pi)).Data())
		if got.LID() != s.lids[i] || got.MasterSMLID() != s.lids[s.node] {
			t.Fatalf("Set(PortInfo) of %s: LID %d SM %d, want %d %d", topo.Node(i).Name, got.LID(), got.MasterSMLID(), s.lids[i], s.lids[s.node])
		}
	}
	for i, n := range topo.Nodes() {
		if n.Type != topologies.Switch {
			continue
		}
		var lft mad.LinearForwardingTableFields
		for j := range lft.Ports {
			lft.Ports[j] = mad.LFTNoPort
		}
		top := uint16(0)
		for d, r := range memfabric.Routes(topo, i) {
			lid := s.lids[d]
			lft.Ports[lid] = 0
			if d != i {
				lft.Ports[lid] = r.Path[1]
			}
			top = max(top, lid)
		}
		path := routes[i].Path
		s.mustDR(t, path, mad.MethodSet, mad.AttrLinearFwdTbl, 0, mad.AppendLinearForwardingTable(nil, &lft))
		s.mustDR(t, path, mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{LinearFDBTop: top}))
	}
}

// traps lets the switches' trap repeats run and returns the traps that
// reach the SM.
func (s *sm) traps(t *testing.T) []memfabric.Delivery {
	t.Helper()
	s.f.Advance(agent.TrapRepeatInterval(0, agent.DefaultRespTimeValue))
	var ts []memfabric.Delivery
	for _, d := range s.f.Received(s.node) {
		if mad.MAD(d.MAD).Method() == mad.MethodTrap {
			ts = append(ts, d)
		}
	}
	return ts
}

// repress answers trap d with a TrapRepress, as an SM does.
func (s *sm) repress(d memfabric.Delivery) {
	f := mad.SMPFields{Method: mad.MethodTrapRepress, TransactionID: mad.MAD(d.MAD).TransactionID(), AttrID: mad.AttrNotice}
	copy(f.Data[:], mad.SMP(d.MAD).Data())
	s.f.Send(s.node, agent.Request{Port: 1, DLID: d.SLID, MAD: mad.AppendSMP(nil, &f)})
	s.f.Run()
}

func lookup(t *testing.T, topo *topologies.Topology, name string) int {
	t.Helper()
	i, ok := topo.Lookup(name)
	if !ok {
		t.Fatalf("no node %q", name)
	}
	return i
}

// TestDirectedRoute sends directed-route NodeInfo Gets from the SM's CA in
// the thesis's 8-switch network and checks the answers and the way back.
func TestDirectedRoute(t *testing.T) {
	topo := topologies.Thesis8()
	tests := []struct {
		name   string
		target string
		path   []uint8 // from ca4 (port 1, on sw1 port 3)
		in     []uint8 // arrival ports; the response's ReturnPath
	}{
		{"the SM's own CA", "ca4", []uint8{0}, []uint8{0}},
		{"neighbour switch", "sw1", []uint8{0, 1}, []uint8{0, 3}},
		{"CA three hops away", "ca7", []uint8{0, 1, 1, 4}, []uint8{0, 3, 1, 1}},
		{"switch three hops away", "sw5", []uint8{0, 1, 1, 2}, []uint8{0, 3, 1, 2}},
		{"out and back over the same link", "sw1", []uint8{0, 1, 1, 1}, []uint8{0, 3, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSM(t, topo)
			target := topo.Node(lookup(t, topo, tt.target))
			r := s.mustDR(t, tt.path, mad.MethodGet, mad.AttrNodeInfo, 0, nil)
			hc := uint8(len(tt.path) - 1)
			if !r.Direction() || r.HopPointer() != 0 || r.HopCount() != hc || r.MAD().Method() != mad.MethodGetResp {
				t.Errorf("response D %v hop pointer %d hop count %d method %v, want D, 0, %d, GetResp",
					r.Direction(), r.HopPointer(), r.HopCount(), r.MAD().Method(), hc)
			}
			if got := r.ReturnPath()[1 : hc+1]; !slices.Equal(got, tt.in[1:]) {
				t.Errorf("ReturnPath[1:] = %v, want %v", got, tt.in[1:])
			}
			if got := r.Path(); !slices.Equal(got, tt.path) {
				t.Errorf("InitialPath = %v, want it unchanged, %v", got, tt.path)
			}
			ni := mad.NodeInfo(r.Data())
			if ni.NodeGUID() != target.GUID || ni.NodeType() != mad.NodeType(target.Type) {
				t.Errorf("NodeInfo GUID %#x type %v, want %#x %v", ni.NodeGUID(), ni.NodeType(), target.GUID, target.Type)
			}
			if want := tt.in[len(tt.in)-1]; hc > 0 && ni.LocalPortNum() != want {
				t.Errorf("LocalPortNum %d, want %d", ni.LocalPortNum(), want)
			}
		})
	}
	t.Run("routes agree", func(t *testing.T) {
		routes := memfabric.Routes(topo, 0)
		for _, name := range []string{"ca7", "sw5", "sw10", "ca15"} {
			r := routes[lookup(t, topo, name)]
			s := newSM(t, topo)
			got := s.mustDR(t, r.Path, mad.MethodGet, mad.AttrNodeInfo, 0, nil)
			if mad.NodeInfo(got.Data()).NodeGUID() != topo.Node(lookup(t, topo, name)).GUID {
				t.Errorf("%s along %v: wrong node", name, r.Path)
			}
			if !slices.Equal(got.ReturnPath()[1:r.Hops()+1], r.In[1:]) {
				t.Errorf("%s: ReturnPath %v, want %v", name, got.ReturnPath()[1:r.Hops()+1], r.In[1:])
			}
		}
	})
}

// TestDirectedRouteDrops sends directed routes that some node must refuse.
func TestDirectedRouteDrops(t *testing.T) {
	topo := topologies.Thesis8()
	tests := []struct {
		name    string
		path    []uint8
		dropper string // node whose agent counts the drop; "" for the fabric
	}{
		{"port beyond NumPorts", []uint8{0, 1, 7}, "sw1"},
		{"port 0 is no way out", []uint8{0, 1, 1, 0}, "sw2"},
		{"first hop not the SM's port", []uint8{0, 2, 1}, "ca4"},
		{"CA in the middle", []uint8{0, 1, 1, 4, 1}, "ca7"},
		{"back to the requester in the middle", []uint8{0, 1, 3, 1}, "ca4"},
		{"uncabled port", []uint8{0, 1, 4}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSM(t, topo)
			var before agent.Stats
			if tt.dropper != "" {
				before = s.f.Node(lookup(t, topo, tt.dropper)).Agent.Stats()
			}
			fab := s.f.Stats()
			if r := s.dr(t, tt.path, mad.MethodGet, mad.AttrNodeInfo, 0, nil); r != nil {
				t.Fatalf("got a response: status %v", r.Status())
			}
			if tt.dropper == "" {
				if got := s.f.Stats().Dropped; got != fab.Dropped+1 {
					t.Errorf("fabric dropped %d, want %d", got, fab.Dropped+1)
				}
				return
			}
			if got := s.f.Node(lookup(t, topo, tt.dropper)).Agent.Stats().DRDropped; got != before.DRDropped+1 {
				t.Errorf("%s DRDropped %d, want %d", tt.dropper, got, before.DRDropped+1)
			}
		})
	}
}

// TestLIDRouted configures LIDs and LFTs and then reaches every node by
// LID, and by the hybrid routes with a LID-routed prefix or suffix.
func TestLIDRouted(t *testing.T) {
	topo := topologies.Thesis8()
	s := newSM(t, topo)
	if got := s.lid(t, 5, mad.MethodGet, mad.AttrNodeInfo, 0, nil); len(got) != 0 {
		t.Fatalf("LID-routed Get before any LID is set: %d responses", len(got))
	}
	s.configure(t)
	for i, n := range topo.Nodes() {
		got := s.lid(t, s.lids[i], mad.MethodGet, mad.AttrNodeInfo, 0, nil)
		if len(got) != 1 {
			t.Fatalf("LID-routed Get of %s (LID %d): %d responses", n.Name, s.lids[i], len(got))
		}
		r := mad.SMP(got[0].MAD)
		if st := r.MAD().Status(); st != mad.StatusOK || r.MAD().MgmtClass() != mad.ClassSubnLID {
			t.Fatalf("%s: class %v status %v", n.Name, r.MAD().MgmtClass(), st)
		}
		if g := mad.NodeInfo(r.Data()).NodeGUID(); g != n.GUID {
			t.Errorf("LID %d answered with GUID %#x, want %s's %#x", s.lids[i], g, n.Name, n.GUID)
		}
		if got[0].SLID != s.lids[i] || got[0].DLID != s.lids[s.node] {
			t.Errorf("%s: response SLID %d DLID %d, want %d %d", n.Name, got[0].SLID, got[0].DLID, s.lids[i], s.lids[s.node])
		}
	}
	if got := s.lid(t, 99, mad.MethodGet, mad.AttrNodeInfo, 0, nil); len(got) != 0 {
		t.Errorf("LID-routed Get of an unassigned LID: %d responses", len(got))
	}

	hybrid := func(t *testing.T, dlid uint16, req *mad.DRRequest) mad.DRSMP {
		t.Helper()
		s.tid++
		req.Method, req.TransactionID, req.AttrID = mad.MethodGet, s.tid, mad.AttrNodeInfo
		b, err := mad.AppendDRRequest(nil, req)
		if err != nil {
			t.Fatal(err)
		}
		s.f.Send(s.node, agent.Request{Port: 1, DLID: dlid, MAD: b})
		s.f.Run()
		got := s.f.Received(s.node)
		if len(got) != 1 {
			t.Fatalf("%d responses, want 1", len(got))
		}
		r := mad.DRSMP(got[0].MAD)
		if r.Status() != mad.StatusOK || !r.Direction() || r.HopPointer() != 0 {
			t.Fatalf("status %v D %v hop pointer %d, want OK, D, 0", r.Status(), r.Direction(), r.HopPointer())
		}
		return r
	}
	sw2, sw5, sw1, ca15 := lookup(t, topo, "sw2"), lookup(t, topo, "sw5"), lookup(t, topo, "sw1"), lookup(t, topo, "ca15")
	t.Run("LID-routed prefix", func(t *testing.T) {
		// LID-routed to sw2, then directed out of sw2's port 2 to sw5.
		r := hybrid(t, s.lids[sw2], &mad.DRRequest{Path: []uint8{0, 2}, DrSLID: s.lids[s.node]})
		if g := mad.NodeInfo(r.Data()).NodeGUID(); g != topo.Node(sw5).GUID {
			t.Errorf("GUID %#x, want sw5's %#x", g, topo.Node(sw5).GUID)
		}
		if r.ReturnPath()[1] != 2 {
			t.Errorf("ReturnPath[1] = %d, want sw5's port 2", r.ReturnPath()[1])
		}
	})
	t.Run("LID-routed suffix", func(t *testing.T) {
		// Directed to sw1, then LID-routed to ca15.
		r := hybrid(t, 0, &mad.DRRequest{Path: []uint8{0, 1}, DrDLID: s.lids[ca15]})
		if g := mad.NodeInfo(r.Data()).NodeGUID(); g != topo.Node(ca15).GUID {
			t.Errorf("GUID %#x, want ca15's %#x", g, topo.Node(ca15).GUID)
		}
	})
	t.Run("both", func(t *testing.T) {
		r := hybrid(t, s.lids[sw1], &mad.DRRequest{Path: []uint8{0, 1, 2}, DrSLID: s.lids[s.node], DrDLID: s.lids[ca15]})
		if g := mad.NodeInfo(r.Data()).NodeGUID(); g != topo.Node(ca15).GUID {
			t.Errorf("GUID %#x, want ca15's %#x", g, topo.Node(ca15).GUID)
		}
	})
}

// TestPortStateActivation arms and activates the link between sw1 and sw2
// with Set(PortInfo), as the SM's activation phase does.
func TestPortStateActivation(t *testing.T) {
	topo := topologies.Thesis8()
	s := newSM(t, topo)
	sw1, sw2 := []uint8{0, 1}, []uint8{0, 1, 1}
	set := func(path []uint8, port uint8, st mad.PortState) mad.DRSMP {
		pi := mad.PortInfo(s.mustDR(t, path, mad.MethodGet, mad.AttrPortInfo, uint32(port), nil).Data()).Fields()
		pi.PortState, pi.PortPhysicalState = st, mad.PhysStateNoChange
		return s.dr(t, path, mad.MethodSet, mad.AttrPortInfo, uint32(port), mad.AppendPortInfo(nil, &pi))
	}
	steps := []struct {
		name string
		path []uint8
		port uint8
		to   mad.PortState
		want mad.Status
		then mad.PortState
	}{
		{"sw1 Init to Active is refused", sw1, 1, mad.PortStateActive, mad.StatusInvalidField, mad.PortStateInit},
		{"sw1 Init to Armed", sw1, 1, mad.PortStateArmed, mad.StatusOK, mad.PortStateArmed},
		{"sw2 Init to Armed", sw2, 1, mad.PortStateArmed, mad.StatusOK, mad.PortStateArmed},
		{"sw1 Armed to Active", sw1, 1, mad.PortStateActive, mad.StatusOK, mad.PortStateActive},
		{"sw2 Armed to Active", sw2, 1, mad.PortStateActive, mad.StatusOK, mad.PortStateActive},
		{"sw1 Active to Armed is refused", sw1, 1, mad.PortStateArmed, mad.StatusInvalidField, mad.PortStateActive},
	}
	for _, st := range steps {
		r := set(st.path, st.port, st.to)
		if r == nil {
			t.Fatalf("%s: no response", st.name)
		}
		if got := r.Status(); got != st.want {
			t.Errorf("%s: status %v, want %v", st.name, got, st.want)
		}
		if got := mad.PortInfo(r.Data()).PortState(); got != st.then {
			t.Errorf("%s: response PortState %v, want %v", st.name, got, st.then)
		}
	}
}

// TestTrap128 takes a switch's link down and follows the trap to the SM,
// its repeats, the TrapRepress, and the PortStateChange bit.
func TestTrap128(t *testing.T) {
	topo := topologies.Thesis8()
	s := newSM(t, topo)
	sw8 := lookup(t, topo, "sw8")
	path := memfabric.Routes(topo, 0)[sw8].Path
	psc := func() bool {
		r := s.mustDR(t, path, mad.MethodGet, mad.AttrSwitchInfo, 0, nil)
		return mad.SwitchInfo(r.Data()).PortStateChange()
	}
	if !psc() {
		t.Errorf("PortStateChange clear after the links came up, want set")
	}
	s.mustDR(t, path, mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{PortStateChange: true}))
	if psc() {
		t.Errorf("PortStateChange set after writing 1 to it, want clear")
	}
	s.configure(t)
	// The traps of the links coming up went out as soon as each switch
	// knew the SM's LID, except sw8's, whose PortStateChange the SM had
	// already cleared; repress them all.
	for _, d := range s.traps(t) {
		if d.SLID == s.lids[sw8] {
			t.Errorf("sw8 sent Trap 128 for a change the SM cleared before configuring it")
		}
		s.repress(d)
	}
	if ts := s.traps(t); len(ts) != 0 {
		t.Fatalf("%d traps still repeating after TrapRepress", len(ts))
	}

	if err := s.f.SetLink(sw8, 2, false); err != nil { // sw8 port 2 is ca13
		t.Fatal(err)
	}
	s.f.Run()
	got := s.f.Received(s.node)
	if len(got) != 1 {
		t.Fatalf("%d MADs reached the SM after the link went down, want 1 trap", len(got))
	}
	trap := got[0]
	h := mad.MAD(trap.MAD)
	n := mad.Notice(mad.SMP(trap.MAD).Data())
	switch {
	case h.MgmtClass() != mad.ClassSubnLID || h.Method() != mad.MethodTrap || h.AttrID() != mad.AttrNotice:
		t.Errorf("trap is %v %v %v, want SubnTrap(Notice) LID-routed", h.MgmtClass(), h.Method(), h.AttrID())
	case trap.DLID != s.lids[s.node] || trap.SLID != s.lids[sw8] || trap.VL != 15:
		t.Errorf("trap from %d to %d on VL %d, want from %d to %d on VL15", trap.SLID, trap.DLID, trap.VL, s.lids[sw8], s.lids[s.node])
	case !n.IsGeneric() || n.TrapNumber() != mad.TrapLinkStateChange || n.Trap128LID() != s.lids[sw8] || n.IssuerLID() != s.lids[sw8]:
		t.Errorf("notice %+v, want generic trap 128 about LID %d", n.Fields(), s.lids[sw8])
	}
	if !psc() {
		t.Errorf("PortStateChange clear after the link went down, want set")
	}

	for i := range 3 {
		ts := s.traps(t)
		if len(ts) != 1 || mad.MAD(ts[0].MAD).TransactionID() != h.TransactionID() {
			t.Fatalf("repeat %d: %d traps, want the same trap again", i, len(ts))
		}
	}
	// OpenSM's TrapRepress, through libumad2sim, comes back with the
	// TID's upper half cleared: it still represses the trap.
	cleared := trap
	m := mad.MAD(bytes.Clone(trap.MAD))
	m.SetTransactionID(m.TransactionID() & 0xffffffff)
	cleared.MAD = m
	s.repress(cleared)
	if ts := s.traps(t); len(ts) != 0 {
		t.Errorf("%d traps after TrapRepress, want none", len(ts))
	}
	s.mustDR(t, path, mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{PortStateChange: true}))
	if psc() {
		t.Errorf("PortStateChange set after the SM cleared it")
	}
	if st := s.f.Node(lookup(t, topo, "ca13")).Agent.Stats(); st.TrapsSent != 0 {
		t.Errorf("ca13 sent %d traps; CAs send none", st.TrapsSent)
	}
}

// TestFabricNoGoroutines checks that a fabric of agents, timers armed and
// all, runs and closes without leaving goroutines behind.
func TestFabricNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if after := runtime.NumGoroutine(); after > before {
			buf := make([]byte, 1<<16)
			t.Errorf("%d goroutines before, %d after:\n%s", before, after, buf[:runtime.Stack(buf, true)])
		}
	})
	s := newSM(t, topologies.Thesis8())
	s.configure(t)
	s.traps(t)
	s.f.Close()
	if n := s.f.Advance(agent.MaxTrapRepeat); n != 0 {
		t.Errorf("%d packets moved after Close", n)
	}
}

// TestTrap128WhileOutstanding: a switch whose trap the SM has not
// repressed (an SM that died, a repress lost) traps a new change at once,
// not at the older trap's next repeat: the new trap has its own TID and
// replaces the old one, whose repress then stops nothing, and it repeats
// until repressed itself.
func TestTrap128WhileOutstanding(t *testing.T) {
	topo := topologies.Thesis8()
	s := newSM(t, topo)
	sw8 := lookup(t, topo, "sw8")
	s.configure(t)
	for _, d := range s.traps(t) {
		s.repress(d)
	}
	if ts := s.traps(t); len(ts) != 0 {
		t.Fatalf("%d traps still repeating after TrapRepress", len(ts))
	}
	// sw8 port 2 is ca13: down, then up again.
	change := func(up bool) memfabric.Delivery {
		t.Helper()
		if err := s.f.SetLink(sw8, 2, up); err != nil {
			t.Fatal(err)
		}
		s.f.Run() // no time passes: only what is sent at once
		got := s.f.Received(s.node)
		if len(got) != 1 || mad.MAD(got[0].MAD).Method() != mad.MethodTrap || got[0].SLID != s.lids[sw8] {
			t.Fatalf("%d MADs reached the SM when sw8's port 2 went up=%v, want its trap at once", len(got), up)
		}
		return got[0]
	}
	first := change(false) // not repressed
	second := change(true)
	if mad.MAD(second.MAD).TransactionID() == mad.MAD(first.MAD).TransactionID() {
		t.Error("the second change's trap has the first one's TID")
	}
	s.repress(first) // stale: the second goes on repeating
	ts := s.traps(t)
	if len(ts) != 1 || mad.MAD(ts[0].MAD).TransactionID() != mad.MAD(second.MAD).TransactionID() {
		t.Fatalf("%d traps repeating after the stale repress, want the second trap", len(ts))
	}
	s.repress(second)
	if ts := s.traps(t); len(ts) != 0 {
		t.Errorf("%d traps after the second one's repress, want none", len(ts))
	}
}
