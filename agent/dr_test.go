package agent_test

import (
	"testing"

	"ibfab/agent"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// drCase is one directed-route SMP arriving at a node, and what the node
// must do with it.
type drCase struct {
	name       string
	ca         bool
	d          bool    // the D bit (and a GetResp method with it)
	hp, hc     uint8   // hop pointer and hop count on arrival
	path       []uint8 // InitialPath[1:]
	ret        []uint8 // ReturnPath[1:]
	drSLID     uint16  // 0: permissive
	drDLID     uint16  // 0: permissive
	port       uint8   // arrival port
	slid, dlid uint16  // LRH; dlid 0: permissive

	want     string // "forward", "respond", "local" or "drop"
	outPort  uint8
	outHP    uint8
	outSLID  uint16 // 0: permissive
	outDLID  uint16
	retAt    uint8 // ReturnPath index the node must have written ...
	retValue uint8 // ... with this port
}

// TestDirectedRouteRules walks the hop-pointer cases of IBA 14.2.2 at a
// switch (LID 3; LID 1 routed out of port 1, LID 9 out of port 4) and at a
// two-port CA (LID 5).
func TestDirectedRouteRules(t *testing.T) {
	tests := []drCase{
		{name: "outgoing, intermediate switch", hp: 1, hc: 3, path: []uint8{1, 4, 2}, port: 2,
			want: "forward", outPort: 4, outHP: 2, retAt: 1, retValue: 2},
		{name: "outgoing, destination switch", hp: 1, hc: 1, path: []uint8{1}, port: 2,
			want: "respond", outPort: 2, outHP: 1, retAt: 1, retValue: 2},
		{name: "outgoing, on over the LID-routed suffix", hp: 1, hc: 1, path: []uint8{1}, drDLID: 9, port: 2,
			want: "forward", outPort: 4, outHP: 2, outSLID: 3, outDLID: 9, retAt: 1, retValue: 2},
		{name: "outgoing, end of the LID-routed prefix", hp: 0, hc: 2, path: []uint8{2, 1}, drSLID: 1, port: 1, slid: 1, dlid: 3,
			want: "forward", outPort: 2, outHP: 1},
		{name: "outgoing, hop pointer 0 without a prefix", hp: 0, hc: 2, path: []uint8{2, 1}, port: 1,
			want: "drop"},
		{name: "outgoing, prefix not addressed to the switch", hp: 0, hc: 2, path: []uint8{2, 1}, drSLID: 1, port: 1, slid: 1,
			want: "drop"},
		{name: "outgoing, reached by the prefix alone", hp: 0, hc: 0, drSLID: 1, port: 1, slid: 1, dlid: 3,
			want: "respond", outPort: 1, outHP: 0, outSLID: 3, outDLID: 1},
		{name: "outgoing, hop count 0 off the wire", hp: 0, hc: 0, port: 1,
			want: "drop"},
		{name: "outgoing, destination at the end of the suffix", hp: 3, hc: 2, path: []uint8{1, 1}, drDLID: 3, port: 4, slid: 9, dlid: 3,
			want: "respond", outPort: 4, outHP: 3, outSLID: 3, outDLID: 9},
		{name: "outgoing, past the path without a suffix", hp: 3, hc: 2, path: []uint8{1, 1}, port: 4,
			want: "drop"},
		{name: "outgoing, hop pointer beyond hop count + 1", hp: 4, hc: 2, path: []uint8{1, 1}, port: 4,
			want: "drop"},
		{name: "outgoing, port 0", hp: 1, hc: 2, path: []uint8{1, 0}, port: 2,
			want: "drop"},
		{name: "outgoing, port beyond NumPorts", hp: 1, hc: 2, path: []uint8{1, 5}, port: 2,
			want: "drop"},
		{name: "returning, back over the suffix", d: true, hp: 3, hc: 2, ret: []uint8{1, 2}, drDLID: 9, port: 4, slid: 9, dlid: 3,
			want: "forward", outPort: 2, outHP: 2},
		{name: "returning, intermediate switch", d: true, hp: 2, hc: 3, ret: []uint8{3, 1, 1}, port: 2,
			want: "forward", outPort: 3, outHP: 1},
		{name: "returning, reaches its requester", d: true, hp: 1, hc: 3, ret: []uint8{3, 1, 1}, port: 2,
			want: "local", outHP: 0},
		{name: "returning, on over the prefix", d: true, hp: 1, hc: 3, ret: []uint8{3, 1, 1}, drSLID: 1, port: 2,
			want: "forward", outPort: 1, outHP: 0, outSLID: 3, outDLID: 1},
		{name: "returning, requester at the end of the prefix", d: true, hp: 0, hc: 3, drSLID: 1, port: 1, slid: 1, dlid: 3,
			want: "local", outHP: 0},
		{name: "returning, hop pointer 0 without a prefix", d: true, hp: 0, hc: 3, port: 1,
			want: "drop"},
		{name: "returning, port 0", d: true, hp: 2, hc: 3, ret: []uint8{0, 1, 1}, port: 2,
			want: "drop"},
		{name: "CA, outgoing, in the middle", ca: true, hp: 1, hc: 2, path: []uint8{1, 1}, port: 1,
			want: "drop"},
		{name: "CA, outgoing, destination", ca: true, hp: 2, hc: 2, path: []uint8{1, 1}, ret: []uint8{4}, port: 2,
			want: "respond", outPort: 2, outHP: 2, retAt: 2, retValue: 2},
		{name: "CA, outgoing, suffix", ca: true, hp: 2, hc: 2, path: []uint8{1, 1}, drDLID: 9, port: 2,
			want: "drop"},
		{name: "CA, returning, reaches its requester", ca: true, d: true, hp: 1, hc: 2, ret: []uint8{2, 1}, port: 2,
			want: "local", outHP: 0},
		{name: "CA, returning, in the middle", ca: true, d: true, hp: 2, hc: 3, ret: []uint8{2, 1, 1}, port: 2,
			want: "drop"},
		{name: "CA, returning, prefix", ca: true, d: true, hp: 1, hc: 2, ret: []uint8{2, 1}, drSLID: 1, port: 2,
			want: "drop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t) })
	}
}

func (tt drCase) run(t *testing.T) {
	nd := drNode(t, tt.ca)
	f := mad.DRSMPFields{Method: mad.MethodGet, TransactionID: 42, AttrID: mad.AttrNodeInfo, Direction: tt.d,
		HopPointer: tt.hp, HopCount: tt.hc, DrSLID: orPerm(tt.drSLID), DrDLID: orPerm(tt.drDLID)}
	if tt.d {
		f.Method = mad.MethodGetResp
	}
	copy(f.InitialPath[1:], tt.path)
	copy(f.ReturnPath[1:], tt.ret)
	in := agent.Inbound{Port: tt.port, SLID: orPerm(tt.slid), DLID: orPerm(tt.dlid), DstQP: wire.QP0, MAD: mad.AppendDRSMP(nil, &f)}
	before := nd.a.Stats()
	outs := nd.a.HandleMAD(in)
	if tt.want == "drop" {
		if len(outs) != 0 {
			t.Fatalf("HandleMAD = %+v, want a drop", outs)
		}
		if got := nd.a.Stats().DRDropped; got != before.DRDropped+1 {
			t.Errorf("DRDropped %d, want %d", got, before.DRDropped+1)
		}
		return
	}
	o := one(t, outs)
	r := mad.DRSMP(o.MAD)
	switch tt.want {
	case "local":
		if !o.Local {
			t.Errorf("not handed to the SM: %+v", o)
		}
	case "respond":
		if o.Local || !r.Direction() || r.MAD().Method() != mad.MethodGetResp || r.Status() != mad.StatusOK {
			t.Errorf("want a response: Local %v D %v method %v status %v", o.Local, r.Direction(), r.MAD().Method(), r.Status())
		}
	case "forward":
		if o.Local || r.Direction() != tt.d || r.MAD().Method() != f.Method {
			t.Errorf("want the SMP passed on unchanged in kind: Local %v D %v method %v", o.Local, r.Direction(), r.MAD().Method())
		}
		if got := nd.a.Stats().Forwarded; got != before.Forwarded+1 {
			t.Errorf("Forwarded %d, want %d", got, before.Forwarded+1)
		}
	}
	if r.HopPointer() != tt.outHP {
		t.Errorf("hop pointer %d, want %d", r.HopPointer(), tt.outHP)
	}
	if !o.Local {
		if o.Port != tt.outPort || o.SLID != orPerm(tt.outSLID) || o.DLID != orPerm(tt.outDLID) || o.VL != 15 {
			t.Errorf("out of port %d LIDs %d→%d VL %d, want port %d LIDs %d→%d VL15",
				o.Port, o.SLID, o.DLID, o.VL, tt.outPort, orPerm(tt.outSLID), orPerm(tt.outDLID))
		}
	}
	if tt.retAt != 0 && r.ReturnPath()[tt.retAt] != tt.retValue {
		t.Errorf("ReturnPath[%d] = %d, want %d", tt.retAt, r.ReturnPath()[tt.retAt], tt.retValue)
	}
}

func orPerm(lid uint16) uint16 {
	if lid == 0 {
		return mad.PermissiveLID
	}
	return lid
}

// drNode returns the switch or CA of TestDirectedRouteRules.
func drNode(t *testing.T, ca bool) *node {
	t.Helper()
	if ca {
		nd := newNode(t, mad.NodeTypeCA, 2)
		for p := uint8(1); p <= 2; p++ {
			pi := forSet(nd.portInfo(t, p))
			pi.LID = 5
			r := nd.a.HandleMAD(agent.Inbound{Port: p, SLID: 1, DLID: mad.PermissiveLID, DstQP: wire.QP0,
				MAD: smp(mad.MethodSet, mad.AttrPortInfo, 0, mad.AppendPortInfo(nil, &pi))})
			if len(r) != 1 || status(r[0].MAD) != mad.StatusOK {
				t.Fatalf("setting the CA's LID: %+v", r)
			}
		}
		return nd
	}
	nd := newNode(t, mad.NodeTypeSwitch, 4)
	pi := forSet(nd.portInfo(t, 0))
	pi.LID = 3
	nd.setPortInfo(t, 0, pi)
	var lft mad.LinearForwardingTableFields
	for i := range lft.Ports {
		lft.Ports[i] = mad.LFTNoPort
	}
	lft.Ports[1], lft.Ports[3], lft.Ports[9] = 1, 0, 4
	nd.do(t, smp(mad.MethodSet, mad.AttrLinearFwdTbl, 0, mad.AppendLinearForwardingTable(nil, &lft)))
	return nd
}
