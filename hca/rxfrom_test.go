package hca_test

import (
	"testing"
	"time"

	"ibfab/hca"
	"ibfab/internal/clock"
)

// TestRxFrom: the receiver's record of one sender keeps the longest gap
// between its packets and when it ended, until read with reset.
func TestRxFrom(t *testing.T) {
	p := newPair(t)
	p.settle()
	activate(t, p, []uint8{0, 1}, 2)
	activate(t, p, nil, 1)
	send := func(after time.Duration) {
		t.Helper()
		p.runFor(t, after)
		if err := p.a.SendUD(1, 2, 0, 2, make([]byte, 64)); err != nil {
			t.Fatalf("SendUD: %v", err)
		}
		p.runFor(t, 10*time.Microsecond)
	}
	send(0)
	t0 := p.clk.Now()
	send(time.Millisecond)
	send(5 * time.Millisecond) // the longest gap, ending here
	end := p.clk.Now()
	send(time.Millisecond)

	got, err := p.b.RxFrom(1, true)
	if err != nil {
		t.Fatal(err)
	}
	src, ok := got[1]
	if !ok || len(got) != 1 {
		t.Fatalf("RxFrom: %+v, want one sender, LID 1", got)
	}
	if src.Packets != 4 {
		t.Errorf("packets %d, want 4", src.Packets)
	}
	// Each arrival comes 10 µs after a send: gaps are the send spacing.
	if want := int64(5*time.Millisecond + 10*time.Microsecond); src.Gap != want {
		t.Errorf("gap %v, want %v", time.Duration(src.Gap), time.Duration(want))
	}
	if src.GapEnd < t0.UnixNano() || src.GapEnd > end.UnixNano() {
		t.Errorf("gap ended at %d, want within [%d, %d]", src.GapEnd, t0.UnixNano(), end.UnixNano())
	}
	again, _ := p.b.RxFrom(1, false)
	if again[1].Gap != 0 || again[1].Packets != 4 {
		t.Errorf("after reset: %+v, want the count kept and no gap", again[1])
	}
	if _, err := p.b.RxFrom(2, false); err == nil {
		t.Error("RxFrom on port 2 of a one-port HCA: nil error")
	}
}

// TestGeneratorPeriodic: a probe's arrivals come at fixed intervals, to
// each destination in turn.
func TestGeneratorPeriodic(t *testing.T) {
	clk := clock.NewManual(epoch)
	var order []uint16
	cfg := hca.GeneratorConfig{Load: 1, Rate: 8e9, Payload: 64, Dests: []uint16{1, 2, 3}, Seed: 7, Periodic: true}
	g, err := hca.NewGenerator(cfg, clk, func(d uint16, _ []byte) error { order = append(order, d); return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	gap := g.MeanGap()
	g.Start()
	for i := range 9 {
		clk.Advance(gap)
		if len(order) != i+1 {
			t.Fatalf("after %d intervals: %d packets, want %d", i+1, len(order), i+1)
		}
	}
	g.Stop()
	for i, d := range order {
		if want := cfg.Dests[(i+1)%3]; d != want {
			t.Fatalf("packet %d to %d, want %d (in turn): %v", i, d, want, order)
		}
	}
	for _, bad := range []hca.GeneratorConfig{
		{Load: 1, Rate: 8e9, Payload: 64, HotSpot: 4, HotFraction: 1, Periodic: true},
		{Load: 1, Rate: 8e9, Payload: 64, Dests: []uint16{1}, HotSpot: 4, HotFraction: 0.5, Periodic: true},
	} {
		if _, err := hca.NewGenerator(bad, clk, func(uint16, []byte) error { return nil }, nil); err == nil {
			t.Errorf("periodic with a hot spot %+v: nil error", bad)
		}
	}
}
