package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/cli"
	"ibfab/internal/goal"
	"ibfab/internal/ibsimrun"
	"ibfab/internal/opensmrun"
	"ibfab/topologies"
)

// OpenSMReport is what ibfab bench opensm writes: Debian's OpenSM (--once)
// on our fabric against ibsim loaded from the same topology.
type OpenSMReport struct {
	Benchmark    string       `json:"benchmark"` // "opensm"
	Date         string       `json:"date"`
	Quick        bool         `json:"quick"`
	CPUs         int          `json:"cpus"`
	Runs         int          `json:"runs"`
	LoadAvgStart string       `json:"loadavg_start"`
	LoadAvgEnd   string       `json:"loadavg_end"`
	Networks     []OpenSMCase `json:"networks"`
	Notes        []string     `json:"notes"`
	ElapsedMs    float64      `json:"elapsed_ms"`
}

// OpenSMCase is one network: both sides' runs, their medians and ratios.
type OpenSMCase struct {
	Network  string     `json:"network"`
	Nodes    int        `json:"nodes"`
	Switches int        `json:"switches"`
	HCAs     int        `json:"hcas"`
	SMNode   string     `json:"sm_node"`
	Fabric   OpenSMSide `json:"fabric"`
	Ibsim    OpenSMSide `json:"ibsim"`
	// Ratio is fabric / ibsim of the medians; a figure is absent when a
	// side has no median or ibsim's is 0.
	Ratio  map[string]float64 `json:"ratio,omitempty"`
	Frames *OpenSMFrames      `json:"frames,omitempty"`
	Error  string             `json:"error,omitempty"`
}

// OpenSMSide is one side's runs that reached SUBNET UP, their medians,
// and why the others did not.
type OpenSMSide struct {
	Runs     []OpenSMRun     `json:"runs"`
	Median   *OpenSMRun      `json:"median,omitempty"`
	Failures []OpenSMFailure `json:"failures,omitempty"`
}

// OpenSMRun is one OpenSM --once run.
type OpenSMRun struct {
	MsToUp    float64 `json:"ms_to_up"`
	MsSweep   float64 `json:"ms_sweep"`
	MsProcess float64 `json:"ms_process"`
	SMPsWire  float64 `json:"smps_wire"`
	LogErrors float64 `json:"log_errors"`
	// The fabric side only: the bring-up, and the SM's HCA's attach point.
	UpS      float64 `json:"up_s,omitempty"`
	MADsIn   float64 `json:"mads_in,omitempty"`
	Retries  float64 `json:"retries,omitempty"`
	Timeouts float64 `json:"timeouts,omitempty"`
}

// OpenSMFailure is a run that did not reach SUBNET UP.
type OpenSMFailure struct {
	Run       int      `json:"run"`
	Error     string   `json:"error"`
	LogErrors []string `json:"log_errors,omitempty"`
}

// OpenSMFrames is one more run on each side with OpenSM's frame log: what
// it sent, by attribute.
type OpenSMFrames struct {
	Fabric *FrameCount `json:"fabric,omitempty"`
	Ibsim  *FrameCount `json:"ibsim,omitempty"`
}

// FrameCount is OpenSM's SMPs by "METHOD(ATTRIBUTE)", all of them, and
// those to its own node.
type FrameCount struct {
	Sent  map[string]int `json:"sent"`
	Total int            `json:"smps_sent"`
	Local int            `json:"smps_local"`
	Error string         `json:"error,omitempty"`
}

var opensmNets = []network{
	{"thesis8", func() (*topologies.Topology, error) { return topologies.Default(), nil }},
	{"fattree144", func() (*topologies.Topology, error) { return topologies.FatTree(12, 6, 12) }},
	{"fattree432", func() (*topologies.Topology, error) { return topologies.FatTree(24, 12, 18) }},
}

