package clock

import (
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPreciseFires: timers set out of order all fire, none before its
// time, and a stopped one never. (Their callbacks run on goroutines of
// their own, as time.AfterFunc's, so two due together may run in either
// order: the order they start in is the heap's, tested with Manual's.)
func TestPreciseFires(t *testing.T) {
	c, err := newPrecise()
	if err != nil {
		t.Fatal(err)
	}
	delays := []time.Duration{900, 100, 500, 300, 700, 200}
	var (
		mu    sync.Mutex
		fired []time.Duration
		wg    sync.WaitGroup
	)
	start := time.Now()
	for _, d := range delays {
		d := d * time.Microsecond
		wg.Add(1)
		due := start.Add(d)
		c.AfterFunc(time.Until(due), func() {
			defer wg.Done()
			if now := time.Now(); now.Before(due) {
				t.Errorf("timer of %v fired %v early", d, due.Sub(now))
			}
			mu.Lock()
			fired = append(fired, d)
			mu.Unlock()
		})
	}
	stopped := c.AfterFunc(400*time.Microsecond, func() { t.Error("a stopped timer fired") })
	if !stopped.Stop() {
		t.Error("Stop of a pending timer = false")
	}
	if stopped.Stop() {
		t.Error("second Stop = true")
	}
	wg.Wait()
	slices.Sort(fired)
	want := slices.Clone(delays)
	for i := range want {
		want[i] *= time.Microsecond
	}
	slices.Sort(want)
	if !slices.Equal(fired, want) {
		t.Errorf("fired %v, want %v", fired, want)
	}
}

// TestPreciseReset: Reset reports whether the timer was pending, moves it
// earlier (re-arming the timerfd for the new earliest) or later, and makes
// a timer that already ran due again.
func TestPreciseReset(t *testing.T) {
	c, err := newPrecise()
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan string, 4)
	late := c.AfterFunc(time.Hour, func() { ran <- "late" })
	if !late.Reset(time.Microsecond) {
		t.Error("Reset of a pending timer = false")
	}
	if got := <-ran; got != "late" {
		t.Fatalf("ran %q", got)
	}
	if late.Reset(0) {
		t.Error("Reset of a timer that ran = true")
	}
	if got := <-ran; got != "late" {
		t.Fatalf("ran %q", got)
	}
	// A callback may block without holding up the clock's other timers.
	block := make(chan struct{})
	c.AfterFunc(0, func() { <-block })
	c.AfterFunc(10*time.Microsecond, func() { ran <- "after a blocked one" })
	if got := <-ran; got != "after a blocked one" {
		t.Fatalf("ran %q", got)
	}
	close(block)
}

// TestPreciseShared: Precise is one clock per process.
func TestPreciseShared(t *testing.T) {
	if Precise() != Precise() {
		t.Error("two Precise clocks")
	}
}

// BenchmarkTimerLateness reports how late a 100 µs timer fires, with the
// precise clock and with time.AfterFunc, in an otherwise idle process.
func BenchmarkTimerLateness(b *testing.B) {
	pc, err := newPrecise()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		clk  Clock
	}{{"precise", pc}, {"runtime", Real()}} {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			done := make(chan time.Duration)
			for range b.N {
				due := time.Now().Add(100 * time.Microsecond)
				c.clk.AfterFunc(100*time.Microsecond, func() { done <- time.Since(due) })
				total += <-done
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "late-ns/op")
		})
	}
}

// TestPreciseNonBlocking: arming the timerfd leaves it non-blocking, so
// the loop waits in the runtime poller, not in a read holding a thread.
func TestPreciseNonBlocking(t *testing.T) {
	c, err := newPrecise()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	c.AfterFunc(10*time.Microsecond, func() { close(done) })
	<-done
	c.AfterFunc(time.Hour, func() {})
	fl, err := unix.FcntlInt(uintptr(c.fd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fl&unix.O_NONBLOCK == 0 {
		t.Error("the timerfd is in blocking mode")
	}
}

// TestPreciseFollowsEarliest: when the earliest timer moves later or
// stops, the timerfd is set for the new earliest, or disarmed, so an idle
// process is not woken for a timer that is no longer due.
func TestPreciseFollowsEarliest(t *testing.T) {
	c, err := newPrecise()
	if err != nil {
		t.Fatal(err)
	}
	armed := func() time.Duration {
		var cur unix.ItimerSpec
		if err := unix.TimerfdGettime(c.fd, &cur); err != nil {
			t.Fatal(err)
		}
		return time.Duration(cur.Value.Nano())
	}
	first := c.AfterFunc(time.Minute, func() { t.Error("first fired") })
	second := c.AfterFunc(time.Hour, func() { t.Error("second fired") })
	for _, step := range []struct {
		name     string
		do       func()
		min, max time.Duration
	}{
		{"two pending", func() {}, 59 * time.Second, time.Minute},
		{"first put off", func() { first.Reset(30 * time.Minute) }, 29 * time.Minute, 30 * time.Minute},
		{"first stopped", func() { first.Stop() }, 59 * time.Minute, time.Hour},
		{"all stopped", func() { second.Stop() }, 0, 0},
	} {
		step.do()
		if got := armed(); got < step.min || got > step.max {
			t.Errorf("%s: timerfd set for %v, want %v..%v", step.name, got, step.min, step.max)
		}
	}
}
