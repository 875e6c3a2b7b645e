package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"ibfab/harness"
	"ibfab/hca"
	"ibfab/internal/cli"
	"ibfab/internal/goal"
	"ibfab/internal/proccpu"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// The fabric benchmark's goals: paced goodput within 1 % of the link rate
// (at some time scale), an idle fabric of 100 processes using at most 5 %
// of one core in all and 20 MiB per process.
const (
	pacedTolerance = 0.01
	idleCPUGoal    = 0.05
	idleRSSGoalMiB = 20
)

// FabricReport is what ibfab bench fabric writes.
type FabricReport struct {
	Benchmark   string `json:"benchmark"` // "fabric"
	Date        string `json:"date"`
	Quick       bool   `json:"quick"`
	LinkRate    string `json:"link_rate"` // the paced and unpaced link's, "4xSDR" unless --rate
	LinkRateBps uint64 `json:"link_rate_bps"`
	// TimeScaleNamed is the time scale ibfab up names for the link rate on
	// this machine (harness.TimeScaleFor), from this run's unpaced limit
	// or the one recorded before.
	TimeScaleNamed *float64  `json:"time_scale_named,omitempty"`
	Paced          []LinkRun `json:"paced"`
	// PacedGoalScale is the smallest time scale at which paced goodput
	// was within 1 % of the link rate (absent: at none).
	PacedGoalScale *float64    `json:"paced_goal_met_at_time_scale,omitempty"`
	Unpaced        *LinkRun    `json:"unpaced,omitempty"`
	HopLatency     *HopLatency `json:"hop_latency,omitempty"`
	// HopLatencyOneCPU is the same hop with the fabric's processes on
	// one CPU (ibfab up --cpus): what the goal is judged on.
	HopLatencyOneCPU *HopLatency `json:"hop_latency_one_cpu,omitempty"`
	Idle             *IdleFabric `json:"idle,omitempty"`
	Errors           []string    `json:"errors,omitempty"`
	Notes            []string    `json:"notes"`
	goal.Verdict
	ElapsedMs float64 `json:"elapsed_ms"`
}

// LinkRun is one link's throughput: ca1 → ca2 back to back, MTU 2048.
type LinkRun struct {
	TimeScale  float64 `json:"time_scale"`
	WireBps    float64 `json:"wire_bps"`
	GoodputBps float64 `json:"goodput_bps"`
	WireRatio  float64 `json:"wire_ratio"` // wire rate / link rate
	GoodputMax float64 `json:"goodput_max_bps"`
	Packets    uint64  `json:"packets"`
	Drops      int     `json:"drops"`
	Within1Pct bool    `json:"within_1pct,omitempty"`
	// LimitTimeScale (unpaced only): the smallest time scale the machine
	// could carry the link at.
	LimitTimeScale float64 `json:"limit_time_scale,omitempty"`
}

// HopLatency is one switch hop's latency from the receiver's histogram.
type HopLatency struct {
	Samples       uint64  `json:"samples"`
	P50Ns         int64   `json:"p50_ns"`
	P99Ns         int64   `json:"p99_ns"`
	SerNs         int64   `json:"serialization_ns"`
	P50OverSer    float64 `json:"p50_over_serialization"`
	P99OverSer    float64 `json:"p99_over_serialization"`
	P50AboveSerNs int64   `json:"p50_above_ser_ns"`
	P99AboveSerNs int64   `json:"p99_above_ser_ns"`
	// DirectP50Ns and DirectP99Ns are the same traffic ca1 → ca2 back to
	// back, measured in the same run: one process wake-up less, no
	// forwarding; SwitchAddsP50Ns is the hop's p50 less it.
	DirectP50Ns     int64 `json:"direct_p50_ns"`
	DirectP99Ns     int64 `json:"direct_p99_ns"`
	SwitchAddsP50Ns int64 `json:"switch_adds_p50_ns"`
	// Stages (with --profile): where a packet's time went, from the
	// processes' execution traces.
	Stages []HopStage `json:"stages,omitempty"`
}

