package fabrictest

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// OpenSM is Debian's OpenSM running as a daemon at one HCA of a fabric,
// its log flushed line by line (by default it is buffered until exit, so
// a test would not see SUBNET UP) and its GUID→LID cache in a directory
// of the test's.
type OpenSM struct {
	f        *Fabric
	Log, Dir string
	D        *Daemon
}

// StartOpenSM starts OpenSM at node (exec --umad's environment) with
// args added to its command line; the test's cleanup stops it.
func (f *Fabric) StartOpenSM(node string, args ...string) *OpenSM {
	f.tb.Helper()
	return f.startOpenSM(node, f.StartUMAD, args)
}

// StartOpenSMShim is StartOpenSM through ibfab's umad shim: OpenSM's SA
// answers whole tables (RMPP) there.
func (f *Fabric) StartOpenSMShim(node string, args ...string) *OpenSM {
	f.tb.Helper()
	return f.startOpenSM(node, f.StartShim, args)
}

func (f *Fabric) startOpenSM(node string, start func(string, ...string) *Daemon, args []string) *OpenSM {
	f.tb.Helper()
	dir := f.tb.TempDir()
	conf := filepath.Join(dir, "opensm.conf")
	if err := os.WriteFile(conf, []byte("force_log_flush TRUE\n"), 0o644); err != nil {
		f.tb.Fatal(err)
	}
	o := &OpenSM{f: f, Log: filepath.Join(dir, "opensm.log"), Dir: dir}
	o.D = start(node, append([]string{"env", "OSM_CACHE_DIR=" + dir, "opensm", "-F", conf, "-f", o.Log}, args...)...)
	return o
}

// LogText returns the log from byte offset from on.
func (o *OpenSM) LogText(tb testing.TB, from int) string {
	b, err := os.ReadFile(o.Log)
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		tb.Fatal(err)
	}
	if from > len(b) {
		return ""
	}
	return string(b[from:])
}

// WaitLog waits until every one of want appears in the log after offset
// from, in that order, and returns the offset after the last.
func (o *OpenSM) WaitLog(tb testing.TB, timeout time.Duration, from int, want ...string) int {
	tb.Helper()
	end := from
	Wait(tb, timeout, fmt.Sprintf("OpenSM log: %q", want), func() bool {
		if exited, err := o.D.Exited(); exited {
			tb.Fatalf("opensm exited (%v): %s\nlog:\n%s", err, o.D.Output(), Tail(o.LogText(tb, 0), 30))
		}
		s, at := o.LogText(tb, from), 0
		for _, w := range want {
			i := strings.Index(s[at:], w)
			if i < 0 {
				return false
			}
			at += i + len(w)
		}
		end = from + at
		return true
	})
	return end
}

// GUID2LID reads OpenSM's GUID→LID cache: port GUID → base LID.
func (o *OpenSM) GUID2LID(tb testing.TB) map[uint64]uint16 {
	tb.Helper()
	return ReadGUID2LID(tb, filepath.Join(o.Dir, "guid2lid"))
}

// ReadGUID2LID reads an OpenSM GUID→LID cache file (OSM_CACHE_DIR's
// guid2lid, whatever fabric the OpenSM ran on): port GUID → base LID.
func ReadGUID2LID(tb testing.TB, file string) map[uint64]uint16 {
	tb.Helper()
	fh, err := os.Open(file)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	m := map[uint64]uint16{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		g, err := strconv.ParseUint(f[0], 0, 64)
		if err != nil {
			tb.Fatalf("guid2lid line %q: %v", sc.Text(), err)
		}
		l, err := strconv.ParseUint(f[1], 0, 16)
		if err != nil {
			tb.Fatalf("guid2lid line %q: %v", sc.Text(), err)
		}
		m[g] = uint16(l)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return m
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
