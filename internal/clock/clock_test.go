package clock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/clock"
)

var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// log records the order in which timer callbacks ran and the clock's time
// during each.
type log struct {
	mu  sync.Mutex
	got []string
	at  []time.Duration
}

func (l *log) fn(c clock.Clock, name string) func() {
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got = append(l.got, name)
		l.at = append(l.at, c.Now().Sub(t0))
	}
}

func TestManualOrder(t *testing.T) {
	tests := []struct {
		name    string
		delays  []time.Duration // timer i is named by its index letter
		advance []time.Duration
		want    string
		wantAt  []time.Duration
	}{
		{"none due", []time.Duration{10, 20}, []time.Duration{5}, "", nil},
		{"in time order", []time.Duration{30, 10, 20}, []time.Duration{30}, "bca", []time.Duration{10, 20, 30}},
		{"ties in scheduling order", []time.Duration{10, 10, 5}, []time.Duration{10}, "cab", []time.Duration{5, 10, 10}},
		{"boundary is inclusive", []time.Duration{10}, []time.Duration{9, 1}, "a", []time.Duration{10}},
		{"zero delay runs on Advance(0)", []time.Duration{0, -5}, []time.Duration{0}, "ab", []time.Duration{0, 0}},
		{"across several advances", []time.Duration{5, 15, 25}, []time.Duration{10, 10, 10}, "abc", []time.Duration{5, 15, 25}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := clock.NewManual(t0)
			var l log
			for i, d := range tt.delays {
				m.AfterFunc(d, l.fn(m, string(rune('a'+i))))
			}
			var total time.Duration
			for _, d := range tt.advance {
				m.Advance(d)
				total += d
			}
			assert.Equal(t, tt.want, join(l.got))
			assert.Equal(t, tt.wantAt, l.at)
			assert.Equal(t, t0.Add(total), m.Now())
			assert.Equal(t, len(tt.delays)-len(tt.want), m.Pending())
		})
	}
}

func join(s []string) string {
	var r string
	for _, x := range s {
		r += x
	}
	return r
}

func TestManualStopReset(t *testing.T) {
	tests := []struct {
		name      string
		op        func(clock.Timer) bool
		wantOp    bool
		advance   time.Duration
		wantRuns  int
		wantAtEnd time.Duration // clock time of the run, if any
	}{
		{"stop pending", clock.Timer.Stop, true, time.Hour, 0, 0},
		{"reset later", func(tm clock.Timer) bool { return tm.Reset(50) }, true, 49, 0, 0},
		{"reset later fires", func(tm clock.Timer) bool { return tm.Reset(50) }, true, 50, 1, 50},
		{"reset earlier", func(tm clock.Timer) bool { return tm.Reset(3) }, true, 10, 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := clock.NewManual(t0)
			var l log
			tm := m.AfterFunc(10, l.fn(m, "x"))
			assert.Equal(t, tt.wantOp, tt.op(tm))
			m.Advance(tt.advance)
			require.Len(t, l.got, tt.wantRuns)
			if tt.wantRuns > 0 {
				assert.Equal(t, tt.wantAtEnd, l.at[0])
			}
		})
	}
}

func TestManualTimerAfterRun(t *testing.T) {
	m := clock.NewManual(t0)
	var l log
	tm := m.AfterFunc(10, l.fn(m, "x"))
	m.Advance(10)
	assert.False(t, tm.Stop(), "Stop after the run")
	assert.False(t, tm.Reset(5), "Reset after the run reports not pending")
	assert.Equal(t, 1, m.Pending())
	assert.True(t, tm.Stop())
	assert.False(t, tm.Stop(), "second Stop")
	m.Advance(100)
	assert.Equal(t, []string{"x"}, l.got)
}

