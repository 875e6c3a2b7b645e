// Command fuzzbudget runs every native Go fuzz target of the module, one
// after another, and records what each did: execs, execs per second, the
// new interesting inputs it found and the corpus it ended with, and a
// crash with the failing input Go wrote. Each target gets either an equal
// share of a time budget or a number of execs (go test -fuzztime Nx),
// whichever the flags ask for; -min-execs and -budget together run every
// target for its share of the budget, and then again for the execs it
// still lacks. The report is JSON (-out) and, with -markdown, a table for
// docs/results.md. The JSON file is rewritten after every target, so a
// run stopped part-way keeps what it did; -resume goes on from it.
//
//	fuzzbudget [-budget 30m] [-min-execs N] [-out FILE [-resume]] [-markdown] [-run REGEXP] [packages]
//
// A crasher stays in the package's testdata/fuzz directory, where go test
// replays it as a regression test once committed with its fix.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fuzzbudget", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.DurationVar(&o.budget, "budget", 0, "total fuzzing `time`, shared equally by the targets")
	fs.Int64Var(&o.minExecs, "min-execs", 0, "at least `N` execs per target")
	fs.StringVar(&o.out, "out", "", "write the JSON report to `FILE` (default: standard output)")
	fs.BoolVar(&o.markdown, "markdown", false, "also print a Markdown table of the targets")
	fs.StringVar(&o.only, "run", "", "only the targets whose name matches `REGEXP`")
	fs.BoolVar(&o.resume, "resume", false, "go on from the report in -out: its targets keep their execs and get only the ones they lack")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.budget <= 0 && o.minExecs <= 0 {
		fmt.Fprintln(stderr, "fuzzbudget: give -budget, -min-execs or both")
		return 2
	}
	o.pkgs = fs.Args()
	if len(o.pkgs) == 0 {
		o.pkgs = []string{"./..."}
	}
	o.log = stderr
	rep, err := fuzzAll(o)
	if err != nil {
		fmt.Fprintln(stderr, "fuzzbudget:", err)
		return 1
	}
	if err := writeReport(rep, o, stdout); err != nil {
		fmt.Fprintln(stderr, "fuzzbudget:", err)
		return 1
	}
	if rep.Crashes > 0 {
		return 1
	}
	return 0
}
