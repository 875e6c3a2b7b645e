package bench_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/harness/bench"
	"ibfab/harness/ibfabcli"
	"ibfab/internal/cli"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
)

// quick runs ibfab bench NAME --quick and decodes the document it wrote to
// --out into rep; it checks that stdout carries the same document.
func quick(t *testing.T, name string, rep any, extra ...string) {
	testenv.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	out := filepath.Join(t.TempDir(), name+".json")
	var stdout, stderr bytes.Buffer
	code := ibfabcli.Main(append([]string{"bench", name, "--quick", "--name", "tq", "--out", out}, extra...), &stdout, &stderr)
	t.Logf("ibfab bench %s --quick: exit %d; stderr:\n%s", name, code, stderr.String())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), stdout.String(), "stdout and --out differ")
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // every field is one of the typed report's
	require.NoError(t, dec.Decode(rep))
	assert.Equal(t, cli.ExitOK, code, "a run failed")
}

func TestQuickAssimilation(t *testing.T) {
	var rep bench.AssimilationReport
	quick(t, "assimilation", &rep)
	assert.True(t, rep.Quick)
	require.Len(t, rep.Fabrics, 1)
	f := rep.Fabrics[0]
	require.Empty(t, f.Error)
	assert.Equal(t, "irregular8", f.Network)
	require.Len(t, f.Faults, 2, "a link cut and a switch kill")
	for _, ft := range f.Faults {
		assert.Positive(t, ft.ProbedPairs, ft.Fault)
		assert.Equal(t, ft.SurvivingHosts*(ft.SurvivingHosts-1), ft.ProbedPairs, "%s: every ordered pair on a small fabric", ft.Fault)
		require.Len(t, ft.IBSM, 1, "the goal configuration")
		for who, s := range map[string]bench.SMSide{"opensm": ft.OpenSM, "ibsm": ft.IBSM[0].SMSide} {
			require.Len(t, s.Runs, 1, "%s %s", ft.Fault, who)
			r := s.Runs[0]
			require.Empty(t, r.Error, "%s %s", ft.Fault, who)
			require.NotNil(t, s.MsDataPlane, "%s %s", ft.Fault, who)
			// The SM reacted (a pass, SMPs), within the 90 s the run
			// waits, and the data plane's account is within the run.
			assert.Positive(t, r.Passes, "%s %s passes", ft.Fault, who)
			assert.Positive(t, r.SMPs, "%s %s smps", ft.Fault, who)
			assert.Positive(t, r.MsSettled, "%s %s", ft.Fault, who)
			assert.Less(t, r.MsDataPlane, 90e3, "%s %s", ft.Fault, who)
			assert.GreaterOrEqual(t, r.MsDataPlane, 0.0, "%s %s", ft.Fault, who)
			assert.LessOrEqual(t, r.PairsInterrupted, ft.ProbedPairs, "%s %s", ft.Fault, who)
		}
		// Every outage is attributed: the fields are there, each outage
		// has a cause, and what stays unknown is reported.
		for who, s := range map[string]bench.SMSide{"opensm": ft.OpenSM, "ibsm": ft.IBSM[0].SMSide} {
			r := s.Runs[0]
			assert.Len(t, r.Outages, outageCount(r), "%s %s: an outage per interrupted pair at least", ft.Fault, who)
			unknown := 0
			for _, o := range r.Outages {
				assert.NotEmpty(t, o.Cause, "%s %s %s", ft.Fault, who, o.Pair)
				assert.NotEmpty(t, o.Causes, "%s %s %s", ft.Fault, who, o.Pair)
				assert.GreaterOrEqual(t, o.EndMs, o.StartMs, "%s %s %s", ft.Fault, who, o.Pair)
				if o.Cause == "unknown" {
					unknown++
				}
				t.Logf("%s %s: %s dark %.0f ms (%.0f-%.0f), unexplained %.0f ms: %s", ft.Fault, who, o.Pair, o.DarkMs,
					o.StartMs, o.EndMs, o.UnexplainedMs, o.Cause)
			}
			assert.Equal(t, unknown, r.OutagesUnknown, "%s %s", ft.Fault, who)
			// Every quick run so far found evidence for every outage
			// (unexplained_ms, logged above, is what parts stay open).
			assert.Zero(t, unknown, "%s %s: outages without evidence (unread: %v)", ft.Fault, who, r.UnreadNodes)
			assert.NotEmpty(t, r.Timeline, "%s %s", ft.Fault, who)
		}
		// The switch kill takes hosts with it: the probed pairs whose
		// routes crossed it lose packets until the SM has rerouted them,
		// whatever the SM (an outage only if that takes five probe
		// intervals).
		if ft.SurvivingHosts < f.Hosts {
			r := ft.OpenSM.Runs[0]
			assert.True(t, r.ProbesDropped > 0 || r.PairsInterrupted > 0, "%s: no probed packet dropped under OpenSM", ft.Fault)
		}
	}
	assert.Equal(t, rep.Met, len(rep.Reasons) == 0, "goal_met %v, reasons %v", rep.Met, rep.Reasons)
}

