package suites

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
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/afc"
	"ibfab/harness/suites/cc"
	"ibfab/harness/suites/qos"
	"ibfab/harness/suites/runner"
	"ibfab/harness/suites/smfailover"
	"ibfab/harness/suites/soak"
	"ibfab/harness/suites/thesis"
)

// experiments are `ibfab run`'s experiments, in the order its usage and
// errors name them.
var experiments = []runner.Experiment{
	thesis.Experiment,
	qos.Experiment,
	cc.Experiment,
	afc.Experiment,
	smfailover.Experiment,
	soak.Experiment,
}

// lookupExperiment returns the experiment named name.
func lookupExperiment(name string) (runner.Experiment, bool) {
	for _, e := range experiments {
		if e.Name == name {
			return e, true
		}
	}
	return runner.Experiment{}, false
}

// experimentNames are the experiments' names joined by sep.
func experimentNames(sep string) string {
	names := make([]string, len(experiments))
	for i, e := range experiments {
		names[i] = e.Name
	}
	return strings.Join(names, sep)
}

var runSynopsis = "run SUITE|all|" + experimentNames("|") + " [--out DIR] [--json] [--sm ibsm|opensm] [--mechanism basic|improved] [--name N] [--hosts N]"

const (
	runDesc = `Runs a failure-injection suite on a fabric of its own: brings the fabric up,
starts the subnet manager on an HCA, runs uniform traffic between the hosts,
applies the suite's timed faults, waits until the fabric is whole again,
runs traffic between the surviving hosts, checks, and takes the fabric down.
The report (report.json, traffic.svg/png, phases.svg/png, capture.pcap,
ibsm.jsonl or opensm/opensm.log, index.md) goes to DIR/SUITE. The exit
status is 1 when a check fails.

--sm opensm runs Debian's unmodified OpenSM as a daemon at the SM's HCA
instead of ibsm (libumad2sim preloaded, as exec --umad does); checks that
need ibsm's reports (its verifier) are skipped, with the reason in the
report.

--hosts N (2 or more) runs a suite on a fabric spread over N "hosts" on this
machine (ibfab up --hosts; docs/containerlab.md), placed so that every link
the suite sets down, up or flaps runs between two hosts, as VXLAN devices
over the underlay: link-failure's sw2-sw6 becomes a cross-host link. The
report lists the links between hosts (cross_host_links). A suite that adds
nodes (switch-hot-add) runs on one host only.

"all" runs every suite and then the SM failover suite (sm-failover, its
report in DIR/sm-failover); "thesis" runs the joint evaluation of the thesis's
chapter 8 (ibfab run thesis -h); "qos" the QoS experiment (ibfab run qos -h);
"cc" the congestion-control experiments (ibfab run cc -h); "afc" the
adaptive-routing experiments (ibfab run afc -h); "sm-failover" the SM
failover and handover cases between ibsm and OpenSM (ibfab run sm-failover -h);
"soak" the default fabric under traffic with ibsm and OpenSM while the harness
keeps disturbing it at seeded random times (ibfab run soak -h).

suites:
`
)

// Command is ibfab's run subcommand (cmd/ibfab registers it).
var Command = harness.Command{
	Name:    "run",
	Summary: "run a failure-injection suite (or all, or the thesis evaluation) and write its report",
	Run:     runCmd,
}

func runDescription() string {
	var b strings.Builder
	b.WriteString(runDesc)
	for _, s := range runner.Builtin() {
		fmt.Fprintf(&b, "  %-15s %s\n", s.Name, s.Summary)
	}
	return b.String()
}

// runFlags are `ibfab run SUITE`'s flags and its one argument.
type runFlags struct {
	out    string
	asJSON bool
	mech   string
	sm     runner.SMKind
	name   string
	hosts  int
	suite  string // the argument: a suite's name or "all"
}

