package smfabric_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/opensmrun"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/port"
	"ibfab/sm"
	"ibfab/topologies"
)

// restoredDefinition is the measure both SMs are held to, as the JSON
// states it.
const restoredDefinition = "ms_to_restored: wall time from the fault (just before the link is set down or " +
	"the switch process killed) to the end of the SM's last table-programming pass before the fabric " +
	"settled (every port facing the fault Down, every other cabled port Active) and stayed quiet " +
	"for 1 s: for ibsm the time its last result with subnet up reached the test (in-process), for " +
	"OpenSM the time stamp of its last 'SUBNET UP' log line; connectivity is then checked with UD " +
	"traffic between sampled pairs of the surviving hosts. ms_to_connectivity: from the fault to the " +
	"moment every switch holds a verified, connected route set again: for ibsm the start of its last " +
	"pass with subnet up plus that pass's own ms_to_connectivity (with provisional routes, when the " +
	"provisional tables are in; the definitive ones follow on the same up*/down* graph), for OpenSM " +
	"the same as ms_to_restored (its routes are final at each SUBNET UP). The goal (ratio <= 0.2) is " +
	"judged on ms_to_connectivity of ibsm's improved mechanism (partial discovery, provisional routes). " +
	"smps: MADs the SM's HCA took from the SM (the attach point's mads_in) over the same span, for both. " +
	"ms_apply: how long applying the fault took (harness.SetLink or harness.Kill, fabric state read " +
	"included); the fault itself happens within it."

// quiet is how long a fabric must stay settled, with no new SM pass, for
// the reaction to a fault to count as over.
const quiet = time.Second

// BenchmarkAssimilation measures ibsm's change assimilation against
// OpenSM's reaction to the same fault on the soft fabric, and writes JSON
// to $IBFAB_BENCH_OUT (default out/bench/assimilation.json at the module
// root). The networks: irregular ones of 8, 16 and 32 switches with one
// host each (IBFAB_BENCH_SIZES=8,16 picks sizes, "none" none;
// IBFAB_BENCH_64=1 adds 64), and with IBFAB_BENCH_FATTREE=1 (or 432) a fat
// tree of 432 hosts (144: one of 144). On each, each SM in turn, at the host of the first switch,
// meets a link cut between two switches and the kill of a switch with
// hosts (each undone before the next): ibsm with partial or full discovery, with
// provisional routes or FERa's directly, and OpenSM as a daemon. Each
// ibsm figure comes with its ratio to OpenSM's (goal: time to restored
// connectivity ≤ 0.2× OpenSM's). It runs once whatever b.N is.
func BenchmarkAssimilation(b *testing.B) {
	fabrictest.RequireRoot(b)
	sizes := []int{8, 16, 32}
	if os.Getenv("IBFAB_BENCH_64") == "1" {
		sizes = append(sizes, 64)
	}
	if v := os.Getenv("IBFAB_BENCH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			if f == "none" { // the fat tree alone
				continue
			}
			n, err := strconv.Atoi(f)
			require.NoError(b, err, "IBFAB_BENCH_SIZES=%q", v)
			sizes = append(sizes, n)
		}
	}
	res := map[string]any{"date": time.Now().UTC().Format(time.RFC3339), "definition": restoredDefinition,
		"goal_ratio_time": 0.2}
	type net struct {
		name string
		make func() (*topologies.Topology, error)
	}
	var nets []net
	for _, n := range sizes {
		nets = append(nets, net{fmt.Sprintf("irregular%d", n), func() (*topologies.Topology, error) {
			return topologies.Irregular(n, 4, 1, 1)
		}})
	}
	switch os.Getenv("IBFAB_BENCH_FATTREE") {
	case "1", "432":
		// 24 leaves of 18 hosts under 12 spines: 432 hosts, 468 processes.
		nets = append(nets, net{"fattree432", func() (*topologies.Topology, error) { return topologies.FatTree(24, 12, 18) }})
	case "144": // 12 leaves of 12 hosts under 6 spines, for a quicker look
		nets = append(nets, net{"fattree144", func() (*topologies.Topology, error) { return topologies.FatTree(12, 6, 12) }})
	}
	// The goal is the thesis's improved mechanism's (partial discovery,
	// provisional routes); the other configurations are its baselines.
	out := os.Getenv("IBFAB_BENCH_OUT")
	if out == "" {
		out = filepath.Join("..", "..", "out", "bench", "assimilation.json")
	}
	require.NoError(b, os.MkdirAll(filepath.Dir(out), 0o755))
	write := func() {
		j, err := json.MarshalIndent(res, "", "  ")
		require.NoError(b, err)
		require.NoError(b, os.WriteFile(out, append(j, '\n'), 0o644))
	}
	var fabrics []map[string]any
	met, worst, worstImproved, worstConn := true, 0.0, 0.0, 0.0
	for _, nt := range nets {
		topo, err := nt.make()
		require.NoError(b, err)
		fr := benchFabric(b, nt.name, topo)
		fabrics = append(fabrics, fr)
		res["fabrics"] = fabrics
		write() // a later network's failure keeps this one's figures
		for _, fault := range fr["faults"].([]map[string]any) {
			for _, c := range fault["ibsm"].([]map[string]any) {
				r, ok := c["ratio_time_vs_opensm"].(float64)
				if !ok {
					continue
				}
				worst = max(worst, r)
				if c["discovery"] == sm.DiscoveryPartial && c["provisional"] == true {
					rc := c["ratio_connectivity_vs_opensm"].(float64)
					worstImproved, worstConn = max(worstImproved, r), max(worstConn, rc)
					met = met && rc <= 0.2
				}
			}
		}
	}
	res["fabrics"] = fabrics
	res["goal_config"] = "partial discovery, provisional routes"
	res["worst_ratio_time"] = worst
	res["worst_ratio_time_goal_config"] = worstImproved
	res["worst_ratio_connectivity_goal_config"] = worstConn
	res["goal_met"] = met
	b.ReportMetric(worstConn, "worst_connectivity/opensm")
	b.ReportMetric(worstImproved, "worst_time/opensm")
	write()
	b.Logf("wrote %s", out)
}

