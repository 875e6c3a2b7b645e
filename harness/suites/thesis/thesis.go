package thesis

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/topologies"
)

const (
	thesisSynopsis = "run thesis [--sizes 8,16,32] [--loads 25,50] [--changes K] [--seed N] [--time-scale S] [--out DIR] [--json]"
	thesisDesc     = `The joint evaluation of the thesis's chapter 8 on the soft fabric: for
irregular networks of each size (4-port switches, one host each, seeded),
the basic mechanism (full discovery, FERa, distribution by full
deactivation) against the improved one (partial discovery, provisional
PIRa routes, cut-node dependencies, changed blocks only), each on a fabric
of its own; with uniform traffic at each load (% of the saturation rate,
measured first on each network), K switches other than the SM's are killed
and restarted. It prints the table comparing the ratios with the thesis's
(time to valid tables 2-4.2x better; packets dropped on activation -83 to
-96 %) and writes index.md (the table and every change), thesis.json,
thesis.svg/png (our ratios beside the thesis's) and ibsm's lines to DIR.`
)

func runThesisCmd(env *harness.Env, args []string) error {
	const cmd = "run thesis"
	fs := flag.NewFlagSet("ibfab run thesis", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	sizes := fs.String("sizes", "8,16,32", "switches of the irregular networks, comma-separated")
	loads := fs.String("loads", "25,50", "loads in % of saturation, comma-separated")
	changes := fs.Int("changes", 2, "switches deactivated and activated per size and load")
	seed := fs.Uint64("seed", 1, "seed of the irregular networks")
	scale := fs.Float64("time-scale", 1, "run emulated time this many times slower")
	out := fs.String("out", "out/thesis", "write index.md, thesis.json, thesis.svg/png and ibsm's lines to `DIR`")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of the table")
	usage := func(err error) error { return &harness.UsageError{Cmd: cmd, Usage: thesisSynopsis, Err: err} }
	if help, err := harness.ParseFlags(env, fs, cmd, thesisSynopsis, thesisDesc, args, 0); help || err != nil {
		return err
	}
	o := ThesisOptions{Changes: *changes, Seed: *seed, TimeScale: *scale, Out: *out}
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 || n > 64 {
			return usage(fmt.Errorf("--sizes: %q is not a switch count of 2-64", f))
		}
		o.Sizes = append(o.Sizes, n)
	}
	for _, f := range strings.Split(*loads, ",") {
		l, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || l <= 0 || l > 100 {
			return usage(fmt.Errorf("--loads: %q is not a %% of saturation in (0, 100]", f))
		}
		o.Loads = append(o.Loads, l)
	}
	if *changes < 1 || *scale < 1 {
		return usage(errors.New("--changes and --time-scale are at least 1"))
	}
	rep, err := runner.RunAndPrint(env, cmd, *asJSON, func(ctx context.Context, log io.Writer) (*ThesisReport, error) {
		o.Log = log
		return RunThesis(ctx, o)
	}, func(rep *ThesisReport) {
		fmt.Fprint(env.Stdout, ThesisTable(rep))
		fmt.Fprintf(env.Stdout, "thesis: time to valid tables 1.96-4.13x better (activation), 2.36-4.17x (deactivation); dropped on activation -83 to -96 %%\n")
		fmt.Fprintf(env.Stdout, "%.0f s; saturation, packets/s per host: %s; report %s\n", rep.Seconds, saturationText(rep), filepath.Join(*out, "index.md"))
	})
	if err != nil {
		return err
	}
	if len(rep.Errors) > 0 {
		return &harness.CommandError{Cmd: cmd, Err: fmt.Errorf("%d runs failed: %s", len(rep.Errors), strings.Join(rep.Errors, "; "))}
	}
	return nil
}

// ThesisOptions tune the joint evaluation of the thesis's chapter 8.
type ThesisOptions struct {
	Sizes     []int     // switches of the irregular networks
	Loads     []float64 // % of saturation
	Changes   int       // switches deactivated and activated again, per size and load
	Seed      uint64
	TimeScale float64
	Out       string // index.md, thesis.json and the plots; "" none
	Log       io.Writer

	fabric string // the fabrics' name prefix; "" is "th" (tests make it unique)
}

// Mechanism is one of the thesis's two change-assimilation mechanisms.
type Mechanism struct {
	Name string
	Args []string
}

