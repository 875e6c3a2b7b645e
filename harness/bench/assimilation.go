package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/goal"
	"ibfab/internal/opensmrun"
	"ibfab/sm"
	"ibfab/sm/routing"
	"ibfab/topologies"
)

// AssimilationGoal: ibsm's improved mechanism restores the data plane in
// at most this fraction of OpenSM's time, on every fault; within
// accountSlackMs of its own account of when its tables were in; and the
// runs behind a median at most spreadGoal apart (max/min).
const (
	AssimilationGoal = 0.2
	accountSlackMs   = 20
	spreadGoal       = 2
)

// SeedDeliveryGapMs is the delivery gap the thesis's simulation shows
// while the forwarding tables are distributed after a switch is removed
// (seed 001, Fig. 12: 8 switches, 7 hosts), printed beside ours.
const SeedDeliveryGapMs = 5

// AssimilationReport is what ibfab bench assimilation writes.
type AssimilationReport struct {
	Benchmark string `json:"benchmark"` // "assimilation"
	Date      string `json:"date"`
	Quick     bool   `json:"quick"`
	Runs      int    `json:"runs"`
	// ProbeIntervalMs is how often each probed pair hears from its sender.
	ProbeIntervalMs float64  `json:"probe_interval_ms"`
	Definition      []string `json:"definition"`
	GoalRatio       float64  `json:"goal_ratio"`
	// SeedDeliveryGapMs is the seed's delivery gap (SeedDeliveryGapMs).
	SeedDeliveryGapMs float64              `json:"seed_delivery_gap_ms"`
	GoalConfig        string               `json:"goal_config"`
	Fabrics           []AssimilationFabric `json:"fabrics"`
	goal.Verdict
	ElapsedMs float64 `json:"elapsed_ms"`
}

// AssimilationFabric is one network: both faults, every SM.
type AssimilationFabric struct {
	Network  string        `json:"network"`
	Switches int           `json:"switches"`
	Hosts    int           `json:"hosts"`
	SMNode   string        `json:"sm_node"`
	Faults   []FaultResult `json:"faults"`
	Error    string        `json:"error,omitempty"`
}

// FaultResult is one fault: OpenSM's reaction and each ibsm
// configuration's, with their ratios to OpenSM's.
type FaultResult struct {
	Fault          string     `json:"fault"`
	SurvivingHosts int        `json:"surviving_hosts"`
	ProbedPairs    int        `json:"probed_pairs"`
	OpenSM         SMSide     `json:"opensm"`
	IBSM           []IBSMSide `json:"ibsm"`
}

// SMSide is one SM's runs against a fault and their medians (absent when
// no run succeeded).
type SMSide struct {
	Runs         []FaultRun `json:"runs"`
	MsDataPlane  *float64   `json:"ms_data_plane,omitempty"`
	MsSMReported *float64   `json:"ms_sm_reported,omitempty"`
	SMPs         *float64   `json:"smps,omitempty"`
	// DataPlaneSpread is the max/min of the runs' data-plane times, each
	// floored at the outage threshold (a 0 is "under it").
	DataPlaneSpread *float64 `json:"data_plane_spread,omitempty"`
}

// IBSMSide is one ibsm configuration, with its ratios to OpenSM's medians
// (absent: not measured).
type IBSMSide struct {
	Discovery   sm.Discovery `json:"discovery"`
	Provisional bool         `json:"provisional"`
	SMSide
	RatioDataPlane  *float64 `json:"ratio_data_plane_vs_opensm,omitempty"`
	RatioSMReported *float64 `json:"ratio_sm_reported_vs_opensm,omitempty"`
	RatioSMPs       *float64 `json:"ratio_smps_vs_opensm,omitempty"`
	// MsBeyondAccount is the median data-plane time less the median of
	// ibsm's own account (0 when the data plane was back first).
	MsBeyondAccount *float64 `json:"ms_data_plane_beyond_account,omitempty"`
}