var opensmBench = benchmark{
	name:     "opensm",
	synopsis: "bench opensm [--nets thesis8,fattree144,fattree432] [--runs N] [--frames] [--quick] [--out FILE] [--name PREFIX]",
	desc: `Debian's OpenSM (--once) on our fabric and on ibsim loaded from the same
topology, several times each on a fresh fabric and simulator, alternating
which goes first: the time to SUBNET UP and the SMPs that left the SM's
port, their medians and the ratios fabric/ibsim. --frames adds one more
run on each side with OpenSM's frame log, counting what it sent by
attribute. No goal: the ratios say what the fabric's real processes and
links cost against ibsim's function calls. --quick: thesis8, one run.`,
	flags: func(fs *flag.FlagSet, c *common) func() (any, bool, error) {
		nets := fs.String("nets", "thesis8,fattree144,fattree432", "networks (comma-separated)")
		runs := fs.Int("runs", 5, "runs on each side of each network")
		frames := fs.Bool("frames", true, "one more run on each side with OpenSM's frame log")
		return func() (any, bool, error) {
			usage := func(err error) error {
				return &cli.UsageError{Cmd: "bench opensm", Usage: "bench opensm -h", Err: err}
			}
			if err := positive("runs", *runs); err != nil {
				return nil, false, usage(err)
			}
			list, err := pickNets(opensmNets, *nets)
			if err != nil {
				return nil, false, usage(err)
			}
			n, withFrames := *runs, *frames
			if c.quick {
				list, n, withFrames = opensmNets[:1], 1, false
			}
			if err := requireRoot(); err != nil {
				return nil, false, err
			}
			rep := OpenSM(list, n, withFrames, c.quick, c.name+"o", c.log)
			failed := false
			for _, nc := range rep.Networks {
				failed = failed || nc.Error != "" || len(nc.Fabric.Failures)+len(nc.Ibsim.Failures) > 0
			}
			return rep, failed, nil
		}
	},
}

// OpenSM runs the OpenSM benchmark on nets.
func OpenSM(nets []network, runs int, frames, quick bool, prefix string, log io.Writer) *OpenSMReport {
	start := time.Now()
	rep := &OpenSMReport{Benchmark: "opensm", Date: start.UTC().Format(time.RFC3339), Quick: quick, CPUs: runtime.NumCPU(),
		Runs: runs, LoadAvgStart: loadAvg(), Notes: opensmNotes}
	for _, n := range nets {
		c := OpenSMCase{Network: n.name}
		topo, err := n.make()
		if err == nil {
			err = opensmCase(&c, topo, runs, frames, prefix, log)
		}
		if err != nil {
			c.Error = err.Error()
			fmt.Fprintf(log, "opensm %s: %v\n", n.name, err)
		}
		rep.Networks = append(rep.Networks, c)
	}
	rep.LoadAvgEnd = loadAvg()
	rep.ElapsedMs = ms(time.Since(start))
	return rep
}

var opensmNotes = []string{
	"Each run brings up a fresh fabric (ibfab processes) or a fresh ibsim from the same topology, so OpenSM always meets an unconfigured subnet; the fabric's bring-up (up_s) is not timed. The side that goes first alternates between runs.",
	"OpenSM runs with --once, default options, a fresh cache directory, at the topology's first CA, exec'd from a thread inside that node's namespace with libumad2sim preloaded.",
	"ms_to_up: from the exec to the time stamp of OpenSM's SUBNET UP log line; ms_sweep: OpenSM's log from Entering DISCOVERING state to SUBNET UP; ms_process: exec to exit.",
	"smps_wire: PortXmitPkts of the SM's port, read with perfquery after OpenSM exited: every SMP that left the port, resends included; SMPs to the SM's own node do not reach the wire.",
	"fabric only: mads_in is what OpenSM (and perfquery's PMA queries, which stay local) handed the HCA's attach point; retries and timeouts are the attach point's resends of requests unanswered after 200 ms (at most 3 each, OpenSM's default transaction_retries) and the requests handed back with ETIMEDOUT.",
	"A run that does not reach SUBNET UP is listed under failures with its first ERR lines and left out of the medians.",
	"ratio: fabric / ibsim of the medians; absent where a side has none or ibsim's is 0.",
}

// opensmRetries is OpenSM's default transaction_retries: on hardware the
// kernel's MAD layer resends an unanswered SMP that often; libumad2sim
// does not pass the number on, so the SM's HCA is told (--sim-retries).
const opensmRetries = 3

