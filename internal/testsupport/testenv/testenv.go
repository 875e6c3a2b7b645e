// Package testenv decides what a test that needs something of the machine
// (root, a Debian package's program or library) does when it is missing.
// Run by a contributor with `go test ./...`, the test skips and says what
// it needs. Run where every test must run — `make test` and CI set
// IBFAB_INTEGRATION=1 — the same test fails instead, so that a machine
// missing a requirement cannot pass by skipping. Under `go test -short`
// (`make unit`) every test that needs anything of the machine skips, root
// or not: -short asks for the unit tests alone.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Env names the variable that makes every requirement mandatory.
const Env = "IBFAB_INTEGRATION"

// ShortReason is why every integration test skips under -short.
const ShortReason = "integration test: -short"

// short is testing.Short, replaced by this package's own test.
var short = testing.Short

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

// Integration marks tb as an integration test: it skips under -short. The
// Require functions call it; a test that needs nothing they check but is
// no unit test (it runs real processes, or takes long) calls it itself.
func Integration(tb testing.TB) {
	tb.Helper()
	if short() {
		tb.Skip(ShortReason)
	}
}

// RequireRoot skips tb unless it runs as root: the fabric's namespaces,
// veth pairs, raw sockets and eBPF programs need it.
func RequireRoot(tb testing.TB) {
	tb.Helper()
	Integration(tb)
	if os.Geteuid() != 0 {
		Skip(tb, "needs root (network namespaces, veth pairs, raw sockets, eBPF)")
	}
}

// RequireProgram skips tb unless program is on PATH; pkg names the Debian
// package that installs it (make debs installs them all).
func RequireProgram(tb testing.TB, program, pkg string) {
	tb.Helper()
	Integration(tb)
	if _, err := exec.LookPath(program); err != nil {
		Skip(tb, "needs "+program+" (Debian package "+pkg+", installed by make debs)")
	}
}

// RequireFile returns the first file matching one of globs, or skips tb
// when none does; pkg names the Debian package that installs it.
func RequireFile(tb testing.TB, pkg string, globs ...string) string {
	tb.Helper()
	Integration(tb)
	for _, g := range globs {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			return m[0]
		}
	}
	Skip(tb, "needs "+filepath.Base(globs[0])+" (Debian package "+pkg+", installed by make debs)")
	return ""
}
