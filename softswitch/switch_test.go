package softswitch_test

import (
	"errors"
	"testing"

	"ibfab/agent"
	"ibfab/link"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/softswitch"
	"ibfab/topologies"
	"ibfab/wire"
	"ibfab/wire/mad"
)

func TestNewBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  softswitch.Config
	}{
		{name: "empty", cfg: softswitch.Config{}},
		{name: "no GUID", cfg: softswitch.Config{Name: "sw", NumPorts: 2}},
		{name: "no ports", cfg: softswitch.Config{Name: "sw", NodeGUID: 2}},
		{name: "255 ports", cfg: softswitch.Config{Name: "sw", NodeGUID: 2, NumPorts: 255}},
		{name: "too many endpoints", cfg: softswitch.Config{Name: "sw", NodeGUID: 2, NumPorts: 2, Ports: make([]link.Endpoint, 4)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := softswitch.New(tc.cfg); !errors.Is(err, softswitch.ErrConfig) {
				t.Errorf("New: %v, want ErrConfig", err)
			}
		})
	}
}

// TestDiscoverConfigureForward is the SM's view: a directed-route Get two
// hops away, then LIDs, routes and port states by SMPs, then data from ca1
// to ca2 through both switches and a LID-routed Get to sw2.
func TestDiscoverConfigureForward(t *testing.T) {
	f := newFabric(t, line(t), port.Config{})
	ni := mad.NodeInfo(f.dr(t, mad.MethodGet, mad.AttrNodeInfo, 0, nil, toSW2...)).Fields()
	if ni.NodeGUID != 0x0110 || ni.NodeType != mad.NodeTypeSwitch || ni.LocalPortNum != 1 {
		t.Fatalf("NodeInfo of sw2: %+v, want GUID 0x110, a switch, reached on port 1", ni)
	}
	f.configure(t, true)
	for _, n := range []string{"sw1", "sw2"} {
		for p := uint8(1); p <= 2; p++ {
			if st := f.sw[n].Port(p).State(); st.Port != mad.PortStateActive {
				t.Errorf("%s port %d: %v, want Active", n, p, st)
			}
		}
	}

	src, dst := f.ca["ca1"].port(), f.ca["ca2"]
	const n = 10
	for i := range n {
		if err := src.Send(port.NewPacket(udFrom(lidCA1, lidCA2, 0, 500, byte(i)))); err != nil {
			t.Fatal(err)
		}
	}
	f.run(t, func() bool { return dst.received() == n })
	if got := f.sw["sw1"].Stats().Forwarded + f.sw["sw2"].Stats().Forwarded; got != 2*n {
		t.Errorf("switches forwarded %d packets, want %d", got, 2*n)
	}

	r := f.lid(t, lidSW2, mad.AttrNodeInfo, 0)
	if st := mad.MAD(r).Status(); st != mad.StatusOK {
		t.Fatalf("LID-routed Get(NodeInfo) to sw2: status %v", st)
	}
	if got := mad.NodeInfo(r.Data()).Fields().NodeGUID; got != 0x0110 {
		t.Errorf("LID-routed NodeInfo GUID %#x, want 0x110", got)
	}
	f.noDrops(t)
}

// TestBackpressure stalls ca2: ca1's port runs out of credits, nothing is
// dropped anywhere, and releasing lets every packet through in order.
func TestBackpressure(t *testing.T) {
	const rxBlocks = 100
	f := newFabric(t, line(t), port.Config{RxBlocks: rxBlocks})
	f.configure(t, true)
	src, dst := f.ca["ca1"].port(), f.ca["ca2"]
	dst.setHold(true)
	blocks := port.Blocks(porttest.UDSize(1000))
	const n = 60
	for i := range n {
		if err := src.Send(port.NewPacket(udFrom(lidCA1, lidCA2, 0, 1000, byte(i)))); err != nil {
			t.Fatal(err)
		}
	}
	f.run(t, func() bool { return src.Credits(0).Available < blocks && src.Credits(0).Queued > 0 })
	fit := rxBlocks / blocks
	if got := dst.received(); got != fit {
		t.Errorf("ca2 received %d packets while holding, want %d (its buffer)", got, fit)
	}
	for _, s := range []string{"sw1", "sw2"} {
		if used := f.sw[s].Port(1).Credits(0).RxUsed; used != fit*blocks {
			t.Errorf("%s input holds %d blocks, want %d (full)", s, used, fit*blocks)
		}
	}
	f.noDrops(t)
	dst.setHold(false)
	f.run(t, func() bool { return dst.received() == n })
	f.noDrops(t)
}

