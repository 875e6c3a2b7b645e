package cc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/hca"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// TestCCPlan: the sizes, and --quick's 4x4 fabrics, grouped so
// that each fabric comes up once.
func TestCCPlan(t *testing.T) {
	full := ccPlan(false)
	require.Len(t, full, len(ccIDs))
	byID := map[string]ccExperiment{}
	for _, e := range full {
		byID[e.ID] = e
	}
	assert.Equal(t, CCFabric{Torus: true, Dims: []int{8, 8}, CC: true}, byID["D2"].Fabric)
	assert.Equal(t, CCFabric{Dims: []int{8, 4}, CC: true}, byID["D3"].Fabric, "32 nodes")
	assert.Equal(t, 32, byID["D3"].Fabric.Nodes())
	assert.False(t, byID["D1"].Fabric.CC, "D1 runs without CC")
	assert.False(t, byID["D0"].Fabric.CC)
	assert.Equal(t, []topologies.Permutation{topologies.PerfectShuffle}, byID["D1"].Patterns)
	assert.Equal(t, []CCScheme{CCIBA, CCDRB}, byID["D2"].Schemes)
	assert.True(t, byID["D4"].HotSpot)
	for _, e := range full {
		for i := 1; i < len(e.Loads); i++ {
			assert.Less(t, e.Loads[i-1], e.Loads[i], "%s loads ascend", e.ID)
		}
	}
	groups := groupByFabric(full)
	require.Len(t, groups, 4, "no CC 4x4, torus 8x8, mesh 8x4, CC 4x4")
	assert.Equal(t, []string{"D1", "D0"}, ids(groups[0].Experiments))
	assert.Equal(t, []string{"D3", "D4"}, ids(groups[2].Experiments))
	assert.Equal(t, []string{"D5", "D6"}, ids(groups[3].Experiments))

	quick := ccPlan(true)
	for _, e := range quick {
		assert.Equal(t, []int{4, 4}, e.Fabric.Dims, e.ID)
		assert.LessOrEqual(t, len(e.Loads), 3, e.ID)
	}
	qg := groupByFabric(quick)
	require.Len(t, qg, 3, "D3-D6 share the CC 4x4 mesh")
	assert.Equal(t, []string{"D3", "D4", "D5", "D6"}, ids(qg[2].Experiments))
}

func TestSelectExperiments(t *testing.T) {
	got, err := selectExperiments(ccPlan(false), []string{"d5", "D1", "D5"})
	require.NoError(t, err)
	assert.Equal(t, []string{"D1", "D5"}, ids(got), "plan order, no duplicates, any case")
	_, err = selectExperiments(ccPlan(false), []string{"D7"})
	assert.ErrorContains(t, err, "D7")
	all, err := selectExperiments(ccPlan(true), nil)
	require.NoError(t, err)
	assert.Len(t, all, len(ccIDs))
}

func TestCCFabric(t *testing.T) {
	f := CCFabric{Torus: true, Dims: []int{8, 8}, CC: true}
	assert.Equal(t, "torus 8x8, CC", f.String())
	assert.Equal(t, "t88c", f.key())
	assert.Equal(t, "m44n", CCFabric{Dims: []int{4, 4}}.key())
	topo, err := f.topology()
	require.NoError(t, err)
	assert.Equal(t, 64, topo.Count(topologies.CA))
	assert.InDelta(t, 4000, ccTimeScale(f, 0, runner.TunedRate), 1e-9)
	assert.InDelta(t, 1000, ccTimeScale(CCFabric{Dims: []int{4, 4}}, 0, runner.TunedRate), 1e-9)
	assert.InDelta(t, 300, ccTimeScale(f, 300, runner.TunedRate), 1e-9, "--time-scale wins")
	assert.Equal(t, 2*time.Second, runner.AtScale(2*time.Millisecond, 1000))
}

var hdr = topologies.Rate{Width: topologies.Width4x, Speed: topologies.SpeedHDR}