// FaultRun is one SM's reaction to one fault.
type FaultRun struct {
	// MsDataPlane: from the fault until every probed pair delivers again.
	MsDataPlane      float64 `json:"ms_data_plane"`
	PairsInterrupted int     `json:"pairs_interrupted"`
	// MsSMReported: the SM's own account of when connectivity was back.
	MsSMReported float64 `json:"ms_sm_reported"`
	// MsSettled: from the fault to the end of the SM's last pass.
	MsSettled float64 `json:"ms_settled"`
	SMPs      uint64  `json:"smps"`
	Passes    int     `json:"passes"`
	Error     string  `json:"error,omitempty"`
	// Outages are the probed pairs' dark spells after the fault, each
	// with where its packets went (attribution.go); OutagesUnknown counts
	// those without any evidence. UnreadNodes are the nodes whose drop
	// records could not be read at the end (a killed switch's went with
	// it), DropLogOverflow those whose ring lost records over the run.
	Outages        []Outage `json:"outages"`
	OutagesUnknown int      `json:"outages_unknown"`
	// ProbesDropped counts the probed pairs' packets the fabric's nodes
	// dropped after the fault (their drop records), outage or not.
	ProbesDropped   int      `json:"probes_dropped"`
	UnreadNodes     []string `json:"unread_nodes,omitempty"`
	DropLogOverflow []string `json:"drop_log_overflow,omitempty"`
	// Timeline is the run's events in order, ms from the fault: the
	// fault, the SM's (ibsm's passes and phases; OpenSM's SUBNET UP), and
	// each outage with its cause.
	Timeline []TimelineEvent `json:"timeline,omitempty"`
}

var assimilationDefinition = []string{
	"Each network runs at time scale 1; the SM is at the host of the first switch. Faults: a link between two switches on a cycle (set down), and the kill of the switch with hosts whose loss leaves the most hosts connected; each is undone before the next.",
	"ms_data_plane (the goal's measure, the same for both SMs): before the fault every probed pair of surviving hosts (every ordered pair when there are at most 8, else every pair of 8 evenly spaced) exchanges periodic UD probes, one every probe_interval_ms per pair (10 ms; 20 with --quick); each receiver records per sender its longest gap between packets and when it ended. A gap over five intervals (50 ms; 100 with --quick) that ended after the fault is an outage; ms_data_plane is from the fault to the end of the last outage of any pair (0: no pair lost a packet for five intervals). The run ends when the SM has made a pass, the fabric is settled (ports facing the fault Down, every other Active) and no new pass came for 1 s, and every pair delivers.",
	"ms_sm_reported (beside it, not judged): ibsm: the start of its last pass with the subnet up plus that pass's ms_to_connectivity (its provisional tables' with provisional routes); OpenSM: the time stamp of its last SUBNET UP log line.",
	"ms_settled: from the fault to the SM's last pass (ibsm's result reaching the bench, OpenSM's SUBNET UP). smps: MADs the SM's HCA took from the SM (its attach point's mads_in) over the run.",
	"OpenSM runs as a daemon (-R updn, rooted with -a at the SM's switch, as ibsm's up*/down*), a new one for each fault, since our switches do not bring it back to a link that trains again; ibsm runs in-process (package sm) and takes each undoing in too. Each fault waits until the SM has sent nothing for 0.5 s.",
	"The goal, for ibsm's goal configuration on every fault: ms_data_plane at most goal_ratio of OpenSM's (a median under the outage threshold counts as the threshold: the probes cannot tell less); ms_data_plane_beyond_account (its median less the median of ibsm's own account) at most 20 ms; data_plane_spread (max/min of the runs, each floored at the outage threshold) at most 2. seed_delivery_gap_ms is the thesis's simulated delivery gap while tables are distributed (seed 001, Fig. 12, 8 switches and 7 hosts, a switch removed): ours is ms_data_plane less the SM's detection and computation, which the seed's figure leaves out.",
	"Ratios are ibsm / OpenSM of the medians; a ratio against an OpenSM median of 0 or a side without a run is absent (not measured), and makes goal_met false.",
}

// ibsmConfig is one ibsm configuration of the benchmark.
type ibsmConfig struct {
	discovery   sm.Discovery
	provisional bool
}

// goalConfig is the thesis's improved mechanism, which the goal is for;
// the other configurations are its baselines.
var goalConfig = ibsmConfig{sm.DiscoveryPartial, true}

var allConfigs = []ibsmConfig{
	{sm.DiscoveryPartial, false}, goalConfig, {sm.DiscoveryFull, false}, {sm.DiscoveryFull, true},
}

// AssimilationOptions are ibfab bench assimilation's flags.
type AssimilationOptions struct {
	Sizes   []int // irregular networks of this many switches
	FatTree int   // 0, 144 or 432 hosts
	Runs    int
	Configs []ibsmConfig
	Prefix  string // fabric names
	Quick   bool
	Log     io.Writer
	// ProbeInterval overrides the probes' interval (0: the default).
	ProbeInterval time.Duration
}

