package fabrictest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/ibsimrun"
	"ibfab/internal/testsupport"
	"ibfab/internal/testsupport/testenv"
	"ibfab/simproto"
	"ibfab/umadproto"
)

var (
	shimOnce sync.Once
	shimPath string
	shimErr  error
)

// ShimLibrary returns the path of the umad shim the tests use: built from
// umadshim/ with gcc into a directory of the system's temporary one named
// by the source's hash (so once per version of it), so
// that the tests run the source they sit beside (bin/ may hold an older
// build), with $IBFAB_UMAD_SHIM pointing at it for exec --umad. Without
// the source or gcc it is harness.ShimLibrary's; without either, tb
// skips or fails through testenv.
func ShimLibrary(tb testing.TB) string {
	tb.Helper()
	shimOnce.Do(func() {
		src, srcErr := shimSource()
		_, gccErr := exec.LookPath("gcc")
		if srcErr != nil || gccErr != nil {
			if shimPath, shimErr = harness.ShimLibrary(); shimErr != nil {
				shimErr = fmt.Errorf("%v; and cannot build it: %v", shimErr, errors.Join(srcErr, gccErr))
			}
			return
		}
		code, err := os.ReadFile(src)
		if err != nil {
			shimErr = err
			return
		}
		// One build per version of the source, kept for the next run.
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("ibfab-shim-%x", sha256.Sum256(code)))
		out := filepath.Join(dir, harness.ShimLibraryName)
		if _, err := os.Stat(out); err == nil {
			shimPath = out
			os.Setenv(harness.EnvShimLibrary, out)
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			shimErr = err
			return
		}
		tmp := out + fmt.Sprintf(".%d", os.Getpid())
		if b, err := exec.Command("gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-o", tmp, src, "-ldl", "-lpthread").CombinedOutput(); err != nil {
			shimErr = fmt.Errorf("building the umad shim: %v\n%s", err, b)
			return
		}
		if shimErr = os.Rename(tmp, out); shimErr != nil {
			return
		}
		shimPath = out
		os.Setenv(harness.EnvShimLibrary, out)
	})
	if shimErr != nil {
		testenv.Skip(tb, shimErr.Error())
	}
	return shimPath
}

// shimSource finds umadshim/ibfabumad.c above the working directory.
func shimSource() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "umadshim", "ibfabumad.c")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("umadshim/ibfabumad.c not found above " + wd)
		}
	}
}

// UMAD2Sim returns the path of libumad2sim.so (ibsimrun.UMAD2Sim); when the
// Debian package is missing, tb skips or fails through testenv.
func UMAD2Sim(tb testing.TB) string {
	tb.Helper()
	lib, err := ibsimrun.UMAD2Sim()
	if err != nil {
		testenv.Skip(tb, err.Error())
	}
	return lib
}

// requireUMAD skips or fails f's test through testenv unless libumad2sim
// and the Debian program argv runs (after env and its assignments) are
// installed.
func (f *Fabric) requireUMAD(argv []string) {
	f.tb.Helper()
	UMAD2Sim(f.tb)
	for _, a := range argv {
		if a == "env" || strings.Contains(a, "=") {
			continue
		}
		if strings.Contains(a, "/") {
			return // a binary of ours, not a Debian program
		}
		pkg := "infiniband-diags"
		switch a {
		case "opensm":
			pkg = "opensm"
		case "ibsim":
			pkg = "ibsim-utils"
		}
		testenv.RequireProgram(f.tb, a, pkg)
		return
	}
}

// UMAD runs argv in node's namespace as `ibfab exec --umad=sim` does
// (libumad2sim), through harness.Exec in this process, and returns its
// standard output and error; err is non-nil when it exits non-zero. A
// missing libumad2sim or program skips or fails f's test through testenv:
// call it on the test's goroutine.
func (f *Fabric) UMAD(node string, argv ...string) (stdout, stderr string, err error) {
	f.tb.Helper()
	f.requireUMAD(argv)
	return f.exec(harness.UMADSim, node, argv)
}

// Shim runs argv in node's namespace as `ibfab exec --umad` does: through
// ibfab's umad shim (built from source when bin/ has none, see
// ShimLibrary). Otherwise as UMAD.
func (f *Fabric) Shim(node string, argv ...string) (stdout, stderr string, err error) {
	f.tb.Helper()
	f.requireUMAD(argv)
	ShimLibrary(f.tb)
	return f.exec(harness.UMADShim, node, argv)
}

