package cc

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/hca"
	"ibfab/internal/enum"
	"ibfab/topologies"
)

// The congestion-control experiments (`ibfab run cc`, issue 19, seed 004):
// IBA's congestion control (FECN marking at the switches, CNP/BECN back to
// the source, injection throttled by the CCT) against DRB (the same
// detection and notification, but the source opens alias paths over LMC
// LIDs instead of throttling) on meshes and tori brought up by the
// harness, ibsm as SM with --lmc 2 and, where CC is on, --cc with the
// file ccConf writes. The experiments, as the digest numbers them:
//
//   - D1: 4×4 mesh, perfect shuffle, no CC: accepted = offered until
//     saturation, latency rising after it;
//   - D2: 8×8 torus, butterfly, shuffle, transpose, IBA_CC and DRB:
//     accepted and latency against offered load;
//   - D3: the same on a 32-node (8×4) mesh;
//   - D4: a hot spot on the 8×4 mesh (topologies.GridHotSpot), IBA_CC and
//     DRB: every inter-switch link's load over time, the peak;
//   - D5 and D6: the hot spot on a 4×4 mesh, DRB (active aliases per pair,
//     opens and closes over time) and IBA_CC (CCTI per source over time,
//     the source backlog);
//   - D0: the same hot spot on the 4×4 mesh without CC (ibsm without
//     --cc): the reference the must-show checks compare with.
//
// Traffic is flows: one per source to its partner, Poisson arrivals of
// 4 KB messages in 2048-byte packets, at an offered load in Mb/s per
// source; latency is from the message's generation (time queued at the
// source included), accepted throughput what the destinations received.
// Everything is emulated time; the time scale grows with the fabric so
// that the machine keeps up with the links (ccTimeScale). Every link runs
// at 4x SDR unless CCOptions.Rate names another rate, at which the time
// scale, the loads, the windows and the CCTI timer, all tuned at 4x SDR,
// scale with it (plansAt, ccWindows.at, CCConfig.at): the same
// experiments in packet times, as many packets per real second.

//go:generate go tool stringer -type=CCScheme -linecomment

// CCScheme is how the CAs react to congestion.
type CCScheme uint8

// The schemes: CCOff no reaction (D1, D0: no CC programmed either), CCIBA
// IBA CC (injection throttling), CCDRB DRB (alias paths).
const (
	CCOff CCScheme = iota // off
	CCIBA                 // iba
	CCDRB                 // drb
)

var ccSchemes = enum.New("CC scheme", CCOff, CCIBA, CCDRB)