// probeInterval is how often each probed pair hears from its sender.
func (o *AssimilationOptions) probeInterval() time.Duration {
	if o.ProbeInterval > 0 {
		return o.ProbeInterval
	}
	if o.Quick {
		return QuickProbeInterval
	}
	return ProbeInterval
}

// network is a named topology to build.
type network struct {
	name string
	make func() (*topologies.Topology, error)
}

func (o *AssimilationOptions) networks() []network {
	var nets []network
	for _, n := range o.Sizes {
		nets = append(nets, network{fmt.Sprintf("irregular%d", n), func() (*topologies.Topology, error) {
			return topologies.Irregular(n, 4, 1, 1)
		}})
	}
	switch o.FatTree {
	case 432: // 24 leaves of 18 hosts under 12 spines
		nets = append(nets, network{"fattree432", func() (*topologies.Topology, error) { return topologies.FatTree(24, 12, 18) }})
	case 144:
		nets = append(nets, network{"fattree144", func() (*topologies.Topology, error) { return topologies.FatTree(12, 6, 12) }})
	}
	return nets
}

// Assimilation runs the benchmark; checkpoint, if not nil, sees the report
// after each network.
func Assimilation(o AssimilationOptions, checkpoint func(*AssimilationReport)) *AssimilationReport {
	start := time.Now()
	rep := &AssimilationReport{Benchmark: "assimilation", Date: start.UTC().Format(time.RFC3339), Quick: o.Quick,
		Runs: o.Runs, ProbeIntervalMs: ms(o.probeInterval()), Definition: assimilationDefinition, GoalRatio: AssimilationGoal, SeedDeliveryGapMs: SeedDeliveryGapMs,
		GoalConfig: "partial discovery, provisional routes"}
	for _, nt := range o.networks() {
		fr := assimilationFabric(o, nt)
		rep.Fabrics = append(rep.Fabrics, fr)
		rep.Verdict = assimilationVerdict(rep.Fabrics, outageIntervals*rep.ProbeIntervalMs)
		rep.ElapsedMs = ms(time.Since(start))
		if checkpoint != nil {
			checkpoint(rep)
		}
	}
	rep.Verdict = assimilationVerdict(rep.Fabrics, outageIntervals*rep.ProbeIntervalMs)
	rep.ElapsedMs = ms(time.Since(start))
	return rep
}

// assimilationVerdict: every fault of every network measured on both
// sides, ibsm's goal configuration within the goal ratio of OpenSM on the
// data plane.
func assimilationVerdict(fabrics []AssimilationFabric, thresholdMs float64) goal.Verdict {
	var cases []goal.Case
	for _, f := range fabrics {
		if f.Error != "" {
			cases = append(cases, goal.Failed(f.Network, errors.New(f.Error)))
			continue
		}
		for _, ft := range f.Faults {
			name := f.Network + " " + ft.Fault
			i := slices.IndexFunc(ft.IBSM, func(s IBSMSide) bool {
				return s.Discovery == goalConfig.discovery && s.Provisional == goalConfig.provisional
			})
			switch {
			case i < 0:
				cases = append(cases, goal.Case{Name: name, Why: "ibsm's goal configuration did not run"})
			case ft.IBSM[i].MsDataPlane == nil:
				cases = append(cases, goal.Case{Name: name, Why: "ibsm: no run succeeded" + runErrors(ft.IBSM[i].Runs)})
			case ft.OpenSM.MsDataPlane == nil:
				cases = append(cases, goal.Case{Name: name, Why: "OpenSM: no run succeeded" + runErrors(ft.OpenSM.Runs)})
			default:
				cases = append(cases, goalConfigCases(name, ft.IBSM[i], ft.OpenSM, thresholdMs)...)
			}
		}
	}
	return goal.Judge(cases)
}