// MustShim is Shim failing the test on a non-zero exit.
func (f *Fabric) MustShim(node string, argv ...string) string {
	f.tb.Helper()
	out, errOut, err := f.Shim(node, argv...)
	if err != nil {
		f.tb.Fatalf("ibfab exec --umad %s %s -- %v: %v\nstdout:\n%s\nstderr:\n%s", f.Name, node, argv, err, out, errOut)
	}
	return out
}

// exec is ibfab exec with mode: argv's exit status as an
// *harness.ExitCodeError, and what ibfab would say of an error it met on
// stderr with status 1. (ibfab's command line, harness/ibfabcli, is above
// the suites whose tests use this package: it cannot be imported here.)
func (f *Fabric) exec(mode harness.UMADMode, node string, argv []string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, &o, &e
	opts := harness.ExecOptions{UMAD: mode, Socket: umadproto.SocketFromEnv(), Sim: simproto.BaseFromEnv()}
	if err := harness.Exec(f.Name, node, c, opts); err != nil {
		code, ok := harness.ExitStatus(err)
		if !ok {
			fmt.Fprintf(&e, "ibfab exec: %v\n", err)
			code = harness.ExitFailure
		}
		return o.String(), e.String(), &harness.ExitCodeError{Code: code}
	}
	return o.String(), e.String(), nil
}

// MustUMAD is UMAD failing the test on a non-zero exit, and returns the
// standard output. In a subtest, call it on f.For(t).
func (f *Fabric) MustUMAD(node string, argv ...string) string {
	f.tb.Helper()
	out, errOut, err := f.UMAD(node, argv...)
	if err != nil {
		f.tb.Fatalf("ibfab exec --umad %s %s -- %v: %v\nstdout:\n%s\nstderr:\n%s", f.Name, node, argv, err, out, errOut)
	}
	return out
}

// For returns f failing tb instead of the test that brought it up, for
// the Must helpers in a subtest (FailNow must run on the failing test's
// own goroutine).
func (f *Fabric) For(tb testing.TB) *Fabric {
	g := *f
	g.tb = tb
	return &g
}

// Daemon is a long-running command started in a node's namespace with
// exec --umad's environment: OpenSM in daemon mode, say.
type Daemon struct {
	cmd  *exec.Cmd
	out  testsupport.SyncBuffer
	done chan struct{}
	err  error // after done
}

// StartUMAD starts argv in node's namespace with the environment of exec
// --umad=sim (harness.UMADEnv). The test's cleanup stops it (SIGTERM, then
// SIGKILL), by its PID.
func (f *Fabric) StartUMAD(node string, argv ...string) *Daemon {
	f.tb.Helper()
	f.requireUMAD(argv)
	return f.start(node, argv, harness.UMADSim)
}

// StartShim is StartUMAD through ibfab's umad shim (exec --umad).
func (f *Fabric) StartShim(node string, argv ...string) *Daemon {
	f.tb.Helper()
	f.requireUMAD(argv)
	ShimLibrary(f.tb)
	return f.start(node, argv, harness.UMADShim)
}

// start starts argv at node with exec --umad's environment of mode.
func (f *Fabric) start(node string, argv []string, mode harness.UMADMode) *Daemon {
	f.tb.Helper()
	ns, env, err := harness.ExecEnv(f.Name, node, harness.ExecOptions{UMAD: mode})
	if err != nil {
		f.tb.Fatal(err)
	}
	d := &Daemon{done: make(chan struct{})}
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Env = append(d.cmd.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = &d.out, &d.out
	if err := fabricnet.Do(ns, d.cmd.Start); err != nil {
		f.tb.Fatalf("starting %v in %s: %v", argv, node, err)
	}
	go func() {
		d.err = d.cmd.Wait()
		harness.RemoveUMADSysfs("", d.cmd.Process.Pid)
		harness.RemoveShimSysfs(d.cmd.Process.Pid)
		close(d.done)
	}()
	f.tb.Cleanup(func() { d.Stop() })
	return d
}

// Output returns what the daemon printed so far.
func (d *Daemon) Output() string { return d.out.String() }

// Exited reports whether the daemon has exited, and its error.
func (d *Daemon) Exited() (bool, error) {
	select {
	case <-d.done:
		return true, d.err
	default:
		return false, nil
	}
}

// Stop ends the daemon: SIGTERM, SIGKILL after 5 s. It returns the
// daemon's exit error unless that is the signal's doing.
func (d *Daemon) Stop() error {
	if exited, err := d.Exited(); exited {
		return err
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
	}
	var ee *exec.ExitError
	if errors.As(d.err, &ee) && !ee.Exited() {
		return nil // ended by our signal
	}
	return d.err
}