func opensmCase(c *OpenSMCase, topo *topologies.Topology, runs int, frames bool, prefix string, log io.Writer) error {
	smNode := firstCA(topo)
	if smNode == "" {
		return fmt.Errorf("%s has no CA", c.Network)
	}
	c.Nodes, c.Switches, c.HCAs, c.SMNode = topo.NumNodes(), topo.Count(topologies.Switch), topo.Count(topologies.CA), smNode
	for i := range runs {
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		for _, onFabric := range order {
			sd, who := &c.Ibsim, "ibsim"
			var r *OpenSMRun
			var fail *OpenSMFailure
			if onFabric {
				sd, who = &c.Fabric, "fabric"
				r, fail = opensmOnFabric(prefix, topo, smNode, nil)
			} else {
				r, fail = opensmOnIbsim(topo, nil)
			}
			if fail != nil {
				fail.Run = i + 1
				sd.Failures = append(sd.Failures, *fail)
				fmt.Fprintf(log, "opensm %s run %d %s: %s\n", c.Network, i+1, who, fail.Error)
				continue
			}
			sd.Runs = append(sd.Runs, *r)
			fmt.Fprintf(log, "opensm %s run %d %s: up in %.1f ms (sweep %.1f ms), %.0f SMPs on the wire\n", c.Network, i+1, who, r.MsToUp, r.MsSweep, r.SMPsWire)
		}
	}
	c.Fabric.Median, c.Ibsim.Median = medianRun(c.Fabric.Runs), medianRun(c.Ibsim.Runs)
	if c.Fabric.Median != nil && c.Ibsim.Median != nil {
		f, s := c.Fabric.Median, c.Ibsim.Median
		c.Ratio = map[string]float64{}
		for k, ab := range map[string][2]float64{"ms_to_up": {f.MsToUp, s.MsToUp}, "ms_sweep": {f.MsSweep, s.MsSweep},
			"ms_process": {f.MsProcess, s.MsProcess}, "smps_wire": {f.SMPsWire, s.SMPsWire}} {
			if r, ok := goal.Ratio(ab[0], ab[1]); ok {
				c.Ratio[k] = r
			}
		}
	}
	if frames {
		c.Frames = &OpenSMFrames{Fabric: &FrameCount{}, Ibsim: &FrameCount{}}
		framesRun(c.Frames.Fabric, func(fc *FrameCount) (*OpenSMRun, *OpenSMFailure) { return opensmOnFabric(prefix, topo, smNode, fc) })
		framesRun(c.Frames.Ibsim, func(fc *FrameCount) (*OpenSMRun, *OpenSMFailure) { return opensmOnIbsim(topo, fc) })
	}
	return nil
}

func framesRun(fc *FrameCount, run func(*FrameCount) (*OpenSMRun, *OpenSMFailure)) {
	if _, fail := run(fc); fail != nil {
		fc.Error = fail.Error
	}
}

// medianRun is the median of each figure over runs (nil for none).
func medianRun(runs []OpenSMRun) *OpenSMRun {
	if len(runs) == 0 {
		return nil
	}
	med := func(get func(OpenSMRun) float64) float64 {
		var xs []float64
		for _, r := range runs {
			xs = append(xs, get(r))
		}
		return *median(xs)
	}
	return &OpenSMRun{
		MsToUp: med(func(r OpenSMRun) float64 { return r.MsToUp }), MsSweep: med(func(r OpenSMRun) float64 { return r.MsSweep }),
		MsProcess: med(func(r OpenSMRun) float64 { return r.MsProcess }), SMPsWire: med(func(r OpenSMRun) float64 { return r.SMPsWire }),
		LogErrors: med(func(r OpenSMRun) float64 { return r.LogErrors }), UpS: med(func(r OpenSMRun) float64 { return r.UpS }),
		MADsIn: med(func(r OpenSMRun) float64 { return r.MADsIn }), Retries: med(func(r OpenSMRun) float64 { return r.Retries }),
		Timeouts: med(func(r OpenSMRun) float64 { return r.Timeouts }),
	}
}