// IdleFabric is an idle fabric's cost.
type IdleFabric struct {
	Processes      int     `json:"processes"`
	Seconds        float64 `json:"seconds"`
	CPUFraction    float64 `json:"cpu_fraction_of_core"`
	CPURatioToGoal float64 `json:"cpu_ratio_to_goal"`
	RSSMaxMiB      float64 `json:"rss_max_mib"`
	RSSMeanMiB     float64 `json:"rss_mean_mib"`
	RSSRatioToGoal float64 `json:"rss_max_ratio_to_goal"`
}

var fabricBench = benchmark{
	name:     "fabric",
	synopsis: "bench fabric [--rate RATE] [--scales 1,2,4,8,16,32] [--idle-seconds S] [--only PARTS] [--profile DIR] [--quick] [--out FILE] [--name PREFIX]",
	desc: `The fabric's data path and idle cost. The unpaced maximum of one 4x SDR
link (two HCAs back to back, MTU 2048): the machine's limit, recorded for
ibfab up to name the time scale each rate needs; paced goodput of the same
link at each time scale, against the 8 Gb/s link rate; switch hop latency
p50/p99 above the serialization time; idle CPU and RSS of a 100-process
fat tree. Goals: paced goodput within 1 % of the rate at a time scale
≤ 4; unpaced ≥ 4 Gb/s (half of 4x SDR); hop p50 ≤ 30 µs, p99 ≤ 300 µs;
the idle fabric under 5 % of one core in all and 20 MiB per process.
--rate runs the paced and unpaced link at RATE instead, paced at half,
once and twice the time scale ibfab up names for it (unless --scales),
the goal then paced goodput within 1 % at the named scale. --profile adds
the hop's stages from execution traces. --quick: scales 16 and 32 (with
--rate the named one alone), 5 s of idling.`,
	flags: func(fs *flag.FlagSet, c *common) func() (any, bool, error) {
		var scales floatList
		fs.Var(&scales, "scales", "time scales of the paced runs (comma-separated; default 1,2,4,8,16,32, or around the named one with --rate)")
		var rate topologies.Rate
		fs.TextVar(&rate, "rate", topologies.Rate{}, "run the paced and unpaced link at `RATE` (e.g. 4xHDR, 4xNDR) instead of 4xSDR")
		idle := fs.Float64("idle-seconds", 10, "seconds the idle fabric is measured over")
		only := fs.String("only", "", "run only these parts (comma-separated: paced, unpaced, hop, idle); the others count as not measured")
		prof := fs.String("profile", "", "write CPU profiles and execution traces of the nodes of each run into `DIR`/RUN")
		return func() (any, bool, error) {
			o := fabricOptions{scales: scales, idle: time.Duration(*idle * float64(time.Second)), prefix: c.name + "f", log: c.log, quick: c.quick, profileDir: *prof, rate: rate}
			if c.quick {
				o.idle = 5 * time.Second
			}
			if len(o.scales) == 0 && rate == (topologies.Rate{}) {
				o.scales = []float64{1, 2, 4, 8, 16, 32}
				if c.quick {
					o.scales = []float64{16, 32}
				}
			}
			if *only != "" {
				o.only = map[string]bool{}
				for _, p := range strings.Split(*only, ",") {
					if !slices.ContainsFunc(fabricParts, func(f fabricPart) bool { return f.name == p }) {
						return nil, false, &cli.UsageError{Cmd: "bench fabric", Usage: "bench fabric -h", Err: fmt.Errorf("--only: unknown part %q (paced, unpaced, hop, idle)", p)}
					}
					o.only[p] = true
				}
			}
			if o.idle < time.Second {
				return nil, false, &cli.UsageError{Cmd: "bench fabric", Usage: "bench fabric -h", Err: errors.New("want --idle-seconds ≥ 1")}
			}
			if err := requireRoot(); err != nil {
				return nil, false, err
			}
			rep := Fabric(o)
			return rep, len(rep.Errors) > 0, nil
		}
	},
}

// floatList parses comma-separated positive numbers.
type floatList []float64

func (l *floatList) String() string {
	var s []string
	for _, x := range *l {
		s = append(s, strconv.FormatFloat(x, 'g', -1, 64))
	}
	return strings.Join(s, ",")
}

