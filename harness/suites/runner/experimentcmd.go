package runner

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"ibfab/harness"
)

// Experiment is one of the experiments `ibfab run` runs beside the
// failure-injection suites: `ibfab run NAME ARGS…` is Run(env, ARGS).
type Experiment struct {
	Name     string
	Synopsis string // its usage line, "run NAME …"
	Run      func(env *harness.Env, args []string) error
}

// The experiments, for the command's table (harness/suites).
var (
	CCExperiment  = Experiment{"cc", ccSynopsis, runCCCmd}
	AFCExperiment = Experiment{"afc", afcSynopsis, runAFCCmd}
)

// RunAndPrint runs an experiment until it ends or a signal comes, its
// progress on stderr unless asJSON, and prints its report: as one JSON
// line, or with text.
func RunAndPrint[R any](env *harness.Env, cmd string, asJSON bool, run func(context.Context, io.Writer) (R, error), text func(R)) (R, error) {
	var log io.Writer
	if !asJSON {
		log = env.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, log)
	if err != nil {
		return rep, &harness.CommandError{Cmd: cmd, Err: err}
	}
	if !asJSON {
		text(rep)
		return rep, nil
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return rep, err
	}
	fmt.Fprintf(env.Stdout, "%s\n", b)
	return rep, nil
}

// experimentCmd is the shape every experiment command (run cc, run afc)
// shares: --quick, --time-scale, --out, --only, --name, --json, the
// report's summary or JSON, and exit status 1 when the report failed.
type experimentCmd[R any] struct {
	cmd, synopsis, desc    string
	quickUsage, scaleUsage string
	defOut, defName        string
	maxName                int      // longest fabric name prefix
	ids                    []string // the experiments --only names
	// validate checks --only against the plan --quick selects.
	validate func(quick bool, only []string) error
	run      func(ctx context.Context, o ExperimentOptions) (R, error)
	print    func(w io.Writer, rep R, index string)
	passed   func(R) bool
}

// main parses args and runs the experiments.
func (c experimentCmd[R]) main(env *harness.Env, args []string) error {
	fs := flag.NewFlagSet("ibfab "+c.cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quick := fs.Bool("quick", false, c.quickUsage)
	scale := fs.Float64("time-scale", 0, c.scaleUsage)
	out := fs.String("out", c.defOut, "write the report to `DIR`")
	only := fs.String("only", "", "run only these experiments (comma-separated: "+strings.Join(c.ids, ",")+")")
	name := fs.String("name", c.defName, "fabric name prefix")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	usage := func(err error) error { return &harness.UsageError{Cmd: c.cmd, Usage: c.synopsis, Err: err} }
	if help, err := harness.ParseFlags(env, fs, c.cmd, c.synopsis, c.desc, args, 0); help || err != nil {
		return err
	}
	if *scale < 0 || *scale > 1e6 {
		return usage(fmt.Errorf("--time-scale %v: want a positive number", *scale))
	}
	if !FabricNameRE.MatchString(*name) || len(*name) > c.maxName {
		return usage(fmt.Errorf("--name %q: want 1-%d of [a-z0-9_]", *name, c.maxName))
	}
	o := ExperimentOptions{Out: *out, Fabric: *name, Quick: *quick, TimeScale: *scale}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
		if err := c.validate(*quick, o.Only); err != nil {
			return usage(err)
		}
	}
	rep, err := RunAndPrint(env, c.cmd, *asJSON, func(ctx context.Context, log io.Writer) (R, error) {
		o.Log = log
		return c.run(ctx, o)
	}, func(rep R) { c.print(env.Stdout, rep, filepath.Join(*out, "index.md")) })
	if err != nil {
		return err
	}
	if !c.passed(rep) {
		return &harness.CommandError{Cmd: c.cmd, Err: errors.New("a check failed or an experiment did not complete")}
	}
	return nil
}
