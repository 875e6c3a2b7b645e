package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"ibfab/harness"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// What the experiments' runners (afc, cc) share: their options, the
// windows of a load point, a fabric up with its SM, the warm-up/snapshot/
// measure point, the hosts' flow readings, and the report's preamble and
// summary.

// ExperimentOptions tune an experiment's run (RunAFC, RunCC).
type ExperimentOptions struct {
	Out       string    // report directory; "" writes none
	Fabric    string    // fabric name prefix; default the experiment's name
	Log       io.Writer // progress lines
	Quick     bool
	TimeScale float64  // 0: the experiment's own per fabric
	Only      []string // experiment IDs; empty: all
	// Rate is every link's (an experiment that takes --rate); the zero
	// Rate is TunedRate.
	Rate topologies.Rate
}

// Prepare gives o its default fabric prefix and makes its report
// directory.
func (o *ExperimentOptions) Prepare(name string) error {
	if o.Fabric == "" {
		o.Fabric = name
	}
	if o.Out != "" {
		return os.MkdirAll(o.Out, 0o755)
	}
	return nil
}

// PointWindows are the durations of one load point in emulated time: the
// load on before the measurement, the measurement, the drain after the
// flows stop. The experiments' windows embed it first (their JSON begins
// with its fields).
type PointWindows struct {
	Warmup  time.Duration `json:"warmup_ns"`  // load on before a measurement
	Measure time.Duration `json:"measure_ns"` // one load point
	Drain   time.Duration `json:"drain_ns"`   // after the flows stop
}

// MeasurePoint is a load point's measurement, the load running: w.Warmup,
// a first reading (read(ctx, true): the hosts' records reset),
// w.Measure, a second (read(ctx, false)); the windows at time scale.
func MeasurePoint[S any](ctx context.Context, w PointWindows, scale float64, read func(ctx context.Context, first bool) (S, error)) (a, b S, err error) {
	Sleep(ctx, AtScale(w.Warmup, scale))
	if a, err = read(ctx, true); err != nil {
		return a, b, err
	}
	Sleep(ctx, AtScale(w.Measure, scale))
	b, err = read(ctx, false)
	return a, b, err
}

// ExperimentRun is one fabric of an experiment, up with its SM: its
// hosts and switches, their LIDs once up, and the run's progress notes.
type ExperimentRun struct {
	*SuiteRun
	Scale    float64
	Hosts    []string
	Switches []string
	LIDs     map[string]int
	Tag      string    // the progress lines' prefix
	Notes    *[]string // where Note keeps its lines
}

// NewExperimentRun prepares the run of suite s on topo as fabric, its
// files in dir ("" for none), ibsm as SM; hosts in the experiment's order.
func NewExperimentRun(s *Suite, topo *topologies.Topology, fabric, dir string, hosts []string, log io.Writer) ExperimentRun {
	r := ExperimentRun{Scale: s.TimeScale, Hosts: hosts, Switches: switchNames(topo)}
	r.SuiteRun = NewSuiteRun(s, Options{Out: dir, Fabric: fabric, SM: SMIbsm, Log: log}, topo, fabric,
		&Report{Suite: s.Name, Fabric: fabric, SMKind: SMIbsm, SMNode: s.SMNode, TimeScale: s.TimeScale})
	return r
}

// switchNames are topo's switches in its order.
func switchNames(topo *topologies.Topology) []string {
	var out []string
	for _, n := range topo.Nodes() {
		if n.Type == topologies.Switch {
			out = append(out, n.Name)
		}
	}
	return out
}

// note records a progress line and logs it.
func (r *ExperimentRun) Note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	*r.Notes = append(*r.Notes, msg)
	r.Logf("%s: %s", r.Tag, msg)
}

// bringUp starts ibsm, waits for the subnet and every port, reads the
// LIDs, and notes the subnet up with format and args.
func (r *ExperimentRun) BringUp(ctx context.Context, format string, args ...any) error {
	lids, err := r.bringUpSM(ctx)
	if err != nil {
		return err
	}
	r.LIDs = lids
	r.Note(format, args...)
	return nil
}

// readHostFlows reads the flows of hosts (resetting them with reset) into
// flows and at, when each was read, controlParallel at a time.
func (r *ExperimentRun) ReadHostFlows(ctx context.Context, hosts []string, reset bool, flows map[string]nodeproc.FlowsReport, at map[string]time.Time) error {
	var mu sync.Mutex
	return ForEach(hosts, func(h string) error {
		fr, err := harness.Flows(ctx, r.fabric, h, nodeproc.FlowsArgs{Reset: reset})
		t := time.Now()
		if err != nil {
			return err
		}
		mu.Lock()
		flows[h], at[h] = fr, t
		mu.Unlock()
		return nil
	})
}

// WriteReportFiles writes an experiment's report.json (rep, indented,
// with a newline at the end), then its index.md (index()).
func WriteReportFiles(dir string, rep any, index func() string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.md"), []byte(index()), 0o644)
}

// PassFail is a report's verdict word.
func PassFail(passed bool) string {
	if passed {
		return "PASS"
	}
	return "FAIL"
}

// AllOK is whether every check passed.
func AllOK(checks []Check) bool {
	for _, c := range checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// WritePreamble begins an experiment's index: the title with the
// verdict, and "Started …, full|--quick, N s. ", the rest of the first
// paragraph the caller's.
func WritePreamble(b *strings.Builder, title string, passed, quick bool, started time.Time, elapsedS float64) {
	mode := "full"
	if quick {
		mode = "--quick"
	}
	fmt.Fprintf(b, "# %s — %s\n\n", title, PassFail(passed))
	fmt.Fprintf(b, "Started %s, %s, %.0f s. ", started.Format("2006-01-02 15:04:05"), mode, elapsedS)
}

// PrintSummary is an experiment command's summary: the verdict line,
// rows (the claims table's) and the checks.
func PrintSummary(w io.Writer, name string, passed bool, elapsedS float64, index string, rows func(io.Writer), checks []Check) {
	fmt.Fprintf(w, "%s %s (%.1f s), report %s\n", PassFail(passed), name, elapsedS, index)
	rows(w)
	for _, c := range checks {
		fmt.Fprintf(w, "  %-4s %-44s %s\n", Mark(c), c.Name, c.Detail)
	}
}