func (l *floatList) Set(v string) error {
	*l = nil
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(x > 0) {
			return fmt.Errorf("%q: want positive numbers, comma-separated", v)
		}
		*l = append(*l, x)
	}
	return nil
}

type fabricOptions struct {
	scales     []float64
	idle       time.Duration
	prefix     string
	quick      bool
	log        io.Writer
	profileDir string          // profiles of the hop latency run go here; "" for none
	only       map[string]bool // the parts to run; nil: all
	rate       topologies.Rate // of the paced and unpaced link; zero: 4x SDR
}

// linkRate is the paced and unpaced link's rate, its name and data rate.
func (o fabricOptions) linkRate() (topologies.Rate, uint64) {
	r := o.rate
	if r == (topologies.Rate{}) {
		r = topologies.Rate{Width: topologies.Width4x, Speed: topologies.SpeedSDR}
	}
	bps, _ := nodeproc.LinkDataRate(topologies.Link{Width: r.Width, Speed: r.Speed}) // the flag parsed it
	return r, bps
}

func (o fabricOptions) runs(part string) bool { return o.only == nil || o.only[part] }

// profilePath is where the profiles of run go: "" for none.
func (o fabricOptions) profilePath(run string) string {
	if o.profileDir == "" {
		return ""
	}
	return filepath.Join(o.profileDir, run)
}

// Fabric runs the fabric benchmark.
func Fabric(o fabricOptions) *FabricReport {
	start := time.Now()
	r, rate := o.linkRate()
	rep := &FabricReport{Benchmark: "fabric", Date: start.UTC().Format(time.RFC3339), Quick: o.quick, LinkRate: r.String(), LinkRateBps: rate,
		Notes: []string{
			"paced: ca1 → ca2 back to back at 120 % offered load, 2048-byte payloads, measured over 3 s of real time after 1 s; wire_ratio is the received wire rate (PortRcvData) in emulated time over the link rate.",
			"unpaced: the same with pacing off at 200 % load: the machine's limit (recorded for ibfab up); limit_time_scale = link rate / unpaced wire rate; time_scale_named = the scale ibfab up names for the link rate: limit_time_scale × 2.5, rounded up to 1, 1.5, 2, 3, 4, 6, 8, 12, ….",
			"hop_latency: light traffic ca1 → sw1 → ca2, the receiver's histogram of send stamp to receipt; serialization is one packet's on each of the two links (cut-through). direct_*: the same traffic ca1 → ca2 back to back in the same run, the baseline; switch_adds_p50_ns is the hop's p50 less the direct one. hop_latency has the processes where the scheduler puts them; hop_latency_one_cpu all on one CPU (ibfab up --cpus), which the goal is judged on: on a machine whose idle CPUs wake slowly (a virtual machine without halt polling) a wake-up across CPUs costs tens of µs, twice per hop (docs/DESIGN.md §3a).",
			"idle: a fat tree of 8 leaves, 4 spines, 88 HCAs (100 processes), 2 s after bring-up, CPU time over the idle span and VmRSS.",
		}}
	fail := func(what string, err error) {
		rep.Errors = append(rep.Errors, what+": "+err.Error())
		fmt.Fprintf(o.log, "fabric: %s: %v\n", what, err)
	}
	var cases []goal.Case
	for _, part := range fabricParts {
		if !o.runs(part.name) {
			cases = append(cases, goal.Case{Name: part.name, Why: "not run (--only)"})
			continue
		}
		cases = append(cases, part.run(o, rep, fail)...)
	}
	rep.Verdict = goal.Judge(cases)
	rep.ElapsedMs = ms(time.Since(start))
	return rep
}

// The fabric benchmark's goals on the data path (issue 30): a paced link
// within 1 % of its rate from time scale 4 down, an unpaced link carrying
// half its rate, a ca → switch → ca hop of at most 30 µs at the median and
// 300 µs at the 99th percentile.
const (
	pacedGoalScale   = 4
	unpacedGoalRatio = 0.5
	hopP50Goal       = 30 * time.Microsecond
	hopP99Goal       = 300 * time.Microsecond
)

// fabricPart is one measurement of the fabric benchmark; run fills rep
// and returns the goal cases it judges.
type fabricPart struct {
	name string
	run  func(o fabricOptions, rep *FabricReport, fail func(string, error)) []goal.Case
}

