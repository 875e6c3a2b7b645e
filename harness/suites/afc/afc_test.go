package afc

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness/suites/runner"
	"ibfab/hca"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

func TestAFCVLBlocks(t *testing.T) {
	for _, c := range []struct {
		q    AFCQueuing
		afc  bool
		want []int
	}{
		{AFC1VC, false, []int{2048}},
		{AFC1VC, true, []int{1024, 1024}},
		{AFCDBBM, false, []int{682, 682, 682}},
		{AFCFlow2SL, true, []int{512, 512, 512, 512}},
	} {
		assert.Equal(t, c.want, afcVLBlocks(c.q, c.afc), "%s afc %v", c.q, c.afc)
	}
	assert.Equal(t, uint8(1), afcSetup{Queuing: AFC1VC}.afcVL())
	assert.Equal(t, uint8(3), afcSetup{Queuing: AFCVFtree}.afcVL())
}

func TestAFCPlan(t *testing.T) {
	for _, quick := range []bool{false, true} {
		plan := afcPlan(quick)
		for _, e := range plan {
			assert.Contains(t, afcIDs, e.ID)
			assert.Contains(t, []int{2, 3, 4}, e.K, e.ID)
			assert.True(t, slices.IsSorted(e.Loads), "%s loads %v", e.ID, e.Loads)
			if e.Kind == afcSweep {
				assert.NotEmpty(t, e.Loads, e.ID)
			}
		}
		// Quick stays on K=2.
		if quick {
			assert.False(t, slices.ContainsFunc(plan, func(e afcExperiment) bool { return e.K != 2 }))
		}
	}
	got, err := selectAFC(afcPlan(false), []string{"e2", "E6"})
	require.NoError(t, err)
	var ids []string
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	assert.Equal(t, []string{"E6", "E2", "E2", "E2"}, ids, "every K of E2, in the plan's order")
	_, err = selectAFC(afcPlan(false), []string{"E9"})
	assert.ErrorContains(t, err, "no experiment")
}

// TestAFCAccepted: received wire bits over each host's own emulated
// window, summed and normalized to hosts × rate; the hot flow's share.
func TestAFCAccepted(t *testing.T) {
	t0 := time.Unix(100, 0)
	a, b := newAFCFlows(), newAFCFlows()
	a.at["h1"], a.at["h2"] = t0, t0
	// 1 s real at scale 1000 is 1 ms emulated.
	b.at["h1"], b.at["h2"] = t0.Add(time.Second), t0.Add(time.Second)
	b.flows["h1"] = nodeproc.FlowsReport{Received: []hca.FlowRxStats{{ID: 1, WireBytes: 500}, {ID: 7, WireBytes: 500}}}
	b.flows["h2"] = nodeproc.FlowsReport{Received: []hca.FlowRxStats{{ID: 1, WireBytes: 1000}},
		Sent: []hca.FlowStats{{Offered: 10, WireBytes: 100, Dropped: 3, Elapsed: time.Millisecond}}}
	// 2000 bytes in 1 ms is 16 Mb/s; two hosts of 8 Mb/s links.
	all, hot := afcAccepted(a, b, []string{"h1", "h2"}, 1000, 8e6, 7)
	assert.InDelta(t, 1.0, all, 1e-9)
	assert.InDelta(t, 0.25, hot, 1e-9)
	off, drops := afcOffered(b, []string{"h1", "h2"}, 8e6)
	assert.InDelta(t, 0.5, off, 1e-9) // 8000 bits in 1 ms on 16 Mb/s of links
	assert.Equal(t, uint64(3), drops)
	all, _ = afcAccepted(a, b, nil, 1000, 8e6, 7)
	assert.Zero(t, all)
}

// paperPoints builds a sweep on which every claim of the paper holds, each
// ordering by more than afcNoise.
func paperPoints(k int) []AFCPoint {
	var ps []AFCPoint
	base := map[AFCQueuing]float64{AFC1VC: 0.05, AFCDBBM: 0.4, AFCFlow2SL: 0.45, AFCVFtree: 0.06}
	afi := map[AFCQueuing]float64{AFC1VC: 0.5, AFCVFtree: 0.6, AFCDBBM: 0.05, AFCFlow2SL: 0.35}
	for _, voq := range []bool{false, true} {
		for _, tr := range []AFCTraffic{AFCUniform, AFCHS10, AFCHS25} {
			for _, r := range afcRoutings {
				for _, q := range afcQueuings {
					for _, load := range []float64{50, 100} {
						p := AFCPoint{K: k, Traffic: tr, afcSetup: afcSetup{Routing: r, Queuing: q, VOQ: voq}, Load: load, Offered: load / 100}
						p.Accepted = load / 100
						if tr != AFCUniform {
							p.Accepted = hsAccepted(base[q], afi[q], tr, r, q, voq)
						}
						ps = append(ps, p)
					}
				}
			}
		}
	}
	return ps
}

