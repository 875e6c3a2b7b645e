package port_test

import (
	"encoding/binary"
	"testing"

	"ibfab/link"
	"ibfab/link/linktest"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// badPackets are received packets a port must drop, with the cause.
var badPackets = []struct {
	name  string
	kind  link.Kind
	data  func() []byte
	cause port.DropCause
}{
	{name: "random bytes", kind: link.KindData, cause: port.DropMalformed, data: func() []byte {
		return []byte{0x9c, 0x41, 0xff, 0x07, 0x13, 0x77, 0x2a, 0x00, 0xde, 0xad, 0xbe, 0xef}
	}},
	{name: "empty", kind: link.KindData, cause: port.DropMalformed, data: func() []byte { return nil }},
	{name: "bad VCRC", kind: link.KindData, cause: port.DropCRC, data: func() []byte {
		b := porttest.UD(0, 1, 100, 0)
		b[len(b)-1] ^= 0x01
		return b
	}},
	{name: "bad ICRC", kind: link.KindData, cause: port.DropCRC, data: func() []byte {
		b := porttest.UD(0, 1, 100, 0)
		b[40] ^= 0x80 // payload
		if err := wire.SealVCRC(b); err != nil {
			panic(err)
		}
		return b
	}},
	{name: "PktLen past the end", kind: link.KindData, cause: port.DropMalformed, data: func() []byte {
		b := porttest.UD(0, 1, 100, 0)
		wire.LRH(b).SetPktLen(wire.LRH(b).PktLen() + 8)
		return b
	}},
	{name: "PktLen too small for the headers", kind: link.KindData, cause: port.DropMalformed, data: func() []byte {
		b := porttest.UD(0, 1, 100, 0)
		wire.LRH(b).SetPktLen(3) // 12 bytes, with a good VCRC after them
		binary.LittleEndian.PutUint16(b[12:], wire.CRC16(b[:12]))
		return b
	}},
	{name: "truncated", kind: link.KindData, cause: port.DropMalformed, data: func() []byte {
		b := porttest.UD(0, 1, 100, 0)
		return b[:len(b)-10]
	}},
	{name: "over the MTU", kind: link.KindData, cause: port.DropMalformed, data: func() []byte {
		return porttest.UD(0, 1, 3000, 0) // the test port's MTU is 2048
	}},
	{name: "SMP on a data VL", kind: link.KindData, cause: port.DropVLMapping, data: func() []byte {
		b := porttest.SMP(1, 0)
		wire.LRH(b).SetVL(0)
		if err := wire.SealVCRC(b); err != nil {
			panic(err)
		}
		return b
	}},
	{name: "data on VL15", kind: link.KindData, cause: port.DropVLMapping, data: func() []byte {
		b := porttest.UD(0, 1, 100, 0)
		wire.LRH(b).SetVL(port.VL15)
		if err := wire.SealVCRC(b); err != nil {
			panic(err)
		}
		return b
	}},
	{name: "VL not operational", kind: link.KindData, cause: port.DropVLMapping, data: func() []byte {
		return porttest.UD(9, 1, 100, 0)
	}},
	{name: "link packet bad LPCRC", kind: link.KindLink, cause: port.DropCRC, data: func() []byte {
		b := porttest.FC(wire.FlowControlNormal, 0, 0, 100)
		b[2] ^= 0x10
		return b
	}},
	{name: "link packet short", kind: link.KindLink, cause: port.DropMalformed, data: func() []byte {
		return porttest.FC(wire.FlowControlNormal, 0, 0, 100)[:4]
	}},
	{name: "link packet unknown Op", kind: link.KindLink, cause: port.DropMalformed, data: func() []byte {
		b := porttest.FC(wire.FlowControlNormal, 0, 0, 100)
		b[0] |= 0x70
		binary.LittleEndian.PutUint16(b[4:], wire.CRC16(b[:4]))
		return b
	}},
	{name: "unknown kind", kind: 9, cause: port.DropMalformed, data: func() []byte { return porttest.UD(0, 1, 100, 0) }},
}

func TestMalformed(t *testing.T) {
	for _, tt := range badPackets {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, port.Config{MTU: 2048}, nil)
			e.activate(t)
			before := e.b.Counters().PortRcvErrors
			e.b.DeliverPacket(tt.kind, tt.data())
			if got := e.rb.count(); got != 0 {
				t.Errorf("b received %d packets, want 0", got)
			}
			if got := e.b.Drops(); got[tt.cause] != 1 || got.Total() != 1 {
				t.Errorf("b.Drops() = %v, want one %v", got.Map(), tt.cause)
			}
			if got := e.b.Counters().PortRcvErrors; got != before+1 {
				t.Errorf("PortRcvErrors = %d, want %d", got, before+1)
			}
			// The port goes on working.
			send(t, e.a, porttest.UD(0, 1, 100, 7))
			e.run(t, func() bool { return e.rb.count() == 1 })
			if got := e.b.State(); got != linkUpActive {
				t.Errorf("b.State() = %v, want %v", got, linkUpActive)
			}
		})
	}
}

