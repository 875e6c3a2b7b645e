package port_test

import (
	"testing"

	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

// oneBlock is the payload of a UD packet of exactly one 64-byte block, so
// that shares in packets equal shares in weight units.
const oneBlock = 28

// entries builds a table from (VL, weight) pairs.
func entries(pairs ...[2]uint8) (t [port.ArbTableSize]mad.VLArbEntry) {
	for i, p := range pairs {
		t[i] = mad.VLArbEntry{VL: p[0], Weight: p[1]}
	}
	return t
}

func TestArbitration(t *testing.T) {
	tests := []struct {
		name string
		arb  port.Arbitration
		m    int    // packets measured, all VLs backlogged throughout
		want [4]int // packets per VL among them
	}{
		{
			name: "low table weights 1:2:3:4",
			arb:  port.Arbitration{Low: entries([2]uint8{0, 1}, [2]uint8{1, 2}, [2]uint8{2, 3}, [2]uint8{3, 4})},
			m:    200, want: [4]int{20, 40, 60, 80},
		},
		{
			name: "zero weights and foreign VLs skipped",
			arb: port.Arbitration{Low: entries([2]uint8{0, 0}, [2]uint8{9, 5}, [2]uint8{15, 5},
				[2]uint8{1, 1}, [2]uint8{2, 0}, [2]uint8{3, 3})},
			m: 200, want: [4]int{0, 50, 0, 150},
		},
		{
			name: "limit 0: one high, one low",
			arb:  port.Arbitration{High: entries([2]uint8{3, 4}), Low: entries([2]uint8{0, 1}, [2]uint8{1, 1})},
			m:    200, want: [4]int{50, 50, 0, 100},
		},
		{
			name: "limit 1: 4096 bytes of high, then one low",
			arb: port.Arbitration{HighLimit: 1, High: entries([2]uint8{2, 255}),
				Low: entries([2]uint8{0, 1}, [2]uint8{1, 1})},
			m: 650, want: [4]int{5, 5, 640, 0},
		},
		{
			name: "limit 255: low starves",
			arb: port.Arbitration{HighLimit: port.HighLimitUnbounded, High: entries([2]uint8{2, 8}, [2]uint8{3, 8}),
				Low: entries([2]uint8{0, 1}, [2]uint8{1, 1})},
			m: 160, want: [4]int{0, 0, 80, 80},
		},
		{
			name: "high table weights with limit 2",
			arb: port.Arbitration{HighLimit: 2, High: entries([2]uint8{1, 32}, [2]uint8{3, 96}),
				Low: entries([2]uint8{0, 10})},
			m: 129 * 4, want: [4]int{4, 128, 0, 384},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, port.Config{PaceSlack: -1}, nil)
			e.activate(t)
			e.a.SetVLArbitration(tt.arb)
			if got := e.a.VLArbitration(); got != tt.arb {
				t.Fatalf("VLArbitration() = %+v, want %+v", got, tt.arb)
			}
			// A packet on VL0 starts at once; everything after it queues
			// behind the pacer, so the arbiter sees every VL backlogged.
			send(t, e.a, porttest.UD(0, 1, 100, 0))
			e.settle()
			perVL := tt.m + 1
			for i := range perVL {
				for vl := range 4 {
					send(t, e.a, porttest.UD(uint8(vl), 1, oneBlock, byte(i)))
				}
			}
			e.run(t, func() bool { return e.rb.count() >= 1+tt.m })
			var got [4]int
			for _, a := range e.rb.arrivals()[1 : 1+tt.m] {
				got[a.vl]++
			}
			if got != tt.want {
				t.Errorf("packets per VL among %d = %v, want %v", tt.m, got, tt.want)
			}
		})
	}
}

func TestVL15First(t *testing.T) {
	e := newEnv(t, port.Config{PaceSlack: -1}, nil)
	e.activate(t)
	send(t, e.a, porttest.UD(0, 1, 100, 0))
	e.settle() // on the wire; the rest waits for the pacer
	for i := range 20 {
		send(t, e.a, porttest.UD(uint8(i%4), 1, 500, byte(i)))
	}
	for i := range 3 {
		send(t, e.a, porttest.SMP(1, byte(100+i)))
	}
	e.run(t, func() bool { return e.rb.count() == 24 })
	got := e.rb.arrivals()
	for i := 1; i <= 3; i++ {
		if got[i].vl != port.VL15 || got[i].seq != byte(99+i) {
			t.Errorf("packet %d: VL%d seq %d, want the SMP with seq %d", i, got[i].vl, got[i].seq, 99+i)
		}
	}
	noDrops(t, e.a, e.b)
}

// TestXmitByVL: the per-VL transmit counters count every packet written,
// by its VL and whole size, VL15 included.
func TestXmitByVL(t *testing.T) {
	e := newEnv(t, port.Config{PaceSlack: -1}, nil)
	e.activate(t)
	before := e.a.XmitByVL()
	want := before
	for i := range 12 {
		vl := uint8(i % 3)
		b := porttest.UD(vl, 1, 100*(i+1), byte(i))
		send(t, e.a, b)
		want[vl].Packets++
		want[vl].Bytes += uint64(len(b))
	}
	smp := porttest.SMP(1, 7)
	send(t, e.a, smp)
	want[port.VL15].Packets++
	want[port.VL15].Bytes += uint64(len(smp))
	e.run(t, func() bool { return e.rb.count() == 13 })
	if got := e.a.XmitByVL(); got != want {
		t.Errorf("XmitByVL() = %v, want %v", got, want)
	}
	noDrops(t, e.a, e.b)
}