// TestCCAtRate: at 4x HDR, 25 times 4x SDR's data rate, the time scale
// and the loads are 25 times larger, the windows and the CCTI timer 25
// times shorter; the plan tuned at 4x SDR stays as it was, and an
// explicit --time-scale is kept.
func TestCCAtRate(t *testing.T) {
	mesh := CCFabric{Dims: []int{4, 4}, CC: true}
	assert.InDelta(t, 25000, ccTimeScale(mesh, 0, hdr), 1e-9)
	assert.InDelta(t, 300, ccTimeScale(mesh, 300, hdr), 1e-9, "--time-scale wins")
	plan := ccPlan(true)
	at := plansAt(plan, 25)
	require.Len(t, at, len(plan))
	for i := range plan {
		require.Len(t, at[i].Loads, len(plan[i].Loads))
		for j := range plan[i].Loads {
			assert.InDelta(t, 25*plan[i].Loads[j], at[i].Loads[j], 1e-9)
		}
	}
	assert.Equal(t, []float64{1000, 3000, 6000}, ccPlan(true)[0].Loads, "the tuned plan is untouched")
	w, wh := ccWindowsFor(true), ccWindowsFor(true).at(25)
	assert.Equal(t, w.Measure/25, wh.Measure)
	assert.Equal(t, w.Warmup/25, wh.Warmup)
	assert.Equal(t, w.Drain/25, wh.Drain)
	assert.Equal(t, w.Burst/25, wh.Burst)
	assert.Equal(t, 10*time.Microsecond, wh.Sample)
	assert.Equal(t, w, w.at(1))
	assert.Equal(t, uint16(100), ccDefaultConfig().at(1).CCTITimer)
	assert.Equal(t, uint16(4), ccDefaultConfig().at(25).CCTITimer)
	assert.Equal(t, uint16(1), ccDefaultConfig().at(1000).CCTITimer, "at least one unit")
}

func TestCCConf(t *testing.T) {
	c := ccDefaultConfig()
	conf := ccConf(c)
	for _, want := range []string{
		"congestion_control TRUE\n",
		"cc_key 0x0000000000000000\n",
		"cc_sw_cong_setting_threshold 0xe\n",
		fmt.Sprintf("cc_sw_cong_setting_marking_rate 0x%04x\n", c.MarkingRate),
		"cc_sw_cong_setting_victim_mask 0x" + strings.Repeat("0", 64) + "\n",
		"cc_ca_cong_setting_port_control 0x0001\n",
		"cc_ca_cong_setting_control_map 0x000f\n",
		fmt.Sprintf("cc_ca_cong_setting_ccti_timer 3 %d\n", c.CCTITimer),
		"cc_ca_cong_setting_ccti_increase 0 1\n",
		"cc_cct 2:0,2:1,2:2,",
	} {
		assert.Contains(t, conf, want)
	}
	assert.Equal(t, 4, strings.Count(conf, "cc_ca_cong_setting_ccti_min "), "one per SL")
	for _, l := range strings.Split(conf, "\n") {
		if v, ok := strings.CutPrefix(l, "cc_cct "); ok {
			e := strings.Split(v, ",")
			assert.Len(t, e, 128)
			assert.Equal(t, "2:127", e[127])
		}
	}
	path, release, err := writeCCConf("", c)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, conf, string(b))
	release()
	_, err = os.Stat(path)
	assert.True(t, errors.Is(err, os.ErrNotExist), "release removes the temporary file")
}

// t0 is the synthetic snapshots' origin.
var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// TestLinkLoads: at time scale 1000 one real second is 1 ms emulated, in
// which half of 8 Gb/s is 4e6 bits, 125 000 words.
func TestLinkLoads(t *testing.T) {
	a := map[string]ccPortSnap{
		"sw0[1]": {At: t0, XmitWords: 1000, Rate: 8e9, Marked: 5},
		"sw0[2]": {At: t0, XmitWords: 0, Rate: 8e9},
		"sw0[3]": {At: t0, XmitWords: 0, Rate: 8e9},
		"sw0[4]": {At: t0, XmitWords: 500, Rate: 8e9},
	}
	b := map[string]ccPortSnap{
		"sw0[1]": {At: t0.Add(time.Second), XmitWords: 126000, Rate: 8e9, Marked: 9},
		"sw0[2]": {At: t0.Add(2 * time.Second), XmitWords: 250000, Rate: 8e9},
		"sw0[3]": {At: t0.Add(time.Second), XmitWords: 125000, Rate: 8e9}, // not inter-switch
		"sw0[4]": {At: t0.Add(time.Second), XmitWords: 10, Rate: 8e9},     // counter went back
	}
	inter := func(k string) bool { return k != "sw0[3]" }
	l := linkLoads(a, b, 1000, inter)
	assert.Len(t, l, 2)
	assert.InDelta(t, 0.5, l["sw0[1]"], 1e-9)
	assert.InDelta(t, 0.5, l["sw0[2]"], 1e-9, "each port over its own interval")
	peak, mean := peakMean(map[string]float64{"a": 0.2, "b": 0.6})
	assert.InDelta(t, 0.6, peak, 1e-9)
	assert.InDelta(t, 0.4, mean, 1e-9)
	m, sum := marksBetween(a, b)
	assert.Equal(t, map[string]uint64{"sw0[1]": 4}, m)
	assert.Equal(t, uint64(4), sum)
}

