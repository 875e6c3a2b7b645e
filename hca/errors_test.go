package hca_test

import (
	"testing"
	"time"

	"ibfab/link"
	"ibfab/port"
	"ibfab/wire"
	"ibfab/wire/mad"
)

func udPacket(pkey uint16, destQP uint32, mod func([]byte)) []byte {
	payload := make([]byte, 64)
	b := wire.AppendUD(nil, &wire.UDFields{VL: 0, SL: 0, DLID: 2, SLID: 1, PKey: pkey, DestQP: destQP, QKey: 1, SrcQP: 2, Payload: payload})
	if mod != nil {
		mod(b)
	}
	return b
}

func TestBadInput(t *testing.T) {
	p := newPair(t)
	p.settle()
	activate(t, p, []uint8{0, 1}, 2)
	activate(t, p, nil, 1)

	tests := []struct {
		name  string
		pkt   []byte
		cause port.DropCause
	}{
		{"P_Key violation", udPacket(0x8001, 2, nil), port.DropPKey},
		{"P_Key violation on QP1", udPacket(0x8001, 1, nil), port.DropPKey},
		{"bad ICRC", udPacket(0xffff, 2, func(b []byte) { b[len(b)-10] ^= 1 }), port.DropCRC},
		{"not UD", udPacket(0xffff, 2, func(b []byte) {
			wire.BTH(b[wire.LRHSize:]).SetOpCode(wire.RCSendOnly)
			if err := wire.Seal(b); err != nil {
				panic(err)
			}
		}), port.DropMalformed},
		{"truncated", udPacket(0xffff, 2, nil)[:20], port.DropMalformed},
		{"random bytes", []byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, port.DropMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := p.b.Port(1).Drops()
			rx := p.b.Stats().Ports[0].RxPackets
			if err := p.ea.WritePacket(link.KindData, tt.pkt); err != nil {
				t.Fatalf("WritePacket: %v", err)
			}
			p.runFor(t, 10*time.Microsecond)
			after := p.b.Port(1).Drops()
			if after.Total() != before.Total()+1 {
				t.Errorf("drops %v → %v, want one more", before.Map(), after.Map())
			}
			if after[tt.cause] != before[tt.cause]+1 && after[port.DropMalformed] == before[port.DropMalformed] && after[port.DropCRC] == before[port.DropCRC] {
				t.Errorf("drops %v → %v, want one more %v", before.Map(), after.Map(), tt.cause)
			}
			if got := p.b.Stats().Ports[0].RxPackets; got != rx {
				t.Errorf("RxPackets %d → %d, want no change", rx, got)
			}
		})
	}
	if got := p.b.Port(1).Drops()[port.DropPKey]; got != 2 {
		t.Errorf("P_Key drops %d, want 2", got)
	}
	if got := p.b.Port(1).Counters().PortRcvConstraintErrors; got != 2 {
		t.Errorf("PortRcvConstraintErrors %d, want 2", got)
	}
	// Still serving: management and data.
	ni := sm(t, p, p.a, p.ia, drRequest(t, mad.DRRequest{Method: mad.MethodGet, TransactionID: 99, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1}}))
	if info, err := mad.DecodeNodeInfo(ni.Data()); err != nil || info.NodeGUID != guidB {
		t.Fatalf("NodeInfo after bad input: %+v, %v", info, err)
	}
	if err := p.a.SendUD(1, 2, 0, 2, make([]byte, 64)); err != nil {
		t.Fatalf("SendUD: %v", err)
	}
	p.runFor(t, 10*time.Microsecond)
	if got := p.b.Stats().Ports[0].RxPackets; got != 1 {
		t.Errorf("RxPackets %d after a good packet, want 1", got)
	}
}

func TestSendErrors(t *testing.T) {
	p := newPair(t)
	p.settle()
	if err := p.a.SendUD(2, 1, 0, 2, nil); err == nil {
		t.Error("SendUD on port 2 of a one-port HCA: nil error")
	}
	if err := p.a.SendUD(1, 2, 0, 2, make([]byte, 64)); err == nil {
		t.Error("SendUD before Active: nil error")
	}
	if err := p.a.SendUD(1, 2, 0, 2, make([]byte, 5000)); err == nil {
		t.Error("SendUD over the MTU: nil error")
	}
	if err := p.a.SendMAD(drRequest(t, mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1}})); err != nil {
		t.Errorf("SendMAD: %v", err)
	}
	p.a.Close()
	if err := p.a.SendMAD(drRequest(t, mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1}})); err == nil {
		t.Error("SendMAD after Close: nil error")
	}
}