// hsAccepted is paperPoints' throughput of a setup under a hot spot.
func hsAccepted(x, afiGain float64, tr AFCTraffic, r AFCRouting, q AFCQueuing, voq bool) float64 {
	if voq {
		x += 0.1
	}
	switch r {
	case AFCAdaptiveTh:
		x += 0.05
	case AFCAFI:
		x += afiGain
	case AFCAdaptive:
		if q == AFCDBBM && !voq {
			x += 0.2
		}
		if voq && (q == AFC1VC || q == AFCVFtree) {
			x -= 0.15
		}
	}
	if tr == AFCHS25 && (r == AFCAdaptiveTh || r == AFCAFI) {
		x += 0.15
	}
	return x
}

func TestAFCClaimsAgree(t *testing.T) {
	ex := []AFCExchange{
		{K: 3, afcSetup: afcSetup{Routing: AFCDModK, Queuing: AFC1VC, VOQ: true}, ExecUs: 900},
		{K: 3, afcSetup: afcSetup{Routing: AFCAFI, Queuing: AFC1VC, VOQ: true}, ExecUs: 880},
		{K: 3, afcSetup: afcSetup{Routing: AFCDModK, Queuing: AFCFlow2SL, VOQ: false}, ExecUs: 1000},
		{K: 3, afcSetup: afcSetup{Routing: AFCAFI, Queuing: AFCFlow2SL, VOQ: false}, ExecUs: 990},
	}
	mech := []AFCMechanism{
		{Routing: AFCDModK, HotSQS: []string{"a", "b"}},
		{Routing: AFCAdaptive, HotSQS: []string{"a", "b", "c", "d"}},
		{Routing: AFCAFI, HotSQS: []string{"a"}, HotAFC: []string{"c"}, AdaptedHot: 500, AdaptedTail: 0, EndOccupancy: 0.1, Threshold: 0.75},
	}
	cs := afcClaims(paperPoints(2), ex, mech)
	require.NotEmpty(t, cs)
	for _, c := range cs {
		assert.Equal(t, verdictAgree, c.Verdict, "%s: %s", c.ID, c.Ours)
		assert.Empty(t, c.Why, c.ID)
	}
}

func TestAFCClaimsDisagree(t *testing.T) {
	ps := paperPoints(2)
	// Routing matters under UT; AFI hurts vFtree under HS25 only.
	for i := range ps {
		p := &ps[i]
		if p.Traffic == AFCUniform && p.Routing == AFCAdaptive {
			p.Accepted -= 0.3
		}
		if p.Traffic == AFCHS25 && p.Routing == AFCAFI && p.Queuing == AFCVFtree && !p.VOQ {
			p.Accepted = 0
		}
	}
	mech := []AFCMechanism{
		{Routing: AFCDModK, HotSQS: []string{"a", "b"}},
		{Routing: AFCAdaptive, HotSQS: []string{"a"}},
		{Routing: AFCAFI, HotSQS: []string{"a", "z"}, AdaptedHot: 100, AdaptedTail: 50, EndOccupancy: 0.9, Threshold: 0.75},
	}
	byID := map[string]AFCClaim{}
	for _, c := range afcClaims(ps, nil, mech) {
		byID[c.ID] = c
	}
	want := map[string]runner.Verdict{
		"UT-routing":          verdictDisagree,
		"HS-AFI-gain":         verdictPartly,
		"HS-Flow2SL-AFI-best": verdictAgree,
		"E6-spread":           verdictDisagree,
		"E6-AFC":              verdictDisagree,
		"E6-stops":            verdictDisagree,
		"E5-VOQ":              verdictNone,
	}
	for id, v := range want {
		c, ok := byID[id]
		require.True(t, ok, id)
		assert.Equal(t, v, c.Verdict, "%s: %s", id, c.Ours)
		if v == verdictDisagree || v == verdictPartly {
			assert.NotEmpty(t, c.Why, "%s explains its disagreement", id)
		}
	}
}

// TestAFCClaimsWithinNoise: when every scheme under a hot spot is within
// the noise of every other, no ordering claim agrees or disagrees.
func TestAFCClaimsWithinNoise(t *testing.T) {
	ps := paperPoints(2)
	for i := range ps {
		if ps[i].Traffic != AFCUniform {
			ps[i].Accepted = 0.4 + 0.01*float64(i%5)
		}
	}
	byID := map[string]AFCClaim{}
	for _, c := range afcClaims(ps, nil, nil) {
		byID[c.ID] = c
	}
	for _, id := range []string{"HS-SQS-order", "HS-AFI-gain", "HS10-DBBM-adaptive", "HS-Flow2SL-AFI-best", "HS25-above-HS10",
		"VOQ-HS-adaptive-hurts", "VOQ-HS-AFI-gain"} {
		c, ok := byID[id]
		require.True(t, ok, id)
		assert.Equal(t, verdictTie, c.Verdict, "%s: %s", id, c.Ours)
		assert.Contains(t, c.Why, "spread", id)
	}
	assert.Equal(t, verdictDisagree, byID["HS-1VC-collapse"].Verdict, "0.4 is no collapse")
}

