package hca_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"ibfab/hca"
	"ibfab/internal/clock"
	"ibfab/wire"
)

func TestGeneratorLoad(t *testing.T) {
	tests := []struct {
		name    string
		load    float64
		payload int
		dests   []uint16
		hot     float64
	}{
		{name: "10% uniform", load: 10, payload: 1024, dests: []uint16{1, 2, 3, 4}},
		{name: "50% uniform", load: 50, payload: 256, dests: []uint16{5, 6}},
		{name: "90% hot spot 0.3", load: 90, payload: 2048, dests: []uint16{1, 2, 3, 4, 5}, hot: 0.3},
		{name: "100% all hot", load: 100, payload: 64, hot: 1},
	}
	const rate = 1_000_000_000 // 1 Gb/s keeps the packet count moderate
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewManual(epoch)
			var sent int
			g, err := hca.NewGenerator(hca.GeneratorConfig{
				Load: tt.load, Rate: rate, Payload: tt.payload, Dests: tt.dests,
				HotSpot: 99, HotFraction: tt.hot, Seed: 7,
			}, clk, func(uint16, []byte) error { sent++; return nil }, nil)
			if err != nil {
				t.Fatalf("NewGenerator: %v", err)
			}
			g.Start()
			const span = 200 * time.Millisecond
			// Coarse steps: the generator catches up on every arrival due.
			for range 200 {
				clk.Advance(span / 200)
			}
			g.Stop()
			s := g.Stats()
			if s.Elapsed != span {
				t.Errorf("Elapsed %v, want %v", s.Elapsed, span)
			}
			if s.Sent != uint64(sent) || s.Offered != s.Sent {
				t.Errorf("offered %d, sent %d, send calls %d", s.Offered, s.Sent, sent)
			}
			if s.Offered < 1000 {
				t.Fatalf("only %d packets offered, test too weak", s.Offered)
			}
			got := float64(s.OfferedBytes*8) / span.Seconds() / rate * 100
			// Poisson: the relative error of the mean is about 1/√n.
			tol := 4 / math.Sqrt(float64(s.Offered)) * tt.load
			if math.Abs(got-tt.load) > tol {
				t.Errorf("offered load %.2f%%, want %.2f%% ± %.2f", got, tt.load, tol)
			}
			if want := uint64(wire.UDPacketSize(tt.payload, false)) * s.Offered; s.OfferedBytes != want {
				t.Errorf("OfferedBytes %d, want %d", s.OfferedBytes, want)
			}
			wantHot := tt.hot
			gotHot := float64(s.PerDest[99]) / float64(s.Offered)
			if math.Abs(gotHot-wantHot) > 0.03 {
				t.Errorf("hot-spot share %.3f, want %.3f", gotHot, wantHot)
			}
			for _, d := range tt.dests {
				share := float64(s.PerDest[d]) / float64(s.Offered)
				want := (1 - tt.hot) / float64(len(tt.dests))
				if math.Abs(share-want) > 0.03 {
					t.Errorf("dest %d share %.3f, want %.3f", d, share, want)
				}
			}
		})
	}
}

func TestGeneratorDeterministic(t *testing.T) {
	run := func() hca.GeneratorStats {
		clk := clock.NewManual(epoch)
		g, err := hca.NewGenerator(hca.GeneratorConfig{Load: 30, Rate: 8e9, Payload: 512, Dests: []uint16{1, 2, 3}, Seed: 42},
			clk, func(uint16, []byte) error { return nil }, nil)
		if err != nil {
			t.Fatalf("NewGenerator: %v", err)
		}
		g.Start()
		clk.Advance(time.Millisecond)
		g.Stop()
		return g.Stats()
	}
	a, b := run(), run()
	if a.Offered != b.Offered || a.PerDest[1] != b.PerDest[1] || a.PerDest[2] != b.PerDest[2] {
		t.Fatalf("same seed, different runs: %+v vs %+v", a, b)
	}
}