// TestDrops sends what the crossbar must drop and checks each cause is
// counted on the input port.
func TestDrops(t *testing.T) {
	f := newFabric(t, line(t), port.Config{})
	f.configure(t, false)
	// Only ca1 - sw1 goes Active: sw1's port 2 stays in Init.
	for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		f.setState(t, 1, s)
		f.setState(t, 1, s, toSW1...)
	}
	// SL 1 from port 1 to port 2 of sw1 is unmapped (VL15).
	sl2vl := mad.SLtoVLMappingTableFields{}
	sl2vl.VL[1] = 15
	mod := mad.SLtoVLModifier{InPort: 1, OutPort: 2}.Modifier()
	f.dr(t, mad.MethodSet, mad.AttrSLtoVLMapping, mod, mad.AppendSLtoVLMappingTable(nil, &sl2vl), toSW1...)

	in := f.sw["sw1"].Port(1)
	before := in.Drops()
	src := f.ca["ca1"].port()
	for _, tc := range []struct {
		name  string
		dlid  uint16
		sl    uint8
		cause port.DropCause
	}{
		{name: "unroutable", dlid: 50, cause: port.DropUnroutable},
		{name: "beyond LinearFDBTop", dlid: 200, cause: port.DropUnroutable},
		{name: "loopback", dlid: lidCA1, cause: port.DropLoopback},
		{name: "output not active", dlid: lidCA2, cause: port.DropNotActive},
		{name: "VL15 for data", dlid: lidCA2, sl: 1, cause: port.DropVLMapping},
		{name: "switch LID, not a MAD", dlid: lidSW1, cause: port.DropUnroutable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := src.Send(port.NewPacket(udFrom(lidCA1, tc.dlid, tc.sl, 100, 0))); err != nil {
				t.Fatal(err)
			}
			f.run(t, func() bool { return in.Drops()[tc.cause] > before[tc.cause] })
			before = in.Drops()
		})
	}
}

// TestTrap128 pulls the sw2 - ca2 cable: sw2 reports it to the SM's LID.
func TestTrap128(t *testing.T) {
	f := newFabric(t, line(t), port.Config{})
	f.configure(t, true)
	sm := f.ca["ca1"]
	isTrap := func(m mad.MAD) bool {
		return m.Method() == mad.MethodTrap && m.AttrID() == mad.AttrNotice
	}
	// Repress the traps of the links coming up, as the SM does: a trap
	// outstanding covers later changes.
	// Their first sending found no route yet (the SM sets the LFT after
	// the SM's LID); wait for the repeats from both switches.
	var pending []agent.Outbound
	issuers := map[uint16]bool{}
	f.run(t, func() bool {
		for _, o := range sm.take(isTrap) {
			pending = append(pending, o)
			issuers[o.SLID] = true
		}
		return issuers[lidSW1] && issuers[lidSW2]
	})
	old := map[uint64]bool{}
	for _, o := range pending {
		m := mad.MAD(o.MAD)
		old[m.TransactionID()] = true
		rep := mad.SMPFields{Method: mad.MethodTrapRepress, TransactionID: m.TransactionID(), AttrID: mad.AttrNotice}
		copy(rep.Data[:], mad.SMP(o.MAD).Data())
		sm.out(sm.a.Send(agent.Request{Port: 1, DLID: o.SLID, MAD: mad.AppendSMP(nil, &rep)}))
	}
	f.settle()
	f.pipes[topologies.PortRef{Node: 2, Port: 2}].SetCarrier(false)
	// The trap goes out at once; repeats would need the clock to move,
	// which settle does not do.
	f.settle()
	var nf mad.NoticeFields
	found := false
	for _, o := range sm.take(isTrap) {
		n, err := mad.DecodeNotice(mad.SMP(o.MAD).Data())
		if err != nil {
			t.Fatal(err)
		}
		if n.IssuerLID == lidSW2 && !old[mad.MAD(o.MAD).TransactionID()] {
			nf, found = n, true
		}
	}
	if !found {
		t.Fatal("no trap from sw2 after its link to ca2 went down")
	}
	if nf.TrapNumber != mad.TrapLinkStateChange {
		t.Errorf("trap %d from sw2, want 128", nf.TrapNumber)
	}
	if st := f.sw["sw2"].Port(2).State(); st.Port != mad.PortStateDown {
		t.Errorf("sw2 port 2: %v, want Down", st)
	}
}

