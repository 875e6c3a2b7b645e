package agent_test

import (
	"slices"
	"testing"

	"ibfab/agent"
	"ibfab/wire/mad"
)

// TestForwardingTables programs the LFT and MFT by SMPs and reads them
// back through the data plane's accessors.
func TestForwardingTables(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 20)
	var lft mad.LinearForwardingTableFields
	for i := range lft.Ports {
		lft.Ports[i] = mad.LFTNoPort
	}
	lft.Ports[0x05], lft.Ports[0x06], lft.Ports[0x07] = 3, 0, 21 // 21: no such port
	nd.do(t, smp(mad.MethodSet, mad.AttrLinearFwdTbl, 2, mad.AppendLinearForwardingTable(nil, &lft)))
	r := nd.do(t, smp(mad.MethodGet, mad.AttrLinearFwdTbl, 2, nil))
	if got := mad.LinearForwardingTable(r.Data()).Fields(); got != lft {
		t.Errorf("Get(LFT block 2) = %v, want %v", got.Ports[:8], lft.Ports[:8])
	}
	if got := mad.LinearForwardingTable(nd.do(t, smp(mad.MethodGet, mad.AttrLinearFwdTbl, 3, nil)).Data()).Port(0); got != mad.LFTNoPort {
		t.Errorf("unset LFT entry %d, want %d", got, mad.LFTNoPort)
	}
	for _, tt := range []struct {
		name string
		top  uint16
		lid  uint16
		port uint8
		ok   bool
	}{
		{"routed", 200, 133, 3, true},
		{"to the switch itself", 200, 134, 0, true},
		{"no such port", 200, 135, 0, false},
		{"no entry", 200, 136, 0, false},
		{"above LinearFDBTop", 133, 134, 0, false},
		{"at LinearFDBTop", 133, 133, 3, true},
		{"multicast", 200, 0xc000, 0, false},
		{"permissive", 200, 0xffff, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nd.do(t, smp(mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{LinearFDBTop: tt.top})))
			if p, ok := nd.a.OutPort(tt.lid); p != tt.port || ok != tt.ok {
				t.Errorf("OutPort(%d) = %d, %v, want %d, %v", tt.lid, p, ok, tt.port, tt.ok)
			}
		})
	}

	// Multicast: MLID 0xc021 (block 1, entry 1) to ports 2 and 17, which
	// sit in positions 0 and 1.
	for pos, mask := range []uint16{1 << 2, 1 << 1} {
		var f mad.MulticastForwardingTableFields
		f.PortMasks[1] = mask
		nd.do(t, smp(mad.MethodSet, mad.AttrMulticastFwdTbl, mad.MFTModifier(1, uint8(pos)), mad.AppendMulticastForwardingTable(nil, &f)))
	}
	ps, ok := nd.a.MulticastPorts(0xc021)
	if !ok || !slices.Equal(ps.Ports(), []uint8{2, 17}) || ps.Len() != 2 {
		t.Errorf("MulticastPorts(0xc021) = %v, %v, want [2 17]", ps.Ports(), ok)
	}
	r = nd.do(t, smp(mad.MethodGet, mad.AttrMulticastFwdTbl, mad.MFTModifier(1, 1), nil))
	if got := mad.MulticastForwardingTable(r.Data()).PortMask(1); got != 1<<1 {
		t.Errorf("Get(MFT block 1 position 1) entry 1 = %#x, want 0x2", got)
	}
	if _, ok := nd.a.MulticastPorts(0xc020); ok {
		t.Errorf("MulticastPorts of an empty entry reports ports")
	}
	if _, ok := nd.a.MulticastPorts(5); ok {
		t.Errorf("MulticastPorts of a unicast LID reports ports")
	}
}