// The unpaced part comes first: the paced runs at --rate take their time
// scale from its limit.
var fabricParts = []fabricPart{
	{"unpaced", unpacedPart},
	{"paced", pacedPart},
	{"hop", hopPart},
	{"idle", idlePart},
}

func pacedPart(o fabricOptions, rep *FabricReport, fail func(string, error)) []goal.Case {
	scales := o.scales
	if len(scales) == 0 { // --rate without --scales: around the named scale
		if rep.TimeScaleNamed == nil {
			if err := nameTimeScale(o, rep); err != nil {
				fail("paced", err)
				return []goal.Case{goal.Failed("paced", err)}
			}
		}
		n := *rep.TimeScaleNamed
		scales = []float64{n / 2, n, 2 * n}
		if o.quick {
			scales = []float64{n}
		}
	}
	for _, scale := range scales {
		fmt.Fprintf(o.log, "fabric: paced %s link at time scale %g\n", rep.LinkRate, scale)
		name := fmt.Sprintf("%sp%d", o.prefix, int(math.Round(scale*10)))
		r, err := linkThroughput(name, o, scale, false, o.profilePath(name))
		if err != nil {
			fail(fmt.Sprintf("paced x%g", scale), err)
			continue
		}
		r.Within1Pct = math.Abs(r.WireRatio-1) <= pacedTolerance
		rep.Paced = append(rep.Paced, *r)
		if r.Within1Pct && (rep.PacedGoalScale == nil || scale < *rep.PacedGoalScale) {
			s := scale
			rep.PacedGoalScale = &s
		}
	}
	if len(rep.Paced) == 0 {
		return []goal.Case{{Name: "paced", Why: "no paced run succeeded"}}
	}
	if o.rate != (topologies.Rate{}) {
		return []goal.Case{pacedAtNamed(rep)}
	}
	met := rep.PacedGoalScale != nil && *rep.PacedGoalScale <= pacedGoalScale
	why := fmt.Sprintf("paced goodput not within 1 %% of the link rate at any time scale ≤ %d tried", pacedGoalScale)
	return []goal.Case{{Name: "paced", Measured: true, Met: met, Why: why}}
}

// pacedAtNamed judges --rate's goal: within 1 % at the named time scale.
func pacedAtNamed(rep *FabricReport) goal.Case {
	c := goal.Case{Name: "paced at the named time scale"}
	if rep.TimeScaleNamed == nil {
		c.Why = "no time scale named: the machine's limit is not known"
		return c
	}
	for _, r := range rep.Paced {
		if r.TimeScale == *rep.TimeScaleNamed {
			c.Measured, c.Met = true, r.Within1Pct
			c.Why = fmt.Sprintf("wire ratio %.4f at time scale %g", r.WireRatio, r.TimeScale)
			return c
		}
	}
	c.Why = fmt.Sprintf("no paced run at the named time scale %g", *rep.TimeScaleNamed)
	return c
}

// nameTimeScale sets the time scale ibfab up names for the link rate from
// the machine limit recorded before.
func nameTimeScale(o fabricOptions, rep *FabricReport) error {
	lim, err := harness.LoadMachineLimit()
	if err != nil {
		return err
	}
	_, bps := o.linkRate()
	n := harness.TimeScaleFor(bps, lim)
	rep.TimeScaleNamed = &n
	return nil
}

// unpacedGoalBps is the unpaced goal in bits/s, whatever --rate: half a
// 4x SDR link (the machine's speed, which the link's rate does not set).
var unpacedGoalBps = func() float64 {
	r, _ := mad.DataRate(mad.LinkWidth4X, mad.LinkSpeedSDR)
	return unpacedGoalRatio * float64(r)
}()

// MeasureMachineLimit measures what one unpaced link carries on this
// machine (a back-to-back fabric named after name, some 6 s) and records
// it for the next ibfab up.
func MeasureMachineLimit(name string) (harness.MachineLimit, error) {
	if len(name) > 28 {
		name = name[:28]
	}
	r, err := linkThroughput(name+"_lim", fabricOptions{}, 1, true, "")
	if err != nil {
		return harness.MachineLimit{}, fmt.Errorf("measuring the machine's limit: %w", err)
	}
	if err := harness.SaveMachineLimit(r.WireBps, 2048, "ibfab up --time-scale auto"); err != nil {
		return harness.MachineLimit{}, err
	}
	return harness.LoadMachineLimit()
}

