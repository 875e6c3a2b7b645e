package harness_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/ibsimrun"
	"ibfab/internal/opensmrun"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/topologies"
)

// BenchmarkOpenSMFabricVsIbsim runs Debian's OpenSM (--once) on our fabric
// and on ibsim loaded from the same topology, several times each on a fresh
// fabric and simulator, alternating which goes first, and writes the
// medians and their ratios fabric/ibsim as JSON to $IBFAB_BENCH_OUT
// (default out/bench/opensm.json at the module root): the time to SUBNET
// UP and the SMPs that left the SM's port. $IBFAB_OPENSM_NETS picks the
// networks (comma-separated names of opensmNets; default all) and
// $IBFAB_OPENSM_RUNS the runs of each (default 5).
//
// Both sides run the same code (package opensmrun): OpenSM is exec'd in
// the namespace of the SM's port with libumad2sim preloaded, its times come
// from its own log, and the SMP count is PortXmitPkts of its port read with
// perfquery after it exited. It runs once whatever b.N is.
func BenchmarkOpenSMFabricVsIbsim(b *testing.B) {
	fabrictest.RequireRoot(b)
	runs := 5
	if s := os.Getenv("IBFAB_OPENSM_RUNS"); s != "" {
		_, err := fmt.Sscan(s, &runs)
		require.NoError(b, err, "IBFAB_OPENSM_RUNS")
		require.Positive(b, runs, "IBFAB_OPENSM_RUNS")
	}
	nets := opensmNets
	if s := os.Getenv("IBFAB_OPENSM_NETS"); s != "" {
		nets = nil
		for _, name := range strings.Split(s, ",") {
			i := slices.IndexFunc(opensmNets, func(n opensmNet) bool { return n.name == name })
			require.GreaterOrEqual(b, i, 0, "IBFAB_OPENSM_NETS: no network %q", name)
			nets = append(nets, opensmNets[i])
		}
	}
	res := map[string]any{
		"date":  time.Now().UTC().Format(time.RFC3339),
		"cpus":  runtime.NumCPU(),
		"runs":  runs,
		"notes": opensmBenchNotes,
		// Both sides share the machine with whatever else runs on it:
		// the ratios hold, the absolute times move with the load.
		"loadavg_start": loadAvg(b),
	}
	var cases []map[string]any
	for _, n := range nets {
		topo, err := n.build()
		require.NoError(b, err)
		c := opensmCase(b, n.name, topo, runs)
		cases = append(cases, c)
		if ratio, ok := c["ratio"].(map[string]float64); ok {
			for k, v := range ratio {
				b.ReportMetric(v, n.name+"_"+k+"_ratio")
			}
		}
	}
	res["networks"] = cases
	res["loadavg_end"] = loadAvg(b)

	writeBenchJSON(b, "opensm.json", res)
}

type opensmNet struct {
	name  string
	build func() (*topologies.Topology, error)
}

var opensmNets = []opensmNet{
	{"thesis8", func() (*topologies.Topology, error) { return topologies.Default(), nil }},
	{"fattree144", func() (*topologies.Topology, error) { return topologies.FatTree(12, 6, 12) }},
	{"fattree432", func() (*topologies.Topology, error) { return topologies.FatTree(24, 12, 18) }},
}