// TestSLtoVL programs SLtoVL tables one pair at a time and with the
// all-ports bits, and reads them through VLFor.
func TestSLtoVL(t *testing.T) {
	table := func(vl uint8) []byte {
		var f mad.SLtoVLMappingTableFields
		for sl := range f.VL {
			f.VL[sl] = (vl + uint8(sl)) % 15
		}
		return mad.AppendSLtoVLMappingTable(nil, &f)
	}
	t.Run("switch", func(t *testing.T) {
		nd := newNode(t, mad.NodeTypeSwitch, 3)
		mod := func(m mad.SLtoVLModifier) uint32 { return m.Modifier() }
		nd.do(t, smp(mad.MethodSet, mad.AttrSLtoVLMapping, mod(mad.SLtoVLModifier{AllInPorts: true, AllOutPorts: true}), table(1)))
		nd.do(t, smp(mad.MethodSet, mad.AttrSLtoVLMapping, mod(mad.SLtoVLModifier{InPort: 2, OutPort: 3}), table(5)))
		nd.do(t, smp(mad.MethodSet, mad.AttrSLtoVLMapping, mod(mad.SLtoVLModifier{InPort: 1, AllOutPorts: true}), table(9)))
		for _, tt := range []struct{ in, out, sl, want uint8 }{
			{0, 1, 0, 1}, {3, 2, 4, 5}, {2, 3, 0, 5}, {2, 3, 2, 7}, {1, 0, 0, 9}, {1, 3, 1, 10}, {2, 1, 0, 1},
			{9, 1, 0, 15}, {1, 9, 0, 15}, {1, 1, 16, 15},
		} {
			if got := nd.a.VLFor(tt.in, tt.out, tt.sl); got != tt.want {
				t.Errorf("VLFor(%d, %d, %d) = %d, want %d", tt.in, tt.out, tt.sl, got, tt.want)
			}
		}
		r := nd.do(t, smp(mad.MethodGet, mad.AttrSLtoVLMapping, mod(mad.SLtoVLModifier{InPort: 2, OutPort: 3}), nil))
		if got := mad.SLtoVLMappingTable(r.Data()).VL(0); got != 5 {
			t.Errorf("Get(SLtoVL 2→3) SL0 = %d, want 5", got)
		}
	})
	t.Run("CA", func(t *testing.T) {
		nd := newNode(t, mad.NodeTypeCA, 2)
		nd.do(t, smp(mad.MethodSet, mad.AttrSLtoVLMapping, 0x0302, table(4))) // modifier ignored: port 1's table
		if got := nd.a.VLFor(7, 1, 1); got != 5 {
			t.Errorf("VLFor(_, 1, 1) = %d, want 5", got)
		}
		if got := nd.a.VLFor(0, 2, 1); got != 0 {
			t.Errorf("VLFor(_, 2, 1) = %d, want 0 (port 2 untouched)", got)
		}
	})
}

// TestVLArbitration programs arbitration blocks and reads them through
// VLArbitration.
func TestVLArbitration(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 2, func(c *agent.Config) { c.VLArbHighCap = 40 })
	block := func(vl, w uint8) []byte {
		var f mad.VLArbitrationTableFields
		for i := range f.Entries {
			f.Entries[i] = mad.VLArbEntry{VL: vl, Weight: w + uint8(i)}
		}
		return mad.AppendVLArbitrationTable(nil, &f)
	}
	nd.do(t, smp(mad.MethodSet, mad.AttrVLArbitration, mad.VLArbModifier(mad.VLArbLow0, 2), block(1, 10)))
	nd.do(t, smp(mad.MethodSet, mad.AttrVLArbitration, mad.VLArbModifier(mad.VLArbHigh32, 2), block(3, 100)))
	pi := forSet(nd.portInfo(t, 2))
	pi.VLHighLimit = 9
	nd.setPortInfo(t, 2, pi)
	c := nd.a.VLArbitration(2)
	if c.Low[0] != (mad.VLArbEntry{VL: 1, Weight: 10}) || c.Low[31].Weight != 41 || c.Low[32].Weight != 0 {
		t.Errorf("low table %v", c.Low[:33])
	}
	if c.High[32] != (mad.VLArbEntry{VL: 3, Weight: 100}) || c.High[39].Weight != 107 || c.High[40] != (mad.VLArbEntry{}) {
		t.Errorf("high entries 32-40 %v: entries past HighCap 40 must stay empty", c.High[32:41])
	}
	if c.HighCap != 40 || c.LowCap != 64 || c.VLHighLimit != 9 {
		t.Errorf("caps %d/%d limit %d, want 40/64 9", c.HighCap, c.LowCap, c.VLHighLimit)
	}
	r := nd.do(t, smp(mad.MethodGet, mad.AttrVLArbitration, mad.VLArbModifier(mad.VLArbHigh32, 2), nil))
	if got := mad.VLArbitrationTable(r.Data()); got.Weight(7) != 107 || got.Weight(8) != 0 {
		t.Errorf("Get(high 32-63) weights %d %d, want 107 0", got.Weight(7), got.Weight(8))
	}
	if got := nd.a.VLArbitration(1); got.Low[0] != (mad.VLArbEntry{VL: 0, Weight: agent.DefaultVLArbWeight}) {
		t.Errorf("port 1 changed: %v", got.Low[0])
	}
}