func unpacedPart(o fabricOptions, rep *FabricReport, fail func(string, error)) []goal.Case {
	fmt.Fprintf(o.log, "fabric: unpaced %s link\n", rep.LinkRate)
	r, err := linkThroughput(o.prefix+"u", o, 1, true, o.profilePath(o.prefix+"u"))
	if err != nil {
		fail("unpaced", err)
		return []goal.Case{goal.Failed("unpaced", err)}
	}
	r.LimitTimeScale = float64(rep.LinkRateBps) / r.WireBps
	rep.Unpaced = r
	if err := harness.SaveMachineLimit(r.WireBps, 2048, "ibfab bench fabric"); err != nil {
		fail("recording the machine limit", err)
	}
	n := harness.TimeScaleFor(rep.LinkRateBps, harness.MachineLimit{WireBps: r.WireBps})
	rep.TimeScaleNamed = &n
	fmt.Fprintf(o.log, "fabric: unpaced %.3g Gb/s: %s needs time scale %g here\n", r.WireBps/1e9, rep.LinkRate, n)
	return []goal.Case{goal.AtLeast("unpaced", "wire rate over 4 Gb/s", r.WireBps, unpacedGoalBps, 1)}
}

func hopPart(o fabricOptions, rep *FabricReport, fail func(string, error)) []goal.Case {
	fmt.Fprintln(o.log, "fabric: hop latency, processes where the scheduler puts them")
	l, err := hopLatency(o.prefix+"l", o.profilePath(o.prefix+"l"), o.log, nil)
	if err != nil {
		fail("hop latency", err)
		return []goal.Case{goal.Failed("hop", err)}
	}
	rep.HopLatency = l
	cpu, err := firstCPU()
	if err != nil {
		fail("hop latency on one CPU", err)
		return []goal.Case{goal.Failed("hop", err)}
	}
	fmt.Fprintf(o.log, "fabric: hop latency, processes on CPU %d\n", cpu)
	l1, err := hopLatency(o.prefix+"c", o.profilePath(o.prefix+"c"), o.log, []int{cpu})
	if err != nil {
		fail("hop latency on one CPU", err)
		return []goal.Case{goal.Failed("hop", err)}
	}
	rep.HopLatencyOneCPU = l1
	return []goal.Case{
		goal.AtMost("hop p50", "p50 µs", float64(l1.P50Ns)/1e3, 1, hopP50Goal.Seconds()*1e6),
		goal.AtMost("hop p99", "p99 µs", float64(l1.P99Ns)/1e3, 1, hopP99Goal.Seconds()*1e6),
	}
}

// firstCPU is the lowest CPU this process may run on.
func firstCPU() (int, error) {
	cpus, err := harness.AllowedCPUs()
	if err != nil {
		return 0, err
	}
	if len(cpus) == 0 {
		return 0, errors.New("no CPU in this process's affinity")
	}
	return cpus[0], nil
}

func idlePart(o fabricOptions, rep *FabricReport, fail func(string, error)) []goal.Case {
	fmt.Fprintf(o.log, "fabric: idle 100-process fabric for %v\n", o.idle)
	idle, err := idleFabric(o.prefix+"i", o.idle)
	if err != nil {
		fail("idle", err)
		return []goal.Case{goal.Failed("idle", err)}
	}
	rep.Idle = idle
	return []goal.Case{
		goal.AtMost("idle cpu", "cpu fraction", idle.CPUFraction, 1, idleCPUGoal),
		goal.AtMost("idle rss", "rss MiB", idle.RSSMaxMiB, 1, idleRSSGoalMiB),
	}
}

