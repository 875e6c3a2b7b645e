package agent_test

import (
	"testing"

	"ibfab/agent"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// FuzzHandleMAD feeds arbitrary MADs, arrival ports, DLIDs and QPs into a
// switch agent and a CA agent, through HandleMAD and Send. Neither may
// panic, and everything they return must be a well-formed packet: a whole
// MAD that decodes as its class, a response that answers the request, an
// SMP on VL15 and nothing else there, a port that exists.
func FuzzHandleMAD(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.port, s.dlid, s.qp, s.mad)
	}
	f.Fuzz(func(t *testing.T, port uint8, dlid uint16, qp uint8, m []byte) {
		for _, typ := range []mad.NodeType{mad.NodeTypeSwitch, mad.NodeTypeCA} {
			nd := newNode(t, typ, 4)
			pi := forSet(nd.portInfo(t, 1))
			pi.LID, pi.MasterSMLID = 3, 1
			nd.setPortInfo(t, 1, pi)
			if typ == mad.NodeTypeSwitch {
				pi := forSet(nd.portInfo(t, 0))
				pi.LID, pi.MasterSMLID = 3, 1
				nd.setPortInfo(t, 0, pi)
			}
			in := agent.Inbound{Port: port, SLID: 1, DLID: dlid, SL: 0, SrcQP: 1, DstQP: uint32(qp),
				PKey: mad.DefaultPKey, MAD: m}
			check(t, nd, m, nd.a.HandleMAD(in))
			check(t, nd, m, nd.a.Send(agent.Request{Port: port, DLID: dlid, DestQP: uint32(qp), MAD: m}))
			nd.a.PortStateChanged(port)
			nd.clk.Advance(agent.MinTrapRepeat)
			check(t, nd, nil, *nd.sent)
		}
	})
}

// check fails t unless every Outbound in outs is well formed; req is the
// MAD that caused them (nil for traps).
func check(t *testing.T, nd *node, req []byte, outs []agent.Outbound) {
	t.Helper()
	for _, o := range outs {
		if len(o.MAD) != mad.MADSize {
			t.Fatalf("Outbound MAD of %d bytes", len(o.MAD))
		}
		h := mad.MAD(o.MAD)
		var err error
		switch h.MgmtClass() {
		case mad.ClassSubnDirected:
			_, err = mad.DecodeDRSMP(o.MAD)
			if err == nil && mad.DRSMP(o.MAD).Direction() != h.Method().IsResponse() {
				t.Fatalf("directed-route SMP with D %v and method %v", mad.DRSMP(o.MAD).Direction(), h.Method())
			}
		case mad.ClassSubnLID:
			_, err = mad.DecodeSMP(o.MAD)
		case mad.ClassPerfMgt:
			_, err = mad.DecodePMA(o.MAD)
		case mad.ClassVendorAR:
			_, err = mad.DecodeARMAD(o.MAD)
		default:
			_, err = mad.DecodeMAD(o.MAD)
		}
		if err != nil {
			t.Fatalf("malformed Outbound: %v", err)
		}
		if o.Local {
			continue
		}
		if o.Port == 0 || o.Port > nd.a.NumPorts() {
			t.Fatalf("Outbound to port %d of %d", o.Port, nd.a.NumPorts())
		}
		if h.MgmtClass().IsSubn() != (o.VL == 15) || o.SLID == 0 || o.DLID == 0 {
			t.Fatalf("class %v on VL %d from LID %d to %d", h.MgmtClass(), o.VL, o.SLID, o.DLID)
		}
		if req != nil && h.Method().IsResponse() && !mad.MAD(req).Method().IsResponse() {
			if h.TransactionID() != mad.MAD(req).TransactionID() || h.MgmtClass() != mad.MAD(req).MgmtClass() {
				t.Fatalf("response TID %#x class %v to a request with TID %#x class %v",
					h.TransactionID(), h.MgmtClass(), mad.MAD(req).TransactionID(), mad.MAD(req).MgmtClass())
			}
		}
		ud := o.UDFields()
		if err := wire.Verify(wire.AppendUD(nil, &ud)); err != nil {
			t.Fatalf("packet of %+v does not verify: %v", o, err)
		}
	}
}

type fuzzSeed struct {
	port uint8
	dlid uint16
	qp   uint8
	mad  []byte
}

// fuzzSeeds are the MADs the fuzz target starts from: one of each kind the
// agent serves. testdata/fuzz/FuzzHandleMAD holds the same, committed.
func fuzzSeeds() []fuzzSeed {
	dr := func(path []uint8, hp uint8, attr mad.AttrID, slid, dlid uint16) []byte {
		b, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 7, AttrID: attr,
			Path: path, DrSLID: slid, DrDLID: dlid})
		mad.DRSMP(b).SetHopPointer(hp)
		return b
	}
	resp := dr([]uint8{0, 1, 2}, 2, mad.AttrNodeInfo, 0, 0)
	mad.DRSMP(resp).SetDirection(true)
	mad.MAD(resp).SetMethod(mad.MethodGetResp)
	pcs := mad.AppendPortCounters(nil, &mad.PortCountersFields{PortSelect: mad.PortSelectAll})
	return []fuzzSeed{
		{1, 0xffff, 0, dr([]uint8{0, 1}, 1, mad.AttrNodeInfo, 0, 0)},
		{2, 0xffff, 0, dr([]uint8{0, 1, 3, 2}, 1, mad.AttrPortInfo, 0, 0)},
		{1, 3, 0, dr([]uint8{0, 2}, 0, mad.AttrNodeInfo, 1, 0)},
		{1, 0xffff, 0, dr([]uint8{0, 1}, 1, mad.AttrNodeInfo, 0, 9)},
		{2, 0xffff, 0, resp},
		{1, 3, 0, smp(mad.MethodGet, mad.AttrSwitchInfo, 0, nil)},
		{1, 3, 0, smp(mad.MethodSet, mad.AttrLinearFwdTbl, 0, make([]byte, 64))},
		{1, 3, 0, smp(mad.MethodSet, mad.AttrPortInfo, 2, nil)},
		{1, 3, 0, smp(mad.MethodTrapRepress, mad.AttrNotice, 0, nil)},
		{1, 3, 0, smp(mad.MethodGet, mad.AttrVLArbitration, mad.VLArbModifier(mad.VLArbHigh0, 1), nil)},
		{1, 3, 1, pma(mad.MethodGet, mad.AttrPortCounters, pcs)},
		{1, 3, 1, pma(mad.MethodSet, mad.AttrPortCountersExtended, nil)},
		{3, 3, 1, pma(mad.MethodGet, mad.AttrClassPortInfo, nil)},
		{1, 3, 1, arMAD(mad.MethodSet, mad.AttrARInfo, 0, arInfoData(mad.ARInfoFields{Enable: true,
			Mode: mad.ARAFI, Threshold: 75, AFCVL: 1, GroupTop: 1}))},
		{1, 3, 1, arMAD(mad.MethodSet, mad.AttrARGroupTable, 0, arGroups(map[int][]uint8{1: {2, 3}}))},
		{1, 3, 1, arMAD(mad.MethodSet, mad.AttrARLIDTable, 0, arLIDs(map[int]uint16{3: 1}))},
	}
}