// ibsmConfig is one ibsm configuration of the benchmark.
type ibsmConfig struct {
	discovery   sm.Discovery
	provisional bool
}

var benchConfigs = []ibsmConfig{
	{sm.DiscoveryPartial, false}, {sm.DiscoveryPartial, true},
	{sm.DiscoveryFull, false}, {sm.DiscoveryFull, true},
}

// benchFault is a fault and its undoing.
type benchFault struct {
	name        string
	apply, undo func()
	damage      *damage
}

// benchFabric runs every SM against both faults on network topo, the SM
// at its first node's host.
func benchFabric(b *testing.B, name string, topo *topologies.Topology) map[string]any {
	smNode := topo.Node(0).Name
	if topo.Node(0).Type == topologies.Switch {
		smNode = hostsOf(topo, smNode)[0]
	}
	f := fabrictest.Up(b, fmt.Sprintf("ba%d", topo.NumNodes()), topo, harness.UpOptions{Timeout: 10 * time.Minute})
	l := pickLink(b, topo, smNode)
	victim := pickVictim(b, topo, smNode, &damage{})
	la := topo.Node(l.a.Node).Name
	faults := []benchFault{
		{name: "link " + fabrictest.PortName(topo, l.a) + "-" + fabrictest.PortName(topo, l.b),
			apply:  func() { require.NoError(b, harness.SetLink(f.Name, la, l.a.Port, false)) },
			undo:   func() { require.NoError(b, harness.SetLink(f.Name, la, l.a.Port, true)) },
			damage: &damage{cut: []link{l}}},
		{name: "switch " + victim,
			apply: func() { require.NoError(b, harness.Kill(f.Name, victim)) },
			undo: func() {
				_, _, err := harness.Restart(f.Name, victim, 0)
				require.NoError(b, err)
			},
			damage: &damage{dead: map[string]bool{victim: true}}},
	}
	fr := map[string]any{"network": name, "switches": topo.Count(topologies.Switch), "hosts": len(f.Hosts()), "sm_node": smNode}
	results := make([]map[string]any, len(faults))
	for i, ft := range faults {
		results[i] = map[string]any{"fault": ft.name,
			"surviving_hosts": len(reachable(topo, smNode, ft.damage))}
	}
	// OpenSM first, on the fresh fabric, a new daemon for each fault: our
	// switches do not bring OpenSM back to a link that trains again (the
	// undone cut stays in Init), while a new OpenSM's first sweep
	// activates it.
	runs := benchRuns(b)
	// up*/down*, as ibsm's: OpenSM's default minhop is not deadlock-free
	// on irregular networks, and locked one. Rooted where ibsm's is (the
	// SM's switch, Fabric.UpdnRoot): without a root OpenSM's updn looks
	// for switches whose hosts are all at one distance, finds none on a
	// network with a host at every switch, and falls back to minhop ("no
	// root nodes were found").
	roots := filepath.Join(b.TempDir(), "root.guids")
	smIdx, _ := topo.Lookup(smNode)
	sf, err := sm.NewFabric(topo, smIdx, 1, 0)
	require.NoError(b, err)
	root, err := sf.UpdnRoot(sm.RoutingOptions{})
	require.NoError(b, err)
	require.NoError(b, opensmrun.WriteRootGUIDs(roots, topo.Node(root).GUID))
	for i, ft := range faults {
		var ms []map[string]any
		for range runs {
			o := f.StartOpenSM(smNode, "-R", "updn", "-a", roots)
			o.WaitLog(b, 60*time.Second, 0, "SUBNET UP")
			require.False(b, opensmrun.UpdnFellBack(o.LogText(b, 0)), "OpenSM's updn found no root and fell back to minhop")
			waitSettled(b, f, &damage{})
			ms = append(ms, measureOpenSM(b, f, o, smNode, ft))
			require.NoError(b, o.D.Stop())
			ft.undo()
		}
		results[i]["opensm"] = medians(ms)
	}
	// ibsm under each configuration; it takes each undoing in too.
	ibsmRuns := make([][]map[string]any, len(faults))
	for _, c := range benchConfigs {
		// PreBlock as ibsm's daemon has it by default: the cut-node
		// blocks of the graph in place are set once the subnet is up,
		// not on the first fault measured.
		cfg := sm.Config{Routing: "updn-fera", Discovery: c.discovery, Provisional: c.provisional, PreBlock: true}
		r := startSMUnchecked(b, f, smNode, cfg)
		waitSettled(b, f, &damage{})
		for i, ft := range faults {
			var ms []map[string]any
			for range runs {
				b.Logf("%s: ibsm, %s discovery, provisional %v: %s", f.Name, c.discovery, c.provisional, ft.name)
				ms = append(ms, measureIbsm(b, f, r, smNode, ft))
				ft.undo()
				waitSettled(b, f, &damage{})
			}
			m := medians(ms)
			m["discovery"], m["provisional"] = c.discovery, c.provisional
			ibsmRuns[i] = append(ibsmRuns[i], m)
		}
		r.stop()
	}
	for i := range faults {
		om := results[i]["opensm"].(map[string]any)
		for _, m := range ibsmRuns[i] {
			m["ratio_time_vs_opensm"] = m["ms_to_restored"].(float64) / om["ms_to_restored"].(float64)
			m["ratio_connectivity_vs_opensm"] = m["ms_to_connectivity"].(float64) / om["ms_to_connectivity"].(float64)
			m["ratio_smps_vs_opensm"] = float64(m["smps"].(uint64)) / float64(om["smps"].(uint64))
		}
		results[i]["ibsm"] = ibsmRuns[i]
	}
	fr["faults"] = results
	return fr
}