// goalConfigCases judges the goal configuration's side of one fault: the
// ratio to OpenSM, the time beyond its own account, the spread of its runs.
//
// A data plane of 0 is no outage longer than the threshold (five probe
// intervals), not an instant restoration: against OpenSM it counts as
// the threshold, so the ratio is judged by what the probes can tell.
func goalConfigCases(name string, g IBSMSide, osm SMSide, thresholdMs float64) []goal.Case {
	dp, what := *g.MsDataPlane, "ms_data_plane"
	if dp < thresholdMs {
		dp, what = thresholdMs, fmt.Sprintf("ms_data_plane (under the %g ms outage threshold, counted as it)", thresholdMs)
	}
	cases := []goal.Case{goal.AtMost(name, what, dp, *osm.MsDataPlane, AssimilationGoal)}
	if g.MsBeyondAccount == nil {
		cases = append(cases, goal.Case{Name: name + " beyond its account", Why: "no account from ibsm"})
	} else {
		cases = append(cases, goal.AtMost(name+" beyond its account", "ms beyond", *g.MsBeyondAccount, 1, accountSlackMs))
	}
	if g.DataPlaneSpread != nil {
		cases = append(cases, goal.AtMost(name+" spread of runs", "max/min", *g.DataPlaneSpread, 1, spreadGoal))
	}
	return cases
}

func runErrors(runs []FaultRun) string {
	for _, r := range runs {
		if r.Error != "" {
			return ": " + r.Error
		}
	}
	return ""
}

// benchFault is a fault and its undoing.
type benchFault struct {
	name        string
	apply, undo func() error
	damage      *topologies.Damage
	probe       time.Duration // interval of the probes while it is measured
}

// assimilationFabric brings one network up and runs every SM against both
// faults on it.
func assimilationFabric(o AssimilationOptions, nt network) AssimilationFabric {
	fr := AssimilationFabric{Network: nt.name}
	fail := func(err error) AssimilationFabric {
		fr.Error = err.Error()
		fmt.Fprintf(o.Log, "assimilation %s: %v\n", nt.name, err)
		return fr
	}
	topo, err := nt.make()
	if err != nil {
		return fail(err)
	}
	smNode := firstHost(topo)
	fr.Switches, fr.Hosts, fr.SMNode = topo.Count(topologies.Switch), topo.Count(topologies.CA), smNode
	fmt.Fprintf(o.Log, "assimilation %s: bringing up %d nodes\n", nt.name, topo.NumNodes())
	f, err := up(o.Prefix+fmt.Sprint(topo.NumNodes()), topo, harness.UpOptions{Timeout: 10 * time.Minute})
	if err != nil {
		return fail(err)
	}
	defer f.down()
	faults, err := makeFaults(f, smNode)
	if err != nil {
		return fail(err)
	}
	for i := range faults {
		faults[i].probe = o.probeInterval()
	}
	for _, ft := range faults {
		hosts := topo.Reachable(smNode, ft.damage)
		fr.Faults = append(fr.Faults, FaultResult{Fault: ft.name, SurvivingHosts: len(hosts), ProbedPairs: len(faultPairs(topo, hosts, ft.damage))})
	}
	// OpenSM first, on the fresh fabric.
	for i, ft := range faults {
		var runs []FaultRun
		for r := range o.Runs {
			fmt.Fprintf(o.Log, "assimilation %s: OpenSM, %s, run %d\n", nt.name, ft.name, r+1)
			run, err := opensmRun(f, smNode, ft)
			if err != nil {
				run.Error = err.Error()
				fmt.Fprintf(o.Log, "assimilation %s: OpenSM, %s: %v\n", nt.name, ft.name, err)
			}
			runs = append(runs, run)
			if err := ft.undo(); err != nil {
				return fail(fmt.Errorf("undoing %s: %w", ft.name, err))
			}
		}
		fr.Faults[i].OpenSM = side(runs, o.probeInterval())
	}
	for _, c := range o.Configs {
		sides, err := ibsmConfigRuns(o, f, smNode, faults, c)
		for i, s := range sides { // those it got to, also when it failed
			fr.Faults[i].IBSM = append(fr.Faults[i].IBSM, ratiosTo(fr.Faults[i].OpenSM, s, c))
		}
		if err != nil {
			return fail(err)
		}
	}
	return fr
}