var opensmBenchNotes = []string{
	"Each run brings up a fresh fabric (ibfab processes) or a fresh ibsim from the same topology, so OpenSM always meets an unconfigured subnet; the fabric's bring-up (links training) is not timed. The side that goes first alternates between runs.",
	"OpenSM runs with --once, default options, a fresh cache directory, at the topology's first CA (the node ibsim attaches its SM port to), exec'd from a thread inside that node's namespace with libumad2sim preloaded.",
	"ms_to_up: from the exec to the time stamp of OpenSM's SUBNET UP log line; ms_sweep: OpenSM's log from Entering DISCOVERING state to SUBNET UP; ms_process: exec to exit.",
	"smps_wire: PortXmitPkts of the SM's port, read with perfquery after OpenSM exited (the simulator's PMA on ibsim, the HCA's on the fabric): every SMP that left the port, resends included; SMPs to the SM's own node do not reach the wire.",
	"fabric only: up_s is the bring-up (not timed in ms_*); mads_in is what OpenSM (and perfquery's two PMA queries, which stay local) handed the HCA's attach point; retries and timeouts are the attach point's resends of requests unanswered after 200 ms (at most 3 each, OpenSM's default transaction_retries, which the kernel's MAD layer does on hardware and libumad2sim does not pass on) and the requests handed back with ETIMEDOUT; ibsim answers every request at once. log_errors counts OpenSM's ERR lines on either side.",
	"A run that does not reach SUBNET UP (OpenSM --once exits after a sweep with errors, e.g. an SMP that timed out) is listed under failures with its first ERR lines and left out of the medians.",
	"ratio: fabric / ibsim of the medians.",
	"frames: one more run on each side, untimed, with OpenSM's frame log (-D 0x23: errors, info and frames): smps_sent is every SMP request it sent, smps_local those to its own node (not on the wire), \"sent METHOD(ATTRIBUTE)\" the count of each kind; am31 is PortInfo's extended-speed form (attribute modifier bit 31).",
	"Why smps_wire differs: OpenSM reads and writes the same attributes on both, except three kinds of SMP, all from what the devices report. With E the cabled switch external ports, S the switches and C the CAs, ibsim gets 2E - S + 2C - 1 more (thesis8: 55, fattree144: 845, as measured with the fabric's retries left out): (1) P_KeyTable Get, 2E - S: ibsim's switches report a PartitionEnforcementCap, so OpenSM reads two P_Key blocks of each external port; ours enforce no partitions on external ports (cap 0: none), but report PartitionCap 64 at port 0 (ibsim 32), one more block per switch. (2) PortInfo Set in the extended-speed form (attribute modifier bit 31), E + C - 1: ibsim's ports report extended link speeds, ours (4x SDR) do not. (3) Plain PortInfo Set, E - C more on the fabric: our ports come out of reset with OperationalVLs 1 (VL0), OpenSM wants 4 (VL0-7), so every switch-to-switch port needs a Set; ibsim's start at their VLCap.",
	"OpenSM's first Set to each CA port on the fabric has PortState Down: to change OperationalVLs from 1 to 4 it resets the port state machine (IBA 7.2.7), so every CA link retrains during the sweep; ibsim's CA ports get a Set without a state change. Same count.",
	"Why ms_* differ: OpenSM keeps at most 4 SMPs on the wire (max_wire_smps), so its sweep time is about its SMP count over 4 times an SMP's round trip; on the fabric that is real processes and links, one scheduler wake-up or more per hop, on ibsim a function call. The fabric's processes share the machine's cores with everything else (loadavg_*): its times grow with the load, and an SMP that gets no answer within 200 ms four times over fails the sweep (failures).",
}

// opensmCase runs OpenSM runs times on each side.
func opensmCase(b *testing.B, name string, topo *topologies.Topology, runs int) map[string]any {
	smNode := firstHost(topo)
	require.NotEmpty(b, smNode, "%s has no CA", name)
	sides := map[string]*opensmSide{"fabric": {}, "ibsim": {}}
	for i := range runs {
		for k, side := range [2]string{"fabric", "ibsim"} {
			if i%2 == 1 {
				side = [2]string{"ibsim", "fabric"}[k]
			}
			var r map[string]float64
			var fail map[string]any
			if side == "fabric" {
				r, fail = opensmOnFabric(b, fmt.Sprintf("osmb%d", 2*i+k), topo, smNode)
			} else {
				r, fail = opensmOnIbsim(b, topo)
			}
			st := sides[side]
			if fail != nil {
				fail["run"] = i + 1
				st.Failures = append(st.Failures, fail)
				b.Logf("%s run %d %s: %v", name, i+1, side, fail["error"])
				continue
			}
			st.Runs = append(st.Runs, r)
			b.Logf("%s run %d %s: up in %.1f ms (sweep %.1f ms), %.0f SMPs on the wire", name, i+1, side, r["ms_to_up"], r["ms_sweep"], r["smps_wire"])
		}
	}
	c := map[string]any{
		"network":  name,
		"nodes":    topo.NumNodes(),
		"switches": topo.Count(topologies.Switch),
		"hcas":     topo.Count(topologies.CA),
		"sm_node":  smNode,
		"fabric":   sides["fabric"],
		"ibsim":    sides["ibsim"],
	}
	// One more run each, untimed, with OpenSM dumping every SMP (-D 0x23:
	// errors, info with SUBNET UP, frames): what it sent, by attribute.
	frames := map[string]any{}
	for _, side := range []string{"fabric", "ibsim"} {
		var r map[string]float64
		var fail map[string]any
		if side == "fabric" {
			r, fail = opensmOnFabric(b, "osmbf", topo, smNode, "-D", "0x23")
		} else {
			r, fail = opensmOnIbsim(b, topo, "-D", "0x23")
		}
		if fail != nil {
			frames[side] = fail
			continue
		}
		frames[side] = r
	}
	c["frames"] = frames
	fab, sim := sides["fabric"], sides["ibsim"]
	if len(fab.Runs) == 0 || len(sim.Runs) == 0 {
		return c // no ratio without a run on both sides; the failures say why
	}
	fab.Median, sim.Median = medians(fab.Runs), medians(sim.Runs)
	ratio := map[string]float64{}
	for _, k := range []string{"ms_to_up", "ms_sweep", "ms_process", "smps_wire"} {
		ratio[k] = math.Round(fab.Median[k]/sim.Median[k]*1e4) / 1e4
	}
	c["ratio"] = ratio
	return c
}

