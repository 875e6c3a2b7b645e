package clock

import (
	"math"
	"time"
)

// Clock tells the time and runs functions later.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f once, d after now, unless the returned Timer is
	// stopped first. A d <= 0 makes f due at once.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call made by Clock.AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not started yet. It reports whether
	// it did so; false means the call already ran, is running, or the timer
	// was stopped before.
	Stop() bool
	// Reset makes the call due d after now, whether or not it already ran
	// or was stopped. It reports whether the timer was pending before.
	Reset(d time.Duration) bool
}

// Real returns the wall clock of the time package.
func Real() Clock { return realClock{} }

type realClock struct{}

var _ Clock = realClock{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// *time.Timer already has the Timer method set.
var _ Timer = (*time.Timer)(nil)

// Scaled stretches emulated time by s (> 0) over base: durations passed to
// AfterFunc (and Timer.Reset) are multiplied by s and Now advances 1/s as
// fast as base from the moment of creation. Scaled(c, 10) lets a fabric
// that needs ten times the CPU it has run correctly, ten times slower.
// An s that is not a finite positive number is taken as 1, so a bad flag
// value cannot stop time or run it backwards; callers validate flags before.
func Scaled(base Clock, s float64) Clock { return ScaledSince(base, s, base.Now()) }

// ScaledSince is Scaled with emulated time equal to base time at epoch
// instead of at creation: processes that share an epoch share a time line,
// so a send stamp taken in one is comparable with a receive time in another.
func ScaledSince(base Clock, s float64, epoch time.Time) Clock {
	if !(s > 0) || math.IsInf(s, 0) {
		s = 1
	}
	return &scaled{base: base, s: s, start: epoch}
}

type scaled struct {
	base  Clock
	s     float64
	start time.Time // base time at creation; emulated time equals it there
}

var _ Clock = (*scaled)(nil)

func (c *scaled) Now() time.Time {
	return c.start.Add(scale(c.base.Now().Sub(c.start), 1/c.s))
}

func (c *scaled) AfterFunc(d time.Duration, f func()) Timer {
	return &scaledTimer{t: c.base.AfterFunc(scale(d, c.s), f), s: c.s}
}

type scaledTimer struct {
	t Timer
	s float64
}

func (t *scaledTimer) Stop() bool { return t.t.Stop() }

func (t *scaledTimer) Reset(d time.Duration) bool { return t.t.Reset(scale(d, t.s)) }

// scale returns d*s, saturated at the Duration range instead of wrapping.
func scale(d time.Duration, s float64) time.Duration {
	v := float64(d) * s
	switch {
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(v)
}
