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
			if calls%2 == 0 {
				return fail
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
	if s.Sent != 3 || s.Failed != 2 || s.Backlogged != s.Offered-5 || s.Offered < 20 {
		t.Fatalf("stats %+v: want 3 sent, 2 failed, the rest backlogged", s)
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