// opensmSide is one side's runs: the figures of those that reached SUBNET
// UP, and why the others did not.
type opensmSide struct {
	Median   map[string]float64   `json:"median,omitempty"`
	Runs     []map[string]float64 `json:"runs"`
	Failures []map[string]any     `json:"failures,omitempty"`
}

// medians returns the median of each figure over runs.
func medians(runs []map[string]float64) map[string]float64 {
	m := map[string]float64{}
	for k := range runs[0] {
		var xs []float64
		for _, r := range runs {
			xs = append(xs, r[k])
		}
		s := slices.Sorted(slices.Values(xs))
		m[k] = (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	}
	return m
}

// opensmOnce runs OpenSM in namespace ns and then perfquery at its port.
// A run that does not reach SUBNET UP is a failure, not an error: it
// returns the error and OpenSM's ERR lines.
func opensmOnce(b *testing.B, ns string, env, args []string) (map[string]float64, map[string]any) {
	dir := b.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r, err := opensmrun.Once(ctx, opensmrun.Options{NS: ns, Env: env, Dir: dir, Args: args})
	log, _ := os.ReadFile(filepath.Join(dir, "opensm.log"))
	var errLines []string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, " ERR ") && len(errLines) < 10 {
			errLines = append(errLines, l)
		}
	}
	if err != nil {
		return nil, map[string]any{"error": err.Error(), "log_errors": errLines}
	}
	perf, err := opensmrun.Run(ctx, ns, env, "perfquery")
	require.NoError(b, err)
	smps, err := opensmrun.PerfCounter(perf, "PortXmitPkts")
	require.NoError(b, err)
	res := map[string]float64{
		"ms_to_up": r.MsToUp, "ms_sweep": r.MsSweep, "ms_process": r.MsProcess,
		"smps_wire": float64(smps), "log_errors": float64(strings.Count(string(log), " ERR ")),
	}
	if slices.Contains(args, "-D") {
		counts, local := opensmrun.FrameCounts(string(log))
		sent := 0
		for k, n := range counts {
			res["sent "+k] = float64(n)
			sent += n
		}
		res["smps_sent"], res["smps_local"] = float64(sent), float64(local)
	}
	return res, nil
}

func opensmOnIbsim(b *testing.B, topo *topologies.Topology, args ...string) (map[string]float64, map[string]any) {
	sim, err := ibsimrun.Start(topo, b.TempDir())
	require.NoError(b, err)
	defer func() { require.NoError(b, sim.Close()) }()
	env, err := ibsimrun.DiagEnv()
	require.NoError(b, err)
	return opensmOnce(b, sim.NS, env, args)
}

// opensmRetries is OpenSM's default transaction_retries: on hardware the
// kernel's MAD layer resends an unanswered SMP that often; libumad2sim does
// not pass the number on, so the SM's HCA is told (--sim-retries).
const opensmRetries = 3

func opensmOnFabric(b *testing.B, suffix string, topo *topologies.Topology, smNode string, args ...string) (map[string]float64, map[string]any) {
	t0 := time.Now()
	f := fabrictest.Up(b, suffix, topo, harness.UpOptions{Timeout: 10 * time.Minute,
		NodeArgsFor: map[string][]string{smNode: {"--sim-retries", fmt.Sprint(opensmRetries)}}})
	upSecs := time.Since(t0).Seconds()
	// Down now, not when the benchmark ends: one fabric at a time. The
	// cleanup Up registered finds nothing left and checks that.
	defer func() { require.NoError(b, harness.Down(f.Name)) }()
	before := f.Node(smNode)
	env, err := harness.UMADEnv("")
	require.NoError(b, err)
	res, fail := opensmOnce(b, fabricnet.Namespace(f.Name, smNode), env, args)
	after := f.Node(smNode)
	sim := map[string]float64{
		"mads_in":  float64(after.Sim.MADsIn - before.Sim.MADsIn),
		"retries":  float64(after.Sim.Retries - before.Sim.Retries),
		"timeouts": float64(after.Sim.Timeouts - before.Sim.Timeouts),
		"up_s":     math.Round(upSecs*10) / 10,
	}
	if fail != nil {
		for k, v := range sim {
			fail[k] = v
		}
		return nil, fail
	}
	// The status's counter, read after perfquery's, agrees with it (the
	// PMA query of its own port does not reach the wire).
	require.Equal(b, res["smps_wire"], float64(after.Ports[0].Counters.PortXmitPkts-before.Ports[0].Counters.PortXmitPkts),
		"PortXmitPkts: perfquery against status")
	for k, v := range sim {
		res[k] = v
	}
	return res, nil
}

// loadAvg is the first three fields of /proc/loadavg.
func loadAvg(tb testing.TB) string {
	b, err := os.ReadFile("/proc/loadavg")
	require.NoError(tb, err)
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
