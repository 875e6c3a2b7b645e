// Package smbench is ibfab bench sm (once ibsm bench): ibsm against OpenSM
// on the same ibsim fabric, and the routing engines against each other, in
// one run, as ratios. Package bench gives it its command line.
package smbench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"ibfab/fabricnet"
	"ibfab/internal/goal"
	"ibfab/internal/ibsimrun"
	"ibfab/internal/opensmrun"
	"ibfab/internal/proccpu"
	"ibfab/sm"
	"ibfab/sm/routing"
	"ibfab/topologies"
)

// benchNets are the networks the bench knows by name; "irregularN" is
// also any N: the thesis's random irregular network of N 4-port switches
// with one host each (seed 1).
var benchNets = map[string]func() (*topologies.Topology, error){
	"thesis8":    func() (*topologies.Topology, error) { return topologies.Default(), nil },
	"fattree432": func() (*topologies.Topology, error) { return topologies.FatTree(18, 12, 24) },
}

var irregularName = regexp.MustCompile(`^irregular([0-9]+)$`)

func benchNet(name string) (*topologies.Topology, error) {
	if mk, ok := benchNets[name]; ok {
		return mk()
	}
	if m := irregularName.FindStringSubmatch(name); m != nil {
		n, err := strconv.Atoi(m[1])
		if err == nil {
			return topologies.Irregular(n, 4, 1, 1)
		}
	}
	return nil, fmt.Errorf("unknown network %q (have thesis8, fattree432, irregularN)", name)
}

// BenchReport is what the benchmark prints: one JSON object.
type BenchReport struct {
	Event string `json:"event"` // "bench"
	CPUs  int    `json:"cpus"`
	Runs  int    `json:"runs"`
	// SubnetUp compares the SMs with their defaults, SubnetUpQoS with
	// QoS on both sides (ibsm --qos, opensm -Q), fabric by fabric.
	SubnetUp    []SubnetUpCase `json:"subnet_up"`
	SubnetUpQoS []SubnetUpCase `json:"subnet_up_qos,omitempty"`
	Routing     []RoutingCase  `json:"routing"`
	Notes       []string       `json:"notes"`
	// GoalMet: every fabric asked for was measured on both sides with
	// their defaults and met the goal; Reasons says why not.
	GoalMet bool     `json:"goal_met"`
	Reasons []string `json:"reasons,omitempty"`
	// QoSGoalMet holds the QoS comparison to the same bar; the issue sets
	// no goal for it, so it is information and GoalMet leaves it out.
	QoSGoalMet *bool    `json:"qos_goal_met,omitempty"`
	QoSReasons []string `json:"qos_reasons,omitempty"`
	ElapsedMs  float64  `json:"elapsed_ms"`
}

// SubnetUpCase compares the two SMs on one fabric.
type SubnetUpCase struct {
	Fabric   string  `json:"fabric"`
	Nodes    int     `json:"nodes"`
	Switches int     `json:"switches"`
	HCAs     int     `json:"hcas"`
	IBSM     SMStats `json:"ibsm"`
	OpenSM   SMStats `json:"opensm"`
	// Ratio is ibsm / OpenSM of each median, where both sides have one
	// and OpenSM's is not 0 (a missing key: not measured).
	Ratio   map[string]float64 `json:"ratio"`
	GoalMet bool               `json:"goal_met"` // ms_to_up ratio ≤ 0.5 and smps_wire ratio ≤ 1, both measured
	Reasons []string           `json:"reasons,omitempty"`
}