// benchRuns is how often each SM meets each fault: $IBFAB_BENCH_RUNS,
// default 3.
func benchRuns(b *testing.B) int {
	v := os.Getenv("IBFAB_BENCH_RUNS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	require.NoError(b, err, "IBFAB_BENCH_RUNS=%q", v)
	require.Positive(b, n, "IBFAB_BENCH_RUNS")
	return n
}

// medians summarizes runs: the median time to restored connectivity and
// median SMPs, and every run.
func medians(runs []map[string]any) map[string]any {
	var t, c []float64
	var n []uint64
	for _, r := range runs {
		t = append(t, r["ms_to_restored"].(float64))
		c = append(c, r["ms_to_connectivity"].(float64))
		n = append(n, r["smps"].(uint64))
	}
	slices.Sort(t)
	slices.Sort(c)
	slices.Sort(n)
	return map[string]any{"ms_to_restored": t[len(t)/2], "ms_to_connectivity": c[len(c)/2], "smps": n[len(n)/2], "runs": runs}
}

// madsIn returns the MADs the SM's HCA took from its attach clients.
func madsIn(f *fabrictest.Fabric, node string) uint64 {
	if s := f.Node(node).Sim; s != nil {
		return s.MADsIn
	}
	return 0
}

// waitTrapsRepressed waits, up to 10 s, until no switch has a trap
// outstanding: a change while one is (the undoing of the last fault,
// reported while no SM listened) raises no trap of its own, and the SM
// would learn of it only at the trap's next repeat, seconds later. It
// returns the switches whose trap is still outstanding, for the record:
// OpenSM was seen leaving a restarted switch's trap unrepressed.
func waitTrapsRepressed(f *fabrictest.Fabric) []string {
	var waiting []string
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		waiting = waiting[:0]
		for _, n := range f.Status().Nodes {
			if n.Agent != nil && n.Agent.TrapOutstanding {
				waiting = append(waiting, n.Name)
			}
		}
		if len(waiting) == 0 || time.Now().After(end) {
			return waiting
		}
	}
}