// outageCount is how many outages a run must list at least: one per
// interrupted pair (a pair may have more than one).
func outageCount(r bench.FaultRun) int {
	pairs := map[string]bool{}
	for _, o := range r.Outages {
		pairs[o.Pair] = true
	}
	if len(pairs) < r.PairsInterrupted {
		return r.PairsInterrupted
	}
	return len(r.Outages)
}

func TestQuickHotSpot(t *testing.T) {
	var rep bench.HotSpotReport
	quick(t, "hotspot", &rep)
	require.Empty(t, rep.Error)
	assert.Equal(t, 4, rep.Senders)
	assert.Positive(t, rep.Sent)
	// Paced, the link cannot carry more than its rate (a little slack
	// for the sampling window's edges); credits keep it near 1.
	assert.InDelta(t, 1, rep.RateVsPaced, 0.2)
	assert.Empty(t, rep.Drops)
	assert.Equal(t, rep.Met, len(rep.Reasons) == 0)
}

func TestQuickFabric(t *testing.T) {
	t.Setenv("IBFAB_LIMIT_FILE", filepath.Join(t.TempDir(), "limit.json"))
	var rep bench.FabricReport
	quick(t, "fabric", &rep)
	require.Empty(t, rep.Errors)
	assert.Equal(t, "4xSDR", rep.LinkRate)
	lim, err := harness.LoadMachineLimit()
	require.NoError(t, err, "the unpaced run records the machine's limit")
	assert.Equal(t, rep.Unpaced.WireBps, lim.WireBps)
	require.NotNil(t, rep.TimeScaleNamed)
	assert.Equal(t, harness.TimeScaleFor(rep.LinkRateBps, lim), *rep.TimeScaleNamed)
	require.Len(t, rep.Paced, 2)
	for _, p := range rep.Paced {
		assert.Positive(t, p.Packets)
		assert.LessOrEqual(t, p.WireRatio, 1.05, "paced above the link rate at x%g", p.TimeScale)
		assert.Greater(t, p.WireRatio, 0.5, "x%g", p.TimeScale)
	}
	require.NotNil(t, rep.Unpaced)
	assert.Positive(t, rep.Unpaced.LimitTimeScale)
	require.NotNil(t, rep.HopLatency)
	assert.Positive(t, rep.HopLatency.Samples)
	assert.Greater(t, rep.HopLatency.P99Ns, rep.HopLatency.SerNs, "faster than serialization")
	for _, h := range []*bench.HopLatency{rep.HopLatency, rep.HopLatencyOneCPU} {
		require.NotNil(t, h)
		assert.Positive(t, h.DirectP50Ns, "the back-to-back baseline")
		assert.Greater(t, h.P50Ns, h.SerNs)
	}
	require.NotNil(t, rep.Idle)
	assert.Equal(t, 100, rep.Idle.Processes)
	assert.Positive(t, rep.Idle.RSSMaxMiB)
	assert.Equal(t, rep.Met, len(rep.Reasons) == 0)
}

// TestQuickFabricRate: --rate 4xNDR runs the unpaced and paced link at
// NDR, the paced one (quick) once, at the time scale the unpaced limit
// names, which is what the goal judges.
func TestQuickFabricRate(t *testing.T) {
	t.Setenv("IBFAB_LIMIT_FILE", filepath.Join(t.TempDir(), "limit.json"))
	var rep bench.FabricReport
	quick(t, "fabric", &rep, "--only", "unpaced,paced", "--rate", "4xNDR")
	require.Empty(t, rep.Errors)
	assert.Equal(t, "4xNDR", rep.LinkRate)
	assert.Equal(t, uint64(400e9), rep.LinkRateBps)
	require.NotNil(t, rep.Unpaced)
	require.NotNil(t, rep.TimeScaleNamed)
	assert.Equal(t, harness.TimeScaleFor(400e9, harness.MachineLimit{WireBps: rep.Unpaced.WireBps}), *rep.TimeScaleNamed)
	require.Len(t, rep.Paced, 1)
	p := rep.Paced[0]
	assert.Equal(t, *rep.TimeScaleNamed, p.TimeScale)
	assert.Positive(t, p.Packets)
	assert.LessOrEqual(t, p.WireRatio, 1.05, "paced above the link rate")
	assert.Greater(t, p.WireRatio, 0.5)
	assert.Contains(t, strings.Join(rep.Reasons, "\n"), "hop: not measured: not run (--only)")
}