// SMStats is one SM's runs on a fabric and their medians.
type SMStats struct {
	Routing string `json:"routing"`
	// VLTables is what ibsm did with SLtoVL and VL arbitration: its
	// --vl-tables with QoS off (OpenSM then leaves the tables alone, as
	// keep does), set with QoS on.
	VLTables string `json:"vl_tables,omitempty"`
	// QoS: ibsm ran with --qos (no flows), OpenSM with -Q and Conf, the
	// options its opensm.conf held.
	QoS  bool     `json:"qos,omitempty"`
	Conf []string `json:"conf,omitempty"`
	// RootGUID is the switch OpenSM's updn was rooted at (-a), the one
	// ibsm's up*/down* is rooted at.
	RootGUID  string  `json:"root_guid,omitempty"`
	Runs      []SMRun `json:"runs"`
	MsToUp    float64 `json:"ms_to_up"`
	MsProcess float64 `json:"ms_process"`
	MsSweep   float64 `json:"ms_sweep"`
	SMPsWire  float64 `json:"smps_wire"`
	CPUMs     float64 `json:"cpu_ms"`
	SimCPUMs  float64 `json:"sim_cpu_ms"`
	// SMPsByAttr: the medians of ibsm's own count by method and
	// attribute ("Set SLtoVLMappingTable"); OpenSM has no such count.
	SMPsByAttr map[string]float64 `json:"smps_by_attr,omitempty"`
	// SMPsOverDefaults: with QoS, smps_wire less the same SM's with its
	// defaults on the fabric: what QoS costs it on the wire, the one
	// per-SM figure of its SLtoVL and VLArbitration Sets both SMs have.
	SMPsOverDefaults *float64 `json:"smps_wire_over_defaults,omitempty"`
	Error            string   `json:"error,omitempty"`
}

// SMRun is one run of an SM on a fresh simulator.
type SMRun struct {
	// MsToUp: from the exec of the SM to the subnet being up: ibsm's
	// sweep line on its standard output, OpenSM's "SUBNET UP" log line
	// (its microsecond timestamp).
	MsToUp float64 `json:"ms_to_up"`
	// MsProcess: from the exec to the SM's exit.
	MsProcess float64 `json:"ms_process"`
	// MsSweep: the SM's own account: ibsm's ms_total; OpenSM's log from
	// "Entering DISCOVERING state" to "SUBNET UP".
	MsSweep float64 `json:"ms_sweep"`
	// SMPsWire: the SMPs that left the SM's port, as the simulator counts
	// them (PortXmitPkts of that port, read with perfquery afterwards);
	// SMPs to the SM's own node never reach the wire.
	SMPsWire uint64 `json:"smps_wire"`
	// SMPsSelf: the SMPs ibsm counted itself (local ones included), and
	// SMPsByAttr those by method and attribute.
	SMPsSelf   uint64            `json:"smps_self,omitempty"`
	SMPsByAttr map[string]uint64 `json:"smps_by_attr,omitempty"`
	// CPUMs: the SM process's CPU time (user and system); SimCPUMs:
	// ibsim's over the same span, from the SM's exec to its exit. On a
	// shared machine these hold still where wall times do not.
	CPUMs    float64 `json:"cpu_ms"`
	SimCPUMs float64 `json:"sim_cpu_ms"`
	// Phases: ibsm's own account of its sweep, phase by phase.
	Phases []sm.Phase `json:"phases,omitempty"`
	// Retries and WindowMin: ibsm's resends, and the narrowest its
	// adaptive SMP window got (the --window maximum when nothing timed
	// out).
	Retries   uint64 `json:"retries,omitempty"`
	WindowMin int    `json:"window_min,omitempty"`
}

// RoutingCase compares the engines on one network, through the sm API.
type RoutingCase struct {
	Network  string                        `json:"network"`
	Switches int                           `json:"switches"`
	Engines  []EngineResult                `json:"engines"`
	Ratio    map[string]map[string]float64 `json:"ratio"` // per engine: ms and entries relative to updn-fera
}

// EngineResult is one engine's route set on a network.
type EngineResult struct {
	Name         string  `json:"name"`
	Ms           float64 `json:"ms"` // median of the iterations
	Entries      int     `json:"entries_computed"`
	DefaultPorts int     `json:"default_ports,omitempty"`
	LFTEntries   int     `json:"lft_entries"`
	VerifyMs     float64 `json:"verify_ms"`
	DeadlockFree bool    `json:"deadlock_free"`
	Error        string  `json:"error,omitempty"`
}

// Options are the benchmark's flags (but --out, which is every
// benchmark's).
type Options struct {
	Fabrics, RouteNets []string
	Runs, RouteIters   int
	Routing            string
	VLTables           sm.VLTables
	QoS                bool
	// IBSM is the ibsm binary the fabrics are brought up with (needed
	// only when there are fabrics).
	IBSM string
}