func TestMergeBuckets(t *testing.T) {
	got := mergeBuckets([]hca.Bucket{{LeNs: 200, Count: 1}, {LeNs: 100, Count: 2}}, []hca.Bucket{{LeNs: 100, Count: 3}, {LeNs: 900, Count: 1}})
	assert.Equal(t, []hca.Bucket{{LeNs: 100, Count: 5}, {LeNs: 200, Count: 1}, {LeNs: 900, Count: 1}}, got)
}

// synWindow is a synthetic load point: two sources at 1000 Mb/s, their
// destinations receiving 1000 and 500 Mb/s over 1 ms emulated.
func synWindow() ccWindow {
	a, b := newCCSnap(), newCCSnap()
	for _, n := range []string{"s1", "s2", "d1", "d2"} {
		a.at[n], b.at[n] = t0, t0.Add(time.Second)
	}
	// 1 ms at 1000 Mb/s: 1e6 bits = 125 000 bytes.
	b.flows["d1"] = nodeproc.FlowsReport{Received: []hca.FlowRxStats{
		{ID: ccSweepFlow, WireBytes: 125000, Latency: hca.LatencySnapshot{Count: 60, MeanNs: 10000, Buckets: []hca.Bucket{{LeNs: 16000, Count: 60}}}},
		{ID: 9, WireBytes: 999999}, // another flow
	}}
	b.flows["d2"] = nodeproc.FlowsReport{Received: []hca.FlowRxStats{
		{ID: ccSweepFlow, WireBytes: 62500, Latency: hca.LatencySnapshot{Count: 40, MeanNs: 35000, Buckets: []hca.Bucket{{LeNs: 16000, Count: 39}, {LeNs: 64000, Count: 1}}}},
	}}
	b.flows["s1"] = nodeproc.FlowsReport{Sent: []hca.FlowStats{{ID: ccSweepFlow, SentBytes: 125000, Elapsed: time.Millisecond, Dropped: 2, Backlog: 3}}}
	b.flows["s2"] = nodeproc.FlowsReport{Sent: []hca.FlowStats{{ID: ccSweepFlow, SentBytes: 62500, Elapsed: time.Millisecond, Backlog: 100}}}
	a.ports["sw[1]"] = ccPortSnap{At: t0, Rate: 8e9}
	b.ports["sw[1]"] = ccPortSnap{At: t0.Add(time.Second), XmitWords: 187500, Rate: 8e9, Marked: 7}
	b.cca["s1"] = nodeproc.CCAStatus{Mode: hca.CCDRB, CCACounters: hca.CCACounters{BECNReceived: 5}, Dests: []nodeproc.CCADest{{DLID: 3, CCTI: 0, Active: []uint16{3, 4, 5}}}}
	b.cca["s2"] = nodeproc.CCAStatus{Mode: hca.CCDRB, CCACounters: hca.CCACounters{BECNReceived: 1}, Dests: []nodeproc.CCADest{{DLID: 7, CCTI: 2, Active: []uint16{7}}}}
	return ccWindow{pattern: "shuffle", scheme: CCDRB, offered: 1000, id: ccSweepFlow, sources: []string{"s1", "s2"},
		receivers: []string{"d1", "d2"}, scale: 1000, inter: func(string) bool { return true }, a: a, b: b}
}

func TestCCWindowPoint(t *testing.T) {
	p := synWindow().point()
	assert.InDelta(t, 750, p.AcceptedMbps, 1e-6, "(1000 + 500) / 2 sources")
	assert.InDelta(t, 750, p.InjectedMbps, 1e-6)
	assert.InDelta(t, 20, p.MeanLatencyUs, 1e-9, "(60×10 + 40×35) / 100")
	assert.InDelta(t, 16, p.P99LatencyUs, 1e-9, "99 of 100 samples within 16 µs")
	assert.Equal(t, uint64(100), p.Packets)
	assert.Equal(t, uint64(2), p.SourceDropped)
	assert.Equal(t, 103, p.Backlog)
	assert.InDelta(t, 0.75, p.PeakLinkLoad, 1e-9, "187500 words in 1 ms of 8 Gb/s")
	assert.Equal(t, uint64(7), p.FECNMarks)
	assert.Equal(t, 3, p.MaxActive)
	assert.InDelta(t, 2, p.MeanActive, 1e-9)
	assert.Equal(t, 2, p.MaxCCTI)
	assert.InDelta(t, 1, p.MeanCCTI, 1e-9)
	assert.Equal(t, uint64(6), p.BECNs)
	assert.InDelta(t, 1, p.WindowMs, 1e-9)
	assert.False(t, unsaturated(p), "750 of 1000 accepted")
}