// smIdle is how long an SM must have sent nothing for before a fault.
const smIdle = 500 * time.Millisecond

// waitSMIdle waits, up to 30 s, until the SM at node has sent no MAD for
// smIdle, and reports whether it did. A fault that comes while the SM is
// still busy (with the last fault's undoing, or with the sweep that
// followed its own activation of the ports, as OpenSM's does) meets a
// pass half done: OpenSM sent SMPs through the cut link as it went,
// waited out their timeouts, and took 250-470 ms instead of 40-70 in
// 2 runs of 6.
func waitSMIdle(f *fabrictest.Fabric, node string) bool {
	last, since := madsIn(f, node), time.Now()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n := madsIn(f, node); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= smIdle {
			return true
		}
	}
	return false
}

// measureIbsm applies ft under the running ibsm and measures its reaction.
func measureIbsm(b *testing.B, f *fabrictest.Fabric, r *smRun, smNode string, ft benchFault) map[string]any {
	unrepressed := waitTrapsRepressed(f)
	idle := waitSMIdle(f, smNode)
	vl15 := vl15Drops(f)
	n0, mads0 := r.count(), madsIn(f, smNode)
	t0 := time.Now()
	ft.apply()
	applied := ms(time.Since(t0))
	var last time.Time
	waitQuiet(b, f, ft.damage, func() (time.Time, bool) {
		rs, at := r.since(n0), r.arrivals(n0)
		if len(rs) == 0 || !rs[len(rs)-1].SubnetUp {
			return time.Time{}, false
		}
		last = at[len(at)-1]
		return last, true
	})
	mads := madsIn(f, smNode) - mads0
	rs := r.since(n0)
	var smps uint64
	var passes []map[string]any
	connected := 0.0
	at := r.arrivals(n0)
	for i, res := range rs {
		smps += res.SMPsTotal
		// From the fault to the pass's start: detection's latency.
		start := ms(at[i].Sub(t0)) - res.MsTotal
		if res.SubnetUp {
			// The pass's start, plus its own time to connectivity (the
			// provisional tables', with provisional routes).
			connected = start + res.MsTotal
			if res.MsToConnectivity != nil {
				connected = start + *res.MsToConnectivity
			}
		}
		p := map[string]any{"event": res.Event, "trigger": res.Trigger, "subnet_up": res.SubnetUp,
			"ms_total": res.MsTotal, "smps": res.SMPsTotal, "phases": res.Phases, "ms_fault_to_start": start}
		if res.MsToConnectivity != nil {
			p["ms_to_connectivity"] = *res.MsToConnectivity
		}
		if !res.SubnetUp {
			p["reason"] = res.Reason
		}
		for k, v := range map[string][]string{"problems": res.Problems, "warnings": res.Warnings, "changes": res.Changes} {
			if len(v) > 0 {
				p[k] = v[:min(len(v), 8)]
			}
		}
		if res.SL2VLSets > 0 {
			p["sl2vl_sets"] = res.SL2VLSets
		}
		if res.PortsDeactivated > 0 {
			p["ports_deactivated"] = res.PortsDeactivated
		}
		p["timeouts"], p["window_min"] = res.Timeouts, res.WindowMin
		passes = append(passes, p)
	}
	lost := map[string]uint64{}
	for k, v := range vl15Drops(f) {
		if d := v - vl15[k]; d > 0 {
			lost[k] = d
		}
	}
	checkSurvivors(f, smNode, ft.damage)
	return map[string]any{"ms_to_restored": ms(last.Sub(t0)), "ms_to_connectivity": connected,
		"smps": mads, "sm_smps": smps, "passes": passes, "traps_outstanding_at_fault": unrepressed,
		"sm_idle_at_fault": idle, "vl15_overflow": lost, "ms_apply": applied}
}

// vl15Drops returns each port's VL15 overflow drops, by "node[port]": the
// SMPs a burst lost at a busy switch, which the SM resends only after its
// timeout.
func vl15Drops(f *fabrictest.Fabric) map[string]uint64 {
	m := map[string]uint64{}
	for _, n := range f.Status().Nodes {
		for _, p := range n.Ports {
			if v := p.Drops[port.DropVL15Overflow.String()]; v > 0 {
				m[fmt.Sprintf("%s[%d]", n.Name, p.Port)] = v
			}
		}
	}
	return m
}

