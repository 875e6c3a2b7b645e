// Command gotestnoskip runs `go test -json …` and fails when a test was
// skipped: where every test must run (`make test`, CI), a skip is a test
// that did not run, whatever skipped it.
//
//	gotestnoskip go test -json [go test flags] [packages]
//
// It runs its arguments as a command, prints what go test prints without
// -v (each package's ok/FAIL line, the output of failed tests) and then
// the skipped tests with their reasons. Its exit status is non-zero when
// the command failed, a test was skipped, or the command printed no test
// events (no -json).
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gotestnoskip go test -json [go test flags] [packages]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs args, filters its output to stdout and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "gotestnoskip:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "gotestnoskip:", err)
		return 2
	}
	f := newFilter(stdout)
	readErr := f.read(out)
	waitErr := cmd.Wait()
	status := 0
	switch {
	case readErr != nil:
		fmt.Fprintln(stderr, "gotestnoskip: reading the test output:", readErr)
		status = 2
	case waitErr != nil:
		status = 1
	}
	if f.events == 0 {
		fmt.Fprintln(stderr, "gotestnoskip: no test events: run go test with -json")
		return max(status, 1)
	}
	f.reportSlowest(stdout)
	if f.reportSkips(stdout) {
		status = max(status, 1)
	}
	return status
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output events
	Test       string
	Output     string
	Elapsed    float64 // seconds, on pass, fail and skip
}

// test is one test or subtest of a running package: its output without
// test2json's framing, kept until its top-level test ends.
type test struct {
	name     string
	header   string // "--- FAIL: TestX (0.10s)"
	lines    []string
	children []*test
	failed   bool
	done     bool
}

type skip struct{ pkg, test, reason string }

// timing is how long a top-level test ran.
type timing struct {
	pkg, test string
	seconds   float64
}

// slowestShown is how many of the slowest tests the summary names, so
// that a run that grows past its time budget says where the time went.
const slowestShown = 15

// filter turns test2json events into go test's plain output.
type filter struct {
	out    io.Writer
	tests  map[string]map[string]*test // package → test name → test
	skips  []skip
	times  []timing
	events int
}

func newFilter(out io.Writer) *filter {
	return &filter{out: out, tests: map[string]map[string]*test{}}
}

// read filters every line of r; lines that are no test event are printed
// as they are.
func (f *filter) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(f.out, sc.Text())
			continue
		}
		f.events++
		f.event(e)
	}
	return sc.Err()
}

func (f *filter) event(e event) {
	switch {
	case e.Action == "build-output":
		fmt.Fprint(f.out, e.Output)
	case e.Test == "":
		f.packageEvent(e)
	default:
		f.testEvent(e)
	}
}

// packageEvent prints a package's own lines (its ok/FAIL line, output of
// no test) but the "PASS" that only -v shows; at the package's end, tests
// that never ended (a timeout's panic) are printed as failed.
func (f *filter) packageEvent(e event) {
	switch e.Action {
	case "output":
		if e.Output != "PASS\n" {
			fmt.Fprint(f.out, e.Output)
		}
	case "pass", "fail", "skip":
		for _, t := range f.tests[e.Package] {
			if !t.done && !strings.Contains(t.name, "/") {
				f.print(t, 0)
			}
		}
		delete(f.tests, e.Package)
	}
}

func (f *filter) testEvent(e event) {
	tests := f.tests[e.Package]
	if tests == nil {
		tests = map[string]*test{}
		f.tests[e.Package] = tests
	}
	t := tests[e.Test]
	if t == nil {
		t = &test{name: e.Test}
		tests[e.Test] = t
		if p := parent(tests, e.Test); p != nil {
			p.children = append(p.children, t)
		}
	}
	switch e.Action {
	case "output":
		t.output(e.Output)
	case "skip":
		f.skips = append(f.skips, skip{e.Package, e.Test, t.reason()})
		f.end(tests, t)
	case "fail":
		t.failed = true
		f.end(tests, t)
	case "pass":
		f.end(tests, t)
	}
	if e.Action == "pass" || e.Action == "fail" {
		f.timed(e.Package, e.Test, e.Elapsed)
	}
}