func TestHotSample(t *testing.T) {
	a, b := newCCSnap(), newCCSnap()
	a.ports["sw[1]"] = ccPortSnap{At: t0, Rate: 8e9, Marked: 1}
	b.ports["sw[1]"] = ccPortSnap{At: t0.Add(time.Second), XmitWords: 250000, Rate: 8e9, Marked: 11}
	a.cca["s1"] = nodeproc.CCAStatus{CCACounters: hca.CCACounters{BECNReceived: 4, Opens: 1}}
	b.cca["s1"] = nodeproc.CCAStatus{CCACounters: hca.CCACounters{BECNReceived: 10, Opens: 3, Closes: 1},
		Dests: []nodeproc.CCADest{{DLID: 20, CCTI: 6, IPDNs: 900, Active: []uint16{20, 21}}, {DLID: 30, CCTI: 9}}}
	a.flows["s1"] = nodeproc.FlowsReport{Sent: []hca.FlowStats{{ID: ccBurstFlow, SentBytes: 1000, Elapsed: time.Millisecond}}}
	b.flows["s1"] = nodeproc.FlowsReport{Sent: []hca.FlowStats{{ID: ccBurstFlow, SentBytes: 1000 + 250000, Elapsed: 2 * time.Millisecond, Backlog: 12}}}
	s := hotSample(a, b, 2, runner.PhaseBurst, []string{"s1", "s2"}, []string{"d1", "d2"}, map[string]int{"d1": 20, "d2": 40},
		ccBurstFlow, 1000, func(string) bool { return true })
	assert.InDelta(t, 1, s.Loads["sw[1]"], 1e-9)
	assert.Equal(t, uint64(10), s.FECN)
	assert.Equal(t, 9, s.CCTI["s1"], "the highest over its destinations")
	assert.Equal(t, int64(900), s.IPDNs["s1"])
	assert.Equal(t, 2, s.Active["s1→d1"])
	assert.Equal(t, 1, s.Active["s2→d2"], "no entry: the base path")
	assert.Equal(t, uint64(6), s.BECNs)
	assert.Equal(t, uint64(2), s.Opens)
	assert.Equal(t, uint64(1), s.Closes)
	assert.InDelta(t, 2000, s.InjectedMbps, 1e-6, "250 000 bytes in 1 ms")
	assert.Equal(t, 12, s.Backlog)
}

func TestSummarizeHot(t *testing.T) {
	h := &CCHotRun{Samples: []CCHotSample{
		{Phase: runner.PhaseBefore, Loads: map[string]float64{"a": 0, "b": 0}, FECN: 0},
		{Phase: runner.PhaseBurst, Loads: map[string]float64{"a": 1, "b": 0.2}, FECN: 30, CCTI: map[string]int{"s": 8}, Active: map[string]int{"p": 3}, InjectedMbps: 3000, Opens: 2, Backlog: 50},
		{Phase: runner.PhaseBurst, Loads: map[string]float64{"a": 0.8, "b": 0.4}, FECN: 10, CCTI: map[string]int{"s": 5}, Active: map[string]int{"p": 2}, InjectedMbps: 2000},
		{Phase: runner.PhaseAfter, Loads: map[string]float64{"a": 0, "b": 0}, CCTI: map[string]int{"s": 1}, Active: map[string]int{"p": 1}, Closes: 2},
	}}
	summarizeHot(h)
	assert.Equal(t, "a", h.HotLink)
	assert.InDelta(t, 0.9, h.PeakLoad, 1e-9)
	assert.InDelta(t, 0.3, h.BurstLoads["b"], 1e-9)
	assert.Equal(t, uint64(40), h.FECNBurst)
	assert.Equal(t, uint64(0), h.FECNBefore)
	assert.InDelta(t, 2500, h.InjectedMbps, 1e-9)
	assert.Equal(t, 8, h.MaxCCTI)
	assert.Equal(t, 1, h.FinalCCTI)
	assert.Equal(t, 3, h.MaxActive)
	assert.Equal(t, 1, h.FinalActive)
	assert.Equal(t, uint64(2), h.Opens)
	assert.Equal(t, uint64(2), h.Closes)
	assert.Equal(t, 50, h.MaxBacklog)
}

