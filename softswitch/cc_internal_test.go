package softswitch

import (
	"testing"

	"ibfab/agent"
	"ibfab/link"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// benchMarkSwitch returns a 4-port switch with port 2 cabled to a pipe,
// marking at Threshold threshold, and a 1000-byte UD packet.
func benchMarkSwitch(b *testing.B, threshold uint8) (*Switch, *port.Port, *port.Packet) {
	ea, eb := pipe.NewPair()
	b.Cleanup(func() { eb.Close() })
	s, err := New(Config{Name: "bench", NumPorts: 4, NodeGUID: 1, Ports: []link.Endpoint{nil, nil, ea}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	set := mad.SwitchCongestionSettingFields{ControlMap: mad.SwitchCongThreshold, Threshold: threshold, PacketSize: 1}
	m := mad.CCMADFields{Method: mad.MethodSet, AttrID: mad.AttrSwitchCongestionSetting}
	mad.SwitchCongestionSetting(m.Data[:]).Encode(&set)
	s.agent.HandleMAD(agent.Inbound{Port: 2, SLID: 1, DLID: mad.PermissiveLID, SrcQP: 1, DstQP: wire.QP1,
		PKey: mad.DefaultPKey, MAD: mad.AppendCCMAD(nil, &m)})
	if got := s.agent.CCSwitchMarking(2).Threshold; got != threshold {
		b.Fatalf("Threshold %d, want %d", got, threshold)
	}
	pkt := port.NewPacket(wire.AppendUD(nil, &wire.UDFields{DLID: 2, SLID: 1, PKey: 0xffff, DestQP: 2, QKey: 1, SrcQP: 2,
		Payload: make([]byte, 1000)}))
	b.Cleanup(pkt.Release)
	return s, s.Port(2), pkt
}

// BenchmarkCCMarkOff is what FECN marking adds to a forwarded packet when
// the manager set no Threshold: the agent's generation and the table's
// flag.
func BenchmarkCCMarkOff(b *testing.B) {
	s, op, pkt := benchMarkSwitch(b, 0)
	b.ReportAllocs()
	for b.Loop() {
		s.ccMark(2, op, 0, pkt)
	}
}

// BenchmarkCCMarkIdle is the same with Threshold 15 at an output whose
// queue is empty: the eligibility checks and the port's congestion check.
func BenchmarkCCMarkIdle(b *testing.B) {
	s, op, pkt := benchMarkSwitch(b, 15)
	b.ReportAllocs()
	for b.Loop() {
		s.ccMark(2, op, 0, pkt)
	}
}

// TestMarkFECN: marking sets FECN and only it, leaves the ICRC as it was,
// and the packet verifies (ICRC and VCRC), with a GRH too.
func TestMarkFECN(t *testing.T) {
	for _, grh := range []*wire.GRHFields{nil, {HopLmt: 1}} {
		b := wire.AppendUD(nil, &wire.UDFields{DLID: 2, SLID: 1, GRH: grh, PKey: 0xffff, DestQP: 2, QKey: 1, SrcQP: 2,
			Payload: make([]byte, 100)})
		orig := append([]byte(nil), b...)
		bth, ok := wire.PacketBTH(b)
		if !ok || bth.FECN() {
			t.Fatalf("packetBTH: %v, FECN %v", ok, ok && bth.FECN())
		}
		if err := markFECN(b, bth); err != nil {
			t.Fatal(err)
		}
		if !bth.FECN() || bth.BECN() {
			t.Errorf("FECN %v BECN %v after marking, want true false", bth.FECN(), bth.BECN())
		}
		if err := wire.Verify(b); err != nil {
			t.Errorf("marked packet does not verify: %v", err)
		}
		n := len(b)
		icrc := n - wire.VCRCSize - wire.ICRCSize
		if string(b[icrc:n-wire.VCRCSize]) != string(orig[icrc:n-wire.VCRCSize]) {
			t.Errorf("ICRC changed: %x, was %x", b[icrc:n-wire.VCRCSize], orig[icrc:n-wire.VCRCSize])
		}
		diff := 0
		for i := range b[:icrc] {
			if b[i] != orig[i] {
				diff++
			}
		}
		if diff != 1 {
			t.Errorf("%d header bytes changed, want 1 (resv8a)", diff)
		}
	}
	if _, ok := wire.PacketBTH(make([]byte, wire.LRHSize+4)); ok {
		t.Error("a packet too short for a BTH has one")
	}
}
