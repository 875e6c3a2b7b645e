package port_test

import (
	"testing"
	"time"

	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

func TestCanSend(t *testing.T) {
	tests := []struct {
		name        string
		fccl, fctbs uint16
		blocks      int
		want        bool
	}{
		{name: "no credit yet", fccl: 0, fctbs: 0, blocks: 1, want: false},
		{name: "exact fit", fccl: 10, fctbs: 4, blocks: 6, want: true},
		{name: "one short", fccl: 10, fctbs: 4, blocks: 7, want: false},
		{name: "full window", fccl: 2048, fctbs: 0, blocks: 2048, want: true},
		{name: "limit wrapped", fccl: 5, fctbs: 4090, blocks: 11, want: true},
		{name: "limit wrapped, one short", fccl: 5, fctbs: 4090, blocks: 12, want: false},
		{name: "sender ahead of a stale limit", fccl: 100, fctbs: 120, blocks: 1, want: false},
		{name: "both wrapped", fccl: 3, fctbs: 1, blocks: 2, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := port.CanSend(tt.fccl, tt.fctbs, tt.blocks); got != tt.want {
				t.Errorf("CanSend(%d, %d, %d) = %v, want %v", tt.fccl, tt.fctbs, tt.blocks, got, tt.want)
			}
		})
	}
}

func TestCreditLimit(t *testing.T) {
	tests := []struct {
		name string
		abr  uint16
		free int
		want uint16
	}{
		{name: "empty counter", abr: 0, free: 100, want: 100},
		{name: "capped at 2048", abr: 0, free: 5000, want: 2048},
		{name: "wraps", abr: 4000, free: 200, want: 104},
		{name: "no space", abr: 77, free: 0, want: 77},
		{name: "negative space", abr: 77, free: -3, want: 77},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := port.CreditLimit(tt.abr, tt.free); got != tt.want {
				t.Errorf("CreditLimit(%d, %d) = %d, want %d", tt.abr, tt.free, got, tt.want)
			}
		})
	}
}

func TestBlocks(t *testing.T) {
	for _, tt := range []struct{ n, want int }{{0, 0}, {1, 1}, {64, 1}, {65, 2}, {2082, 33}} {
		if got := port.Blocks(tt.n); got != tt.want {
			t.Errorf("Blocks(%d) = %d, want %d", tt.n, got, tt.want)
		}
	}
}

// TestCreditStall shows a receiver that never releases stopping the sender
// exactly when the advertised credit is used up, and releases resuming it,
// with no data packet dropped.
func TestCreditStall(t *testing.T) {
	const rxBlocks = 400
	e := newEnv(t, port.Config{RxBlocks: rxBlocks}, nil)
	e.activate(t)
	e.rb.setHold(true)

	size := porttest.UDSize(1000)
	blocks := port.Blocks(size) // 17
	fit := rxBlocks / blocks    // 23
	const n = 40
	for i := range n {
		send(t, e.a, porttest.UD(0, 1, 1000, byte(i)))
	}
	e.run(t, func() bool { return e.a.Credits(0).Available < blocks })
	// Let emulated time pass with the sender stalled: PortXmitWait counts it.
	e.clk.Advance(time.Millisecond)
	e.settle()

	if got := e.rb.count(); got != fit {
		t.Fatalf("b received %d packets with %d blocks of buffer, want %d", got, rxBlocks, fit)
	}
	ca, cb := e.a.Credits(0), e.b.Credits(0)
	if ca.FCTBS != uint16(fit*blocks) || ca.FCCL != rxBlocks || ca.Queued != n-fit {
		t.Errorf("a Credits(0) = %+v, want FCTBS %d, FCCL %d, %d queued", ca, fit*blocks, rxBlocks, n-fit)
	}
	if cb.RxUsed != fit*blocks || cb.ABR != uint16(fit*blocks) {
		t.Errorf("b Credits(0) = %+v, want %d blocks used, ABR %d", cb, fit*blocks, fit*blocks)
	}
	if got := e.a.Counters().PortXmitWait; got < 1000 {
		t.Errorf("a PortXmitWait = %d ticks after a 1 ms stall, want >= 1000", got)
	}

	// One packet's worth released: exactly one more goes.
	e.rb.release(1)
	e.run(t, func() bool { return e.a.Credits(0).Available < blocks })
	if got := e.rb.count(); got != fit+1 {
		t.Errorf("b received %d packets after releasing one, want %d", got, fit+1)
	}

	e.rb.setHold(false)
	e.rb.release(-1)
	e.run(t, func() bool { return e.rb.count() == n })
	for i, a := range e.rb.arrivals() {
		if a.seq != byte(i) {
			t.Fatalf("packet %d has seq %d: out of order", i, a.seq)
		}
	}
	noDrops(t, e.a, e.b)
}