// benchMode is what the two SMs are compared with.
type benchMode uint8

const (
	// modeDefaults: each SM with its defaults, QoS off (ibsm's
	// --vl-tables as asked, keep unless told).
	modeDefaults benchMode = iota
	// modeQoS: ibsm --qos without flows against opensm -Q with the
	// qos_* options that write the same tables (opensmrun.IBSMQoS).
	modeQoS
)

func (m benchMode) String() string {
	if m == modeQoS {
		return "qos"
	}
	return "defaults"
}

// ibsimMTU is the MTU ibsim's ports run (their MTUCap, 2048 bytes): the
// high limit ibsm's QoS gives them, which OpenSM's qos_high_limit repeats.
const ibsimMTU = 2048

// Flags adds the benchmark's flags to fs, with their defaults; the
// returned function, called once fs is parsed, checks them and returns the
// options. Its errors are usage errors.
func Flags(fs *flag.FlagSet) func() (*Options, error) {
	o := &Options{}
	fabrics := fs.String("fabrics", "fattree432,irregular256", "ibsim fabrics to bring up with ibsm and with OpenSM (comma-separated; \"\" for none)")
	nets := fs.String("route-nets", "irregular128,irregular256", "networks to route with each engine through the sm API")
	fs.IntVar(&o.Runs, "runs", 3, "runs of each SM on each fabric, on a fresh simulator each (medians reported)")
	fs.IntVar(&o.RouteIters, "route-iters", 5, "route computations per engine and network (median reported)")
	fs.StringVar(&o.Routing, "routing", sm.DefaultRouting, "ibsm's routing engine; OpenSM runs the matching one (updn, minhop, ftree)")
	fs.TextVar(&o.VLTables, "vl-tables", sm.DefaultVLTables, "ibsm's --vl-tables `mode` in the defaults comparison: keep (as OpenSM with QoS off) or set")
	fs.BoolVar(&o.QoS, "qos", true, "also compare ibsm --qos with opensm -Q on each fabric (subnet_up_qos)")
	fs.StringVar(&o.IBSM, "ibsm", "", "the ibsm binary to run (default: ibsm in $IBFAB_BIN, next to ibfab, or on PATH)")
	return func() (*Options, error) {
		if o.Runs < 1 || o.RouteIters < 1 {
			return nil, errors.New("--runs and --route-iters must be at least 1")
		}
		o.Fabrics, o.RouteNets = splitList(*fabrics), splitList(*nets)
		if _, err := opensmEngine(o.Routing); err != nil {
			return nil, err
		}
		return o, nil
	}
}

