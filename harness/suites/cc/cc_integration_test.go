package cc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
)

// TestCCQuick runs `ibfab run cc --quick` and asserts the issue's
// must-show items on the soft fabric, each against another run of the
// same suite on the same 4x4 mesh (the machine's noise is shared, the
// margins wide, nothing timed by the wall clock): with IBA_CC (D6) the
// hot link's FECN marks rise and the burst sources' injection falls
// below what they generate, held back by their CCTI; with DRB (D5) the
// alias paths open, close again after the burst, and the hot link of
// the run without CC carries at most 90 % of its load there; without CC
// (D0) no switch marks, no CCTI rises and no alias opens. Every
// experiment completes and the report holds the table and the plots.
func TestCCQuick(t *testing.T) {
	testenv.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	dir := t.TempDir()
	rep, err := RunCC(context.Background(), CCOptions{Out: dir, Fabric: fabrictest.Name("cc"), Quick: true, Log: testsupport.LogWriter(t)})
	require.NoError(t, err)
	for _, c := range rep.Comparisons {
		t.Logf("%s %s %s: ours %s, paper %s: %s %s", c.Experiment, c.Pattern, c.Metric, c.Ours, c.Paper, c.Verdict, c.Why)
	}
	for _, c := range rep.Checks {
		t.Logf("%v %s: %s", c.OK, c.Name, c.Detail)
	}
	require.Len(t, rep.Experiments, len(ccIDs))
	for _, e := range rep.Experiments {
		assert.Empty(t, e.Error, "%s completed", e.ID)
	}

	must := map[string]bool{}
	for _, c := range rep.Checks {
		must[c.Name] = c.OK
	}
	for _, name := range []string{
		"IBA_CC: the hot link's FECN marks rise",
		"IBA_CC: the sources' injection falls",
		"DRB: alias paths open",
		"DRB: alias paths close after the burst",
		"DRB: the hot link's load falls",
		"CC off: no marks, no throttling, no aliases",
	} {
		ok, ran := must[name]
		assert.True(t, ran, "check %q ran", name)
		assert.True(t, ok, name)
	}

	// The same facts straight from the runs, so that a wrong check
	// cannot hide them.
	off, iba, drb := hotRun(rep, "D0", CCOff), hotRun(rep, "D6", CCIBA), hotRun(rep, "D5", CCDRB)
	require.NotNil(t, off)
	require.NotNil(t, iba)
	require.NotNil(t, drb)
	assert.Positive(t, iba.FECNBurst)
	assert.Positive(t, iba.MaxCCTI)
	assert.Less(t, iba.InjectedMbps, 0.9*iba.OfferedMbps)
	assert.GreaterOrEqual(t, drb.MaxActive, 2)
	require.NotEmpty(t, off.HotLink)
	assert.LessOrEqual(t, drb.BurstLoads[off.HotLink], off.PeakLoad-ccHotLinkShed, "the hot link %s", off.HotLink)
	assert.Zero(t, off.FECNBurst)
	assert.Zero(t, off.MaxCCTI)
	assert.LessOrEqual(t, off.MaxActive, 1)

	// D1 saw the fabric carry the lowest load in full.
	for _, e := range rep.Experiments {
		if e.ID == "D1" {
			require.NotEmpty(t, e.Points)
			assert.True(t, unsaturated(e.Points[0]), "D1 accepts the lowest load: %+v", e.Points[0])
		}
	}
	assert.NotEmpty(t, rep.Comparisons)
	for _, f := range []string{"index.md", "report.json", "D1-shuffle-accepted.png", "D2-transpose-latency.png", "D4-peak.png",
		"D4-drb-links.png", "D6-iba-ccti.png", "D5-drb-aliases.png"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
}

// TestCCQuickHDR runs `ibfab run cc --quick --rate 4xHDR --only
// D0,D5,D6` (the hot spot without CC, with DRB and with IBA_CC; some
// 18 s): every link 4x HDR, the time scale 25 times 4x SDR's, the loads
// 25 times larger, windows and CCTI timer 25 times shorter, and every
// must-show check passes as at 4x SDR.
func TestCCQuickHDR(t *testing.T) {
	testenv.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	dir := t.TempDir()
	rep, err := RunCC(context.Background(), CCOptions{Out: dir, Fabric: fabrictest.Name("cc"), Quick: true, Rate: hdr,
		Only: []string{"D0", "D5", "D6"}, Log: testsupport.LogWriter(t)})
	require.NoError(t, err)
	for _, c := range rep.Checks {
		t.Logf("%v %s: %s", c.OK, c.Name, c.Detail)
	}
	assert.True(t, rep.Passed, "every check passes")
	assert.Len(t, rep.Checks, 6, "every must-show check ran")
	assert.Equal(t, hdr, rep.LinkRate)
	assert.Equal(t, uint16(4), rep.Config.CCTITimer)
	require.Len(t, rep.Experiments, 3)
	for _, e := range rep.Experiments {
		assert.Empty(t, e.Error, "%s completed", e.ID)
		assert.InDelta(t, 25000, e.TimeScale, 1e-9, e.ID)
	}
	iba := hotRun(rep, "D6", CCIBA)
	require.NotNil(t, iba)
	assert.InDelta(t, 200000*0.6, iba.OfferedMbps, 1e-6, "0.6 of a 4x HDR link per source")
	var js struct {
		LinkRate    string `json:"link_rate"`
		Experiments []struct {
			TimeScale float64 `json:"time_scale"`
		} `json:"experiments"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &js))
	assert.Equal(t, "4xHDR", js.LinkRate)
	require.NotEmpty(t, js.Experiments)
	assert.InDelta(t, 25000, js.Experiments[0].TimeScale, 1e-9)
}
