package smfailover

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
)

// writeFailoverReport writes report.json and index.md to dir.
func writeFailoverReport(dir string, rep *FailoverReport) error {
	rep.Files = []string{"index.md", "report.json"}
	for _, c := range rep.Cases {
		rep.Files = append(rep.Files, c.Files...)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.md"), []byte(failoverMarkdown(rep)), 0o644)
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// fmtMs is an optional time in ms, "–" when it never came.
func fmtMs(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f", *p)
}

// failoverTime is a case's failover or handover time for the table: a
// kill's time to the master given up and to Master, against the bound; a
// handover's time to Master.
func failoverTime(c FailoverCase) string {
	if c.Scenario == FailoverKill {
		return fmt.Sprintf("%s / %s ms (bound %.0f)", fmtMs(c.DetectMs), fmtMs(c.MasterMs), c.BoundMs)
	}
	return fmtMs(c.MasterMs) + " ms"
}

// sminfoRight is "right of runs".
func sminfoRight(c FailoverCase) string {
	n, tr := 0, 0
	for _, s := range c.SMInfo {
		switch {
		case s.OK:
			n++
		case s.Transition:
			tr++
		}
	}
	if tr > 0 {
		return fmt.Sprintf("%d/%d (+%d in the handover)", n, len(c.SMInfo), tr)
	}
	return fmt.Sprintf("%d/%d", n, len(c.SMInfo))
}

// failoverMarkdown is the report's index.md.
func failoverMarkdown(rep *FailoverReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# sm-failover: %s\n\n", verdict(rep.Passed))
	fmt.Fprintf(&b, "Fabric `%s` (%s); SMs at %s and %s; %s reads both SMs' SMInfo every %v and runs `sminfo`; "+
		"traffic among %s. Both SMs poll every %.0f s, %d retries: polling bound %.0f ms. Started %s, took %.0f s%s.\n\n",
		rep.Fabric, rep.Topology, rep.SMNodes[0], rep.SMNodes[len(rep.SMNodes)-1], rep.Observer, FailoverSampleEvery,
		strings.Join(rep.Hosts, ", "), rep.PollInterval, rep.PollRetries, rep.BoundMs, rep.Started.UTC().Format(time.RFC3339),
		rep.DurationS, map[bool]string{true: ", quick plan", false: ""}[rep.Quick])
	fmt.Fprintf(&b, "ibsm: `ibsm --port sim --json --priority P %s`; OpenSM: `opensm -p P` with `%s`.\n\n",
		strings.Join(rep.IbsmArgs, " "), strings.ReplaceAll(strings.TrimSpace(rep.OpenSMConf), "\n", "; "))
	if rep.Error != "" {
		fmt.Fprintf(&b, "**Run ended early:** %s\n\n", rep.Error)
	}
	b.WriteString("Failover time: from the master's exit to the standby giving it up / being Master. " +
		"Handover time: from the higher-priority SM's start to it being Master. " +
		"Readings ≠1 Master leave out, after a kill, those until the standby is Master (none can be).\n\n")
	b.WriteString("| pairing (first/second) | scenario | failover / handover time | subnet up after | LIDs changed | packets lost (sent) | readings ≠1 Master | sminfo right | verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range rep.Cases {
		fmt.Fprintf(&b, "| %s | %s | %s | %s ms | %d of %d ports | %d (%d) | %d of %d | %s | %s |\n",
			c.Pairing, c.Scenario, failoverTime(c), fmtMs(c.UpMs), len(c.LIDsChanged), c.PortsRead,
			c.Lost, c.Sent, c.NotOneMaster, len(c.Samples), sminfoRight(c), verdict(c.Passed))
	}
	for _, c := range rep.Cases {
		fmt.Fprintf(&b, "\n## %s, %s: %s\n\n", c.Pairing, c.Scenario, verdict(c.Passed))
		fmt.Fprintf(&b, "%s (%s) at %s first, %s (%s) at %s second; %.1f s.\n\n",
			c.Pairing.First, map[bool]string{true: "master", false: "master, lower priority"}[c.Scenario == FailoverKill], c.FirstNode,
			c.Pairing.Second, map[bool]string{true: "standby", false: "higher priority"}[c.Scenario == FailoverKill], c.SecondNode, c.DurationS)
		if c.Error != "" {
			fmt.Fprintf(&b, "**Did not complete:** %s\n\n", c.Error)
		}
		b.WriteString("| check | | detail |\n|---|---|---|\n")
		for _, ch := range c.Checks {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", ch.Name, runner.Mark(ch), mdCell(ch.Detail))
		}
		if len(c.Short) > 0 {
			fmt.Fprintf(&b, "\nFlows short: %s.\n", strings.Join(c.Short, "; "))
		}
		if len(c.Drops) > 0 {
			fmt.Fprintf(&b, "\nDropped in the fabric: %s.\n", fmtDrops(c.Drops))
		}
		b.WriteString("\nTimeline (s since the case started):\n\n")
		for _, e := range c.Events {
			fmt.Fprintf(&b, "- %.2f %s\n", e.T, e.What)
		}
		if len(c.SMInfo) > 0 {
			b.WriteString("\n`sminfo` at " + rep.Observer + ":")
			for _, s := range c.SMInfo {
				got := s.Named + " " + s.State
				if s.Error != "" {
					got = "error"
				}
				verdict := runner.Mark(runner.Check{OK: s.OK})
				if s.Transition {
					verdict = "in the handover"
				}
				fmt.Fprintf(&b, " %.1f s %s (%s);", s.T, got, verdict)
			}
			b.WriteString("\n")
		}
		if len(c.Files) > 0 {
			b.WriteString("\nFiles:")
			for _, f := range c.Files {
				fmt.Fprintf(&b, " [%s](%s)", filepath.Base(f), f)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// fmtDrops lists drop counters, most first.
func fmtDrops(d map[string]uint64) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d[a] != d[b] {
			return cmpDesc(d[a], d[b])
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, d[k]))
	}
	return strings.Join(parts, ", ")
}

func cmpDesc(a, b uint64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// mdCell keeps a table cell on one line.
func mdCell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

const (
	failoverSynopsis = "run sm-failover [--quick] [--only CASE,...] [--out DIR] [--json] [--name N]"
	failoverDesc     = `The SM failover suite (issue 21): on a 2x3 mesh of switches with a host on
each, two subnet managers on the first host and the last, in every pairing
(ibsm with ibsm, ibsm master with OpenSM, OpenSM master with ibsm), each in two
scenarios: the master is killed (SIGKILL) and the standby of lower priority
must give it up within its polling bound (both poll every 1 s, 2 retries:
4 s) and take over; and an SM of higher priority starts while the master runs
and must be handed the subnet. Throughout, a third host reads both SMs'
SMInfo every 200 ms (exactly one Master outside a kill's gap) and runs
sminfo (it must name the Master); flows among the four non-SM hosts must lose
no packet; every port's LID must stay. OpenSM runs with qos TRUE,
ibsm with --pre-block=false (docs/suites.md: why).

--quick runs two cases (OpenSM killed under an ibsm standby; ibsm handing over
to OpenSM); --only runs the cases named FIRST-SECOND-SCENARIO
(ibsm-opensm-handover, opensm-ibsm-master-killed, ...). The report (index.md,
report.json, each SM's log) goes to DIR. The exit status is 1 when a check
fails.`
)

// runFailoverCmd is `ibfab run sm-failover`.
func runFailoverCmd(env *harness.Env, args []string) error {
	const cmd = "run sm-failover"
	fs := flag.NewFlagSet("ibfab run sm-failover", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quick := fs.Bool("quick", false, "run two of the six cases (CI)")
	out := fs.String("out", "out/sm-failover", "write the report to `DIR`")
	name := fs.String("name", "smfo", "fabric name")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of the table")
	only := fs.String("only", "", "run only these cases (comma-separated FIRST-SECOND-SCENARIO, e.g. ibsm-opensm-handover)")
	usage := func(err error) error { return &harness.UsageError{Cmd: cmd, Usage: failoverSynopsis, Err: err} }
	if help, err := harness.ParseFlags(env, fs, cmd, failoverSynopsis, failoverDesc, args, 0); help || err != nil {
		return err
	}
	if !runner.FabricNameRE.MatchString(*name) {
		return usage(fmt.Errorf("--name %q: want 1-20 of [a-z0-9_]", *name))
	}
	o := FailoverOptions{Out: *out, Fabric: *name, Quick: *quick}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
		if _, err := selectFailover(failoverPlan(*quick), o.Only); err != nil {
			return usage(err)
		}
	}
	rep, err := runner.RunAndPrint(env, cmd, *asJSON, func(ctx context.Context, log io.Writer) (*FailoverReport, error) {
		o.Log = log
		return RunFailover(ctx, o)
	}, func(rep *FailoverReport) { PrintFailover(env.Stdout, rep, filepath.Join(*out, "index.md")) })
	if err != nil {
		return err
	}
	if !rep.Passed {
		return &harness.CommandError{Cmd: cmd, Err: errors.New("a check failed")}
	}
	return nil
}

// PrintFailover prints the suite's verdict and each case's checks.
func PrintFailover(w io.Writer, rep *FailoverReport, index string) {
	fmt.Fprintf(w, "%s sm-failover (%.1f s), report %s\n", verdict(rep.Passed), rep.DurationS, index)
	for _, c := range rep.Cases {
		fmt.Fprintf(w, "  %s %-13s %-14s %s\n", verdict(c.Passed), c.Pairing, c.Scenario, failoverTime(c))
		for _, ch := range c.Checks {
			fmt.Fprintf(w, "    %-4s %-30s %s\n", runner.Mark(ch), ch.Name, ch.Detail)
		}
	}
}

// Experiment is `ibfab run sm-failover`, for the command's table.
var Experiment = runner.Experiment{Name: "sm-failover", Synopsis: failoverSynopsis, Run: runFailoverCmd}