// timed records that test ran for seconds: a top-level test's time is
// the longest of its own and its subtests' (a test whose subtests run in
// parallel reports 0 for itself).
func (f *filter) timed(pkg, test string, seconds float64) {
	top, _, _ := strings.Cut(test, "/")
	for i := range f.times {
		if t := &f.times[i]; t.pkg == pkg && t.test == top {
			t.seconds = max(t.seconds, seconds)
			return
		}
	}
	f.times = append(f.times, timing{pkg, top, seconds})
}

// parent returns the test name is a subtest of: the longest name before a
// "/" of it that is running.
func parent(tests map[string]*test, name string) *test {
	for i := strings.LastIndex(name, "/"); i > 0; i = strings.LastIndex(name[:i], "/") {
		if p := tests[name[:i]]; p != nil {
			return p
		}
	}
	return nil
}

// output keeps a line of t's output: its result line as the header, its
// logs, not test2json's "=== RUN" framing.
func (t *test) output(line string) {
	trimmed := strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(line, "=== "):
	case strings.HasPrefix(trimmed, "--- FAIL: "), strings.HasPrefix(trimmed, "--- PASS: "), strings.HasPrefix(trimmed, "--- SKIP: "):
		t.header = trimmed
	default:
		t.lines = append(t.lines, strings.TrimSuffix(line, "\n"))
	}
}

// reason is why t skipped: the last line it logged, t.Skip's argument.
func (t *test) reason() string {
	for i := len(t.lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(t.lines[i]); s != "" {
			return s
		}
	}
	return "(no reason given)"
}

// end records that t ended; a top-level test's whole tree is printed when
// it failed and forgotten.
func (f *filter) end(tests map[string]*test, t *test) {
	t.done = true
	if parent(tests, t.name) != nil {
		return
	}
	if t.failed {
		f.print(t, 0)
	}
	forget(tests, t)
}

func forget(tests map[string]*test, t *test) {
	delete(tests, t.name)
	for _, c := range t.children {
		forget(tests, c)
	}
}

// print writes a failed (or unfinished) test as go test does without -v:
// its result line, its logs, then its failed subtests, each level
// indented four more spaces.
func (f *filter) print(t *test, depth int) {
	indent := strings.Repeat("    ", depth)
	header := t.header
	if header == "" {
		header = "--- FAIL: " + t.name + " (did not finish)"
	}
	fmt.Fprintln(f.out, indent+header)
	for _, l := range t.lines {
		fmt.Fprintln(f.out, indent+l)
	}
	for _, c := range t.children {
		if c.failed || !c.done {
			f.print(c, depth+1)
		}
	}
}

// reportSlowest lists the slowest top-level tests, slowest first.
func (f *filter) reportSlowest(w io.Writer) {
	if len(f.times) == 0 {
		return
	}
	slices.SortStableFunc(f.times, func(a, b timing) int { return cmp.Compare(b.seconds, a.seconds) })
	fmt.Fprintf(w, "\nslowest tests:\n")
	for _, t := range f.times[:min(slowestShown, len(f.times))] {
		fmt.Fprintf(w, "%8.1fs\t%s\t%s\n", t.seconds, t.pkg, t.test)
	}
}

// reportSkips lists the skipped tests and reports whether there were any.
func (f *filter) reportSkips(w io.Writer) bool {
	if len(f.skips) == 0 {
		return false
	}
	fmt.Fprintf(w, "\n%d skipped tests (every test must run here):\n", len(f.skips))
	for _, s := range f.skips {
		fmt.Fprintf(w, "SKIP\t%s\t%s\t%s\n", s.pkg, s.test, s.reason)
	}
	return true
}
