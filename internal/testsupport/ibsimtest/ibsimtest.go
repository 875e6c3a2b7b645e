// Package ibsimtest starts Debian's ibsim for a test (internal/ibsimrun
// does the work) and ties its life to the test's.
package ibsimtest

import (
	"testing"

	"ibfab/internal/ibsimrun"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

// StartT is ibsimrun.Start for a test: it skips tb through testenv without
// root or ibsim, fails it when ibsim cannot start, and closes the simulator in tb.Cleanup, also when tb fails,
// after logging ibsim's output if it did.
func StartT(tb testing.TB, topo *topologies.Topology) *ibsimrun.Sim {
	tb.Helper()
	testenv.RequireRoot(tb)
	testenv.RequireProgram(tb, "ibsim", "ibsim-utils")
	s, err := ibsimrun.Start(topo, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("ibsim output (last 4 kB):\n%s", tail(s.Output(), 4096))
		}
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