// TestPKeyTable programs P_Key tables and checks PKeyMatch.
func TestPKeyTable(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 2, func(c *agent.Config) { c.PartitionEnforcementCap = 40 })
	var f mad.PKeyTableFields
	f.PKeys[0], f.PKeys[7] = 0x8001, 0x0002
	nd.do(t, smp(mad.MethodSet, mad.AttrPKeyTable, mad.PKeyTableModifier(2, 1), mad.AppendPKeyTable(nil, &f)))
	keys := nd.a.PKeys(2)
	if len(keys) != 40 || keys[32] != 0x8001 || keys[39] != 0x0002 {
		t.Errorf("port 2 table %v", keys)
	}
	r := nd.do(t, smp(mad.MethodGet, mad.AttrPKeyTable, mad.PKeyTableModifier(2, 1), nil))
	if got := mad.PKeyTable(r.Data()); got.PKey(7) != 0x0002 || got.PKey(8) != 0 {
		t.Errorf("Get block 1: %v", got.Fields())
	}
	for _, tt := range []struct {
		port uint8
		key  mad.PKey
		want bool
	}{
		{2, 0x8001, true}, {2, 0x0001, true}, {2, 0x8002, true}, {2, 0x0002, false}, {2, 0x8003, false}, {2, 0xffff, true},
		{0, 0xffff, true}, {1, 0xffff, true}, {9, 0xffff, false},
	} {
		if got := nd.a.PKeyMatch(tt.port, tt.key); got != tt.want {
			t.Errorf("PKeyMatch(%d, %#x) = %v, want %v", tt.port, tt.key, got, tt.want)
		}
	}
	// A switch port compares bases only: the limited 0x0002 passes the
	// limited entry PKeyMatch refuses it.
	for _, tt := range []struct {
		port uint8
		key  mad.PKey
		want bool
	}{
		{2, 0x8001, true}, {2, 0x0001, true}, {2, 0x8002, true}, {2, 0x0002, true}, {2, 0x8003, false},
		{2, 0x0000, false}, {2, 0x8000, false}, {1, 0x7fff, true}, {1, 0x8001, false}, {9, 0xffff, false},
	} {
		if got := nd.a.PartitionMember(tt.port, tt.key); got != tt.want {
			t.Errorf("PartitionMember(%d, %#x) = %v, want %v", tt.port, tt.key, got, tt.want)
		}
	}
}