// TestCreditWraparound runs well over 4096 blocks through small buffers,
// so that FCTBS, ABR and FCCL wrap many times, on four VLs at once.
func TestCreditWraparound(t *testing.T) {
	tests := []struct {
		name    string
		hold    int // b releases in batches of this many packets (0: at once)
		payload int
	}{
		{name: "release at once", payload: 60},
		{name: "release in batches", hold: 3, payload: 60},
		{name: "odd sizes", hold: 2, payload: 150},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The smallest buffer that holds one 256-byte-MTU packet.
			cfg := port.Config{MTU: 256, RxBlocks: port.Blocks(256 + 128), Unpaced: true}
			e := newEnv(t, cfg, nil)
			e.activate(t)
			blocks := port.Blocks(porttest.UDSize(tt.payload))
			perVL := 4096/blocks + 7 // past the wrap on each VL
			e.rb.setHold(tt.hold > 0)
			for i := range perVL {
				for vl := range 4 {
					send(t, e.a, porttest.UD(uint8(vl), 1, tt.payload, byte(i)))
				}
			}
			total := 4 * perVL
			e.run(t, func() bool {
				if tt.hold > 0 {
					e.rb.release(tt.hold)
				}
				return e.rb.count() == total
			})
			e.rb.release(-1)
			e.settle()
			wrap := uint16(perVL * blocks % 4096)
			for vl := range 4 {
				ca, cb := e.a.Credits(vl), e.b.Credits(vl)
				if ca.FCTBS != wrap || cb.ABR != wrap || ca.Queued != 0 || cb.RxUsed != 0 {
					t.Errorf("VL%d: a %+v, b %+v, want FCTBS = ABR = %d, nothing queued or held", vl, ca, cb, wrap)
				}
			}
			if lc := e.b.LinkCounters(); lc.FCTBSResyncs != 0 {
				t.Errorf("b LinkCounters() = %+v, want no FCTBS resync", lc)
			}
			next := [4]byte{}
			for i, a := range e.rb.arrivals() {
				if a.seq != next[a.vl] {
					t.Fatalf("packet %d on VL%d has seq %d, want %d", i, a.vl, a.seq, next[a.vl])
				}
				next[a.vl]++
			}
			noDrops(t, e.a, e.b)
		})
	}
}

func TestVL15Overflow(t *testing.T) {
	e := newEnv(t, port.Config{VL15Packets: 2}, nil)
	e.settle() // Init: SMPs only
	e.rb.setHold(true)
	for i := range 5 {
		send(t, e.a, porttest.SMP(1, byte(i)))
	}
	e.run(t, func() bool { return e.a.Credits(port.VL15).Queued == 0 })
	if got := e.rb.count(); got != 2 {
		t.Errorf("b received %d SMPs with room for 2, want 2", got)
	}
	if got := e.b.Counters().VL15Dropped; got != 3 {
		t.Errorf("b VL15Dropped = %d, want 3", got)
	}
	if got := e.b.Drops(); got[port.DropVL15Overflow] != 3 || got.Total() != 3 {
		t.Errorf("b Drops() = %v, want 3 VL15 overflows only", got.Map())
	}
	// Released slots take SMPs again.
	e.rb.release(-1)
	send(t, e.a, porttest.SMP(1, 9))
	e.run(t, func() bool { return e.rb.count() == 3 })
}

