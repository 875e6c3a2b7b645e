package soak

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"ibfab/harness/suites/runner"
)

// DisturbanceRun is one disturbance as it ran.
type DisturbanceRun struct {
	N int `json:"n"`
	Disturbance
	StartS    float64 `json:"start_s"`    // since the traffic started
	RestoredS float64 `json:"restored_s"` // undone
	BoundMs   float64 `json:"bound_ms"`
	// From undone until the SM reported its sweep done, every port was as
	// it should be, no turn was blocked, and every flow delivered again
	// (the last is SettleMs); nil when it did not happen in twice the
	// bound.
	SweepMs     *float64 `json:"sweep_ms,omitempty"`
	ActiveMs    *float64 `json:"active_ms,omitempty"`
	UnblockedMs *float64 `json:"unblocked_ms,omitempty"`
	SettleMs    *float64 `json:"settle_ms,omitempty"`
	TakeoverMs  *float64 `json:"takeover_ms,omitempty"` // sm-failover: OpenSM Master after the kill
	// Drops are the records the nodes made from its start until it
	// settled, by "node[port] cause"; BadDrops those no downed link
	// explains.
	Drops    map[string]uint64 `json:"drops,omitempty"`
	BadDrops []string          `json:"bad_drops,omitempty"`
	// AlsoDown are the ports besides the disturbance's own whose link
	// went down while it ran (LinkDownedCounter grew at either end): a
	// node process off the CPU past its peers' liveness timeout on a
	// loaded machine. Their drops are a downed link's too.
	AlsoDown []string       `json:"also_down,omitempty"`
	Notes    []string       `json:"notes,omitempty"`
	Checks   []runner.Check `json:"checks"`
	Passed   bool           `json:"passed"`
	Error    string         `json:"error,omitempty"`
}

// Counters are the traffic's and the fabric's totals over the soak.
type Counters struct {
	Flows    int    `json:"flows"`
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	Lost     int64  `json:"lost"`
	// Refused at the source: by the port (not Active) and with the
	// backlog full.
	RefusedPort    uint64 `json:"refused_port"`
	RefusedBacklog uint64 `json:"refused_backlog"`
	MaxBacklog     int    `json:"max_backlog"`
	// DropRecords counts every drop record read, by cause; QuietDrops
	// those made while no disturbance ran (any is a failure).
	DropRecords map[string]uint64 `json:"drop_records"`
	// BlockedTurnDrops counts those at turns the SM had blocked while it
	// rerouted around a downed link (blockedTurn).
	BlockedTurnDrops uint64   `json:"blocked_turn_drops"`
	QuietDrops       []string `json:"quiet_drops,omitempty"`
	// RecordsLost counts drop records a node's ring overwrote before they
	// were read (none expected at the soak's rates).
	RecordsLost uint64 `json:"records_lost"`
}

// Leaks is what the soak compares before and after.
type Leaks struct {
	GoroutinesBefore int      `json:"goroutines_before"`
	GoroutinesAfter  int      `json:"goroutines_after"`
	NamespacesUp     int      `json:"namespaces_up"`
	NamespacesLeft   []string `json:"namespaces_left"`
	Start            ProcSnap `json:"start"`
	End              ProcSnap `json:"end"`
	ProcLeaks        []string `json:"proc_leaks,omitempty"`
	FDLeaks          []string `json:"fd_leaks,omitempty"`
	// PIDsAlive are processes seen in the fabric still running after it
	// was taken down.
	PIDsSeen  int      `json:"pids_seen"`
	PIDsAlive []string `json:"pids_alive,omitempty"`
}

// Report is the soak's report (report.json).
type Report struct {
	Experiment string    `json:"experiment"`
	Started    time.Time `json:"started"`
	Fabric     string    `json:"fabric"`
	Topology   string    `json:"topology"`
	Seed       uint64    `json:"seed"`
	Quick      bool      `json:"quick"`
	// DurationS is the soak's asked length (quick: one of each kind),
	// WallS what the whole run took, bring-up and teardown included.
	DurationS  float64  `json:"duration_s"`
	WallS      float64  `json:"wall_s"`
	Master     string   `json:"master"`
	Standby    string   `json:"standby"`
	Observer   string   `json:"observer"`
	IbsmArgs   []string `json:"ibsm_args"`
	OpenSMConf string   `json:"opensm_conf"`
	Targets    Targets  `json:"targets"`
	// BoundsMs are the settle bounds by kind.
	BoundsMs     map[string]float64 `json:"bounds_ms"`
	WarmupS      float64            `json:"memory_warmup_s"`
	Disturbances []DisturbanceRun   `json:"disturbances"`
	Counters     Counters           `json:"counters"`
	Leaks        Leaks              `json:"leaks"`
	Memory       []MemSeries        `json:"memory"`
	Events       []runner.Event     `json:"events"`
	Checks       []runner.Check     `json:"checks"`
	Passed       bool               `json:"passed"`
	Error        string             `json:"error,omitempty"`
}

func ms(p *float64) string {
	if p == nil {
		return "never"
	}
	return fmt.Sprintf("%.0f ms", *p)
}

