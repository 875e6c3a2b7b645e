package softswitch_test

import (
	"testing"

	"ibfab/port"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// setPKeys writes block 0 of the P_Key table of port n of the switch at
// path and sets the port's partition enforcement bits.
func (f *fabric) setPKeys(t *testing.T, n uint8, in, out bool, keys []mad.PKey, path ...uint8) {
	t.Helper()
	data := make([]byte, mad.SMPDataSize)
	for i, k := range keys {
		mad.PKeyTable(data).SetPKey(i, k)
	}
	f.dr(t, mad.MethodSet, mad.AttrPKeyTable, uint32(n)<<16, data, path...)
	f.setPortInfo(t, n, func(pi *mad.PortInfoFields) {
		pi.PartitionEnforcementInbound, pi.PartitionEnforcementOutbound = in, out
	}, path...)
}

// udPKey is udFrom with P_Key k.
func udPKey(slid, dlid uint16, k mad.PKey) []byte {
	return wire.AppendUD(nil, &wire.UDFields{DLID: dlid, SLID: slid, PKey: uint16(k),
		DestQP: 2, QKey: 0x1234, SrcQP: 2, Payload: make([]byte, 64)})
}

// TestPartitionEnforcement checks IBA 10.9.4 at the switches of line():
// sw1's port 1 (ca1's) enforces inbound, sw2's port 2 (ca2's) outbound.
// A packet whose P_Key base has no entry is dropped where it is checked
// and counted in that port's constraint error counter; membership types
// are not compared at a switch (a limited key passes a limited entry);
// with the enforcement bits clear nothing is checked; SMPs are exempt.
func TestPartitionEnforcement(t *testing.T) {
	f := newFabric(t, line(t), port.Config{})
	f.configure(t, true)
	if cap := mad.SwitchInfo(f.dr(t, mad.MethodGet, mad.AttrSwitchInfo, 0, nil, toSW1...)).Fields(); cap.PartitionEnforcementCap == 0 ||
		!cap.InboundEnforcementCap || !cap.OutboundEnforcementCap {
		t.Fatalf("SwitchInfo caps %+v: want a P_Key table and both enforcement caps", cap)
	}
	f.setPKeys(t, 1, true, false, []mad.PKey{0x8001, 0x0002}, toSW1...)
	f.setPKeys(t, 2, false, true, []mad.PKey{0x0001, 0xffff}, toSW2...)
	// SMPs cross enforcing ports whatever their P_Key table says.
	if ni := mad.NodeInfo(f.dr(t, mad.MethodGet, mad.AttrNodeInfo, 0, nil, toCA2...)).Fields(); ni.NodeGUID != 0x0210 {
		t.Fatalf("NodeInfo through enforcing ports: GUID %#x, want 0x210", ni.NodeGUID)
	}

	in, out := f.sw["sw1"].Port(1), f.sw["sw2"].Port(2)
	src, dst := f.ca["ca1"].port(), f.ca["ca2"]
	for _, tc := range []struct {
		name              string
		pkey              mad.PKey
		delivered         bool
		rcvDrop, xmitDrop uint8 // new PortRcv/XmitConstraintErrors at sw1 port 1 / sw2 port 2
	}{
		{name: "full member both ways", pkey: 0x8001, delivered: true},
		{name: "limited key, full entries", pkey: 0x0001, delivered: true},
		{name: "limited entry at ingress, no entry at egress", pkey: 0x8002, xmitDrop: 1},
		{name: "limited key, limited entry", pkey: 0x0002, xmitDrop: 1},
		{name: "default partition not at ingress", pkey: 0xffff, rcvDrop: 1},
		{name: "base 0", pkey: 0x8000, rcvDrop: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got0, rcv0, xmit0 := dst.received(), in.Counters().PortRcvConstraintErrors, out.Counters().PortXmitConstraintErrors
			if err := src.Send(port.NewPacket(udPKey(lidCA1, lidCA2, tc.pkey))); err != nil {
				t.Fatal(err)
			}
			f.run(t, func() bool {
				return dst.received() > got0 || in.Counters().PortRcvConstraintErrors > rcv0 ||
					out.Counters().PortXmitConstraintErrors > xmit0
			})
			if got := dst.received() - got0; got != map[bool]int{true: 1}[tc.delivered] {
				t.Errorf("ca2 received %d packets, want delivered=%v", got, tc.delivered)
			}
			if got := in.Counters().PortRcvConstraintErrors - rcv0; got != tc.rcvDrop {
				t.Errorf("sw1 port 1 PortRcvConstraintErrors +%d, want +%d", got, tc.rcvDrop)
			}
			if got := out.Counters().PortXmitConstraintErrors - xmit0; got != tc.xmitDrop {
				t.Errorf("sw2 port 2 PortXmitConstraintErrors +%d, want +%d", got, tc.xmitDrop)
			}
			if tc.rcvDrop+tc.xmitDrop > 0 && in.Drops()[port.DropPKey]+out.Drops()[port.DropPKey] == 0 {
				t.Errorf("no pkey_violation drop counted by cause")
			}
		})
	}

	t.Run("enforcement off", func(t *testing.T) {
		f.setPKeys(t, 1, false, false, []mad.PKey{0x8001}, toSW1...)
		f.setPKeys(t, 2, false, false, []mad.PKey{0x8001}, toSW2...)
		got0 := dst.received()
		if err := src.Send(port.NewPacket(udPKey(lidCA1, lidCA2, 0x8003))); err != nil {
			t.Fatal(err)
		}
		f.run(t, func() bool { return dst.received() > got0 })
	})
}