func TestPhaseOf(t *testing.T) {
	start, stop := t0.Add(time.Second), t0.Add(3*time.Second)
	assert.Equal(t, runner.PhaseBefore, phaseOf(t0, time.Time{}, time.Time{}))
	assert.Equal(t, runner.PhaseBefore, phaseOf(t0, start, time.Time{}))
	assert.Equal(t, runner.PhaseBurst, phaseOf(t0.Add(2*time.Second), start, time.Time{}))
	assert.Equal(t, runner.PhaseBurst, phaseOf(t0.Add(2*time.Second), start, stop))
	assert.Equal(t, runner.PhaseAfter, phaseOf(t0.Add(4*time.Second), start, stop))
}

// pts builds a curve: offered loads with accepted and mean latency.
func pts(pat string, s CCScheme, rows ...[3]float64) []CCPoint {
	var out []CCPoint
	for _, r := range rows {
		out = append(out, CCPoint{Pattern: pat, Scheme: s, OfferedMbps: r[0], AcceptedMbps: r[1], MeanLatencyUs: r[2]})
	}
	return out
}

// The synthetic torus: IBA_CC saturates at 3000 Mb/s and tops out at
// 2800, DRB at 4000, topping out at 3750 (+34 %); in between DRB's
// latency stays flat while IBA_CC's triples.
var (
	synIBA = pts("butterfly", CCIBA, [3]float64{1000, 1000, 10}, [3]float64{2000, 1990, 11}, [3]float64{3000, 2700, 33}, [3]float64{4000, 2800, 90})
	synDRB = pts("butterfly", CCDRB, [3]float64{1000, 1000, 10.5}, [3]float64{2000, 1995, 11}, [3]float64{3000, 2990, 12}, [3]float64{4000, 3750, 60})
)

func TestSweepComparisons(t *testing.T) {
	sat, ok := saturation(synIBA)
	assert.True(t, ok)
	assert.InDelta(t, 3000, sat, 1e-9)
	sat, ok = saturation(synDRB)
	assert.True(t, ok)
	assert.InDelta(t, 4000, sat, 1e-9)
	_, ok = saturation(synDRB[:3])
	assert.False(t, ok, "never short of the offered load")

	g, ok := throughputGain(synIBA, synDRB)
	require.True(t, ok)
	assert.InDelta(t, 3750.0/2800-1, g, 1e-9)
	_, ok = throughputGain(nil, synDRB)
	assert.False(t, ok)

	r, load, ok := flatLatencyRatio(synIBA, synDRB)
	require.True(t, ok)
	assert.InDelta(t, 33.0/12, r, 1e-9, "the largest gap where DRB is still flat")
	assert.InDelta(t, 3000, load, 1e-9)
	_, _, ok = flatLatencyRatio(synIBA, nil)
	assert.False(t, ok)

	lat, acc, ok := overhead(synIBA, synDRB)
	require.True(t, ok)
	assert.InDelta(t, 1.05, lat, 1e-9, "10.5 against 10 at 1000 Mb/s")
	assert.InDelta(t, 1, acc, 1e-9, "DRB never accepted less below saturation")
	_, _, ok = overhead(pts("x", CCIBA, [3]float64{1000, 500, 10}), pts("x", CCDRB, [3]float64{1000, 1000, 10}))
	assert.False(t, ok, "IBA_CC saturated at the only load")
}

func TestShape(t *testing.T) {
	d1 := pts("shuffle", CCOff, [3]float64{1000, 1000, 10}, [3]float64{3000, 2990, 14}, [3]float64{6000, 4000, 200})
	s := shape(d1)
	assert.True(t, s.saturated)
	assert.InDelta(t, 6000, s.saturation, 1e-9)
	assert.Equal(t, 2, s.below)
	assert.InDelta(t, 20, s.rise, 1e-9)
	assert.InDelta(t, 4000.0/6000, s.shortfall, 1e-9)
	assert.True(t, s.agrees())
	assert.False(t, shape(d1[:2]).agrees(), "never saturated")
	assert.False(t, shape(pts("shuffle", CCOff, [3]float64{1000, 700, 10}, [3]float64{2000, 800, 90})).agrees(), "saturated from the start")
}