// Quick sets the sizes of --quick: thesis8 and irregular16, once each.
func (o *Options) Quick() {
	o.Fabrics, o.RouteNets, o.Runs, o.RouteIters = []string{"thesis8"}, []string{"irregular16"}, 1, 1
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

// opensmEngine is OpenSM's routing engine that matches one of ibsm's.
func opensmEngine(e string) (string, error) {
	switch {
	case strings.HasPrefix(e, "updn"):
		return "updn", nil
	case e == "minhop" || e == "ftree":
		return e, nil
	}
	return "", fmt.Errorf("no OpenSM engine matches %q", e)
}

// Run runs the benchmark, its progress to progress; failed is true when a
// fabric, a side or a routing network failed (the report says which).
func Run(ctx context.Context, o *Options, progress io.Writer) (rep *BenchReport, failed bool) {
	start := time.Now()
	rep = &BenchReport{Event: "bench", CPUs: runtime.NumCPU(), Runs: o.Runs, Notes: benchNotes}
	var cases, qosCases []goal.Case
	for _, name := range o.Fabrics {
		def, g, ok := benchCase(ctx, o, name, modeDefaults, progress)
		failed = failed || !ok
		cases = append(cases, g)
		if def != nil {
			rep.SubnetUp = append(rep.SubnetUp, *def)
		}
		if !o.QoS {
			continue
		}
		c, g, ok := benchCase(ctx, o, name, modeQoS, progress)
		failed = failed || !ok
		qosCases = append(qosCases, g)
		if c != nil {
			overDefaults(c, def)
			rep.SubnetUpQoS = append(rep.SubnetUpQoS, *c)
		}
	}
	v := goal.Judge(cases)
	rep.GoalMet, rep.Reasons = v.Met, v.Reasons
	if o.QoS {
		v := goal.Judge(qosCases)
		rep.QoSGoalMet, rep.QoSReasons = &v.Met, v.Reasons
	}
	for _, name := range o.RouteNets {
		c, err := benchRouting(name, o.RouteIters)
		if err != nil {
			fmt.Fprintf(progress, "bench sm: %s: %v\n", name, err)
			failed = true
			continue
		}
		rep.Routing = append(rep.Routing, *c)
	}
	rep.ElapsedMs = ms(time.Since(start))
	return rep, failed
}

// benchCase measures both SMs on fabric name in mode; ok is false when
// the fabric or a side failed (the case, when there is one, says which).
func benchCase(ctx context.Context, o *Options, name string, mode benchMode, progress io.Writer) (*SubnetUpCase, goal.Case, bool) {
	c, err := benchSubnetUp(ctx, o, name, mode, progress)
	if err != nil {
		fmt.Fprintf(progress, "bench sm: %s (%s): %v\n", name, mode, err)
		return nil, goal.Failed(name, err), false
	}
	// A side's error is in the case, and was reported as progress.
	return c, subnetUpGoal(c), c.IBSM.Error == "" && c.OpenSM.Error == ""
}

// overDefaults sets each side's smps_wire_over_defaults in the QoS case
// q from the defaults case def of the same fabric, where both measured it.
func overDefaults(q, def *SubnetUpCase) {
	if def == nil {
		return
	}
	for _, p := range []struct{ q, d *SMStats }{{&q.IBSM, &def.IBSM}, {&q.OpenSM, &def.OpenSM}} {
		if len(p.q.Runs) > 0 && len(p.d.Runs) > 0 && p.q.Error == "" && p.d.Error == "" {
			d := p.q.SMPsWire - p.d.SMPsWire
			p.q.SMPsOverDefaults = &d
		}
	}
}

var benchNotes = []string{
	"subnet_up: each run loads the fabric into a fresh ibsim in its own network namespace; the SM attaches at the file's first node (a CA) through the simulator's client protocol: ibsm natively (--port sim), OpenSM through libumad2sim; OpenSM runs with --once and the routing engine that matches ibsm's; its updn is rooted at the switch ibsm's up*/down* is rooted at, the SM's, through a root GUID file (-a): without one it finds no root on an irregular network with a host at every switch and falls back to minhop. A run whose OpenSM log says it configured another engine's tables is an error. Both are started from a thread inside the simulator's namespace.",
	"subnet_up compares defaults with defaults: OpenSM with QoS off sets OperationalVLs but leaves every SLtoVL and VL arbitration table as the device holds it; ibsm runs with --vl-tables as vl_tables says, keep by default (the same; set spreads the SLs over the data VLs, one SMP per (input, output) port pair on ibsim's switches, which lack the optimized SLtoVL modifiers).",
	"subnet_up_qos compares QoS with QoS, in the same simulator setup: ibsm --qos without flows (OperationalVLs VL0-7, SL n on VL n, best effort alone in the low-priority table, an empty high-priority table, LimitOfHighPriority from the link MTU) against opensm -Q with an opensm.conf holding the generic qos_* options in opensm.conf (the per-port-type qos_ca_*, qos_sw0_*, qos_swe_*, qos_rtr_* fall back to them) that write the same tables. ibsim's ports have VLCap VL0-7, 8-entry arbitration tables (VLArbitrationHighCap and LowCap 8) and a 2048-byte MTU, so both write one low and one high VLArbitration block per port (ibsim refuses blocks past the cap) and SL n on VL n for SL 0-7.",
	"What each writes with QoS: ibsm's smps_by_attr counts its SMPs by method and attribute (Set SLtoVLMappingTable: one per (input, output) pair of active ports and port 0 on ibsim's switches, one per CA port; Set VLArbitrationTable: two per port); OpenSM has no such count, and smps_wire_over_defaults, each side's smps_wire less its own with defaults, is the figure both have. OpenSM's QoS writes SLtoVL, for each active output port, from every input port, port 0, the output port itself and ports without a link included: as many Sets as ibsm's where every switch port is cabled, more where some are not.",
	"The issue sets the goal (ms_to_up ratio ≤ 0.5, smps_wire ratio ≤ 1) for the defaults; the QoS comparison is held to the same bar in qos_goal_met and qos_reasons, as information: goal_met leaves it out.",
	"ms_to_up is from the SM's exec to the subnet being up (ibsm: its sweep line; OpenSM: the timestamp of its SUBNET UP log line), ms_process to its exit, ms_sweep the SM's own account.",
	"cpu_ms is the SM process's CPU time (user and system), sim_cpu_ms ibsim's from the SM's exec to its exit (10 ms ticks): the simulator handles one MAD at a time, so its CPU time is a floor under the time to SUBNET UP that other load on the machine does not move much.",
	"smps_wire is PortXmitPkts of the SM's port as ibsim counts it (perfquery through libumad2sim after the SM exited): every SMP that left the port, retries included, for both SMs alike; SMPs to the SM's own node never reach the wire. smps_self is ibsm's own count.",
	"ratio is ibsm / OpenSM of the medians; the goal is ms_to_up ≤ 0.5 with smps_wire ≤ 1.",
	"routing: each engine's route computation through the sm API on the SM's view of the network (no verification in ms; verify_ms apart), median of route-iters runs; ratios relative to updn-fera.",
}

// median returns the median of xs, to the microsecond (or the thousandth
// of a count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return math.Round(m*1000) / 1000
}

