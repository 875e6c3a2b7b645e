package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

type options struct {
	budget   time.Duration
	minExecs int64
	out      string
	markdown bool
	only     string
	resume   bool
	pkgs     []string
	dir      string // the module's directory; "" is the current one
	log      io.Writer
}

// Target is one fuzz target's run.
type Target struct {
	Package        string  `json:"package"`
	Name           string  `json:"name"`
	Execs          int64   `json:"execs"`
	ExecsPerSecond float64 `json:"execs_per_second"` // over FuzzSeconds
	FuzzSeconds    float64 `json:"fuzz_seconds"`     // fuzzing, after the baseline coverage
	NewInteresting int64   `json:"new_interesting"`
	Corpus         int64   `json:"corpus"`  // interesting inputs at the end, seeds included
	Seconds        float64 `json:"seconds"` // the go test runs', compiling included
	Crashed        bool    `json:"crashed"`
	Crasher        string  `json:"crasher,omitempty"` // testdata/fuzz/<Target>/<hash>, in the package
	Error          string  `json:"error,omitempty"`
}

// Report is the whole run.
type Report struct {
	Started    string   `json:"started"`
	GoVersion  string   `json:"go_version"`
	Budget     string   `json:"budget,omitempty"`
	MinExecs   int64    `json:"min_execs,omitempty"`
	Targets    []Target `json:"targets"`
	TotalExecs int64    `json:"total_execs"`
	MinTarget  int64    `json:"min_target_execs"`
	Crashes    int      `json:"crashes"`
	Seconds    float64  `json:"seconds"`
}

// discover lists the fuzz targets of pkgs: package import path and
// directory from go list, the targets from its test files' top-level
// functions (parsed, so a FuzzX in a string or a comment is no target).
func discover(dir string, pkgs []string, only string) ([][2]string, error) {
	var onlyRE *regexp.Regexp
	if only != "" {
		re, err := regexp.Compile(only)
		if err != nil {
			return nil, fmt.Errorf("-run: %w", err)
		}
		onlyRE = re
	}
	list := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .TestGoFiles \",\"}},{{join .XTestGoFiles \",\"}}"}, pkgs...)...)
	list.Dir = dir
	out, err := list.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var targets [][2]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		for _, file := range strings.Split(f[2], ",") {
			if file == "" {
				continue
			}
			names, err := fuzzFuncs(filepath.Join(f[1], file))
			if err != nil {
				return nil, err
			}
			for _, name := range names {
				if onlyRE == nil || onlyRE.MatchString(name) {
					targets = append(targets, [2]string{f[0], name})
				}
			}
		}
	}
	return targets, nil
}

// fuzzFuncs returns the names of file's fuzz targets: top-level functions
// named Fuzz... with one *testing.F parameter.
func fuzzFuncs(file string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") || len(fn.Type.Params.List) != 1 {
			continue
		}
		star, ok := fn.Type.Params.List[0].Type.(*ast.StarExpr)
		if !ok {
			continue
		}
		if sel, ok := star.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "F" {
			names = append(names, fn.Name.Name)
		}
	}
	return names, nil
}

