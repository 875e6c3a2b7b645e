package hca_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"ibfab/hca"
	"ibfab/internal/clock"
)

// stallClock is a Manual clock whose Now runs ahead by a skew the test
// sets: a callback due at T runs when the process reads T+skew, as one
// whose process was off the CPU for skew.
type stallClock struct {
	*clock.Manual
	skew atomic.Int64
}

func (c *stallClock) Now() time.Time { return c.Manual.Now().Add(time.Duration(c.skew.Load())) }

func TestGeneratorRecordsStalls(t *testing.T) {
	clk := &stallClock{Manual: clock.NewManual(epoch)}
	refuse := false
	g, err := hca.NewGenerator(hca.GeneratorConfig{Load: 1, Rate: 1e9, Payload: 64, Dests: []uint16{1, 2}, Periodic: true},
		clk, func(uint16, []byte) error {
			if refuse {
				return errors.New("port not Active")
			}
			return nil
		}, func() int { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	g.Start()
	clk.Advance(50 * time.Millisecond)
	if s := g.Stats(); len(s.Stalls) != 0 || s.Sent == 0 {
		t.Fatalf("on time: %+v, want packets sent and no stall", s)
	}
	// A port that refuses makes the generator wait longer on purpose:
	// no stall.
	refuse = true
	clk.Advance(300 * time.Millisecond)
	refuse = false
	clk.Advance(300 * time.Millisecond)
	if s := g.Stats(); len(s.Stalls) != 0 || s.Failed == 0 {
		t.Fatalf("refused: %+v, want failed arrivals and no stall", s)
	}
	// The process is off the CPU for 40 ms: the next callback runs late.
	clk.skew.Store(int64(40 * time.Millisecond))
	at := clk.Now()
	clk.Advance(10 * time.Millisecond)
	s := g.Stats()
	if len(s.Stalls) != 1 {
		t.Fatalf("stalls %+v, want one", s.Stalls)
	}
	if st := s.Stalls[0]; st.LateNs < int64(39*time.Millisecond) || st.LateNs > int64(41*time.Millisecond) || st.EndNs < at.UnixNano() {
		t.Errorf("stall %+v, want about 40 ms late, ending after %v", st, at)
	}
	// Late by less than StallMin is no stall; the ring keeps the last.
	clk.skew.Add(int64(hca.StallMin / 2))
	clk.Advance(10 * time.Millisecond)
	for range 40 {
		clk.skew.Add(int64(2 * hca.StallMin))
		clk.Advance(10 * time.Millisecond)
	}
	s = g.Stats()
	g.Stop()
	if len(s.Stalls) != 32 {
		t.Errorf("%d stalls kept, want the ring's 32", len(s.Stalls))
	}
	for i := 1; i < len(s.Stalls); i++ {
		if s.Stalls[i].EndNs <= s.Stalls[i-1].EndNs {
			t.Fatalf("stalls not oldest first: %+v", s.Stalls)
		}
	}
}