// indexMD is the report's index.md: the checks, the disturbances with
// their settle times, the counters, the leaks and the memory slopes.
func indexMD(rep *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# ibfab run soak: %s\n\n", runner.PassFail(rep.Passed))
	fmt.Fprintf(&b, "Fabric %s (%s), seed %d, %s; ibsm master at %s, OpenSM standby at %s; run took %.0f s.\n\n",
		rep.Fabric, rep.Topology, rep.Seed, durationWords(rep), rep.Master, rep.Standby, rep.WallS)
	if rep.Error != "" {
		fmt.Fprintf(&b, "**Did not complete:** %s\n\n", rep.Error)
	}
	b.WriteString("| check | | detail |\n|---|---|---|\n")
	for _, c := range rep.Checks {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, runner.Mark(c), mdCell(c.Detail))
	}
	b.WriteString("\n## Disturbances\n\nSettle: from the disturbance's undo until the SM's sweep was done, every port as it should be, no switch turn blocked (SL 0 on VL15) and every flow delivering again.\n\n")
	b.WriteString("| # | at s | kind | target | hold ms | sweep | ports | unblocked | settle | bound | drops | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, d := range rep.Disturbances {
		fmt.Fprintf(&b, "| %d | %.1f | %s | %s | %d | %s | %s | %s | %s | %.0f ms | %s | %s |\n", d.N, d.StartS, d.Kind, mdCell(d.Target()),
			d.Hold.Milliseconds(), ms(d.SweepMs), ms(d.ActiveMs), ms(d.UnblockedMs), ms(d.SettleMs), d.BoundMs, mdCell(fmtCounts(d.Drops)), runner.PassFail(d.Passed))
	}
	for _, d := range rep.Disturbances {
		if d.Passed {
			continue
		}
		fmt.Fprintf(&b, "\n### #%d %s %s\n\n", d.N, d.Kind, d.Target())
		for _, c := range d.Checks {
			fmt.Fprintf(&b, "- %s %s: %s\n", runner.Mark(c), c.Name, c.Detail)
		}
		if d.Error != "" {
			fmt.Fprintf(&b, "- error: %s\n", d.Error)
		}
	}
	c := rep.Counters
	fmt.Fprintf(&b, "\n## Counters\n\n%d flows: %d sent, %d received, %d lost; refused at the source %d by the port, %d with the backlog full (largest backlog %d).\n\nDrop records by cause: %s (%d of them at turns the SM blocked while it rerouted).\n",
		c.Flows, c.Sent, c.Received, c.Lost, c.RefusedPort, c.RefusedBacklog, c.MaxBacklog, fmtCounts(c.DropRecords), c.BlockedTurnDrops)
	l := rep.Leaks
	fmt.Fprintf(&b, "\n## Leaks\n\nHarness goroutines %d before, %d after; %d namespaces up, left after down: %s; %d fabric processes seen, alive after down: %s.\n\n",
		l.GoroutinesBefore, l.GoroutinesAfter, l.NamespacesUp, orNone(strings.Join(l.NamespacesLeft, ", ")), l.PIDsSeen, orNone(strings.Join(l.PIDsAlive, ", ")))
	b.WriteString("| process | count start | end | fds start | end |\n|---|---|---|---|---|\n")
	for _, k := range keys(l.Start.Procs, l.End.Procs) {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", k, l.Start.Procs[k], l.End.Procs[k], l.Start.FDs[k], l.End.FDs[k])
	}
	fmt.Fprintf(&b, "\n## Memory\n\nPss per process, fitted from %.0f s on (a process started later: %.0f s after its start; least squares); bound max(%d KiB/min, %d KiB over the window).\n\n", rep.WarmupS, rep.WarmupS, slopeFloorKiB, growthFloorKiB)
	b.WriteString("| process | pid | samples fitted | span min | first KiB | last KiB | slope KiB/min | bound | flat | whole run KiB/min |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range rep.Memory {
		first, last := uint64(0), uint64(0)
		if len(s.Samples) > 0 {
			first, last = s.Samples[0].PssKiB, s.Samples[len(s.Samples)-1].PssKiB
		}
		flat := "not judged"
		if s.Judged {
			flat = map[bool]string{true: "yes", false: "**no**"}[s.Flat]
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %d | %d | %.1f | %.0f | %s | %.0f |\n", s.Proc, s.PID, s.Fitted, s.SpanMin, first, last, s.SlopeKiBPerMin, s.BoundKiBPerMin, flat, s.WholeKiBPerMin)
	}
	return b.String()
}

func durationWords(rep *Report) string {
	if rep.Quick {
		return "quick (every kind once)"
	}
	return fmt.Sprintf("%v", time.Duration(rep.DurationS*float64(time.Second)))
}

func fmtCounts(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func mdCell(s string) string { return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s) }

// Print prints the soak's verdict, its checks and a line per disturbance.
func Print(w io.Writer, rep *Report, index string) {
	fmt.Fprintf(w, "%s soak (%.1f s), report %s\n", runner.PassFail(rep.Passed), rep.WallS, index)
	for _, c := range rep.Checks {
		fmt.Fprintf(w, "  %-4s %-34s %s\n", runner.Mark(c), c.Name, c.Detail)
	}
	for _, d := range rep.Disturbances {
		fmt.Fprintf(w, "  %3d %7.1f s %-4s %-16s %-30s settle %s (bound %.0f ms)\n", d.N, d.StartS, runner.PassFail(d.Passed), d.Kind, d.Target(), ms(d.SettleMs), d.BoundMs)
	}
}