func runCmd(env *harness.Env, args []string) error {
	const cmd = "run"
	if len(args) > 0 {
		if e, ok := lookupExperiment(args[0]); ok {
			return e.Run(env, args[1:])
		}
	}
	f, help, err := parseRunFlags(env, cmd, args)
	if help || err != nil {
		return err
	}
	usage := func(err error) error { return &harness.UsageError{Cmd: cmd, Usage: runSynopsis, Err: err} }
	list, smArgs, err := f.plan()
	if err != nil {
		return usage(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := 0
	for _, s := range list {
		o := runner.Options{Out: filepath.Join(f.out, s.Name), Fabric: f.name, SM: f.sm, SMArgs: smArgs, Hosts: f.hosts}
		if !f.asJSON {
			o.Log = env.Stderr
		}
		start := time.Now()
		rep, err := runner.Run(ctx, s, o)
		if err != nil {
			return &harness.CommandError{Cmd: cmd, Err: fmt.Errorf("%s: %w", s.Name, err)}
		}
		if !rep.Passed {
			failed++
		}
		if err := printSuiteReport(env.Stdout, rep, f.asJSON, s.Name, time.Since(start), filepath.Join(o.Out, "index.md")); err != nil {
			return err
		}
	}
	total := len(list)
	if f.suite == "all" {
		total++
		passed, err := runFailoverInAll(ctx, env, cmd, f)
		if err != nil {
			return err
		}
		if !passed {
			failed++
		}
	}
	if failed > 0 {
		return &harness.CommandError{Cmd: cmd, Err: fmt.Errorf("%d of %d suites failed", failed, total)}
	}
	return nil
}

// parseRunFlags parses `ibfab run SUITE`'s flags and wants one argument.
func parseRunFlags(env *harness.Env, cmd string, args []string) (f runFlags, help bool, err error) {
	fs := flag.NewFlagSet("ibfab run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.out, "out", "out/suites", "write each suite's report to `DIR`/SUITE")
	fs.BoolVar(&f.asJSON, "json", false, "print each report as one JSON object on a line, not the checks")
	fs.StringVar(&f.mech, "mechanism", "", "ibsm's mechanism: basic or improved (default: the suite's, improved)")
	f.sm = runner.SMIbsm
	fs.TextVar(&f.sm, "sm", runner.SMIbsm, "the subnet manager: ibsm or opensm")
	fs.StringVar(&f.name, "name", "", "fabric name (default s_SUITE)")
	fs.IntVar(&f.hosts, "hosts", 1, "spread the fabric over `N` host namespaces, the suite's failing links between hosts (VXLAN)")
	pos, help, err := harness.ParseInterleaved(env, fs, cmd, runSynopsis, runDescription(), args)
	if help || err != nil {
		return f, help, err
	}
	if len(pos) != 1 {
		return f, false, &harness.UsageError{Cmd: cmd, Usage: runSynopsis, Err: errors.New("want one suite name (ibfab run -h lists them)")}
	}
	f.suite = pos[0]
	return f, false, nil
}

// plan is the suites f names and the SM arguments its --mechanism
// gives, or what is wrong with the flags.
func (f runFlags) plan() ([]runner.Suite, []string, error) {
	var list []runner.Suite
	if f.suite == "all" {
		list = runner.Builtin()
	} else if s, ok := runner.Lookup(f.suite); ok {
		list = []runner.Suite{s}
	} else {
		return nil, nil, fmt.Errorf("no suite %q; suites: %s, all, %s", f.suite, strings.Join(runner.Names(), ", "), experimentNames(", "))
	}
	if f.sm == runner.SMOpenSM && f.mech != "" {
		return nil, nil, errors.New("--mechanism is ibsm's; OpenSM runs as Debian ships it")
	}
	var smArgs []string
	switch f.mech {
	case "":
	case "basic":
		smArgs = runner.BasicSMArgs
	case "improved":
		smArgs = runner.DefaultSMArgs
	default:
		return nil, nil, fmt.Errorf("--mechanism %q: want basic or improved", f.mech)
	}
	if f.name != "" && len(list) > 1 {
		return nil, nil, errors.New("--name goes with one suite")
	}
	if f.hosts < 1 {
		return nil, nil, fmt.Errorf("--hosts %d: want 1 or more", f.hosts)
	}
	if f.hosts > 1 {
		for _, s := range list {
			topo, err := s.Topology()
			if err == nil {
				_, err = s.PlaceOnHosts(topo, f.hosts)
			}
			if err != nil {
				return nil, nil, err
			}
		}
	}
	return list, smArgs, nil
}

// printSuiteReport prints a suite's report: as one JSON line, or its
// verdict line and its checks.
func printSuiteReport(w io.Writer, rep *runner.Report, asJSON bool, name string, took time.Duration, index string) error {
	if asJSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\n", b)
		return nil
	}
	fmt.Fprintf(w, "%s %s (%.1f s), report %s\n", runner.PassFail(rep.Passed), name, took.Seconds(), index)
	for _, c := range rep.Checks {
		mark := "ok  "
		switch {
		case c.Skipped:
			mark = "skip"
		case !c.OK:
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %-32s %s\n", mark, c.Name, c.Detail)
	}
	return nil
}

// runFailoverInAll is `ibfab run all`'s last suite, the SM failover
// suite, its report in OUT/sm-failover. It runs both SMs itself, with
// its own flags: --sm and --mechanism do not apply.
func runFailoverInAll(ctx context.Context, env *harness.Env, cmd string, f runFlags) (passed bool, err error) {
	o := smfailover.FailoverOptions{Out: filepath.Join(f.out, "sm-failover")}
	if !f.asJSON {
		o.Log = env.Stderr
	}
	rep, err := smfailover.RunFailover(ctx, o)
	if err != nil {
		return false, &harness.CommandError{Cmd: cmd, Err: fmt.Errorf("sm-failover: %w", err)}
	}
	if !f.asJSON {
		smfailover.PrintFailover(env.Stdout, rep, filepath.Join(o.Out, "index.md"))
		return rep.Passed, nil
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(env.Stdout, "%s\n", b)
	return rep.Passed, nil
}