// TestSendMalformed checks what Send refuses.
func TestSendMalformed(t *testing.T) {
	e := newEnv(t, port.Config{MTU: 256}, nil)
	e.activate(t)
	for _, b := range [][]byte{nil, {1, 2, 3}, porttest.UD(0, 1, 1000, 0)} {
		if err := e.a.Send(port.NewPacket(b)); err == nil {
			t.Errorf("Send(%d bytes) = nil, want ErrMalformed", len(b))
		}
	}
	if got := e.a.Drops()[port.DropMalformed]; got != 3 {
		t.Errorf("Drops()[malformed] = %d, want 3", got)
	}
	if got := e.a.Counters().PortXmitDiscards; got != 3 {
		t.Errorf("PortXmitDiscards = %d, want 3", got)
	}
}

// FuzzDeliver feeds arbitrary packets of either kind to an Active port:
// none may panic, and each is accounted for exactly once, as received, as
// a link packet, or as a drop.
func FuzzDeliver(f *testing.F) {
	for _, tt := range badPackets {
		f.Add(uint8(tt.kind), tt.data())
	}
	f.Add(uint8(link.KindData), porttest.UD(0, 1, 100, 0))
	f.Add(uint8(link.KindData), porttest.SMP(1, 0))
	f.Add(uint8(link.KindLink), porttest.FC(wire.FlowControlNormal, 1, 5, 300))

	// One Active pair serves every input until an input takes it out of
	// Active (a training packet retrains it): building and training a pair
	// costs a thousand times what delivering a packet does. Each input
	// still meets an Active pair of the same configuration; what carries
	// over is the counters, the credits the peer advertised, the clock.
	linktest.LeakCheck(f)
	var e *env
	f.Cleanup(func() {
		if e != nil {
			e.close()
		}
	})
	active := port.State{Phys: mad.PhysStateLinkUp, Port: mad.PortStateActive}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		if e == nil || e.a.State() != active || e.b.State() != active || e.rb.count() > 1<<12 {
			if e != nil {
				e.close()
			}
			var err error
			if e, err = buildEnv(port.Config{MTU: 2048}, nil, func(ep link.Endpoint) link.Endpoint { return ep }); err != nil {
				t.Fatal(err)
			}
			e.activate(t)
		}
		p := e.b
		rcv, drops, fc := e.rb.count(), p.Drops().Total(), p.LinkCounters().FCReceived
		p.DeliverPacket(link.Kind(kind), data)
		rcv2, drops2, fc2 := e.rb.count(), p.Drops().Total(), p.LinkCounters().FCReceived
		if n := (rcv2 - rcv) + int(drops2-drops) + int(fc2-fc); n != 1 {
			t.Errorf("DeliverPacket(%d, %x): %d received, %d dropped, %d link packets; want one in all",
				kind, data, rcv2-rcv, drops2-drops, fc2-fc)
		}
	})
}