func TestGeneratorBacklogAndErrors(t *testing.T) {
	clk := clock.NewManual(epoch)
	queued := 0
	fail := errors.New("boom")
	calls := 0
	g, err := hca.NewGenerator(hca.GeneratorConfig{Load: 100, Rate: 1e9, Payload: 100, Dests: []uint16{1}, MaxBacklog: 3},
		clk, func(uint16, []byte) error {
			calls++
			if calls == 2 {
				return fail // refused once
			}
			queued++ // nothing ever drains
			return nil
		}, func() int { return queued })
	if err != nil {
		t.Fatalf("NewGenerator: %v", err)
	}
	g.Start()
	clk.Advance(100 * time.Microsecond)
	g.Stop()
	clk.Advance(100 * time.Microsecond) // stopped: nothing more
	s := g.Stats()
	if s.Sent != 3 || s.Failed == 0 || s.Sent+s.Failed+s.Backlogged != s.Offered || s.Offered < 20 {
		t.Fatalf("stats %+v: want 3 sent, some failed, the rest backlogged", s)
	}
}

// TestGeneratorPortRefuses: a port that refuses every packet (not Active)
// costs the generator one packet built per bulkMin arrivals or so, not
// one per arrival, and every arrival is counted as failed; once the port
// takes packets again they are sent.
func TestGeneratorPortRefuses(t *testing.T) {
	clk := clock.NewManual(epoch)
	refuse := true
	calls := 0
	g, err := hca.NewGenerator(hca.GeneratorConfig{Load: 100, Rate: 1e9, Payload: 256, Dests: []uint16{1, 2}, Seed: 3},
		clk, func(uint16, []byte) error {
			calls++
			if refuse {
				return errors.New("port not Active")
			}
			return nil
		}, func() int { return 0 })
	if err != nil {
		t.Fatalf("NewGenerator: %v", err)
	}
	g.Start()
	clk.Advance(100 * time.Millisecond)
	s := g.Stats()
	if s.Sent != 0 || s.Failed != s.Offered || s.Offered < 10000 {
		t.Fatalf("stats %+v: want every arrival failed", s)
	}
	if limit := int(s.Offered) / 16; calls > limit {
		t.Errorf("%d packets built for %d arrivals to a port that refuses them: want at most %d", calls, s.Offered, limit)
	}
	refuse = false
	clk.Advance(100 * time.Millisecond)
	g.Stop()
	s2 := g.Stats()
	if sent := s2.Sent; sent < (s2.Offered-s.Offered)*9/10 {
		t.Errorf("%d of %d arrivals sent once the port takes them", sent, s2.Offered-s.Offered)
	}
	if s2.Sent+s2.Failed+s2.Backlogged != s2.Offered {
		t.Errorf("stats %+v do not add up", s2)
	}
}

func TestGeneratorConfigErrors(t *testing.T) {
	ok := hca.GeneratorConfig{Load: 10, Rate: 1e9, Payload: 64, Dests: []uint16{1}}
	send := func(uint16, []byte) error { return nil }
	tests := []struct {
		name string
		mod  func(*hca.GeneratorConfig)
	}{
		{"zero load", func(c *hca.GeneratorConfig) { c.Load = 0 }},
		{"NaN load", func(c *hca.GeneratorConfig) { c.Load = math.NaN() }},
		{"zero rate", func(c *hca.GeneratorConfig) { c.Rate = 0 }},
		{"short payload", func(c *hca.GeneratorConfig) { c.Payload = hca.StampSize - 1 }},
		{"no dests", func(c *hca.GeneratorConfig) { c.Dests = nil }},
		{"hot fraction > 1", func(c *hca.GeneratorConfig) { c.HotFraction = 1.5 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			if _, err := hca.NewGenerator(c, clock.NewManual(epoch), send, nil); !errors.Is(err, hca.ErrConfig) {
				t.Fatalf("NewGenerator: %v, want ErrConfig", err)
			}
		})
	}
}

// drainQueue is a port's queue that sends one packet every per, in
// bursts of burst packets (as credits come back) if burst > 1, except
// during the stall window [stall0, stall1) after the epoch.
type drainQueue struct {
	clk            clock.Clock
	per            time.Duration
	burst          int
	stall0, stall1 time.Duration
	last           time.Time
	busy           time.Duration // service time not used yet
	queued, left   int
	reads          int
}

// update lets the packets leave that the time since the last look allows.
func (q *drainQueue) update() {
	now := q.clk.Now()
	from, to := q.last.Sub(epoch), now.Sub(epoch)
	avail := to - from
	if s0, s1 := max(from, q.stall0), min(to, q.stall1); s1 > s0 {
		avail -= s1 - s0
	}
	q.last = now
	if q.queued == 0 {
		q.busy = 0
		return
	}
	q.busy += avail
	n := int(q.busy / q.per)
	if q.burst > 1 {
		n -= n % q.burst
	}
	n = min(q.queued, n)
	q.queued -= n
	q.left += n
	q.busy -= time.Duration(n) * q.per
	if q.queued == 0 {
		q.busy = 0
	}
}