// TestPMA checks the counters the PMA reports and resets.
func TestPMA(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 2)
	nd.ctrs.Set(1, mad.PortCountersFields{PortXmitPkts: 10, PortRcvPkts: 20, SymbolErrorCounter: 0xfff0, LocalLinkIntegrityErrors: 9},
		mad.PortCountersExtendedFields{PortXmitData: 100, PortMulticastRcvPkts: 3})
	nd.ctrs.Set(2, mad.PortCountersFields{PortXmitPkts: 5, SymbolErrorCounter: 0x20, LocalLinkIntegrityErrors: 9},
		mad.PortCountersExtendedFields{PortXmitData: 1 << 63, PortMulticastRcvPkts: 4})
	get := func(t *testing.T, m mad.Method, attr mad.AttrID, data []byte) []byte {
		t.Helper()
		o := one(t, nd.a.HandleMAD(gmp(pma(m, attr, data))))
		if st := status(o.MAD); st != mad.StatusOK || o.DestQP != 1 || o.QKey != 0x80010000 || o.VL != 0 {
			t.Fatalf("%v %v: status %v QP %d QKey %#x VL %d", m, attr, st, o.DestQP, o.QKey, o.VL)
		}
		return mad.PMA(o.MAD).Data()
	}
	pc := func(sel uint8, cs uint16) []byte {
		return mad.AppendPortCounters(nil, &mad.PortCountersFields{PortSelect: sel, CounterSelect: cs})
	}
	c := mad.PortCounters(get(t, mad.MethodGet, mad.AttrPortCounters, pc(1, 0))).Fields()
	if c.PortSelect != 1 || c.PortXmitPkts != 10 || c.PortRcvPkts != 20 {
		t.Errorf("port 1: %+v", c)
	}
	c = mad.PortCounters(get(t, mad.MethodGet, mad.AttrPortCounters, pc(mad.PortSelectAll, 0))).Fields()
	if c.PortXmitPkts != 15 || c.SymbolErrorCounter != 0xffff || c.LocalLinkIntegrityErrors != 15 {
		t.Errorf("all ports (saturating): %+v", c)
	}
	c = mad.PortCounters(get(t, mad.MethodSet, mad.AttrPortCounters, pc(1, mad.PCSelXmitPkts))).Fields()
	if c.PortXmitPkts != 0 || c.PortRcvPkts != 20 {
		t.Errorf("after resetting PortXmitPkts of port 1: %+v", c)
	}
	if got := nd.ctrs.PortCounters(2).PortXmitPkts; got != 5 {
		t.Errorf("port 2 PortXmitPkts %d after resetting port 1", got)
	}
	x := mad.PortCountersExtended(get(t, mad.MethodGet, mad.AttrPortCountersExtended,
		mad.AppendPortCountersExtended(nil, &mad.PortCountersExtendedFields{PortSelect: mad.PortSelectAll}))).Fields()
	if x.PortXmitData != 1<<63+100 || x.PortMulticastRcvPkts != 7 {
		t.Errorf("extended, all ports: %+v", x)
	}
	x = mad.PortCountersExtended(get(t, mad.MethodSet, mad.AttrPortCountersExtended,
		mad.AppendPortCountersExtended(nil, &mad.PortCountersExtendedFields{PortSelect: 2, CounterSelect: mad.PCExtSelXmitData}))).Fields()
	if x.PortXmitData != 0 || x.PortMulticastRcvPkts != 4 {
		t.Errorf("extended port 2 after reset: %+v", x)
	}
	cpi := get(t, mad.MethodGet, mad.AttrClassPortInfo, nil)
	if cpi[0] != 1 || cpi[1] != 1 || cpi[2]&1 == 0 || cpi[7]&0x1f != agent.DefaultRespTimeValue {
		t.Errorf("ClassPortInfo % x", cpi[:8])
	}
}

