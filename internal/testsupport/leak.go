package testsupport

import (
	"testing"

	"go.uber.org/goleak"
)

// LeakOptions are the goleak options of every leak check in the tree
// (VerifyTestMain and link/linktest.LeakCheck): goleak's defaults (the
// test framework's, os/signal's and the runtime tracer's goroutines) and
// the goroutines below, which live as long as the process by design.
//
// The set is one for all packages, the root-only ones too: their tests
// (fabrics, namespaces, ibsim, OpenSM) skip under -short and have not run
// under the check as this was written, so the set ignores the process's
// own long-lived goroutines wherever node code might start them rather
// than in the packages known to, and nothing else. A goroutine such a
// test leaves behind is a leak to fix, or, if a library keeps it for the
// process by design, an entry here with the reason.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		// clock.Precise's timerfd loop: one a process, started by the
		// first Precise() (the node processes' clock, nodeproc) and
		// never stopped (internal/clock/precise_linux.go); the clock's
		// own tests start more through newPrecise. Blocked, it has the
		// poller's wait on top of its stack, so any-function, not top.
		// The timer callbacks it starts are not ignored.
		goleak.IgnoreAnyFunction("ibfab/internal/clock.(*precise).loop"),
	}
}

// VerifyTestMain runs m's tests and, when they pass, fails the run if
// goroutines beyond LeakOptions are still running (goleak.VerifyTestMain).
// The after functions run between the two: they close what a package's
// tests share across tests, such as a fuzz target's bed. Call it as a
// package's TestMain:
//
//	func TestMain(m *testing.M) { testsupport.VerifyTestMain(m) }
func VerifyTestMain(m *testing.M, after ...func()) {
	goleak.VerifyTestMain(runThen{m, after}, LeakOptions()...)
}

type runThen struct {
	m     *testing.M
	after []func()
}

func (r runThen) Run() int {
	code := r.m.Run()
	for _, f := range r.after {
		f()
	}
	return code
}