// Mechanisms are Table 26's basic and improved mechanisms. The improved
// one distributes only changed LFT blocks (ibsm always does), as in the
// thesis's section 8.6.
var Mechanisms = []Mechanism{{"basic", runner.BasicSMArgs}, {"improved", runner.DefaultSMArgs}}

// ChangeResult is one deactivation or activation of a switch.
type ChangeResult struct {
	Size      int     `json:"switches"`
	Mechanism string  `json:"mechanism"`
	Load      float64 `json:"load_percent_of_saturation"`
	Change    string  `json:"change"` // "deactivation" or "activation"
	Switch    string  `json:"switch"`
	// MsToValid is ibsm's ms_to_connectivity: from the start of the
	// assimilation until every switch holds a verified route set and
	// every port is Active again.
	MsToValid float64           `json:"ms_to_valid_tables"`
	MsTotal   float64           `json:"ms_total"`
	SMPs      uint64            `json:"smps"`
	Dropped   uint64            `json:"dropped"` // data packets, every cause
	Drops     map[string]uint64 `json:"drops"`
	Sent      uint64            `json:"sent"`
}

// ThesisReport is the evaluation's outcome.
type ThesisReport struct {
	Options    ThesisOptions   `json:"options"`
	Saturation map[int]float64 `json:"saturation_packets_per_s_per_host"`
	// SaturationCPU is the CPU used while each network's saturation was
	// measured.
	SaturationCPU map[int]SaturationCPU `json:"saturation_cpu"`
	Results       []ChangeResult        `json:"results"`
	Rows          []ThesisRow           `json:"rows"`
	Seconds       float64               `json:"seconds"`
	Errors        []string              `json:"errors,omitempty"`
}

// ThesisRow compares the mechanisms for one size and load.
type ThesisRow struct {
	Size int     `json:"switches"`
	Load float64 `json:"load"`
	// Means over the changes, basic and improved.
	ActMs, DeactMs       [2]float64
	ActDrops, DeactDrops [2]float64
	// TimeRatioAct is basic / improved time to valid tables on activation;
	// DropCutAct is 1 - improved / basic drops on activation.
	TimeRatioAct, TimeRatioDeact float64
	DropCutAct, DropCutDeact     float64
}

// RunThesis runs the evaluation: for each size, each mechanism on a fabric
// of its own, each load, it kills Changes switches one after the other
// (deactivation) and restarts them (activation), with traffic running.
func RunThesis(ctx context.Context, o ThesisOptions) (*ThesisReport, error) {
	start := time.Now()
	rep := &ThesisReport{Options: o, Saturation: map[int]float64{}, SaturationCPU: map[int]SaturationCPU{}}
	cal := map[int]calibration{}
sizes:
	for _, n := range o.Sizes {
		topo, err := topologies.Irregular(n, 4, 1, o.Seed)
		if err != nil {
			return nil, err
		}
		for _, m := range Mechanisms {
			rs, c, err := thesisFabric(ctx, o, topo, n, m, cal[n])
			rep.Results = append(rep.Results, rs...)
			if c.sat > 0 {
				cal[n] = c
				rep.Saturation[n] = c.sat
				rep.SaturationCPU[n] = c.cpu
			}
			if err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("%d switches, %s: %v", n, m.Name, err))
			}
			if ctx.Err() != nil {
				break sizes // an interrupted run still writes what it has
			}
		}
	}
	rep.Rows = thesisRows(rep.Results, o)
	rep.Seconds = time.Since(start).Seconds()
	if o.Out != "" {
		if err := writeThesis(o.Out, rep); err != nil {
			return rep, err
		}
	}
	return rep, ctx.Err()
}

// victims returns up to k switches other than the SM's whose loss leaves
// the other switches connected, spread over the fabric.
func victims(t *topologies.Topology, smSwitch int, k int) []int {
	var ok []int
	for i, n := range t.Nodes() {
		if n.Type != topologies.Switch || i == smSwitch {
			continue
		}
		if switchesConnected(t, i) {
			ok = append(ok, i)
		}
	}
	if len(ok) <= k {
		return ok
	}
	var out []int
	for j := 0; j < k; j++ {
		out = append(out, ok[j*len(ok)/k])
	}
	return out
}

