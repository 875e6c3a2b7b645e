package linktest

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"ibfab/internal/testsupport"
)

// LeakCheck fails t if, when t's cleanups run, goroutines exist that did
// not exist when LeakCheck was called, beyond those the tree's leak checks
// all ignore (testsupport.LeakOptions). Call it first in a test, so that
// its cleanup runs last, after the test's own Close calls. It is goleak's
// check (goleak.IgnoreCurrent at the call), repeated while goroutines on
// their way out take up to Wait to finish.
func LeakCheck(t testing.TB) {
	t.Helper()
	opts := append(testsupport.LeakOptions(), goleak.IgnoreCurrent())
	t.Cleanup(func() {
		deadline := time.Now().Add(Wait)
		err := goleak.Find(opts...)
		for err != nil && time.Now().Before(deadline) {
			err = goleak.Find(opts...)
		}
		if err != nil {
			t.Errorf("leaked goroutines: %v", err)
		}
	})
}