func TestManualCallbackSchedules(t *testing.T) {
	// A keepalive pattern: the callback re-arms its own timer, and a timer
	// scheduled by a callback inside the Advance window runs in it.
	m := clock.NewManual(t0)
	var ticks []time.Duration
	var tm clock.Timer
	tm = m.AfterFunc(10, func() {
		ticks = append(ticks, m.Now().Sub(t0))
		tm.Reset(10)
	})
	m.Advance(35)
	assert.Equal(t, []time.Duration{10, 20, 30}, ticks)
	next, ok := m.Next()
	require.True(t, ok)
	assert.Equal(t, t0.Add(40), next)
	assert.True(t, m.AdvanceToNext())
	assert.Equal(t, t0.Add(40), m.Now())
	assert.Len(t, ticks, 4)
	tm.Stop()
	assert.False(t, m.AdvanceToNext())
	_, ok = m.Next()
	assert.False(t, ok)
}

func TestManualNegativeAdvance(t *testing.T) {
	m := clock.NewManual(t0)
	m.Advance(-time.Second)
	assert.Equal(t, t0, m.Now())
}

func TestManualBlockUntil(t *testing.T) {
	m := clock.NewManual(t0)
	fired := make(chan struct{})
	go m.AfterFunc(time.Second, func() { close(fired) })
	m.BlockUntil(1)
	m.Advance(time.Second)
	<-fired
}

func TestScaled(t *testing.T) {
	tests := []struct {
		name      string
		s         float64
		timer     time.Duration // emulated
		baseFires time.Duration // base time after which it must have run
		baseAdv   time.Duration
		wantNow   time.Duration // emulated time elapsed after baseAdv
	}{
		{"identity", 1, 100, 100, 100, 100},
		{"ten times slower", 10, 100, 1000, 1000, 100},
		{"faster", 0.5, 100, 50, 50, 100},
		{"zero scale is 1", 0, 100, 100, 100, 100},
		{"negative scale is 1", -3, 100, 100, 100, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := clock.NewManual(t0)
			c := clock.Scaled(m, tt.s)
			assert.Equal(t, t0, c.Now())
			ran := false
			c.AfterFunc(tt.timer, func() { ran = true })
			m.Advance(tt.baseFires - 1)
			assert.False(t, ran, "ran before %v of base time", tt.baseFires)
			m.Advance(1)
			assert.True(t, ran, "not run after %v of base time", tt.baseFires)
			assert.Equal(t, t0.Add(tt.wantNow), c.Now())
		})
	}
}

func TestScaledReset(t *testing.T) {
	m := clock.NewManual(t0)
	c := clock.Scaled(m, 4)
	ran := 0
	tm := c.AfterFunc(time.Second, func() { ran++ })
	assert.True(t, tm.Reset(2*time.Second))
	m.Advance(7 * time.Second)
	assert.Equal(t, 0, ran)
	m.Advance(time.Second)
	assert.Equal(t, 1, ran)
	assert.False(t, tm.Stop())
}

func TestScaledSaturates(t *testing.T) {
	m := clock.NewManual(t0)
	c := clock.Scaled(m, 1e6)
	tm := c.AfterFunc(time.Duration(1<<62), func() {})
	next, ok := m.Next()
	require.True(t, ok)
	assert.True(t, next.After(t0), "an overflowing duration must not wrap into the past")
	tm.Stop()
}

func TestReal(t *testing.T) {
	c := clock.Real()
	before := time.Now()
	assert.False(t, c.Now().Before(before))
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
	tm := c.AfterFunc(time.Hour, func() { t.Error("stopped timer ran") })
	assert.True(t, tm.Stop())
}

// TestScaledSince shows two scaled clocks created at different times on a
// shared epoch telling the same time, where Scaled's would differ.
func TestScaledSince(t *testing.T) {
	m := clock.NewManual(time.Unix(1000, 0))
	epoch := m.Now()
	m.Advance(4 * time.Second)
	a := clock.ScaledSince(m, 2, epoch)
	m.Advance(2 * time.Second)
	b := clock.ScaledSince(m, 2, epoch)
	if !a.Now().Equal(b.Now()) {
		t.Fatalf("clocks on one epoch disagree: %v vs %v", a.Now(), b.Now())
	}
	if want := epoch.Add(3 * time.Second); !a.Now().Equal(want) {
		t.Errorf("Now = %v, want %v (6 s of base at scale 2)", a.Now(), want)
	}
}