// TestSend covers the local SM's way into the fabric.
func TestSend(t *testing.T) {
	nd := newNode(t, mad.NodeTypeCA, 2)
	pi := forSet(nd.portInfo(t, 1))
	pi.LID = 9
	nd.setPortInfo(t, 1, pi)
	tests := []struct {
		name  string
		r     agent.Request
		local bool
		port  uint8
		n     int
	}{
		{"LID-routed to itself", agent.Request{Port: 1, DLID: 9, MAD: smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil)}, true, 1, 1},
		{"LID-routed out", agent.Request{Port: 2, DLID: 20, MAD: smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil)}, false, 2, 1},
		{"PMA to itself", agent.Request{Port: 1, DLID: 9, MAD: pma(mad.MethodGet, mad.AttrClassPortInfo, nil)}, true, 1, 1},
		{"PMA out", agent.Request{Port: 1, DLID: 20, MAD: pma(mad.MethodGet, mad.AttrClassPortInfo, nil)}, false, 1, 1},
		{"port 0 of a CA", agent.Request{Port: 0, DLID: 20, MAD: smp(mad.MethodGet, mad.AttrNodeInfo, 0, nil)}, false, 0, 0},
		{"short", agent.Request{Port: 1, DLID: 20, MAD: make([]byte, 10)}, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outs := nd.a.Send(tt.r)
			if len(outs) != tt.n {
				t.Fatalf("Send = %+v, want %d outbounds", outs, tt.n)
			}
			if tt.n == 0 {
				return
			}
			if o := outs[0]; o.Local != tt.local || o.Port != tt.port {
				t.Errorf("Local %v port %d, want %v %d", o.Local, o.Port, tt.local, tt.port)
			}
		})
	}

	// The SM answers a directed-route SMInfo Get that reached it.
	nd.a.SetIsSM(1, true)
	req, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrSMInfo, Path: []uint8{0, 3, 1}})
	in := lidDR(req)
	dr := mad.DRSMP(in.MAD)
	dr.SetHopPointer(2) // as the switch before us passed it on
	o := one(t, nd.a.HandleMAD(in))
	if !o.Local || mad.DRSMP(o.MAD).HopPointer() != 3 {
		t.Fatalf("SMInfo request not handed to the SM at hop 3: %+v", o)
	}
	resp := mad.DRSMP(o.MAD)
	resp.MAD().SetMethod(mad.MethodGetResp)
	resp.SetDirection(true)
	back := one(t, nd.a.Send(agent.Request{Port: 1, DLID: mad.PermissiveLID, MAD: resp}))
	if back.Local || back.Port != 1 || mad.DRSMP(back.MAD).HopPointer() != 2 {
		t.Errorf("SM's response: %+v hop pointer %d, want out of port 1 at hop 2", back, mad.DRSMP(back.MAD).HopPointer())
	}
}

// TestResetVLs checks the VL state of a port out of reset: every VL of
// VLCap operational, and the VLArbitrationTable the round robin over them
// that the port's arbiter runs, the high-priority table empty.
func TestResetVLs(t *testing.T) {
	for _, vlcap := range []uint8{1, 2, 3, 4, 5} {
		nd := newNode(t, mad.NodeTypeSwitch, 2, func(c *agent.Config) { c.VLCap = vlcap })
		pi := nd.portInfo(t, 1)
		if pi.VLCap != vlcap || pi.OperationalVLs != vlcap {
			t.Errorf("VLCap %d: PortInfo VLCap %d OperationalVLs %d, want both %d", vlcap, pi.VLCap, pi.OperationalVLs, vlcap)
		}
		var want agent.VLArbConfig
		want.HighCap, want.LowCap = agent.DefaultVLArbCap, agent.DefaultVLArbCap
		for vl := range mad.NumDataVLs(vlcap) {
			want.Low[vl] = mad.VLArbEntry{VL: uint8(vl), Weight: agent.DefaultVLArbWeight}
		}
		if got := nd.a.VLArbitration(1); got != want {
			t.Errorf("VLCap %d: VLArbitration(1) = %+v, want %+v", vlcap, got, want)
		}
		r := nd.do(t, smp(mad.MethodGet, mad.AttrVLArbitration, mad.VLArbModifier(mad.VLArbLow0, 1), nil))
		if got := mad.VLArbitrationTable(r.Data()); got.VL(0) != 0 || got.Weight(0) != agent.DefaultVLArbWeight {
			t.Errorf("VLCap %d: Get(low 0-31) entry 0 = VL%d weight %d", vlcap, got.VL(0), got.Weight(0))
		}
	}
}