// measureOpenSM applies ft under the running OpenSM and measures its
// reaction from its log.
func measureOpenSM(b *testing.B, f *fabrictest.Fabric, o *fabrictest.OpenSM, smNode string, ft benchFault) map[string]any {
	b.Logf("%s: OpenSM: %s", f.Name, ft.name)
	unrepressed := waitTrapsRepressed(f)
	idle := waitSMIdle(f, smNode)
	from, mads0 := len(o.LogText(b, 0)), madsIn(f, smNode)
	t0 := time.Now()
	ft.apply()
	applied := ms(time.Since(t0))
	var last time.Time
	passes := 0
	waitQuiet(b, f, ft.damage, func() (time.Time, bool) {
		ups := subnetUps(o.LogText(b, from), time.Now().Year())
		if len(ups) == 0 {
			return time.Time{}, false
		}
		last, passes = ups[len(ups)-1], len(ups)
		return last, true
	})
	mads := madsIn(f, smNode) - mads0
	checkSurvivors(f, smNode, ft.damage)
	// OpenSM's routes are final at each SUBNET UP: connectivity is back
	// when it has settled.
	return map[string]any{"ms_to_restored": ms(last.Sub(t0)), "ms_to_connectivity": ms(last.Sub(t0)),
		"smps": mads, "passes": passes, "traps_outstanding_at_fault": unrepressed, "sm_idle_at_fault": idle, "ms_apply": applied}
}

// waitQuiet waits until the SM has made a pass (lastPass says when its
// last one ended) and the fabric is settled as d makes it, with neither
// changing for quiet. The fabric's status is asked for only once a pass
// is in: a status calls on every node process, and every 10 ms through
// the SM's reaction it took CPU from the switches forwarding its SMPs
// (the reaction measured is then the fabric's under the bench's load).
func waitQuiet(b *testing.B, f *fabrictest.Fabric, d *damage, lastPass func() (time.Time, bool)) {
	b.Helper()
	var since time.Time
	var seen time.Time
	var why string
	var passed bool
	defer func() {
		if b.Failed() {
			b.Logf("SM pass seen: %v; last unsettled port: %s", passed, why)
		}
	}()
	fabrictest.Wait(b, 90*time.Second, "the SM's reaction, then quiet", func() bool {
		pass, ok := lastPass()
		passed = passed || ok
		if !ok {
			return false
		}
		var settledNow bool
		settledNow, why = settled(f, f.Status(), d)
		if !ok || !settledNow || !pass.Equal(seen) {
			seen, since = pass, time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= quiet
	})
}

// checkSurvivors runs UD traffic between sampled pairs of the hosts still
// connected to the SM: each to its next and to the one half-way round.
func checkSurvivors(f *fabrictest.Fabric, smNode string, d *damage) {
	hosts := reachable(f.Topo, smNode, d)
	// At most maxChecked, evenly spaced (every 14th of the fat tree's
	// 432): the check polls each host in turn, and 432 processes' worth
	// of calls per poll, on two cores, took over a minute a round.
	if stride := len(hosts)/maxChecked + 1; stride > 1 {
		var sample []string
		for i := 0; i < len(hosts); i += stride {
			sample = append(sample, hosts[i])
		}
		hosts = sample
	}
	rounds := []int{1}
	if len(hosts) > 3 {
		rounds = append(rounds, len(hosts)/2)
	}
	f.CheckPairs(hosts, rounds)
}

// maxChecked is the most surviving hosts checkSurvivors sends between.
const maxChecked = 32

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// subnetUps returns the time stamps of OpenSM's "SUBNET UP" log lines in
// text ("Nov 25 11:49:36 890272 [4E1BC6C0] 0x02 -> SUBNET UP": local time,
// microseconds; the year is taken as year's).
func subnetUps(text string, year int) []time.Time {
	var out []time.Time
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.Contains(sc.Text(), "SUBNET UP") {
			continue
		}
		t, err := time.ParseInLocation("Jan 2 15:04:05", strings.Join(f[:3], " "), time.Local)
		if err != nil {
			continue
		}
		us, err := strconv.Atoi(f[3])
		if err != nil || us < 0 || us >= 1e6 {
			continue
		}
		out = append(out, t.AddDate(year, 0, 0).Add(time.Duration(us)*time.Microsecond))
	}
	return out
}
