// Package testenv decides what a test that needs something of the machine
// (root, a Debian package's program or library) does when it is missing.
// Run by a contributor with `go test ./...`, the test skips and says what
// it needs. Run where every test must run — `make test` and CI set
// IBFAB_INTEGRATION=1 — the same test fails instead, so that a machine
// missing a requirement cannot pass by skipping.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Env names the variable that makes every requirement mandatory.
const Env = "IBFAB_INTEGRATION"

// Mandatory reports whether a missing requirement fails the test.
func Mandatory() bool {
	switch os.Getenv(Env) {
	case "", "0", "false":
		return false
	}
	return true
}

// Skip skips tb with reason, or fails it when requirements are mandatory.
func Skip(tb testing.TB, reason string) {
	tb.Helper()
	if Mandatory() {
		tb.Fatalf("%s (%s is set: every test must run)", reason, Env)
	}
	tb.Skip(reason)
}

// RequireRoot skips tb unless it runs as root: the fabric's namespaces,
// veth pairs, raw sockets and eBPF programs need it.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Skip(tb, "needs root (network namespaces, veth pairs, raw sockets, eBPF)")
	}
}

// RequireProgram skips tb unless program is on PATH; pkg names the Debian
// package that installs it (make debs installs them all).
func RequireProgram(tb testing.TB, program, pkg string) {
	tb.Helper()
	if _, err := exec.LookPath(program); err != nil {
		Skip(tb, "needs "+program+" (Debian package "+pkg+", installed by make debs)")
	}
}

// RequireFile skips tb unless path exists; pkg names the Debian package that
// installs it.
func RequireFile(tb testing.TB, path, pkg string) {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		Skip(tb, "needs "+path+" (Debian package "+pkg+", installed by make debs)")
	}
}