func fuzzAll(o options) (*Report, error) {
	targets, err := discover(o.dir, o.pkgs, o.only)
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("no fuzz targets in %v", o.pkgs)
	}
	goVer, _ := exec.Command("go", "env", "GOVERSION").Output()
	rep := &Report{Started: time.Now().UTC().Format(time.RFC3339), GoVersion: strings.TrimSpace(string(goVer)), MinExecs: o.minExecs}
	done, err := resumed(o, rep)
	if err != nil {
		return nil, err
	}
	var share time.Duration
	if o.budget > 0 {
		rep.Budget = o.budget.String()
		share = o.budget / time.Duration(len(targets))
	}
	start, before := time.Now(), rep.Seconds
	rep.Targets = rep.Targets[:0]
	for i, t := range targets {
		r, ok := done[t]
		fmt.Fprintf(o.log, "== %d/%d %s %s (resumed: %v)\n", i+1, len(targets), t[0], t[1], ok)
		if !ok {
			r = Target{Package: t[0], Name: t[1]}
			if share > 0 {
				fuzzOne(&r, o.dir, share.String(), o.log)
			}
		}
		if left := o.minExecs - r.Execs; left > 0 && !r.Crashed && r.Error == "" {
			fuzzOne(&r, o.dir, strconv.FormatInt(left, 10)+"x", o.log)
		}
		rep.Targets = append(rep.Targets, r)
		rep.total()
		rep.Seconds = before + time.Since(start).Seconds()
		// Written after every target, so that a run stopped part-way
		// keeps what it did and -resume goes on from there.
		if o.out != "" {
			if err := writeJSON(rep, o.out); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

// resumed reads the report at o.out when -resume asks for it: the targets
// it recorded that neither crashed nor failed to run are not fuzzed
// again but for the execs they still lack.
func resumed(o options, rep *Report) (map[[2]string]Target, error) {
	done := map[[2]string]Target{}
	if !o.resume || o.out == "" {
		return done, nil
	}
	b, err := os.ReadFile(o.out)
	if os.IsNotExist(err) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	var prev Report
	if err := json.Unmarshal(b, &prev); err != nil {
		return nil, fmt.Errorf("-resume %s: %w", o.out, err)
	}
	for _, t := range prev.Targets {
		if !t.Crashed && t.Error == "" {
			done[[2]string{t.Package, t.Name}] = t
		}
	}
	rep.Started, rep.Seconds = prev.Started, prev.Seconds
	return done, nil
}

// total sums the targets into the report's totals.
func (rep *Report) total() {
	rep.TotalExecs, rep.MinTarget, rep.Crashes = 0, 0, 0
	for i, r := range rep.Targets {
		rep.TotalExecs += r.Execs
		if i == 0 || r.Execs < rep.MinTarget {
			rep.MinTarget = r.Execs
		}
		if r.Crashed {
			rep.Crashes++
		}
	}
}

// fuzzOne runs one go test -fuzz of r for fuzztime and adds what it did.
func fuzzOne(r *Target, dir, fuzztime string, log io.Writer) {
	var buf bytes.Buffer
	cmd := exec.Command("go", "test", "-run", "^$", "-fuzz", "^"+r.Name+"$", "-fuzztime", fuzztime, r.Package)
	cmd.Dir = dir
	cmd.Stdout = io.MultiWriter(&buf, log)
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	err := cmd.Run()
	r.Seconds += time.Since(start).Seconds()
	res := parse(&buf)
	r.Execs += res.execs
	r.NewInteresting += res.newInteresting
	r.Corpus = max(r.Corpus, res.corpus)
	r.FuzzSeconds += res.elapsed.Seconds()
	if r.FuzzSeconds > 0 {
		r.ExecsPerSecond = float64(r.Execs) / r.FuzzSeconds
	}
	switch {
	case res.crasher != "" || res.failed:
		r.Crashed, r.Crasher = true, res.crasher
	case err != nil:
		r.Error = strings.TrimSpace(lastLines(buf.String(), 5))
	}
}

// result is what one go test -fuzz printed.
type result struct {
	execs, newInteresting, corpus int64
	elapsed                       time.Duration
	failed                        bool
	crasher                       string
}

var (
	statusLine = regexp.MustCompile(`^fuzz: elapsed: (\S+), execs: (\d+) \([\d.]+/sec\), new interesting: (\d+) \(total: (\d+)\)`)
	crashLine  = regexp.MustCompile(`Failing input written to (\S+)`)
)

// parse reads go test -fuzz's output: the last status line has the
// totals; a failing input's path means a crash.
func parse(r io.Reader) result {
	var res result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if m := statusLine.FindStringSubmatch(line); m != nil {
			res.elapsed, _ = time.ParseDuration(m[1])
			res.execs, _ = strconv.ParseInt(m[2], 10, 64)
			res.newInteresting, _ = strconv.ParseInt(m[3], 10, 64)
			res.corpus, _ = strconv.ParseInt(m[4], 10, 64)
		}
		if m := crashLine.FindStringSubmatch(line); m != nil {
			res.crasher = m[1]
		}
		if strings.HasPrefix(line, "--- FAIL: Fuzz") {
			res.failed = true
		}
	}
	return res
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func writeReport(rep *Report, o options, stdout io.Writer) error {
	var err error
	if o.out != "" {
		err = writeJSON(rep, o.out)
	} else {
		err = json.NewEncoder(stdout).Encode(rep)
	}
	if err != nil || !o.markdown {
		return err
	}
	return writeMarkdown(stdout, rep)
}

// writeJSON replaces file with the report, by a rename so that a reader
// (or a -resume after a kill) never sees half of one.
func writeJSON(rep *Report, file string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// writeMarkdown prints the targets as a table for docs/results.md.
func writeMarkdown(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "| package | target | execs | execs/s | new interesting | corpus | crash |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, t := range rep.Targets {
		crash := ""
		if t.Crashed {
			crash = "yes " + t.Crasher
		}
		if t.Error != "" {
			crash = "error"
		}
		fmt.Fprintf(bw, "| %s | %s | %d | %.0f | %d | %d | %s |\n", strings.TrimPrefix(t.Package, "ibfab/"), t.Name, t.Execs, t.ExecsPerSecond, t.NewInteresting, t.Corpus, crash)
	}
	fmt.Fprintf(bw, "\n%d targets, %d execs in all (fewest %d), %d crashes, %.0f s, %s.\n", len(rep.Targets), rep.TotalExecs, rep.MinTarget, rep.Crashes, rep.Seconds, rep.GoVersion)
	return bw.Flush()
}