// ibsmConfigRuns runs one ibsm configuration against every fault. On an
// error that ends the configuration it returns the runs so far with it.
func ibsmConfigRuns(o AssimilationOptions, f *fabric, smNode string, faults []benchFault, c ibsmConfig) ([]SMSide, error) {
	// PreBlock as ibsm's daemon has it by default.
	cfg := sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{Discovery: c.discovery, Provisional: c.provisional, PreBlock: true},
	}
	r, err := startSM(f, smNode, cfg)
	if err != nil {
		return nil, err
	}
	defer r.stop()
	if err := waitSettled(f, nil, time.Minute); err != nil {
		return nil, err
	}
	var sides []SMSide
	for _, ft := range faults {
		var runs []FaultRun
		for k := range o.Runs {
			fmt.Fprintf(o.Log, "assimilation %s: ibsm (%s discovery, provisional %v), %s, run %d\n", f.Name, c.discovery, c.provisional, ft.name, k+1)
			run, err := ibsmRun(f, r, smNode, ft)
			if err != nil {
				run.Error = err.Error()
				fmt.Fprintf(o.Log, "assimilation %s: ibsm: %s: %v\n", f.Name, ft.name, err)
			}
			runs = append(runs, run)
			if err := ft.undo(); err != nil {
				return append(sides, side(runs, o.probeInterval())), fmt.Errorf("undoing %s: %w", ft.name, err)
			}
			if err := waitSettled(f, nil, time.Minute); err != nil {
				return append(sides, side(runs, o.probeInterval())), fmt.Errorf("after undoing %s under ibsm: %w", ft.name, err)
			}
		}
		sides = append(sides, side(runs, o.probeInterval()))
	}
	return sides, nil
}

// makeFaults picks the link to cut and the switch to kill.
func makeFaults(f *fabric, smNode string) ([]benchFault, error) {
	l, ok := f.Topo.CycleLink(smNode)
	if !ok {
		return nil, errors.New("no switch link on a cycle away from the SM's switch")
	}
	victim, ok := f.Topo.Victim(smNode, nil)
	if !ok {
		return nil, errors.New("no switch with hosts away from the SM's")
	}
	la := f.Topo.Node(l.A.Node).Name
	return []benchFault{
		{name: "link " + portName(f.Topo, l.A) + "-" + portName(f.Topo, l.B),
			apply:  func() error { return harness.SetLink(f.Name, la, l.A.Port, false) },
			undo:   func() error { return harness.SetLink(f.Name, la, l.A.Port, true) },
			damage: &topologies.Damage{Cut: []topologies.Link{l}}},
		{name: "switch " + victim,
			apply: func() error { return harness.Kill(f.Name, victim) },
			undo: func() error {
				_, _, err := harness.Restart(f.Name, victim, 0)
				return err
			},
			damage: &topologies.Damage{Dead: map[string]bool{victim: true}}},
	}, nil
}

// side summarizes runs: the medians of those without error.
func side(runs []FaultRun, interval time.Duration) SMSide {
	s := SMSide{Runs: runs}
	var dp, rep, smps []float64
	for _, r := range runs {
		if r.Error == "" {
			dp, rep, smps = append(dp, r.MsDataPlane), append(rep, r.MsSMReported), append(smps, float64(r.SMPs))
		}
	}
	s.MsDataPlane, s.MsSMReported, s.SMPs = median(dp), median(rep), median(smps)
	s.DataPlaneSpread = spread(dp, ms(outageIntervals*interval))
	return s
}

// spread is max/min of xs, each floored at floor (nil for none).
func spread(xs []float64, floor float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	r := max(slices.Max(xs), floor) / max(slices.Min(xs), floor)
	return &r
}

// ratiosTo is ibsm's side of configuration c with its ratios to OpenSM's.
func ratiosTo(osm, s SMSide, c ibsmConfig) IBSMSide {
	out := IBSMSide{Discovery: c.discovery, Provisional: c.provisional, SMSide: s}
	out.RatioDataPlane = ratioOf(s.MsDataPlane, osm.MsDataPlane)
	out.RatioSMReported = ratioOf(s.MsSMReported, osm.MsSMReported)
	out.RatioSMPs = ratioOf(s.SMPs, osm.SMPs)
	if s.MsDataPlane != nil && s.MsSMReported != nil {
		b := max(*s.MsDataPlane-*s.MsSMReported, 0)
		out.MsBeyondAccount = &b
	}
	return out
}

// ratioOf is a/b when both are there and it is a measurement.
func ratioOf(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	r, ok := goal.Ratio(*a, *b)
	if !ok {
		return nil
	}
	return &r
}