func TestJudgeRange(t *testing.T) {
	for _, tc := range []struct {
		v, lo, hi, neutral float64
		want               CCVerdict
	}{
		{0.40, 0.35, 0.50, 0, CCAgrees},
		{0.27, 0.35, 0.50, 0, CCAgrees},   // within the tolerance below
		{0.62, 0.35, 0.50, 0, CCAgrees},   // and above
		{0.10, 0.35, 0.50, 0, CCSameSign}, // a gain, smaller
		{1.20, 0.35, 0.50, 0, CCSameSign}, // a gain, larger
		{-0.05, 0.35, 0.50, 0, CCDisagrees},
		{1.00, 2, 4, 1.05, CCDisagrees}, // no latency gain
		{3.1, 2, 4, 1.05, CCAgrees},
		{1.3, 2, 4, 1.05, CCSameSign},
	} {
		assert.Equal(t, tc.want, judgeRange(tc.v, tc.lo, tc.hi, tc.neutral), "%v in [%v, %v]", tc.v, tc.lo, tc.hi)
	}
	assert.Equal(t, CCNotMeasured, judgeRange(nan(), 0, 1, 0))
}

func nan() float64 { z := 0.0; return z / z }

// hot builds a hot-spot run with a peak load at link "sw1-0[4]".
func hot(s CCScheme, peak float64) *CCHotRun {
	return &CCHotRun{Scheme: s, HotLink: "sw1-0[4]", PeakLoad: peak, BurstLoads: map[string]float64{"sw1-0[4]": peak}, OfferedMbps: 6000}
}

func TestCCCompare(t *testing.T) {
	iba, drb := hot(CCIBA, 1.0), hot(CCDRB, 0.25)
	drb.MaxActive, drb.Closes, drb.FinalActive, drb.Opens = 4, 3, 1, 3
	iba.MaxCCTI, iba.FinalCCTI, iba.MaxBacklog = 12, 0, 300
	rep := &CCReport{Experiments: []CCExperimentReport{
		{ID: "D1", Patterns: []CCPattern{{Name: "shuffle"}}, Points: pts("shuffle", CCOff, [3]float64{1000, 1000, 10}, [3]float64{6000, 4000, 200})},
		{ID: "D2", Patterns: []CCPattern{{Name: "butterfly"}}, Points: append(append([]CCPoint(nil), synIBA...), synDRB...)},
		{ID: "D4", Hot: []*CCHotRun{iba, drb}},
		{ID: "D5", Hot: []*CCHotRun{drb}},
		{ID: "D6", Hot: []*CCHotRun{iba}},
	}}
	cs := ccCompare(rep)
	got := map[string]CCComparison{}
	for _, c := range cs {
		got[c.Experiment+" "+c.Metric] = c
	}
	require.Len(t, cs, 1+3+3)
	assert.Equal(t, CCAgrees, got["D1 accepted = offered, then latency rises"].Verdict)
	assert.Equal(t, CCAgrees, got["D2 throughput, DRB over IBA_CC"].Verdict, got["D2 throughput, DRB over IBA_CC"].Ours)
	flat := got["D2 latency in the flat part, IBA_CC / DRB"]
	assert.Equal(t, CCAgrees, flat.Verdict, "2.75×")
	assert.Empty(t, flat.Why)
	assert.Equal(t, CCAgrees, got["D2 overhead below saturation (DRB / IBA_CC)"].Verdict)
	assert.Equal(t, CCAgrees, got["D4 peak link load, DRB against IBA_CC"].Verdict)
	assert.Equal(t, CCAgrees, got["D5 DRB: aliases open, then close"].Verdict)
	assert.Equal(t, CCAgrees, got["D6 IBA_CC: CCTI rises, decays; the source queue"].Verdict)
	assert.Empty(t, disagreements(cs))

	// A DRB that did little: a smaller gain, explained.
	drb.PeakLoad = 0.8
	weak := pts("butterfly", CCDRB, [3]float64{1000, 1000, 10}, [3]float64{2000, 1990, 11}, [3]float64{3000, 2750, 30}, [3]float64{4000, 2900, 85})
	for i := range weak {
		weak[i].MeanActive, weak[i].FECNMarks = 1.0, 50
	}
	rep.Experiments[1].Points = append(append([]CCPoint(nil), synIBA...), weak...)
	rep.Experiments[2].Hot = []*CCHotRun{iba, drb}
	ds := disagreements(ccCompare(rep))
	require.NotEmpty(t, ds)
	joined := strings.Join(ds, "\n")
	assert.Contains(t, joined, "hardly opened alias paths")
	assert.Contains(t, joined, "D4, peak link load")
}