// linkThroughput runs ca1 → ca2 at more than the link carries with
// 2048-byte payloads and measures what arrives over 3 s of real time.
func linkThroughput(name string, o fabricOptions, scale float64, unpaced bool, profileDir string) (*LinkRun, error) {
	topo, err := backToBack()
	if err != nil {
		return nil, err
	}
	lr, rate := o.linkRate()
	if err := topo.SetRate(lr); err != nil {
		return nil, err
	}
	args := []string{"--mtu", "2048"}
	if unpaced {
		args = append(args, "--unpaced")
	}
	f, err := up(name, topo, harness.UpOptions{TimeScale: scale, NodeArgs: args})
	if err != nil {
		return nil, err
	}
	defer f.down()
	if err := f.configure("ca1"); err != nil {
		return nil, err
	}
	lid, err := f.lids([]string{"ca2"})
	if err != nil {
		return nil, err
	}
	// Above 100 %, so the queue never runs dry and the link, not the
	// arrivals, sets the rate; unpaced, far more than any machine moves.
	load := 120.0
	if unpaced {
		load = 200
	}
	if err := f.call("ca1", "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: load, Payload: 2048,
		Dests: []uint16{lid["ca2"]}, Seed: 1, MaxBacklog: 256}, nil); err != nil {
		return nil, err
	}
	time.Sleep(time.Second)
	s0, err := f.node("ca2")
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if profileDir != "" {
		if err := f.profile(profileDir, []string{"ca1", "ca2"}, 3*time.Second); err != nil {
			return nil, err
		}
	} else {
		time.Sleep(3 * time.Second)
	}
	s1, err := f.node("ca2")
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	if err := f.stopTraffic([]string{"ca1"}); err != nil {
		return nil, err
	}
	secs := t1.Sub(t0).Seconds() / scale // emulated
	p0, p1 := s0.Ports[0], s1.Ports[0]
	if p0.Traffic == nil || p1.Traffic == nil {
		return nil, errors.New("ca2 reports no traffic")
	}
	wireBits := float64(p1.Counters.PortRcvData-p0.Counters.PortRcvData) * 32
	return &LinkRun{
		TimeScale:  scale,
		WireBps:    wireBits / secs,
		GoodputBps: float64(p1.Traffic.RxBytes-p0.Traffic.RxBytes) * 8 / secs,
		WireRatio:  wireBits / secs / float64(rate),
		GoodputMax: float64(rate) * 2048 / float64(wire.UDPacketSize(2048, false)),
		Packets:    p1.Traffic.RxPackets - p0.Traffic.RxPackets,
		Drops:      len(p1.Drops),
	}, nil
}

// hopLatency sends light traffic ca1 → sw1 → ca2 and reads the receiver's
// latency histogram (send stamp to receipt, on the fabric's shared clock);
// then the same ca1 → ca2 back to back, the baseline: what the switch adds
// is one more wake-up of a receiving process and its forwarding.
func hopLatency(name, profileDir string, log io.Writer, cpus []int) (*HopLatency, error) {
	topo, err := star()
	if err != nil {
		return nil, err
	}
	lat, err := lightLatency(name, topo, "ca2", cpus, []string{"sw1", "ca1", "ca2"}, profileDir)
	if err != nil {
		return nil, err
	}
	direct, err := backToBack()
	if err != nil {
		return nil, err
	}
	dl, err := lightLatency(name+"d", direct, "ca1", cpus, nil, "")
	if err != nil {
		return nil, fmt.Errorf("back to back: %w", err)
	}
	rate, _ := mad.DataRate(mad.LinkWidth4X, mad.LinkSpeedSDR)
	// Two links; with cut-through the packet is serialized on each.
	ser := time.Duration(float64(2*wire.UDPacketSize(2048, false)*8) / float64(rate) * 1e9).Nanoseconds()
	h := &HopLatency{
		Samples: lat.Count, P50Ns: lat.P50Ns, P99Ns: lat.P99Ns, SerNs: ser,
		P50OverSer: float64(lat.P50Ns) / float64(ser), P99OverSer: float64(lat.P99Ns) / float64(ser),
		P50AboveSerNs: lat.P50Ns - ser, P99AboveSerNs: lat.P99Ns - ser,
		DirectP50Ns: dl.P50Ns, DirectP99Ns: dl.P99Ns, SwitchAddsP50Ns: lat.P50Ns - dl.P50Ns,
	}
	fmt.Fprintf(log, "fabric: hop p50 %.1f µs, p99 %.1f µs; back to back p50 %.1f µs, p99 %.1f µs\n",
		float64(h.P50Ns)/1e3, float64(h.P99Ns)/1e3, float64(h.DirectP50Ns)/1e3, float64(h.DirectP99Ns)/1e3)
	if profileDir != "" {
		st, err := hopStagesFrom(profileDir)
		if err != nil {
			return nil, fmt.Errorf("hop stages: %w", err)
		}
		h.Stages = st
		fmt.Fprintf(log, "fabric: hop stages (traced)\n%s", formatHopStages(st))
	}
	return h, nil
}