// median returns the median of xs, nil for none.
func median(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Sorted(slices.Values(xs))
	m := (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	return &m
}

// madsIn returns the MADs the SM's HCA took from its attach clients.
func madsIn(f *fabric, node string) (uint64, error) {
	s, err := f.node(node)
	if err != nil || s.Sim == nil {
		return 0, err
	}
	return s.Sim.MADsIn, nil
}

// smIdle is how long an SM must have sent nothing for before a fault: a
// fault that comes while the SM is still busy (with the last undoing, or
// the sweep after its own activation of the ports) meets a pass half done.
const smIdle = 500 * time.Millisecond

// waitSMIdle waits, up to 30 s, until the SM at node has sent no MAD for
// smIdle.
func waitSMIdle(f *fabric, node string) error {
	last, err := madsIn(f, node)
	if err != nil {
		return err
	}
	since := time.Now()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		n, err := madsIn(f, node)
		if err != nil {
			return err
		}
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= smIdle {
			return nil
		}
	}
	return errors.New("the SM did not go idle within 30 s")
}

// waitSettled waits until the fabric is as d makes it.
func waitSettled(f *fabric, d *topologies.Damage, timeout time.Duration) error {
	why := ""
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		st, err := f.status()
		if err != nil {
			return err
		}
		var ok bool
		if ok, why = st.Settled(f.Topo, d); ok {
			return nil
		}
	}
	return fmt.Errorf("not settled after %v: %s", timeout, why)
}

// quiet is how long a fabric must stay settled, with no new SM pass, for
// the reaction to a fault to count as over.
const quiet = time.Second

// statusEvery is how often the reaction is looked at once a pass is in. A
// look asks every node process for its status (and the probed hosts for
// their records); at 50 ms those calls took enough CPU from a 64-process
// fabric on 2 cores that probes sat 40 ms on their way a second after the
// fault, long after ibsm's tables were in, and counted as outages (the
// receivers' records keep each gap, so a slower look loses nothing).
const statusEvery = 250 * time.Millisecond

// measure applies ft with probes running between the surviving hosts and
// waits until the SM's reaction is over: lastPass says when the SM's
// last pass ended (false: none yet). The fabric's status is asked for only
// once a pass is in: a status calls on every node process, which takes
// CPU from the switches forwarding the SM's SMPs.
func measure(f *fabric, smNode string, ft benchFault, lastPass func() (time.Time, bool)) (run FaultRun, t0 time.Time, err error) {
	if err := waitSMIdle(f, smNode); err != nil {
		return run, t0, err
	}
	pr, err := startProbe(f, faultPairs(f.Topo, f.Topo.Reachable(smNode, ft.damage), ft.damage), ft.probe)
	if err != nil {
		return run, t0, err
	}
	defer pr.stop()
	time.Sleep(4 * pr.outage()) // every pair heard before the fault
	if err := pr.arm(); err != nil {
		return run, t0, err
	}
	pr.armEvidence()
	mads0, err := madsIn(f, smNode)
	if err != nil {
		return run, t0, err
	}
	t0 = time.Now()
	if err := ft.apply(); err != nil {
		return run, t0, fmt.Errorf("applying the fault: %w", err)
	}
	var seen, since time.Time
	why := "no SM pass"
	for end := time.Now().Add(90 * time.Second); ; time.Sleep(statusEvery) {
		if time.Now().After(end) {
			return run, t0, fmt.Errorf("the SM's reaction, then quiet: not after 90 s: %s", why)
		}
		pass, ok := lastPass()
		if !ok {
			continue
		}
		dark, err := pr.read(t0.UnixNano())
		if err != nil {
			return run, t0, err
		}
		st, err := f.status()
		if err != nil {
			return run, t0, err
		}
		if len(dark) > 0 {
			pr.sampleHeld(st)
		}
		settledNow, w := st.Settled(f.Topo, ft.damage)
		switch {
		case !settledNow:
			why = w
		case len(dark) > 0:
			why = "pairs not delivering: " + describePairs(dark)
		}
		if !settledNow || len(dark) > 0 || !pass.Equal(seen) {
			seen, since = pass, time.Time{}
			continue
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) >= quiet {
			break
		}
	}
	run.MsSettled = ms(seen.Sub(t0))
	run.MsDataPlane, run.PairsInterrupted = pr.outcome(t0)
	run.attribute(pr, t0, ft.name)
	mads, err := madsIn(f, smNode)
	run.SMPs = mads - mads0
	return run, t0, err
}