// TestMalformed injects garbage and short MADs at sw1: they are counted
// and dropped, and sw1 still answers.
func TestMalformed(t *testing.T) {
	f := newFabric(t, line(t), port.Config{})
	ep := f.pipes[topologies.PortRef{Node: 0, Port: 1}] // ca1's end, toward sw1
	in := f.sw["sw1"].Port(1)
	short := wire.AppendUD(nil, &wire.UDFields{VL: 15, DLID: mad.PermissiveLID, SLID: mad.PermissiveLID,
		PKey: 0xffff, DestQP: wire.QP0, Payload: make([]byte, 24)})
	bad := porttest.SMP(mad.PermissiveLID, 1)
	bad[len(bad)-1] ^= 0xff // VCRC
	for _, tc := range []struct {
		name string
		pkt  []byte
	}{
		{name: "garbage", pkt: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{name: "bad CRC", pkt: bad},
		{name: "short MAD", pkt: short},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := in.Drops().Total()
			_ = ep.WritePacket(link.KindData, tc.pkt)
			f.run(t, func() bool { return in.Drops().Total() > before })
		})
	}
	ni := mad.NodeInfo(f.dr(t, mad.MethodGet, mad.AttrNodeInfo, 0, nil, toSW1...)).Fields()
	if ni.NodeGUID != 0x0100 {
		t.Errorf("sw1 NodeGUID %#x after malformed input, want 0x100", ni.NodeGUID)
	}
}

// udFrom returns a sealed UD data packet from slid to dlid on SL sl.
func udFrom(slid, dlid uint16, sl uint8, n int, seq byte) []byte {
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = seq + byte(i)
	}
	return wire.AppendUD(nil, &wire.UDFields{SL: sl, DLID: dlid, SLID: slid, PKey: 0xffff,
		DestQP: 2, QKey: 0x1234, SrcQP: 2, Payload: payload})
}

// TestDRLIDRoutedParts sends directed-route SMPs whose route starts and
// ends LID-routed (DrSLID = the SM's LID, LRH DLID = sw2): sw1 must switch
// them by its LFT both ways, not hand them to its agent, and the DR part
// from sw2 reaches ca2.
func TestDRLIDRoutedParts(t *testing.T) {
	f := newFabric(t, line(t), port.Config{})
	f.configure(t, true)
	cases := []struct {
		name string
		path []uint8 // from sw2, Path[0] unused
		want uint64  // NodeGUID answered
	}{
		{"sw2 itself", []uint8{0}, 0x0110},
		{"ca2 beyond sw2", []uint8{0, 2}, 0x0210},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.sw["sw1"].Stats().ToAgent
			b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet,
				TransactionID: uint64(1000 + i), AttrID: mad.AttrNodeInfo, Path: c.path, DrSLID: lidCA1})
			if err != nil {
				t.Fatal(err)
			}
			r := mad.DRSMP(f.sm(t, agent.Request{Port: 1, DLID: lidSW2, MAD: b}))
			if st := r.Status(); st != mad.StatusOK {
				t.Fatalf("status %v", st)
			}
			if got := mad.NodeInfo(r.Data()).Fields().NodeGUID; got != c.want {
				t.Errorf("NodeGUID %#x, want %#x", got, c.want)
			}
			if got := f.sw["sw1"].Stats().ToAgent - before; got != 0 {
				t.Errorf("sw1's agent got %d MADs of a route it only switches, want 0", got)
			}
		})
	}
	f.noDrops(t)
}