// TestBufferOverrun has a rogue sender ignore its credits: the receiver
// drops what does not fit and counts it, and the peer's next flow-control
// packet resynchronizes its ABR.
func TestBufferOverrun(t *testing.T) {
	e := newEnv(t, port.Config{RxBlocks: 100}, nil)
	e.activate(t)
	e.rb.setHold(true)
	pkt := porttest.UD(0, 1, 2000, 0) // 33 blocks
	// Behind a's back: its FCTBS does not count these.
	for range 4 {
		e.b.DeliverPacket(1, pkt)
	}
	if got := e.rb.count(); got != 3 {
		t.Errorf("b accepted %d packets of 33 blocks into 100, want 3", got)
	}
	c := e.b.Counters()
	if c.ExcessiveBufferOverrunErrors != 1 || c.PortRcvErrors != 1 {
		t.Errorf("b counters: ExcessiveBufferOverrunErrors %d, PortRcvErrors %d, want 1, 1",
			c.ExcessiveBufferOverrunErrors, c.PortRcvErrors)
	}
	// a's keepalive for VL0 carries FCTBS 0: b's ABR (99) is
	// resynchronized. Keepalives take the VLs in turn.
	for range e.a.OperationalVLs() {
		e.clk.Advance(e.a.Config().KeepaliveInterval)
		e.settle()
	}
	if got := e.b.Credits(0).ABR; got != 0 {
		t.Errorf("b ABR = %d after a's keepalive, want 0", got)
	}
	if got := e.b.LinkCounters().FCTBSResyncs; got == 0 {
		t.Error("b FCTBSResyncs = 0, want the resync counted")
	}
	e.rb.release(-1)
	if got := e.b.State(); got.Port != mad.PortStateActive {
		t.Errorf("b.State() = %v, want Active", got)
	}
}

// TestIgnoreCredits is the flow-control-off port of the fabric tests: its
// sender overruns a receiver that does not release, which drops and counts
// what does not fit, where TestCreditStall loses nothing.
func TestIgnoreCredits(t *testing.T) {
	const rxBlocks = 400
	e := newEnv(t, port.Config{RxBlocks: rxBlocks, IgnoreCredits: true}, nil)
	e.activate(t)
	e.rb.setHold(true)
	blocks := port.Blocks(porttest.UDSize(1000))
	fit := rxBlocks / blocks
	const n = 40
	for i := range n {
		send(t, e.a, porttest.UD(0, 1, 1000, byte(i)))
	}
	e.run(t, func() bool { return e.a.Credits(0).Queued == 0 })
	e.settle()
	if got := e.rb.count(); got != fit {
		t.Errorf("b accepted %d packets, want %d", got, fit)
	}
	if got := e.b.Drops()[port.DropBufferOverrun]; got != n-uint64(fit) {
		t.Errorf("b buffer overruns = %d, want %d", got, n-fit)
	}
}

// TestCreditUpdates checks when a receiver returns credits: updates are
// held back while the sender still has more than half the buffer (or one
// largest packet) in credit, so a stream costs fewer flow-control packets
// than data packets; and an update held back never leaves the sender stuck
// on a head packet larger than half the buffer.
func TestCreditUpdates(t *testing.T) {
	for _, c := range []struct {
		name     string
		rxBlocks int
		payloads []int // sent in turn, n packets in all
		n        int
		maxRatio float64 // flow-control packets per data packet, at most
	}{
		{"big buffer", 1024, []int{2048}, 400, 0.5},
		{"one MTU packet", 70, []int{4096}, 50, 1.0},
		{"small packets", 1024, []int{256}, 1000, 0.2},
		// Nine small packets take the credit to 55 of 100 blocks, above
		// half, and then a 66-block packet needs more than that.
		{"small then large", 100, []int{256, 256, 256, 256, 256, 256, 256, 256, 256, 4096}, 100, 1.0},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Unpaced, and no clock advance: an update held back too long
			// would only come with the keepalive timer.
			e := newEnv(t, port.Config{RxBlocks: c.rxBlocks, MTU: 4096, Unpaced: true}, nil)
			e.activate(t)
			fc0 := e.b.LinkCounters().FCSent
			for i := range c.n {
				send(t, e.a, porttest.UD(0, 1, c.payloads[i%len(c.payloads)], byte(i)))
			}
			e.settle()
			if got := e.rb.count(); got != c.n {
				t.Fatalf("%d of %d packets arrived; sender credits %+v, receiver %+v", got, c.n, e.a.Credits(0), e.b.Credits(0))
			}
			sent := e.b.LinkCounters().FCSent - fc0
			if ratio := float64(sent) / float64(c.n); ratio > c.maxRatio {
				t.Errorf("%d flow-control packets for %d data packets: ratio %.2f, want <= %.2f", sent, c.n, ratio, c.maxRatio)
			}
			noDrops(t, e.a, e.b)
		})
	}
}
