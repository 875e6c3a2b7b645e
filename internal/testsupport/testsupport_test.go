package testsupport

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"ibfab/internal/clock"
)

func TestMain(m *testing.M) { VerifyTestMain(m) }

// TestLeakOptions: a goroutine left running is found, clock.Precise's
// loop is not, and a timer callback it starts is.
func TestLeakOptions(t *testing.T) {
	c := clock.Precise()
	fired := make(chan struct{})
	c.AfterFunc(time.Microsecond, func() { close(fired) })
	<-fired
	if err := goleak.Find(LeakOptions()...); err != nil {
		t.Fatalf("with the precise clock running: %v", err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { <-stop })
	if goleak.Find(LeakOptions()...) == nil {
		t.Error("a goroutine left running was not found")
	}
	callback, started := make(chan struct{}), make(chan struct{})
	c.AfterFunc(time.Microsecond, func() { close(started); <-callback })
	close(stop)
	wg.Wait()
	<-started
	if goleak.Find(LeakOptions()...) == nil {
		t.Error("a blocked timer callback was not found")
	}
	close(callback)
}

// TestWaitBlocked: WaitBlocked returns once the goroutines wait in the
// function named, and Poll says whether its condition came true in time.
func TestWaitBlocked(t *testing.T) {
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { parkHere(release) })
	}
	WaitBlocked(t, 10*time.Second, 2, "ibfab/internal/testsupport.parkHere", "ibfab/internal/testsupport.TestWaitBlocked.func1")
	if n := blockedIn([]string{"ibfab/internal/testsupport.parkHere"}); n != 2 {
		t.Errorf("%d blocked, want 2", n)
	}
	if n := blockedIn([]string{"ibfab/internal/testsupport.parkHere", "internal/poll.runtime_pollWait"}); n != 0 {
		t.Errorf("%d blocked in parkHere and the poller, want 0", n)
	}
	close(release)
	wg.Wait()
	if n := blockedIn([]string{"ibfab/internal/testsupport.parkHere"}); n != 0 {
		t.Errorf("%d blocked after the release, want 0", n)
	}
	if Poll(10*time.Millisecond, func() bool { return false }) {
		t.Error("Poll of a false condition = true")
	}
	calls := 0
	if !Poll(time.Second, func() bool { calls++; return calls == 3 }) || calls != 3 {
		t.Errorf("Poll: %d calls", calls)
	}
}

//go:noinline
func parkHere(c chan struct{}) { <-c }

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() { fmt.Fprintf(&b, "%d", i) })
	}
	wg.Wait()
	if len(b.String()) != 4 {
		t.Errorf("%q", b.String())
	}
}