func (q *drainQueue) send(uint16, []byte) error { q.update(); q.queued++; return nil }
func (q *drainQueue) backlog() int              { q.update(); q.reads++; return q.queued }

// firesClock counts the timer callbacks: the generator's wake-ups.
type firesClock struct {
	clock.Clock
	fires int
}

func (c *firesClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	return c.Clock.AfterFunc(d, func() { c.fires++; f() })
}

// TestGeneratorHoldsWhileQueueFull: a generator offering 40 times what its
// port drains keeps the port busy, yet wakes about once per half queue
// drained instead of once per arrival, and still counts every arrival and
// its destination.
func TestGeneratorHoldsWhileQueueFull(t *testing.T) {
	const (
		span = time.Second
		per  = 100 * time.Microsecond // the port drains 10k packets/s
	)
	tests := []struct {
		name           string
		burst          int
		stall0, stall1 time.Duration
	}{
		{name: "steady"},
		{name: "bursts of 32", burst: 32},
		{name: "stalled 100 ms", stall0: 300 * time.Millisecond, stall1: 400 * time.Millisecond},
		{name: "never drains", stall1: span},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mc := clock.NewManual(epoch)
			clk := &firesClock{Clock: mc}
			q := &drainQueue{clk: mc, per: per, burst: tt.burst, stall0: tt.stall0, stall1: tt.stall1, last: epoch}
			// 100 % of 1 Gb/s in 300-byte packets: about 400k arrivals/s.
			dests := []uint16{1, 2, 3}
			const hot = 0.3
			g, err := hca.NewGenerator(hca.GeneratorConfig{Load: 100, Rate: 1e9, Payload: 256, Dests: dests,
				HotSpot: 9, HotFraction: hot, Seed: 5}, clk, q.send, q.backlog)
			if err != nil {
				t.Fatalf("NewGenerator: %v", err)
			}
			g.Start()
			mc.Advance(span)
			g.Stop()
			q.update()
			s := g.Stats()
			capacity := int((span - (tt.stall1 - tt.stall0)) / per)
			t.Logf("%d fires, %d queue reads, %d of %d packets left, stats %+v", clk.fires, q.reads, q.left, capacity,
				hca.GeneratorStats{Offered: s.Offered, Sent: s.Sent, Backlogged: s.Backlogged, Skipped: s.Skipped})
			if q.left < capacity*95/100 {
				t.Errorf("the port sent %d packets of the %d it could: the generator left it idle", q.left, capacity)
			}
			if limit := int(s.Offered) / 100; clk.fires > limit || q.reads > limit {
				t.Errorf("%d wake-ups and %d queue reads for %d arrivals: want at most %d each (one per arrival burns the CPU the fabric needs)",
					clk.fires, q.reads, s.Offered, limit)
			}
			if s.Skipped != 0 || s.Failed != 0 || s.Backlogged != s.Offered-s.Sent || int(s.Sent) != q.left+q.queued {
				t.Errorf("stats %+v: want every arrival sent or backlogged, %d+%d sent", s, q.left, q.queued)
			}
			got := float64(s.OfferedBytes*8) / span.Seconds() / 1e9 * 100
			if tol := 4 / math.Sqrt(float64(s.Offered)) * 100; math.Abs(got-100) > tol {
				t.Errorf("offered load %.2f%%, want 100%% ± %.2f", got, tol)
			}
			if want := uint64(wire.UDPacketSize(256, false)) * s.Offered; s.OfferedBytes != want {
				t.Errorf("OfferedBytes %d, want %d", s.OfferedBytes, want)
			}
			var sum uint64
			for d, want := range map[uint16]float64{9: hot, 1: (1 - hot) / 3, 2: (1 - hot) / 3, 3: (1 - hot) / 3} {
				sum += s.PerDest[d]
				if share := float64(s.PerDest[d]) / float64(s.Offered); math.Abs(share-want) > 0.01 {
					t.Errorf("dest %d share %.3f, want %.3f", d, share, want)
				}
			}
			if sum != s.Offered {
				t.Errorf("per-destination counts add up to %d, offered %d", sum, s.Offered)
			}
		})
	}
}