func TestVerdictOf(t *testing.T) {
	h, e, f := outcomeHolds, outcomeTie, outcomeFails
	for _, c := range []struct {
		os   []afcOutcome
		want runner.Verdict
	}{
		{nil, verdictNone},
		{[]afcOutcome{h, h}, verdictAgree},
		{[]afcOutcome{e, e}, verdictTie},
		{[]afcOutcome{h, e}, verdictPartly},
		{[]afcOutcome{h, f}, verdictPartly},
		{[]afcOutcome{e, f}, verdictDisagree},
		{[]afcOutcome{f}, verdictDisagree},
	} {
		assert.Equal(t, c.want, verdictOf(c.os), "%v", c.os)
	}
	assert.Equal(t, outcomeHolds, above(0.5, 0.3))
	assert.Equal(t, outcomeTie, above(0.35, 0.3))
	assert.Equal(t, outcomeFails, above(0.1, 0.3))
	assert.Equal(t, outcomeFails, both(h, f, e))
	assert.Equal(t, outcomeTie, both(h, e))
}

// TestAFCReportFiles: the report writes every figure, the JSON and an
// index that links them, from a run's results.
func TestAFCReportFiles(t *testing.T) {
	dir := t.TempDir()
	if d := os.Getenv("AFC_FIG_DIR"); d != "" {
		dir = d
	}
	rep := &AFCReport{Points: paperPoints(2), Windows: afcWindowsFor(),
		Exchanges: []AFCExchange{{K: 2, afcSetup: afcSetup{Routing: AFCDModK, Queuing: AFC1VC}, ExecUs: 100}, {K: 2, afcSetup: afcSetup{Routing: AFCAFI, Queuing: AFCFlow2SL, VOQ: true}, ExecUs: 90}},
		Mechanism: []AFCMechanism{{Routing: AFCAFI, Queuing: AFCFlow2SL, Threshold: 0.75,
			Samples: []AFCMechSample{{TMs: 0.5, Occupancy: map[string]float64{"VL0": 0.2, "VL3": 0.1}}, {TMs: 1, Adapted: 4, HotAFC: 2, Occupancy: map[string]float64{"VL0": 0.8, "VL3": 0.5}}}}}}
	rep.Claims = afcClaims(rep.Points, rep.Exchanges, rep.Mechanism)
	require.NoError(t, writeAFCReport(dir, rep))
	for _, f := range []string{"index.md", "report.json", "sweep-k2-iq.png", "sweep-k2-voq.svg", "e5-exec.png", "e6-afi.png"} {
		assert.FileExists(t, filepath.Join(dir, f))
		assert.Contains(t, rep.Files, f)
	}
	idx, err := os.ReadFile(filepath.Join(dir, "index.md"))
	require.NoError(t, err)
	assert.Contains(t, string(idx), "![sweep-k2-iq](sweep-k2-iq.png)")
	assert.Contains(t, string(idx), "| HS-Flow2SL-AFI-best | 2 |")
}

// TestAFCAtRate: at 4x HDR, 25 times 4x SDR's data rate, each fabric's
// time scale is 25 times larger and every window 25 times shorter; an
// explicit --time-scale is kept.
func TestAFCAtRate(t *testing.T) {
	hdr := topologies.Rate{Width: topologies.Width4x, Speed: topologies.SpeedHDR}
	assert.InDelta(t, 1000, afcTimeScale(16, 0, runner.TunedRate), 1e-9)
	assert.InDelta(t, 6750, afcTimeScale(54, 0, runner.TunedRate), 1e-9)
	assert.InDelta(t, 32000, afcTimeScale(128, 0, runner.TunedRate), 1e-9)
	assert.InDelta(t, 25000, afcTimeScale(16, 0, hdr), 1e-9)
	assert.InDelta(t, 168750, afcTimeScale(54, 0, hdr), 1e-9)
	assert.InDelta(t, 300, afcTimeScale(16, 300, hdr), 1e-9, "--time-scale wins")
	w, wh := afcWindowsFor(), afcWindowsFor().at(25)
	assert.Equal(t, w.PointWindows.At(25), wh.PointWindows)
	assert.Equal(t, 160*time.Microsecond, wh.Hot)
	assert.Equal(t, 20*time.Microsecond, wh.Sample)
	assert.Equal(t, 80*time.Microsecond, wh.Tail)
	assert.Equal(t, w, w.at(1))
}