// ibsmRun applies ft under the running ibsm and measures its reaction.
func ibsmRun(f *fabric, r *smRun, smNode string, ft benchFault) (FaultRun, error) {
	n0 := r.count()
	run, t0, err := measure(f, smNode, ft, func() (time.Time, bool) {
		rs, at := r.since(n0), r.arrivals(n0)
		if len(rs) == 0 || !rs[len(rs)-1].SubnetUp {
			return time.Time{}, false
		}
		return at[len(at)-1], true
	})
	if err != nil {
		return run, err
	}
	rs, at := r.since(n0), r.arrivals(n0)
	run.Passes = len(rs)
	run.Timeline = append(run.Timeline, ibsmTimeline(rs, at, t0)...)
	sortTimeline(run.Timeline)
	for i, res := range rs {
		if !res.SubnetUp {
			continue
		}
		// The pass's start, plus its own time to connectivity.
		start := ms(at[i].Sub(t0)) - res.MsTotal
		run.MsSMReported = start + res.MsTotal
		if res.MsToConnectivity != nil {
			run.MsSMReported = start + *res.MsToConnectivity
		}
	}
	return run, nil
}

// opensmRun starts a new OpenSM daemon at smNode, waits for the subnet to
// be up and settled, applies ft and measures the reaction; it stops
// OpenSM before returning.
func opensmRun(f *fabric, smNode string, ft benchFault) (FaultRun, error) {
	var run FaultRun
	dir, err := os.MkdirTemp("", "ibfab-bench-opensm-")
	if err != nil {
		return run, err
	}
	defer os.RemoveAll(dir)
	args, err := opensmUpdnArgs(f.Topo, smNode, dir)
	if err != nil {
		return run, err
	}
	env, err := harness.UMADEnv("")
	if err != nil {
		return run, err
	}
	d, err := opensmrun.StartDaemon(opensmrun.Options{NS: fabricnet.Namespace(f.Name, smNode), Env: env, Dir: dir, Args: args})
	if err != nil {
		return run, err
	}
	defer d.Stop()
	if err := waitLog(d, 0, time.Minute, "SUBNET UP"); err != nil {
		return run, err
	}
	if text, _ := d.LogText(0); opensmrun.UpdnFellBack(text) {
		return run, errors.New("OpenSM's updn found no root and fell back to minhop")
	}
	if err := waitSettled(f, nil, time.Minute); err != nil {
		return run, err
	}
	text, err := d.LogText(0)
	if err != nil {
		return run, err
	}
	from := len(text)
	var last time.Time
	run, t0, err := measure(f, smNode, ft, func() (time.Time, bool) {
		text, _ := d.LogText(from)
		ups := subnetUps(text, time.Now())
		if len(ups) == 0 {
			return time.Time{}, false
		}
		run.Passes = len(ups)
		last = ups[len(ups)-1]
		return last, true
	})
	if err != nil {
		return run, err
	}
	text, _ = d.LogText(from)
	ups := subnetUps(text, time.Now())
	run.Passes = len(ups)
	run.Timeline = append(run.Timeline, opensmTimeline(ups, t0)...)
	sortTimeline(run.Timeline)
	// OpenSM's routes are final at each SUBNET UP.
	run.MsSMReported = ms(last.Sub(t0))
	return run, nil
}

// opensmUpdnArgs roots OpenSM's updn where ibsm's up*/down* is rooted, the
// SM's switch: without a root OpenSM's updn finds none on a network with a
// host at every switch and falls back to minhop.
func opensmUpdnArgs(topo *topologies.Topology, smNode, dir string) ([]string, error) {
	roots := filepath.Join(dir, "root.guids")
	smIdx, _ := topo.Lookup(smNode)
	sf, err := routing.NewFabric(topo, smIdx, 1, 0)
	if err != nil {
		return nil, err
	}
	root, err := sf.UpdnRoot(routing.Options{})
	if err != nil {
		return nil, err
	}
	if err := opensmrun.WriteRootGUIDs(roots, topo.Node(root).GUID); err != nil {
		return nil, err
	}
	return []string{"-R", "updn", "-a", roots}, nil
}

// waitLog waits until want appears in OpenSM's log after offset from.
func waitLog(d *opensmrun.Daemon, from int, timeout time.Duration, want string) error {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if exited, err := d.Exited(); exited {
			return err
		}
		text, err := d.LogText(from)
		if err != nil {
			return err
		}
		if strings.Contains(text, want) {
			return nil
		}
	}
	return fmt.Errorf("OpenSM log: no %q within %v", want, timeout)
}