// lightLatency brings topo up (its processes on cpus, if any), sends 1 % of the link's rate in 2 KiB
// packets from ca1 to ca2 for 4 s (the SM at smNode; with profileDir, the
// last 3 s traced on the traced nodes) and returns ca2's latency histogram.
func lightLatency(name string, topo *topologies.Topology, smNode string, cpus []int, traced []string, profileDir string) (*hca.LatencySnapshot, error) {
	f, err := up(name, topo, harness.UpOptions{CPUs: cpus})
	if err != nil {
		return nil, err
	}
	defer f.down()
	if err := f.configure(smNode); err != nil {
		return nil, err
	}
	lid, err := f.lids([]string{"ca2"})
	if err != nil {
		return nil, err
	}
	if err := f.call("ca1", "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 1, Payload: 2048,
		Dests: []uint16{lid["ca2"]}, Seed: 3}, nil); err != nil {
		return nil, err
	}
	if profileDir != "" && len(traced) > 0 {
		time.Sleep(time.Second)
		if err := f.profile(profileDir, traced, 3*time.Second); err != nil {
			return nil, err
		}
	} else {
		time.Sleep(4 * time.Second)
	}
	if err := f.stopTraffic([]string{"ca1"}); err != nil {
		return nil, err
	}
	s, err := f.node("ca2")
	if err != nil {
		return nil, err
	}
	if s.Ports[0].Traffic == nil || s.Ports[0].Traffic.Latency.Count == 0 {
		return nil, errors.New("ca2 received no stamped packet")
	}
	return &s.Ports[0].Traffic.Latency, nil
}

// idleFabric brings up a 100-process fat tree (8 leaves, 4 spines, 88
// HCAs) and measures its processes' CPU time over d of idling and their
// resident memory.
func idleFabric(name string, d time.Duration) (*IdleFabric, error) {
	topo, err := topologies.FatTree(8, 4, 11)
	if err != nil {
		return nil, err
	}
	f, err := up(name, topo, harness.UpOptions{})
	if err != nil {
		return nil, err
	}
	defer f.down()
	time.Sleep(2 * time.Second) // let the start-up settle
	st, err := f.status()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, n := range st.Nodes {
		pids = append(pids, n.PID)
	}
	cpu0, err := cpuOf(pids)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	time.Sleep(d)
	cpu1, err := cpuOf(pids)
	if err != nil {
		return nil, err
	}
	r := &IdleFabric{Processes: len(pids), Seconds: time.Since(t0).Seconds()}
	r.CPUFraction = (cpu1 - cpu0).Seconds() / r.Seconds
	var sum float64
	for _, pid := range pids {
		m, err := rssMiB(pid)
		if err != nil {
			return nil, err
		}
		sum += m
		r.RSSMaxMiB = max(r.RSSMaxMiB, m)
	}
	r.RSSMeanMiB = sum / float64(len(pids))
	r.CPURatioToGoal, r.RSSRatioToGoal = r.CPUFraction/idleCPUGoal, r.RSSMaxMiB/idleRSSGoalMiB
	return r, nil
}

// cpuOf sums the CPU time pids have used.
func cpuOf(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		d, err := proccpu.Runtime(pid)
		if err != nil {
			return 0, err
		}
		sum += d
	}
	return sum, nil
}

// rssMiB reads a process's VmRSS.
func rssMiB(pid int) (float64, error) {
	b, err := proccpu.RSS(pid)
	return float64(b) / (1 << 20), err
}