// ratios sets m[k] = a/b for each figure that is a measurement (goal.Ratio)
// and leaves the others out.
func ratios(m map[string]float64, figs map[string][2]float64) {
	for k, ab := range figs {
		if r, ok := goal.Ratio(ab[0], ab[1]); ok {
			m[k] = r
		}
	}
}

// subnetUpGoal judges one fabric: both SMs measured in every run, ms_to_up
// ratio ≤ 0.5 and smps_wire ratio ≤ 1.
func subnetUpGoal(c *SubnetUpCase) goal.Case {
	var g goal.Case
	switch {
	case c.IBSM.Error != "":
		g = goal.Case{Name: c.Fabric, Why: "ibsm: " + c.IBSM.Error}
	case c.OpenSM.Error != "":
		g = goal.Case{Name: c.Fabric, Why: "opensm: " + c.OpenSM.Error}
	case len(c.IBSM.Runs) == 0 || len(c.OpenSM.Runs) == 0:
		g = goal.Case{Name: c.Fabric, Why: "a side has no run"}
	default:
		g = goal.All(c.Fabric,
			goal.AtMost(c.Fabric, "ms_to_up", c.IBSM.MsToUp, c.OpenSM.MsToUp, 0.5),
			goal.AtMost(c.Fabric, "smps_wire", c.IBSM.SMPsWire, c.OpenSM.SMPsWire, 1))
	}
	c.GoalMet = g.Measured && g.Met
	if !c.GoalMet {
		c.Reasons = []string{g.Why}
	}
	return g
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func benchSubnetUp(ctx context.Context, o *Options, name string, mode benchMode, progress io.Writer) (*SubnetUpCase, error) {
	topo, err := benchNet(name)
	if err != nil {
		return nil, err
	}
	if err := ibsimrun.CheckLimits(topo); err != nil {
		return nil, err
	}
	osmEngine, _ := opensmEngine(o.Routing)
	root, err := benchRoot(topo)
	if err != nil {
		return nil, err
	}
	sides := benchSides{ibsmArgs: []string{"--vl-tables", o.VLTables.String()}}
	c := &SubnetUpCase{Fabric: name, Nodes: topo.NumNodes(), Switches: topo.Count(topologies.Switch),
		HCAs: topo.Count(topologies.CA), IBSM: SMStats{Routing: o.Routing, VLTables: o.VLTables.String()}, OpenSM: SMStats{Routing: osmEngine}}
	if mode == modeQoS {
		conf, err := opensmrun.IBSMQoS(ibsimMTU, nil)
		if err != nil {
			return nil, err
		}
		sides = benchSides{ibsmArgs: []string{"--qos"}, opensmQoS: &conf}
		c.IBSM.VLTables, c.IBSM.QoS = sm.VLTablesSet.String(), true // QoS owns the tables
		c.OpenSM.QoS, c.OpenSM.Conf = true, conf.Lines()
	}
	if osmEngine == "updn" {
		c.OpenSM.RootGUID = fmt.Sprintf("%#016x", topo.Node(root).GUID)
	}
	for i := range o.Runs {
		// Alternate which SM goes first, so that neither always meets a
		// machine warmed up (or loaded) by the other.
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		for _, isIBSM := range order {
			st, who := &c.OpenSM, "opensm"
			if isIBSM {
				st, who = &c.IBSM, "ibsm"
			}
			if st.Error != "" {
				continue
			}
			r, err := benchOneSM(ctx, o, topo, isIBSM, sides, osmEngine, topo.Node(root).GUID)
			if err != nil {
				st.Error = err.Error()
				fmt.Fprintf(progress, "bench %s (%s) run %d %s: %v\n", name, mode, i+1, who, err)
				continue
			}
			fmt.Fprintf(progress, "bench %s (%s) run %d %s: up in %.1f ms, %d SMPs on the wire\n", name, mode, i+1, who, r.MsToUp, r.SMPsWire)
			st.Runs = append(st.Runs, *r)
		}
	}
	for _, st := range []*SMStats{&c.IBSM, &c.OpenSM} {
		var up, proc, sweep, smps, cpu, simCPU []float64
		for _, r := range st.Runs {
			up, proc, sweep = append(up, r.MsToUp), append(proc, r.MsProcess), append(sweep, r.MsSweep)
			smps, cpu, simCPU = append(smps, float64(r.SMPsWire)), append(cpu, r.CPUMs), append(simCPU, r.SimCPUMs)
		}
		st.MsToUp, st.MsProcess, st.MsSweep, st.SMPsWire = median(up), median(proc), median(sweep), median(smps)
		st.CPUMs, st.SimCPUMs = median(cpu), median(simCPU)
		st.SMPsByAttr = medianByAttr(st.Runs)
	}
	if c.IBSM.Error != "" || c.OpenSM.Error != "" {
		return c, nil
	}
	c.Ratio = map[string]float64{}
	ratios(c.Ratio, map[string][2]float64{
		"ms_to_up":   {c.IBSM.MsToUp, c.OpenSM.MsToUp},
		"ms_process": {c.IBSM.MsProcess, c.OpenSM.MsProcess},
		"ms_sweep":   {c.IBSM.MsSweep, c.OpenSM.MsSweep},
		"smps_wire":  {c.IBSM.SMPsWire, c.OpenSM.SMPsWire},
		"cpu_ms":     {c.IBSM.CPUMs, c.OpenSM.CPUMs},
		"sim_cpu_ms": {c.IBSM.SimCPUMs, c.OpenSM.SimCPUMs},
	})
	return c, nil
}

// medianByAttr is the median of each kind of SMP over runs (a run
// without the kind counts 0); nil when no run counted any.
func medianByAttr(runs []SMRun) map[string]float64 {
	var out map[string]float64
	for _, r := range runs {
		for k := range r.SMPsByAttr {
			if _, done := out[k]; done {
				continue
			}
			xs := make([]float64, len(runs))
			for i, r := range runs {
				xs[i] = float64(r.SMPsByAttr[k])
			}
			if out == nil {
				out = map[string]float64{}
			}
			out[k] = median(xs)
		}
	}
	return out
}

// benchSides is how each SM runs in a comparison: ibsm's arguments past
// the common ones, and OpenSM's QoS options (nil: QoS off).
type benchSides struct {
	ibsmArgs  []string
	opensmQoS *opensmrun.QoSConf
}

// benchOneSM runs one SM once on a fresh simulator of topo; OpenSM's
// updn is rooted at the switch of GUID root.
func benchOneSM(ctx context.Context, o *Options, topo *topologies.Topology, isIBSM bool, sides benchSides, osmEngine string, root uint64) (*SMRun, error) {
	dir, err := os.MkdirTemp("", "ibsm-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	sim, err := ibsimrun.Start(topo, dir)
	if err != nil {
		return nil, err
	}
	defer sim.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var r *SMRun
	simCPU := cpuOf(sim.PID())
	if isIBSM {
		r, err = runIBSM(ctx, sim, o.IBSM, o.Routing, sides.ibsmArgs)
	} else {
		r, err = runOpenSM(ctx, sim, dir, osmEngine, root, sides.opensmQoS)
	}
	if err != nil {
		return nil, err
	}
	r.SimCPUMs = ms(cpuOf(sim.PID()) - simCPU)
	out, err := sim.Diag(ctx, "perfquery")
	if err != nil {
		return nil, err
	}
	if r.SMPsWire, err = opensmrun.PerfCounter(out, "PortXmitPkts"); err != nil {
		return nil, err
	}
	return r, nil
}

func runIBSM(ctx context.Context, sim *ibsimrun.Sim, bin, routing string, extra []string) (*SMRun, error) {
	// Born in the simulator's namespace, as opensmrun starts OpenSM: no
	// ip netns exec in between to time.
	args := append([]string{"--port", "sim", "--once", "--json", "--routing", routing}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := fabricnet.Do(sim.NS, cmd.Start); err != nil {
		return nil, err
	}
	r := &SMRun{}
	var res sm.Result
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		if r.MsToUp == 0 {
			r.MsToUp = ms(time.Since(start))
			if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				return nil, fmt.Errorf("ibsm printed %q: %w", sc.Text(), err)
			}
		}
	}
	err = cmd.Wait()
	r.MsProcess = ms(time.Since(start))
	r.CPUMs = processCPU(cmd)
	if err != nil || !res.SubnetUp {
		return nil, fmt.Errorf("ibsm: %v (subnet up %v, %s): %s", err, res.SubnetUp, res.Reason, stderr.String())
	}
	r.MsSweep, r.SMPsSelf, r.Phases, r.SMPsByAttr = res.MsTotal, res.SMPsTotal, res.Phases, res.SMPsByAttr
	r.Retries, r.WindowMin = res.Retries, res.WindowMin
	return r, nil
}

// runOpenSM runs opensm --once with engine on sim, its files in dir, QoS
// on with qos's options unless it is nil, and fails unless its log says
// it routed with engine: an OpenSM that fell back to minhop is not the SM
// the bench compares ibsm with.
func runOpenSM(ctx context.Context, sim *ibsimrun.Sim, dir, engine string, root uint64, qos *opensmrun.QoSConf) (*SMRun, error) {
	env, err := ibsimrun.DiagEnv()
	if err != nil {
		return nil, err
	}
	args, err := opensmArgs(dir, engine, root)
	if err != nil {
		return nil, err
	}
	if qos != nil {
		conf := filepath.Join(dir, "opensm.conf")
		if err := os.WriteFile(conf, []byte(qos.String()), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "-Q", "-F", conf)
	}
	r, err := opensmrun.Once(ctx, opensmrun.Options{NS: sim.NS, Env: env, Dir: dir, Args: args})
	if err != nil {
		return nil, err
	}
	log, err := os.ReadFile(r.Log)
	if err != nil {
		return nil, err
	}
	if err := checkOpenSMRouting(string(log), engine, root); err != nil {
		return nil, err
	}
	return &SMRun{MsToUp: r.MsToUp, MsProcess: r.MsProcess, MsSweep: r.MsSweep, CPUMs: r.CPUMs}, nil
}

// benchRoot returns the switch ibsm's up*/down* engines root their routes
// at on an ibsim fabric of topo (sm's Fabric.UpdnRoot): ibsim attaches the
// SM at the file's first node, a switch's port 0 or a CA's port 1.
func benchRoot(topo *topologies.Topology) (int, error) {
	if topo.NumNodes() == 0 {
		return 0, errors.New("no nodes")
	}
	smPort := 1
	if topo.Node(0).Type == topologies.Switch {
		smPort = 0
	}
	f, err := routing.NewFabric(topo, 0, smPort, 0)
	if err != nil {
		return 0, err
	}
	return f.UpdnRoot(routing.Options{})
}

// opensmArgs are OpenSM's arguments for engine: -R ENGINE and, for updn,
// -a FILE, a root GUID file written in dir naming root, the switch ibsm's
// up*/down* is rooted at (benchRoot). Without one OpenSM's updn picks
// roots of its own: on an irregular network with a host at every switch
// it finds none and routes with minhop, on a fat tree it takes the spines
// where ibsm takes the SM's leaf.
func opensmArgs(dir, engine string, root uint64) ([]string, error) {
	args := []string{"-R", engine}
	if engine != "updn" {
		return args, nil
	}
	if root == 0 {
		return nil, errors.New("OpenSM's updn needs the GUID of ibsm's root switch")
	}
	file := filepath.Join(dir, "root_guids")
	if err := opensmrun.WriteRootGUIDs(file, root); err != nil {
		return nil, err
	}
	return append(args, "-a", file), nil
}

// checkOpenSMRouting returns an error unless OpenSM's log says it put
// engine's tables on the switches; root is the GUID its updn was given.
func checkOpenSMRouting(log, engine string, root uint64) error {
	if engine == "updn" && opensmrun.UpdnFellBack(log) {
		return fmt.Errorf("OpenSM's updn found no root at %#016x (\"no root nodes were found\") and fell back to minhop", root)
	}
	switch got := opensmrun.RoutedWith(log); got {
	case engine:
		return nil
	case "":
		return fmt.Errorf("OpenSM's log does not say which engine's tables it configured (want %s)", engine)
	default:
		return fmt.Errorf("OpenSM configured %s tables, not %s: its %s engine failed", got, engine, engine)
	}
}

// processCPU is the user and system CPU time, in ms, of cmd's process,
// which has exited.
func processCPU(cmd *exec.Cmd) float64 {
	if cmd.ProcessState == nil {
		return 0
	}
	return ms(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime())
}

// cpuOf returns the CPU time a running process has used (proccpu.Of), or
// 0 when it cannot be read.
func cpuOf(pid int) time.Duration {
	d, _ := proccpu.Of(pid)
	return d
}

// Engines are compared on each routing network.
var Engines = []string{"updn-fera", "updn-pira", "minhop"}

func benchRouting(name string, iters int) (*RoutingCase, error) {
	topo, err := benchNet(name)
	if err != nil {
		return nil, err
	}
	f, err := routing.NewFabric(topo, 0, 1, 0)
	if err != nil {
		return nil, err
	}
	c := &RoutingCase{Network: name, Switches: topo.Count(topologies.Switch), Ratio: map[string]map[string]float64{}}
	for _, name := range Engines {
		res := EngineResult{Name: name}
		e, err := routing.NewEngine(name, routing.Options{})
		if err != nil {
			return nil, err
		}
		var times []float64
		var r *routing.Routes
		for range iters {
			t0 := time.Now()
			r, err = e.Route(f)
			times = append(times, ms(time.Since(t0)))
			if err != nil {
				break
			}
		}
		if err != nil {
			res.Error = err.Error()
			c.Engines = append(c.Engines, res)
			continue
		}
		t0 := time.Now()
		rep := routing.Verify(f, r)
		res.VerifyMs = ms(time.Since(t0))
		res.Ms, res.Entries, res.DefaultPorts, res.LFTEntries = median(times), r.Computed, r.DefaultPorts, r.Entries()
		res.DeadlockFree = rep.DeadlockFree()
		c.Engines = append(c.Engines, res)
	}
	base := c.Engines[0]
	for _, e := range c.Engines[1:] {
		if e.Error != "" || base.Error != "" {
			continue
		}
		r := map[string]float64{}
		ratios(r, map[string][2]float64{"ms": {e.Ms, base.Ms}, "entries_computed": {float64(e.Entries), float64(base.Entries)}})
		c.Ratio[e.Name+"/"+base.Name] = r
	}
	return c, nil
}
