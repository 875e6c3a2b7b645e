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
	"ibfab/topologies"
)

// Experiment is one of the experiments `ibfab run` runs beside the
// failure-injection suites: `ibfab run NAME ARGS…` is Run(env, ARGS).
type Experiment struct {
	Name     string
	Synopsis string // its usage line, "run NAME …"
	Run      func(env *harness.Env, args []string) error
}

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

// ExperimentCmd is the shape every experiment command (run cc, run afc)
// shares: --quick, --time-scale, --out, --only, --name, --json, --rate
// where the experiment takes it, the report's summary or JSON, and exit
// status 1 when the report failed.
type ExperimentCmd[R any] struct {
	Cmd, Synopsis, Desc    string
	QuickUsage, ScaleUsage string
	DefOut, DefName        string
	MaxName                int      // longest fabric name prefix
	IDs                    []string // the experiments --only names
	// Rate: the experiment takes --rate (ExperimentOptions.Rate).
	Rate bool
	// Validate checks --only against the plan --quick selects.
	Validate func(quick bool, only []string) error
	Run      func(ctx context.Context, o ExperimentOptions) (R, error)
	Print    func(w io.Writer, rep R, index string)
	Passed   func(R) bool
}

// Main parses args and runs the experiments.
func (c ExperimentCmd[R]) Main(env *harness.Env, args []string) error {
	fs := flag.NewFlagSet("ibfab "+c.Cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quick := fs.Bool("quick", false, c.QuickUsage)
	scale := fs.Float64("time-scale", 0, c.ScaleUsage)
	out := fs.String("out", c.DefOut, "write the report to `DIR`")
	only := fs.String("only", "", "run only these experiments (comma-separated: "+strings.Join(c.IDs, ",")+")")
	name := fs.String("name", c.DefName, "fabric name prefix")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	var rate topologies.Rate
	if c.Rate {
		RateVar(fs, &rate)
	}
	usage := func(err error) error { return &harness.UsageError{Cmd: c.Cmd, Usage: c.Synopsis, Err: err} }
	if help, err := harness.ParseFlags(env, fs, c.Cmd, c.Synopsis, c.Desc, args, 0); help || err != nil {
		return err
	}
	if err := CheckRate(rate); err != nil {
		return usage(err)
	}
	if *scale < 0 || *scale > 1e6 {
		return usage(fmt.Errorf("--time-scale %v: want a positive number", *scale))
	}
	if !FabricNameRE.MatchString(*name) || len(*name) > c.MaxName {
		return usage(fmt.Errorf("--name %q: want 1-%d of [a-z0-9_]", *name, c.MaxName))
	}
	o := ExperimentOptions{Out: *out, Fabric: *name, Quick: *quick, TimeScale: *scale, Rate: rate}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
		if err := c.Validate(*quick, o.Only); err != nil {
			return usage(err)
		}
	}
	rep, err := RunAndPrint(env, c.Cmd, *asJSON, func(ctx context.Context, log io.Writer) (R, error) {
		o.Log = log
		return c.Run(ctx, o)
	}, func(rep R) { c.Print(env.Stdout, rep, filepath.Join(*out, "index.md")) })
	if err != nil {
		return err
	}
	if !c.Passed(rep) {
		return &harness.CommandError{Cmd: c.Cmd, Err: errors.New("a check failed or an experiment did not complete")}
	}
	return nil
}