// TestForwardingTableCaps: the last block SwitchInfo's LinearFDBCap and
// MulticastFDBCap promise holds and routes; the block after it does not
// exist (invalid field, nothing stored).
func TestForwardingTableCaps(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 4)
	si := mad.SwitchInfo(nd.do(t, smp(mad.MethodGet, mad.AttrSwitchInfo, 0, nil)).Data()).Fields()
	lastLFT := uint32(si.LinearFDBCap/mad.LFTEntriesPerBlock - 1)
	var lft mad.LinearForwardingTableFields
	for i := range lft.Ports {
		lft.Ports[i] = 2
	}
	nd.do(t, smp(mad.MethodSet, mad.AttrLinearFwdTbl, lastLFT, mad.AppendLinearForwardingTable(nil, &lft)))
	nd.do(t, smp(mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{LinearFDBTop: si.LinearFDBCap - 1})))
	if p, ok := nd.a.OutPort(si.LinearFDBCap - 1); !ok || p != 2 {
		t.Errorf("OutPort(%#x), the last LID of LinearFDBCap %d = %d, %v; want 2, true", si.LinearFDBCap-1, si.LinearFDBCap, p, ok)
	}
	r := nd.a.HandleMAD(lidSMP(smp(mad.MethodSet, mad.AttrLinearFwdTbl, lastLFT+1, mad.AppendLinearForwardingTable(nil, &lft))))
	if st := status(one(t, r).MAD); st != mad.StatusInvalidField {
		t.Errorf("Set(LFT block %d) beyond LinearFDBCap: status %v, want invalid field", lastLFT+1, st)
	}

	lastMFT := uint16(si.MulticastFDBCap/mad.MFTEntriesPerBlock - 1)
	mlid := mad.MulticastLIDBase + si.MulticastFDBCap - 1
	var mft mad.MulticastForwardingTableFields
	mft.PortMasks[mad.MFTEntriesPerBlock-1] = 1 << 3
	nd.do(t, smp(mad.MethodSet, mad.AttrMulticastFwdTbl, mad.MFTModifier(lastMFT, 0), mad.AppendMulticastForwardingTable(nil, &mft)))
	if ps, ok := nd.a.MulticastPorts(mlid); !ok || !slices.Equal(ps.Ports(), []uint8{3}) {
		t.Errorf("MulticastPorts(%#x), the last MLID of MulticastFDBCap %d = %v, %v; want [3]", mlid, si.MulticastFDBCap, ps.Ports(), ok)
	}
	r = nd.a.HandleMAD(lidSMP(smp(mad.MethodSet, mad.AttrMulticastFwdTbl, mad.MFTModifier(lastMFT+1, 0), mad.AppendMulticastForwardingTable(nil, &mft))))
	if st := status(one(t, r).MAD); st != mad.StatusInvalidField {
		t.Errorf("Set(MFT block %d) beyond MulticastFDBCap: status %v, want invalid field", lastMFT+1, st)
	}
}