// opensmOnce runs OpenSM --once in namespace ns and then perfquery at its
// port; with fc, OpenSM logs its frames (-D 0x23) and fc counts them. A
// run that does not reach SUBNET UP is a failure, with OpenSM's ERR lines.
func opensmOnce(ns string, env []string, fc *FrameCount) (*OpenSMRun, *OpenSMFailure) {
	dir, err := os.MkdirTemp("", "ibfab-bench-opensm-")
	if err != nil {
		return nil, &OpenSMFailure{Error: err.Error()}
	}
	defer os.RemoveAll(dir)
	var args []string
	if fc != nil {
		args = []string{"-D", "0x23"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := opensmrun.Once(ctx, opensmrun.Options{NS: ns, Env: env, Dir: dir, Args: args})
	log, _ := os.ReadFile(filepath.Join(dir, "opensm.log"))
	if err != nil {
		var errLines []string
		for _, l := range strings.Split(string(log), "\n") {
			if strings.Contains(l, " ERR ") && len(errLines) < 10 {
				errLines = append(errLines, l)
			}
		}
		return nil, &OpenSMFailure{Error: err.Error(), LogErrors: errLines}
	}
	perf, err := opensmrun.Run(ctx, ns, env, "perfquery")
	if err != nil {
		return nil, &OpenSMFailure{Error: err.Error()}
	}
	smps, err := opensmrun.PerfCounter(perf, "PortXmitPkts")
	if err != nil {
		return nil, &OpenSMFailure{Error: err.Error()}
	}
	if fc != nil {
		fc.Sent, fc.Local = opensmrun.FrameCounts(string(log))
		for _, n := range fc.Sent {
			fc.Total += n
		}
	}
	return &OpenSMRun{MsToUp: r.MsToUp, MsSweep: r.MsSweep, MsProcess: r.MsProcess, SMPsWire: float64(smps),
		LogErrors: float64(strings.Count(string(log), " ERR "))}, nil
}

func opensmOnIbsim(topo *topologies.Topology, fc *FrameCount) (*OpenSMRun, *OpenSMFailure) {
	dir, err := os.MkdirTemp("", "ibfab-bench-ibsim-")
	if err != nil {
		return nil, &OpenSMFailure{Error: err.Error()}
	}
	defer os.RemoveAll(dir)
	sim, err := ibsimrun.Start(topo, dir)
	if err != nil {
		return nil, &OpenSMFailure{Error: err.Error()}
	}
	defer sim.Close()
	env, err := ibsimrun.DiagEnv()
	if err != nil {
		return nil, &OpenSMFailure{Error: err.Error()}
	}
	return opensmOnce(sim.NS, env, fc)
}

func opensmOnFabric(prefix string, topo *topologies.Topology, smNode string, fc *FrameCount) (*OpenSMRun, *OpenSMFailure) {
	t0 := time.Now()
	f, err := up(prefix+fmt.Sprint(topo.NumNodes()), topo, harness.UpOptions{Timeout: 10 * time.Minute,
		NodeArgsFor: map[string][]string{smNode: {"--sim-retries", fmt.Sprint(opensmRetries)}}})
	if err != nil {
		return nil, &OpenSMFailure{Error: err.Error()}
	}
	upS := time.Since(t0).Seconds()
	defer f.down()
	before, err := f.node(smNode)
	if err != nil {
		return nil, &OpenSMFailure{Error: err.Error()}
	}
	env, err := harness.UMADEnv("")
	if err != nil {
		return nil, &OpenSMFailure{Error: err.Error()}
	}
	r, fail := opensmOnce(fabricnet.Namespace(f.Name, smNode), env, fc)
	if fail != nil {
		return nil, fail
	}
	after, err := f.node(smNode)
	if err != nil {
		return nil, &OpenSMFailure{Error: err.Error()}
	}
	r.UpS = float64(int(upS*10)) / 10
	if before.Sim != nil && after.Sim != nil {
		r.MADsIn = float64(after.Sim.MADsIn - before.Sim.MADsIn)
		r.Retries = float64(after.Sim.Retries - before.Sim.Retries)
		r.Timeouts = float64(after.Sim.Timeouts - before.Sim.Timeouts)
	}
	// The status's counter agrees with perfquery's (the PMA query of its
	// own port does not reach the wire).
	if got := float64(after.Ports[0].Counters.PortXmitPkts - before.Ports[0].Counters.PortXmitPkts); got != r.SMPsWire {
		return nil, &OpenSMFailure{Error: fmt.Sprintf("PortXmitPkts: perfquery %v, status %v", r.SMPsWire, got)}
	}
	return r, nil
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
