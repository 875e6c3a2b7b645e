package soak

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
)

// disturbanceChecks are the verdicts on one disturbance.
func disturbanceChecks(d *DisturbanceRun) []runner.Check {
	var cs []runner.Check
	add := func(name string, ok bool, format string, args ...any) {
		cs = append(cs, runner.Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	add("settled within bound", d.Error == "" && d.SettleMs != nil && *d.SettleMs <= d.BoundMs,
		"sweep %s, ports %s, flows delivering %s after it was undone; bound %.0f ms%s", ms(d.SweepMs), ms(d.ActiveMs), ms(d.SettleMs), d.BoundMs, prefixed("; ", d.Error))
	why := "only drops of a link down, at its ports"
	if !d.Kind.TakesLinkDown() && len(d.AlsoDown) == 0 {
		why = "no drop: it takes no link down"
	}
	if len(d.AlsoDown) > 0 {
		why += fmt.Sprintf(" (links down besides its own: %s)", strings.Join(d.AlsoDown, ", "))
	}
	add("data lost only on downed links", len(d.BadDrops) == 0, "%s; recorded %s%s", why, fmtCounts(d.Drops), prefixed("; unexplained: ", strings.Join(d.BadDrops, ", ")))
	return cs
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// finish judges the soak as a whole.
func (r *soakRun) finish(err error) {
	rep := r.rep
	rep.WallS = time.Since(rep.Started).Seconds()
	if err != nil {
		rep.Error = err.Error()
	}
	if r.drops != nil {
		rep.Counters.RecordsLost = r.drops.lostRecords()
	}
	rep.WarmupS = max(minWarmup.Seconds(), warmupFrac*time.Since(r.t0).Seconds())
	judgeMemory(rep.Memory, rep.WarmupS)
	rep.Checks = soakChecks(rep)
	rep.Passed = rep.Error == "" && allOK(rep.Checks)
}

// soakChecks are the verdicts on the whole soak.
func soakChecks(rep *Report) []runner.Check {
	var cs []runner.Check
	add := func(name string, ok bool, format string, args ...any) {
		cs = append(cs, runner.Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	seen := map[Kind]int{}
	settled, clean := 0, 0
	var late, dirty []string
	for _, d := range rep.Disturbances {
		seen[d.Kind]++
		if d.Checks[0].OK {
			settled++
		} else {
			late = append(late, fmt.Sprintf("#%d %s %s", d.N, d.Kind, ms(d.SettleMs)))
		}
		if d.Checks[1].OK {
			clean++
		} else {
			dirty = append(dirty, fmt.Sprintf("#%d %s", d.N, d.Kind))
		}
	}
	mixed := len(rep.Disturbances) > 0 && (!rep.Quick || len(seen) == len(kinds.Values()))
	add("disturbances ran", mixed, "%d disturbances: %s", len(rep.Disturbances), kindCounts(seen))
	add("every disturbance settled within its bound", settled == len(rep.Disturbances) && mixed, "%d of %d%s", settled, len(rep.Disturbances), prefixed("; not: ", strings.Join(late, ", ")))
	c := rep.Counters
	add("data lost only on downed links", clean == len(rep.Disturbances) && len(c.QuietDrops) == 0 && c.RecordsLost == 0,
		"%d of %d disturbances dropped only at their downed links%s; %d drop records while quiet%s; %d records overwritten unread; %d of %d packets lost in all",
		clean, len(rep.Disturbances), prefixed(" (not: ", strings.Join(dirty, ", ")+")"), len(c.QuietDrops), prefixed(": ", strings.Join(first(c.QuietDrops, 5), "; ")), c.RecordsLost, c.Lost, c.Sent)
	l := rep.Leaks
	add("no leaked process", len(l.ProcLeaks) == 0 && len(l.PIDsAlive) == 0 && len(l.Start.Procs) > 0,
		"%d kinds of process at the start and the end%s; %d fabric processes seen, %d alive after down%s",
		len(l.Start.Procs), prefixed(", differing: ", strings.Join(l.ProcLeaks, "; ")), l.PIDsSeen, len(l.PIDsAlive), prefixed(": ", strings.Join(l.PIDsAlive, ", ")))
	add("no leaked namespace", len(l.NamespacesLeft) == 0, "%d namespaces up, %d left after down%s", l.NamespacesUp, len(l.NamespacesLeft), prefixed(": ", strings.Join(l.NamespacesLeft, ", ")))
	add("no leaked file descriptor", len(l.FDLeaks) == 0 && len(l.End.FDs) > 0, "%d descriptors at the start, %d at the end (each process kind may hold %d more)%s",
		sum(l.Start.FDs), sum(l.End.FDs), fdSlack, prefixed("; ", strings.Join(l.FDLeaks, "; ")))
	add("no leaked goroutine", l.GoroutinesAfter <= l.GoroutinesBefore, "the harness's goroutines: %d before, %d after", l.GoroutinesBefore, l.GoroutinesAfter)
	if rep.Quick && !anyJudged(rep.Memory) {
		cs = append(cs, runner.Check{Name: "memory flat", OK: true, Skipped: true, Detail: fmt.Sprintf(
			"a quick soak ends within the warm-up (the first %.0f s), when every process still grows to its working size; over the whole run: %s",
			rep.WarmupS, wholeWords(rep.Memory))})
		return cs
	}
	add("memory flat", memoryFlat(rep.Memory), "%s", memoryWords(rep.Memory))
	return cs
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func kindCounts(seen map[Kind]int) string {
	var parts []string
	for _, k := range kinds.Values() {
		parts = append(parts, fmt.Sprintf("%s %d", k, seen[k]))
	}
	return strings.Join(parts, ", ")
}

func anyJudged(ss []MemSeries) bool {
	for _, s := range ss {
		if s.Judged {
			return true
		}
	}
	return false
}

// wholeWords names the steepest slope over the whole run.
func wholeWords(ss []MemSeries) string {
	steepest := MemSeries{}
	for i, s := range ss {
		if i == 0 || s.WholeKiBPerMin > steepest.WholeKiBPerMin {
			steepest = s
		}
	}
	return fmt.Sprintf("steepest Pss slope %s %.0f KiB/min of %d processes", steepest.Proc, steepest.WholeKiBPerMin, len(ss))
}

// memoryFlat: at least one series judged, and every judged one flat.
func memoryFlat(ss []MemSeries) bool {
	judged := 0
	for _, s := range ss {
		if s.Judged {
			judged++
			if !s.Flat {
				return false
			}
		}
	}
	return judged > 0
}

// memoryWords sums the memory series up: how many judged, the steepest
// slope, and those not flat.
func memoryWords(ss []MemSeries) string {
	judged := 0
	steepest := MemSeries{}
	var rising []string
	for _, s := range ss {
		if !s.Judged {
			continue
		}
		judged++
		if judged == 1 || s.SlopeKiBPerMin > steepest.SlopeKiBPerMin {
			steepest = s
		}
		if !s.Flat {
			rising = append(rising, fmt.Sprintf("%s %.0f KiB/min (bound %.0f)", s.Proc, s.SlopeKiBPerMin, s.BoundKiBPerMin))
		}
	}
	return fmt.Sprintf("%d of %d processes judged; steepest Pss slope %s %.1f KiB/min (bound %.0f)%s",
		judged, len(ss), steepest.Proc, steepest.SlopeKiBPerMin, steepest.BoundKiBPerMin, prefixed("; rising: ", strings.Join(rising, ", ")))
}

const (
	synopsis = "run soak [--duration 1h] [--quick] [--seed S] [--out DIR] [--name N] [--json]"
	desc     = `A soak (issue 36): the default fabric under steady traffic (a CBR flow
between every pair of ca11-ca15), ibsm Master at ca4 and OpenSM Standby at
ca7, while the harness disturbs it at random times drawn from the seed: link
flaps, switch kills and restarts, ibsm killed (OpenSM takes over, ibsm is
handed the subnet back), partition changes (ibsm restarted with another
partitions.conf), QoS changes (ibsm qos add/del) and SMP loss on the SM's
link during a flap. After each disturbance the fabric must settle within the
kind's bound (the SM's sweep done, every port Active, every flow delivering
again); drops only of a downed link's causes at its ports, none while quiet;
no process, namespace, file descriptor or harness goroutine leaked; every
process's Pss flat after the warm-up (the slope is reported).

--quick runs each kind once with short gaps (about 45 s, in make test).
The same --seed gives the same schedule. The report (index.md, report.json,
the SMs' logs) goes to DIR/soak. The exit status is 1 when a check fails.`
)

// runCmd is `ibfab run soak`.
func runCmd(env *harness.Env, args []string) error {
	const cmd = "run soak"
	fs := flag.NewFlagSet("ibfab run soak", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quick := fs.Bool("quick", false, "each kind of disturbance once, short gaps (about 45 s)")
	dur := fs.Duration("duration", time.Hour, "how long the disturbances go on")
	seed := fs.Uint64("seed", 1, "the schedule's seed")
	out := fs.String("out", "out", "write the report to `DIR`/soak")
	name := fs.String("name", "sk", "fabric name")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	usage := func(err error) error { return &harness.UsageError{Cmd: cmd, Usage: synopsis, Err: err} }
	if help, err := harness.ParseFlags(env, fs, cmd, synopsis, desc, args, 0); help || err != nil {
		return err
	}
	if !runner.FabricNameRE.MatchString(*name) {
		return usage(fmt.Errorf("--name %q: want 1-20 of [a-z0-9_]", *name))
	}
	if *dur <= 0 {
		return usage(fmt.Errorf("--duration %v: want a positive duration", *dur))
	}
	dir := filepath.Join(*out, "soak")
	o := Options{Out: dir, Fabric: *name, Quick: *quick, Duration: *dur, Seed: *seed}
	rep, err := runner.RunAndPrint(env, cmd, *asJSON, func(ctx context.Context, log io.Writer) (*Report, error) {
		o.Log = log
		return Run(ctx, o)
	}, func(rep *Report) { Print(env.Stdout, rep, filepath.Join(dir, "index.md")) })
	if err != nil {
		return err
	}
	if !rep.Passed {
		return &harness.CommandError{Cmd: cmd, Err: errors.New("a check failed")}
	}
	return nil
}

// Experiment is `ibfab run soak`, for the command's table.
var Experiment = runner.Experiment{Name: "soak", Synopsis: synopsis, Run: runCmd}