func TestDiagWhy(t *testing.T) {
	lag := diagnose(pts("x", CCIBA, [3]float64{1000, 600, 10}), pts("x", CCDRB, [3]float64{1000, 600, 10}))
	assert.Contains(t, lag.why(CCDisagrees, false), "machine")
	flat := diagnose(pts("x", CCIBA, [3]float64{1000, 1000, 10}), pts("x", CCDRB, [3]float64{1000, 1000, 10}))
	assert.Contains(t, flat.why(CCDisagrees, false), "neither scheme saturated")
	assert.Empty(t, flat.why(CCAgrees, false))
	nomarks := diagnose(synIBA, synDRB)
	assert.Contains(t, nomarks.why(CCSameSign, false), "no switch marked")

	// IBA_CC's throughput falling past saturation explains a gain
	// larger than the paper's, and only a larger one.
	collapse := pts("x", CCIBA, [3]float64{1000, 1000, 10}, [3]float64{2000, 1900, 40}, [3]float64{4000, 1200, 900})
	collapse[2].MeanCCTI = 60
	strong := pts("x", CCDRB, [3]float64{1000, 1000, 10}, [3]float64{2000, 2000, 11}, [3]float64{4000, 3900, 80})
	for i := range strong {
		strong[i].MeanActive, strong[i].FECNMarks = 3, 100
	}
	d := diagnose(collapse, strong)
	assert.True(t, d.ibaCollapsed())
	assert.Contains(t, d.why(CCSameSign, true), "collapses past saturation")
	assert.Contains(t, d.why(CCSameSign, true), "1900 Mb/s (at 2000 offered) to 1200 at 4000")
	assert.NotContains(t, d.why(CCSameSign, false), "collapses")
	assert.False(t, diagnose(synIBA, synDRB).ibaCollapsed())
}

// TestCCMustShow: the checks pass on the runs the issue asks for and
// each fails when its effect is missing.
func TestCCMustShow(t *testing.T) {
	good := func() (*CCHotRun, *CCHotRun, *CCHotRun) {
		off, iba, drb := hot(CCOff, 1.0), hot(CCIBA, 0.9), hot(CCDRB, 0.6)
		iba.FECNBurst, iba.MaxCCTI, iba.InjectedMbps = 500, 9, 3500
		drb.MaxActive, drb.Opens, drb.Closes, drb.FinalActive = 3, 4, 4, 1
		drb.BurstLoads["sw1-0[4]"] = 0.6
		return off, iba, drb
	}
	reportOf := func(off, iba, drb *CCHotRun) *CCReport {
		return &CCReport{Experiments: []CCExperimentReport{{ID: "D0", Hot: []*CCHotRun{off}}, {ID: "D5", Hot: []*CCHotRun{drb}}, {ID: "D6", Hot: []*CCHotRun{iba}}}}
	}
	failed := func(cs []runner.Check) []string {
		var out []string
		for _, c := range cs {
			if !c.OK {
				out = append(out, c.Name)
			}
		}
		return out
	}
	cs := ccMustShow(reportOf(good()))
	assert.Len(t, cs, 6)
	assert.Empty(t, failed(cs))

	for _, tc := range []struct {
		name  string
		spoil func(off, iba, drb *CCHotRun)
		want  string
	}{
		{"no marks", func(_, iba, _ *CCHotRun) { iba.FECNBurst = 0 }, "IBA_CC: the hot link's FECN marks rise"},
		{"no throttling", func(_, iba, _ *CCHotRun) { iba.MaxCCTI = 0 }, "IBA_CC: the sources' injection falls"},
		{"injection kept up", func(_, iba, _ *CCHotRun) { iba.InjectedMbps = 5800 }, "IBA_CC: the sources' injection falls"},
		{"no alias", func(_, _, drb *CCHotRun) { drb.MaxActive = 1 }, "DRB: alias paths open"},
		{"never closed", func(_, _, drb *CCHotRun) { drb.FinalActive = 3 }, "DRB: alias paths close after the burst"},
		{"hot link as hot", func(_, _, drb *CCHotRun) { drb.BurstLoads["sw1-0[4]"] = 0.97 }, "DRB: the hot link's load falls"},
		{"off throttled", func(off, _, _ *CCHotRun) { off.MaxCCTI = 2 }, "CC off: no marks, no throttling, no aliases"},
		{"off marked", func(off, _, _ *CCHotRun) { off.FECNBurst = 1 }, "CC off: no marks, no throttling, no aliases"},
	} {
		off, iba, drb := good()
		tc.spoil(off, iba, drb)
		assert.Equal(t, []string{tc.want}, failed(ccMustShow(reportOf(off, iba, drb))), tc.name)
	}
	// Without D0 the hot link is IBA_CC's.
	_, iba, drb := good()
	rep := &CCReport{Experiments: []CCExperimentReport{{ID: "D5", Hot: []*CCHotRun{drb}}, {ID: "D6", Hot: []*CCHotRun{iba}}}}
	cs = ccMustShow(rep)
	assert.Len(t, cs, 5)
	assert.Empty(t, failed(cs))
	assert.Empty(t, ccMustShow(&CCReport{}), "nothing ran")
}