// TestQuickFabricHopStages: --profile traces the hop's three processes and
// follows the packets through them: every stage has packets, the stages
// between ca1's write and ca2's receiver add up to the hop, and the
// profiles are where --profile put them.
func TestQuickFabricHopStages(t *testing.T) {
	dir := t.TempDir()
	var rep bench.FabricReport
	quick(t, "fabric", &rep, "--only", "hop", "--profile", dir)
	require.NotNil(t, rep.HopLatency)
	st := rep.HopLatency.Stages
	require.Len(t, st, 7)
	for _, s := range st {
		assert.Positive(t, s.Packets, "%s", s.Stage)
		assert.LessOrEqual(t, s.P50Us, s.P99Us, "%s", s.Stage)
	}
	hop := st[len(st)-1]
	assert.Greater(t, hop.Packets, int(rep.HopLatency.Samples)/10, "most packets of the traced seconds followed")
	assert.Positive(t, hop.P50Us)
	for _, n := range []string{"ca1", "sw1", "ca2"} {
		for _, k := range []string{"cpu", "trace"} {
			assert.FileExists(t, filepath.Join(dir, "tqfl", n+"."+k+".pprof"))
		}
	}
	assert.Contains(t, rep.Reasons, "paced: not measured: not run (--only)")
}

func TestQuickOpenSM(t *testing.T) {
	testenv.RequireProgram(t, "opensm", "opensm")
	testenv.RequireProgram(t, "ibsim", "ibsim-utils")
	var rep bench.OpenSMReport
	quick(t, "opensm", &rep)
	require.Len(t, rep.Networks, 1)
	c := rep.Networks[0]
	require.Empty(t, c.Error)
	for who, s := range map[string]bench.OpenSMSide{"fabric": c.Fabric, "ibsim": c.Ibsim} {
		require.Empty(t, s.Failures, who)
		require.NotNil(t, s.Median, who)
		assert.Positive(t, s.Median.MsToUp, who)
		assert.GreaterOrEqual(t, s.Median.MsProcess, s.Median.MsToUp, who)
		// OpenSM reaches every port of the thesis's network over the wire.
		assert.Greater(t, s.Median.SMPsWire, float64(c.Nodes), who)
	}
	for _, k := range []string{"ms_to_up", "ms_sweep", "ms_process", "smps_wire"} {
		assert.Positive(t, c.Ratio[k], k)
	}
}

// TestQuickScale: bench scale --quick brings a 704-node 8-ary 3-tree up
// on the management plane and on ibsim, and OpenSM (ftree) reaches
// SUBNET UP on both, with its phases and both servers' memory measured
// and the goal judged on them.
func TestQuickScale(t *testing.T) {
	testenv.RequireProgram(t, "opensm", "opensm")
	testenv.RequireProgram(t, "ibsim", "ibsim-utils")
	fabrictest.ShimLibrary(t) // OpenSM reaches the plane through the shim
	var rep bench.ScaleReport
	quick(t, "scale", &rep)
	require.Len(t, rep.Cases, 1)
	c := rep.Cases[0]
	assert.Equal(t, 704, c.Nodes)
	for who, s := range map[string]bench.ScaleSide{"plane": c.Plane, "ibsim": c.Ibsim} {
		require.Empty(t, s.Error, who)
		assert.Positive(t, s.MsDiscovery, who)
		assert.Positive(t, s.MsRouting, who)
		assert.Positive(t, s.MsRest, who)
		assert.InDelta(t, s.MsToUp, s.MsDiscovery+s.MsRouting+s.MsRest, s.MsToUp/2, "%s: the phases make up most of the time to up", who)
		assert.Greater(t, s.BytesPerNode, 1000.0, who)
	}
	assert.Positive(t, c.Ratio["ms_to_up"])
	assert.Positive(t, c.Ratio["bytes_per_node"])
	if !rep.Met {
		assert.NotEmpty(t, rep.Reasons, "a goal not met says why")
	}
}

// TestQuickScaleProcesses is bench scale --processes --quick: a 64-host
// fat tree of processes measured, ibsm's and OpenSM's sweeps, every
// host's packets to its peer delivered, nothing left after down.
func TestQuickScaleProcesses(t *testing.T) {
	testenv.RequireProgram(t, "opensm", "opensm")
	var rep bench.ProcessesReport
	quick(t, "scale", &rep, "--processes")
	require.Empty(t, rep.Errors)
	assert.Equal(t, "fattree64", rep.Network)
	assert.Equal(t, rep.Nodes, rep.Pss.Processes)
	assert.Greater(t, rep.Pss.MeanMiB, 0.5, "a Go process's private memory at least")
	assert.GreaterOrEqual(t, rep.Pss.MaxMiB, rep.Pss.MeanMiB)
	assert.Positive(t, rep.IdleCoresAfter, "the processes run")
	assert.Positive(t, rep.IbsmMs)
	assert.Equal(t, uint64(rep.HCAs*20), rep.Traffic.Sent)
	assert.Equal(t, rep.Traffic.Sent, rep.Traffic.Received)
	assert.Empty(t, rep.Left)
	require.NotNil(t, rep.OpenSM)
	assert.Positive(t, rep.OpenSM.MsToUp)
	if !rep.Met {
		assert.NotEmpty(t, rep.Reasons, "a goal not met says why")
	}
}