// MarshalText implements encoding.TextMarshaler.
func (x CCScheme) MarshalText() ([]byte, error) { return ccSchemes.Marshal(x) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (x *CCScheme) UnmarshalText(b []byte) error { return ccSchemes.Unmarshal(x, b) }

// mode is the CCA mode the scheme sets.
func (s CCScheme) mode() hca.CCMode {
	switch s {
	case CCIBA:
		return hca.CCIBA
	case CCDRB:
		return hca.CCDRB
	}
	return hca.CCOff
}

// CCFabric is a fabric of the experiments.
type CCFabric struct {
	Torus bool  `json:"torus"`
	Dims  []int `json:"dims"`
	// CC: ibsm programs congestion control (--cc); without, no switch
	// marks and no CA reacts.
	CC bool `json:"cc"`
}

// String is "mesh 4x4, CC" and the like.
func (f CCFabric) String() string {
	kind := "mesh"
	if f.Torus {
		kind = "torus"
	}
	d := make([]string, len(f.Dims))
	for i, x := range f.Dims {
		d[i] = fmt.Sprint(x)
	}
	cc := "no CC"
	if f.CC {
		cc = "CC"
	}
	return fmt.Sprintf("%s %s, %s", kind, strings.Join(d, "x"), cc)
}

// key names the fabric in fabric names: "m44c", "t88c", "m44n".
func (f CCFabric) key() string {
	k := "m"
	if f.Torus {
		k = "t"
	}
	for _, x := range f.Dims {
		k += fmt.Sprint(x)
	}
	if f.CC {
		return k + "c"
	}
	return k + "n"
}

// Nodes is the number of CAs (one per switch).
func (f CCFabric) Nodes() int {
	n := 1
	for _, d := range f.Dims {
		n *= d
	}
	return n
}

func (f CCFabric) topology() (*topologies.Topology, error) {
	if f.Torus {
		return topologies.Torus(f.Dims...)
	}
	return topologies.Mesh(f.Dims...)
}

func (f CCFabric) equal(g CCFabric) bool {
	return f.Torus == g.Torus && f.CC == g.CC && slices.Equal(f.Dims, g.Dims)
}

// ccExperiment is one experiment of the plan: a load sweep of
// permutations, or a hot spot.
type ccExperiment struct {
	ID       string
	Title    string
	Fabric   CCFabric
	HotSpot  bool
	Patterns []topologies.Permutation // sweep
	Schemes  []CCScheme
	Loads    []float64 // Mb/s per source, ascending (sweep)
}

// Every experiment's ID, in the order they run.
var ccIDs = []string{"D1", "D0", "D2", "D3", "D4", "D5", "D6"}

// Traffic constants: 4 KB messages in 2048-byte packets, the flows'
// source backlog large enough that a throttled source's queue shows as
// latency (the paper's critique of throttling) rather than as drops.
const (
	ccMessageBytes = 4096
	ccPayload      = 2048
	ccMaxBacklog   = 4096 // packets
	ccDRBCap       = 4
)

// The hot spot's load: each source's share of its link such that a row's
// middle link is offered ccHotLinkLoad of its rate (GridHotSpot), at most
// ccHotSourceMax of the source's own link.
const (
	ccHotLinkLoad = 1.2
	// ccHotLinkShed is the share of its rate the hot link must shed
	// under DRB against its peak without CC: measured loads swing by
	// about 2 % of the rate from one sample to the next.
	ccHotLinkShed  = 0.05
	ccHotSourceMax = 0.75
)

// ccPlan is the experiments of a run: the sizes, or with quick
// 4×4 fabrics and fewer loads (D3's 8×4 mesh becomes the 4×4 one, where
// D4 and D5/D6 then share their runs).
func ccPlan(quick bool) []ccExperiment {
	small := CCFabric{Dims: []int{4, 4}, CC: true}
	nocc := CCFabric{Dims: []int{4, 4}}
	torus := CCFabric{Torus: true, Dims: []int{8, 8}, CC: true}
	mesh := CCFabric{Dims: []int{8, 4}, CC: true}
	loads := []float64{500, 1000, 2000, 3000, 4000, 5000, 6000, 7000}
	d1Loads, d3Loads := loads, loads
	if quick {
		torus.Dims, mesh.Dims = []int{4, 4}, []int{4, 4}
		loads = []float64{1000, 3000, 6000}
		d1Loads, d3Loads = loads, []float64{2000, 6000}
	}
	both := []CCScheme{CCIBA, CCDRB}
	all := topologies.Permutations()
	return []ccExperiment{
		{ID: "D1", Title: "mesh, perfect shuffle, no CC: accepted and latency against offered load", Fabric: nocc,
			Patterns: []topologies.Permutation{topologies.PerfectShuffle}, Schemes: []CCScheme{CCOff}, Loads: d1Loads},
		{ID: "D0", Title: "hot spot without CC (the reference of the must-show checks)", Fabric: nocc, HotSpot: true, Schemes: []CCScheme{CCOff}},
		{ID: "D2", Title: "torus, three permutations, IBA_CC against DRB", Fabric: torus, Patterns: all, Schemes: both, Loads: loads},
		{ID: "D3", Title: "mesh, three permutations, IBA_CC against DRB", Fabric: mesh, Patterns: all, Schemes: both, Loads: d3Loads},
		{ID: "D4", Title: "hot spot: link load over time, IBA_CC against DRB", Fabric: mesh, HotSpot: true, Schemes: both},
		{ID: "D5", Title: "DRB's mechanism: active aliases, notifications, closings", Fabric: small, HotSpot: true, Schemes: []CCScheme{CCDRB}},
		{ID: "D6", Title: "IBA_CC's mechanism: CCTI per source, the source queue", Fabric: small, HotSpot: true, Schemes: []CCScheme{CCIBA}},
	}
}

// plansAt is plan at k times 4x SDR's rate: every load (Mb/s) k times
// larger, the same share of a link.
func plansAt(plan []ccExperiment, k float64) []ccExperiment {
	out := slices.Clone(plan)
	for i := range out {
		loads := make([]float64, len(out[i].Loads)) // the plan's experiments share their slices
		for j, l := range out[i].Loads {
			loads[j] = l * k
		}
		out[i].Loads = loads
	}
	return out
}

// selectExperiments keeps the experiments named in only (all when
// empty); an unknown name is an error.
func selectExperiments(plan []ccExperiment, only []string) ([]ccExperiment, error) {
	if len(only) == 0 {
		return plan, nil
	}
	var out []ccExperiment
	for _, id := range only {
		i := slices.IndexFunc(plan, func(e ccExperiment) bool { return strings.EqualFold(e.ID, id) })
		if i < 0 {
			return nil, fmt.Errorf("no experiment %q: want some of %s", id, strings.Join(ccIDs, ","))
		}
		if !slices.ContainsFunc(out, func(e ccExperiment) bool { return e.ID == plan[i].ID }) {
			out = append(out, plan[i])
		}
	}
	// Run in the plan's order, so that experiments on one fabric meet.
	slices.SortFunc(out, func(a, b ccExperiment) int { return slices.Index(ccIDs, a.ID) - slices.Index(ccIDs, b.ID) })
	return out, nil
}

// ccGroup is the experiments that run on one fabric, brought up once.
type ccGroup struct {
	Fabric      CCFabric
	Experiments []ccExperiment
}

// groupByFabric puts experiments on equal fabrics together, in the order
// each fabric is first needed.
func groupByFabric(exps []ccExperiment) []ccGroup {
	var out []ccGroup
	for _, e := range exps {
		i := slices.IndexFunc(out, func(g ccGroup) bool { return g.Fabric.equal(e.Fabric) })
		if i < 0 {
			out = append(out, ccGroup{Fabric: e.Fabric})
			i = len(out) - 1
		}
		out[i].Experiments = append(out[i].Experiments, e)
	}
	return out
}

// ccTimeScale is a fabric's time scale at rate: 62.5 per node at 4x SDR
// (1000 for 16 nodes, 2000 for 32, 4000 for 64), times rate's data rate
// over 4x SDR's (runner.ScaleAt). The machine moves some 70 000
// packets a second across one link at most (ibfab bench fabric: the
// unpaced limit, time scale 6.5 for one 8 Gb/s link); a saturated grid
// carries about half its links' rate with five or six link crossings per
// packet, so the traffic it asks of the machine grows with its nodes, and
// this scale keeps it at a third of that limit or less, leaving the rest
// to the sampling and to the SM.
func ccTimeScale(f CCFabric, override float64, rate topologies.Rate) float64 {
	if override > 0 {
		return override
	}
	return runner.ScaleAt(62.5*float64(f.Nodes()), rate)
}

// ccWindows are an experiment's durations in emulated time, tuned at 4x
// SDR (ccWindowsFor, then at); the runner multiplies them by the time
// scale.
type ccWindows struct {
	runner.PointWindows
	// The hot spot: before the burst, the burst, after it; sampled every
	// Sample.
	Before time.Duration `json:"before_ns"`
	Burst  time.Duration `json:"burst_ns"`
	After  time.Duration `json:"after_ns"`
	Sample time.Duration `json:"sample_ns"`
}

func ccWindowsFor(quick bool) ccWindows {
	w := ccWindows{PointWindows: runner.PointWindows{Warmup: 500 * time.Microsecond, Measure: 1500 * time.Microsecond, Drain: time.Millisecond},
		Before: 500 * time.Microsecond, Burst: 2 * time.Millisecond, After: 1500 * time.Microsecond, Sample: 250 * time.Microsecond}
	if quick {
		w.Measure, w.Burst, w.After = time.Millisecond, 3*time.Millisecond, time.Millisecond
	}
	return w
}

// at is w at k times 4x SDR's rate: as many packet times.
func (w ccWindows) at(k float64) ccWindows {
	w.PointWindows = w.PointWindows.At(k)
	for _, d := range []*time.Duration{&w.Before, &w.Burst, &w.After, &w.Sample} {
		*d = runner.DurationAt(*d, k)
	}
	return w
}

// CCOptions tune RunCC: the fabric prefix defaults to "cc", the time
// scale to ccTimeScale per fabric, the rate to 4x SDR.
type CCOptions = runner.ExperimentOptions

// RunCC runs the experiments and, with o.Out, writes the report there.
// The error is for a run that could not start; an experiment that failed
// midway has its Error, and failed checks are in the report.
func RunCC(ctx context.Context, o CCOptions) (*CCReport, error) {
	o.Rate = runner.OrTuned(o.Rate)
	k := runner.RateFactor(o.Rate)
	plan, err := selectExperiments(plansAt(ccPlan(o.Quick), k), o.Only)
	if err != nil {
		return nil, err
	}
	if err := o.Prepare("cc"); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &CCReport{Started: start, Quick: o.Quick, LinkRate: o.Rate, Config: ccDefaultConfig().at(k), Windows: ccWindowsFor(o.Quick).at(k)}
	hot := map[string]*CCHotRun{} // hot-spot runs by fabric and scheme, shared between experiments
	for _, g := range groupByFabric(plan) {
		if ctx.Err() != nil {
			break
		}
		exps := runCCGroup(ctx, g, o, rep, hot)
		rep.Experiments = append(rep.Experiments, exps...)
	}
	rep.Comparisons = ccCompare(rep)
	rep.Checks = ccMustShow(rep)
	for _, e := range rep.Experiments {
		if e.Error != "" {
			rep.Checks = append(rep.Checks, runner.Check{Name: e.ID + " completed", Detail: e.Error})
		}
	}
	rep.Passed = runner.AllOK(rep.Checks)
	rep.ElapsedS = time.Since(start).Seconds()
	if o.Out != "" {
		if err := writeCCReport(o.Out, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

const (
	ccSynopsis = "run cc [--quick] [--time-scale S] [--rate RATE] [--out DIR] [--only D1,...] [--name N] [--json]"
	ccDesc     = `The congestion-control experiments (issue 19): IBA CC (FECN marking, CNP and
BECN, injection throttled by the CCT) against DRB (the source opens LMC alias
paths instead of throttling) on meshes and tori, ibsm as SM with --lmc 2 and
--cc. D1: 4x4 mesh, perfect shuffle, no CC, load sweep. D2: 8x8 torus,
butterfly, shuffle and transpose, IBA_CC and DRB, load sweep. D3: the same on
an 8x4 mesh. D4: a hot spot on the 8x4 mesh, link loads over time. D5, D6: the
hot spot on a 4x4 mesh with DRB (aliases over time) and IBA_CC (CCTI over
time); D0: the same without CC. Flows of 4 KB messages (Poisson) in 2048-byte
packets, offered load in Mb/s per source, latency from generation. --quick: 4x4
fabrics, three loads, shorter windows. The time scale is 62.5 per node unless
--time-scale sets one for every fabric. --rate cables every link at RATE
(default 4xSDR): the time scale and the loads grow by RATE's data rate over
4x SDR's (25 for 4xHDR: 25000 on a 4x4 mesh), the windows and the CCTI timer
shrink by it. The report (index.md with our figures beside the paper's,
plots, report.json) goes to DIR. The exit status is 1 when a must-show check
fails or an experiment did not complete.`
)

// runCCCmd is `ibfab run cc`.
func runCCCmd(env *harness.Env, args []string) error {
	return runner.ExperimentCmd[*CCReport]{Cmd: "run cc", Synopsis: ccSynopsis, Desc: ccDesc,
		QuickUsage: "4x4 fabrics, three loads, shorter windows (under 5 minutes)",
		ScaleUsage: "time scale of every fabric (default 62.5 per node at 4x SDR, times the rate's factor)", DefOut: "out/cc", DefName: "cc", MaxName: 12, IDs: ccIDs,
		Rate: true,
		Validate: func(quick bool, only []string) error {
			_, err := selectExperiments(ccPlan(quick), only)
			return err
		},
		Run: RunCC, Print: printCC, Passed: func(r *CCReport) bool { return r.Passed },
	}.Main(env, args)
}

// printCC is the command's summary: the verdict, the comparison with the
// paper and the checks.
func printCC(w io.Writer, rep *CCReport, index string) {
	runner.PrintSummary(w, "cc", rep.Passed, rep.ElapsedS, index, func(w io.Writer) {
		fmt.Fprintf(w, "  every link %s, time scale %s\n", rep.LinkRate, timeScales(rep))
		for _, c := range rep.Comparisons {
			fmt.Fprintf(w, "  %-3s %-10s %-34s ours %-22s paper %-16s %s\n", c.Experiment, c.Pattern, c.Metric, c.Ours, c.Paper, c.Verdict)
		}
	}, rep.Checks)
}

// Experiment is `ibfab run cc`, for the command's table.
var Experiment = runner.Experiment{Name: "cc", Synopsis: ccSynopsis, Run: runCCCmd}

// timeScales are the experiments' time scales, each once, in order.
func timeScales(rep *CCReport) string {
	var out []string
	for _, e := range rep.Experiments {
		if s := fmt.Sprint(e.TimeScale); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, ", ")
}