// TestWriteCCReport draws every plot of a synthetic report and writes the
// index beside the JSON.
func TestWriteCCReport(t *testing.T) {
	iba, drb := hot(CCIBA, 1.0), hot(CCDRB, 0.4)
	for _, h := range []*CCHotRun{iba, drb} {
		for i := range 4 {
			h.Samples = append(h.Samples, CCHotSample{T: float64(i), Phase: runner.PhaseBurst, Loads: map[string]float64{"sw1-0[4]": 0.5, "sw0-0[2]": 0.1},
				CCTI: map[string]int{"ca0-0": i}, Active: map[string]int{"ca0-0→ca2-0": i%3 + 1}})
		}
	}
	rep := &CCReport{Started: t0, Config: ccDefaultConfig(), Windows: ccWindowsFor(true), Experiments: []CCExperimentReport{
		{ID: "D2", Title: "torus", Fabric: CCFabric{Torus: true, Dims: []int{4, 4}, CC: true}, TimeScale: 1000,
			Patterns: []CCPattern{{Name: "butterfly", Sources: 8, Fixed: 8}}, Points: append(append([]CCPoint(nil), synIBA...), synDRB...)},
		{ID: "D4", Title: "hot spot", Fabric: CCFabric{Dims: []int{4, 4}, CC: true}, Hot: []*CCHotRun{iba, drb},
			Burst: &CCBurstNames{Pairs: []string{"ca0-0→ca2-0"}, Load: 0.75}},
	}}
	rep.Comparisons = ccCompare(rep)
	dir := t.TempDir()
	require.NoError(t, writeCCReport(dir, rep))
	for _, f := range []string{"index.md", "report.json", "D2-butterfly-accepted.png", "D2-butterfly-latency.svg", "D4-peak.png",
		"D4-iba-links.png", "D4-iba-ccti.png", "D4-drb-aliases.png"} {
		assert.FileExists(t, filepath.Join(dir, f))
		assert.Contains(t, rep.Files, f)
	}
	md, err := os.ReadFile(filepath.Join(dir, "index.md"))
	require.NoError(t, err)
	s := string(md)
	assert.Contains(t, s, "| D2 | butterfly | throughput, DRB over IBA_CC | +34 %")
	assert.Contains(t, s, "+35–50 %")
	assert.Contains(t, s, "time scale 1000")
	assert.Contains(t, s, "8 fixed points")
	assert.Contains(t, s, "![drb aliases](D4-drb-aliases.png)")
	assert.Contains(t, s, "FAIL", "not Passed")
	assert.Contains(t, s, "Every link is 4xSDR (8 Gb/s of data); traffic", "the zero rate is 4x SDR")

	rep.LinkRate = hdr
	require.NoError(t, writeCCReport(dir, rep))
	md, err = os.ReadFile(filepath.Join(dir, "index.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "Every link is 4xHDR (200 Gb/s of data); the time scales, loads, windows and CCTI timer are those tuned at 4x SDR scaled by 25,")
	js, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	assert.Contains(t, string(js), `"link_rate": "4xHDR"`)
}

func TestRunCCCmdUsage(t *testing.T) {
	for _, args := range [][]string{{"--only", "D9"}, {"--time-scale", "-1"}, {"--name", "Bad-Name"}, {"extra"},
		{"--rate", "4xFOO"}, {"--rate", "4xFDR10"}} {
		var out, errb bytes.Buffer
		err := runCCCmd(&harness.Env{Stdout: &out, Stderr: &errb}, args)
		var ue *harness.UsageError
		assert.True(t, errors.As(err, &ue), "%v: %v", args, err)
	}
	var out, errb bytes.Buffer
	err := runCCCmd(&harness.Env{Stdout: &out, Stderr: &errb}, []string{"--rate", "4xFOO"})
	assert.ErrorContains(t, err, "valid: {1,2,4,8,12}x{SDR,", "a bad rate lists the valid ones")
	out.Reset()
	require.NoError(t, runCCCmd(&harness.Env{Stdout: &out, Stderr: &out}, []string{"-h"}))
	assert.Contains(t, out.String(), "-rate RATE")
	assert.Contains(t, out.String(), "(default 4xSDR)")
}
