package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a requirement ended the test
// instead of ending it.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	if r.skipped == "" && r.failed == "" {
		r.skipped = fmt.Sprint(args...)
	}
}

func (r *recorder) Fatalf(format string, args ...any) {
	if r.skipped == "" && r.failed == "" {
		r.failed = fmt.Sprintf(format, args...)
	}
}

// outcome is what a requirement did to a test: "run", "skip: why" or
// "fail: why".
func (r *recorder) outcome() string {
	switch {
	case r.failed != "":
		return "fail: " + r.failed
	case r.skipped != "":
		return "skip: " + r.skipped
	}
	return "run"
}

func TestRequirements(t *testing.T) {
	present := filepath.Join(t.TempDir(), "libpresent.so")
	if err := os.WriteFile(present, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	absent := filepath.Join(t.TempDir(), "*", "libabsent.so")
	requirements := []struct {
		name    string
		met     bool
		require func(tb testing.TB)
	}{
		{"program on PATH", true, func(tb testing.TB) { RequireProgram(tb, "go", "golang") }},
		{"program missing", false, func(tb testing.TB) { RequireProgram(tb, "ibfab-no-such-program", "nopkg") }},
		{"file present", true, func(tb testing.TB) { RequireFile(tb, "nopkg", absent, present) }},
		{"file missing", false, func(tb testing.TB) { RequireFile(tb, "nopkg", absent) }},
		{"root", os.Geteuid() == 0, RequireRoot},
	}
	envs := []struct {
		value     string
		mandatory bool
	}{{"", false}, {"0", false}, {"false", false}, {"1", true}, {"yes", true}}
	for _, req := range requirements {
		for _, env := range envs {
			for _, isShort := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s=%q/short=%v", req.name, Env, env.value, isShort), func(t *testing.T) {
					t.Setenv(Env, env.value)
					defer func(f func() bool) { short = f }(short)
					short = func() bool { return isShort }
					r := &recorder{TB: t}
					req.require(r)
					got := r.outcome()
					switch {
					case isShort:
						want := "skip: " + ShortReason
						if got != want {
							t.Errorf("under -short: %q, want %q", got, want)
						}
					case req.met:
						if got != "run" {
							t.Errorf("requirement met: %q, want the test to run", got)
						}
					case env.mandatory:
						if !strings.HasPrefix(got, "fail: needs ") || !strings.Contains(got, Env+" is set") {
							t.Errorf("requirement missing, %s=%q: %q, want a failure naming the need and %s", Env, env.value, got, Env)
						}
					default:
						if !strings.HasPrefix(got, "skip: needs ") {
							t.Errorf("requirement missing: %q, want a skip naming the need", got)
						}
					}
				})
			}
		}
	}
}

func TestMissingNamesPackage(t *testing.T) {
	t.Setenv(Env, "")
	defer func(f func() bool) { short = f }(short)
	short = func() bool { return false }
	r := &recorder{TB: t}
	RequireFile(r, "libumad2sim0", "/nonexistent/*/umad2sim/libumad2sim.so")
	want := "skip: needs libumad2sim.so (Debian package libumad2sim0, installed by make debs)"
	if r.outcome() != want {
		t.Errorf("%q, want %q", r.outcome(), want)
	}
}