// TestTablesSharedUntilSet: agents alike start on shared reset tables;
// a Set that changes one port's copies it, leaving the other ports and
// the other agents as they were, and a Set that changes nothing keeps it.
func TestTablesSharedUntilSet(t *testing.T) {
	opt := func(c *agent.Config) { c.PartitionEnforcementCap = 40 }
	a, b := newNode(t, mad.NodeTypeSwitch, 3, opt), newNode(t, mad.NodeTypeSwitch, 3, opt)

	var pk mad.PKeyTableFields
	pk.PKeys[0], pk.PKeys[1] = mad.DefaultPKey, 0x8005
	a.do(t, smp(mad.MethodSet, mad.AttrPKeyTable, mad.PKeyTableModifier(2, 0), mad.AppendPKeyTable(nil, &pk)))
	if !a.a.PKeyMatch(2, 0x8005) || a.a.PKeyMatch(1, 0x8005) || b.a.PKeyMatch(2, 0x8005) {
		t.Errorf("P_Key 0x8005 at a[2] %v, a[1] %v, b[2] %v: want only a[2]",
			a.a.PKeyMatch(2, 0x8005), a.a.PKeyMatch(1, 0x8005), b.a.PKeyMatch(2, 0x8005))
	}
	// The reset table written back as it is: still the default.
	pk.PKeys[1] = 0
	b.do(t, smp(mad.MethodSet, mad.AttrPKeyTable, mad.PKeyTableModifier(1, 0), mad.AppendPKeyTable(nil, &pk)))
	if keys := b.a.PKeys(1); len(keys) != 40 || keys[0] != mad.DefaultPKey || keys[1] != 0 {
		t.Errorf("b[1] after a Set of the reset table: %v", keys)
	}

	var sl mad.SLtoVLMappingTableFields
	sl.VL[3] = 2
	a.do(t, smp(mad.MethodSet, mad.AttrSLtoVLMapping, mad.SLtoVLModifier{InPort: 1, OutPort: 2}.Modifier(), mad.AppendSLtoVLMappingTable(nil, &sl)))
	if a.a.VLFor(1, 2, 3) != 2 || a.a.VLFor(2, 2, 3) != 0 || a.a.VLFor(1, 3, 3) != 0 || b.a.VLFor(1, 2, 3) != 0 {
		t.Errorf("SL3 1->2: a %d, a from 2 %d, a to 3 %d, b %d; want 2 0 0 0",
			a.a.VLFor(1, 2, 3), a.a.VLFor(2, 2, 3), a.a.VLFor(1, 3, 3), b.a.VLFor(1, 2, 3))
	}

	var arb mad.VLArbitrationTableFields
	arb.Entries[0] = mad.VLArbEntry{VL: 1, Weight: 7}
	a.do(t, smp(mad.MethodSet, mad.AttrVLArbitration, mad.VLArbModifier(mad.VLArbLow0, 1), mad.AppendVLArbitrationTable(nil, &arb)))
	pi := forSet(a.portInfo(t, 3))
	pi.VLHighLimit = 4
	a.setPortInfo(t, 3, pi)
	reset := mad.VLArbEntry{VL: 0, Weight: agent.DefaultVLArbWeight}
	if got := a.a.VLArbitration(1).Low[0]; got != arb.Entries[0] {
		t.Errorf("a[1] low[0] = %v, want %v", got, arb.Entries[0])
	}
	if got := a.a.VLArbitration(3); got.VLHighLimit != 4 || got.Low[0] != reset {
		t.Errorf("a[3]: limit %d low[0] %v, want 4 %v", got.VLHighLimit, got.Low[0], reset)
	}
	for _, p := range []uint8{1, 3} {
		if got := b.a.VLArbitration(p); got.VLHighLimit != 0 || got.Low[0] != reset {
			t.Errorf("b[%d]: limit %d low[0] %v, want the reset setup", p, got.VLHighLimit, got.Low[0])
		}
	}
	if got := a.a.PortConfig(3).VLHighLimit; got != 4 || b.a.PortConfig(3).VLHighLimit != 0 {
		t.Errorf("PortConfig VLHighLimit a[3] %d b[3] %d, want 4 0", got, b.a.PortConfig(3).VLHighLimit)
	}
}

// TestLFTGrows: blocks set out of order, far apart, read back; blocks
// between them and past the highest set have no entry.
func TestLFTGrows(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 4)
	nd.do(t, smp(mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{LinearFDBTop: 0xbfff})))
	set := func(block uint32, port uint8) {
		var f mad.LinearForwardingTableFields
		for i := range f.Ports {
			f.Ports[i] = port
		}
		nd.do(t, smp(mad.MethodSet, mad.AttrLinearFwdTbl, block, mad.AppendLinearForwardingTable(nil, &f)))
	}
	set(5, 1)
	set(700, 2)
	set(0, 3)
	set(6, 4)
	for _, tt := range []struct {
		lid  uint16
		port uint8
		ok   bool
	}{{5 * 64, 1, true}, {700*64 + 63, 2, true}, {1, 3, true}, {6 * 64, 4, true}, {7 * 64, 0, false}, {701 * 64, 0, false}, {0xbfff, 0, false}} {
		if p, ok := nd.a.OutPort(tt.lid); p != tt.port || ok != tt.ok {
			t.Errorf("OutPort(%d) = %d, %v, want %d, %v", tt.lid, p, ok, tt.port, tt.ok)
		}
	}
	r := nd.do(t, smp(mad.MethodGet, mad.AttrLinearFwdTbl, 701, nil))
	if got := mad.LinearForwardingTable(r.Data()).Port(0); got != mad.LFTNoPort {
		t.Errorf("Get(LFT block 701)[0] = %d, want none", got)
	}
	if st := status(nd.do(t, smp(mad.MethodGet, mad.AttrLinearFwdTbl, 768, nil))); st != mad.StatusInvalidField {
		t.Errorf("Get(LFT block 768, past LinearFDBCap): %v", st)
	}
}