// switchesConnected says whether the switches other than gone stay
// connected without it.
func switchesConnected(t *topologies.Topology, gone int) bool {
	first, total := -1, 0
	for i, n := range t.Nodes() {
		if n.Type == topologies.Switch && i != gone {
			total++
			if first < 0 {
				first = i
			}
		}
	}
	seen := map[int]bool{first: true}
	queue := []int{first}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, j := range t.Neighbors(i) {
			if j != gone && !seen[j] && t.Node(j).Type == topologies.Switch {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	return len(seen) == total
}

// calibration is a network's saturation rate (packets/s per host), the
// generator's packets/s per % of the link rate, and the CPU used while the
// saturation was measured.
type calibration struct {
	sat, ppsPerPercent float64
	cpu                SaturationCPU
}

// SaturationCPU is the CPU the fabric's processes used while a network's
// saturation was measured. The hosts offer far more than the fabric
// carries; hosts that take more CPU than the switches, which move every
// packet over several hops, starve them, and the rate measured is the
// starvation's.
type SaturationCPU struct {
	Seconds  float64 `json:"seconds"`    // the measured window
	Hosts    float64 `json:"hosts_s"`    // CPU seconds of the hosts' processes in it
	Switches float64 `json:"switches_s"` // and of the switches'
}

func (c SaturationCPU) String() string {
	return fmt.Sprintf("hosts %.1f s, switches %.1f s in %.1f s", c.Hosts, c.Switches, c.Seconds)
}

// thesisFabric runs one mechanism on one network. c is the calibration
// measured on this network before (zero: measure it).
func thesisFabric(ctx context.Context, o ThesisOptions, topo *topologies.Topology, n int, m Mechanism, c calibration) ([]ChangeResult, calibration, error) {
	s := runner.Suite{Name: fmt.Sprintf("thesis%d-%s", n, m.Name), Topology: func() (*topologies.Topology, error) { return topo, nil },
		TimeScale: o.TimeScale, SMNode: topo.Node(0).Name, SMArgs: m.Args, Payload: 256}
	prefix := cmp.Or(o.fabric, "th")
	r := &thesisRun{SuiteRun: runner.NewSuiteRun(&s, runner.Options{Log: o.Log, Every: 250 * time.Millisecond}, topo,
		fmt.Sprintf("%s%d_%s", prefix, n, m.Name), &runner.Report{})}
	r.ExpectSMReaction()
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return nil, c, err
		}
		f, err := os.Create(filepath.Join(o.Out, s.Name+"-ibsm.jsonl"))
		if err != nil {
			return nil, c, err
		}
		defer f.Close()
		r.SetSMLog(f)
	}
	r.Logf("== %d switches, %s mechanism (ibsm %v)", n, m.Name, m.Args)
	up := harness.UpOptions{TimeScale: o.TimeScale, NodeArgsFor: map[string][]string{s.SMNode: runner.IbsmHCAArgs(s.SMArgs)}}
	if _, err := harness.Up(r.Fabric(), topo, up); err != nil {
		return nil, c, fmt.Errorf("up: %w", err)
	}
	defer func() {
		r.StopSMs()
		harness.Down(r.Fabric())
	}()
	p, err := r.StartSM()
	if err != nil {
		return nil, c, err
	}
	if _, _, err := p.WaitResult(0, 120*time.Second, func(x runner.SMResult) bool { return x.SubnetUp }); err != nil {
		return nil, c, fmt.Errorf("bring-up: %w", err)
	}
	if err := r.WaitPorts(ctx, 60*time.Second); err != nil {
		return nil, c, err
	}
	hosts, lids, err := r.HostLIDs(ctx)
	if err != nil {
		return nil, c, err
	}
	r.Report().LIDs = lids
	r.Start()
	r.StartSampler()
	if c.sat <= 0 {
		if c, err = r.saturation(ctx, hosts); err != nil {
			return nil, calibration{}, err
		}
		r.Logf("saturation: %.0f packets/s per host (CPU: %s)", c.sat, c.cpu)
	}
	r.ppsPerPercent = c.ppsPerPercent
	sat := c.sat
	var out []ChangeResult
	for _, load := range o.Loads {
		// The generator's load is a % of the link's data rate: convert
		// packets/s per host at this % of saturation into it.
		s.Load = r.linkPercent(sat * load / 100)
		for _, v := range victims(topo, 1, o.Changes) {
			rs, err := r.cycle(ctx, hosts, v, n, m.Name, load)
			out = append(out, rs...)
			if err != nil {
				return out, c, err
			}
		}
	}
	return out, c, nil
}

// Experiment is `ibfab run thesis`, for the command's table.
var Experiment = runner.Experiment{Name: "thesis", Synopsis: thesisSynopsis, Run: runThesisCmd}
