package afc

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
)

// TestAFCMechanism runs E6 of `ibfab run afc --quick` on RLFT(2,3) and
// asserts the must-show items for the soft fabric, each from the
// switches' own counters: with Adaptive the hot spot's packets reach
// more SQS VL queues than with D-mod-K; with AFI the SQS VL queues that
// hold them are among D-mod-K's (the adapted ones travel in the AFC, where
// some are seen), and once the hot spot is gone and the VLs have drained
// below the threshold the switches adapt nothing more. The report holds
// the plots.
func TestAFCMechanism(t *testing.T) {
	testenv.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	dir := t.TempDir()
	rep, err := RunAFC(context.Background(), AFCOptions{Out: dir, Fabric: fabrictest.Name("af"), Quick: true,
		Only: []string{"E6"}, Log: testsupport.LogWriter(t)})
	require.NoError(t, err)
	for _, c := range rep.Checks {
		t.Logf("%v %s: %s", c.OK, c.Name, c.Detail)
	}
	require.Len(t, rep.Mechanism, 3)
	by := map[AFCRouting]AFCMechanism{}
	for _, m := range rep.Mechanism {
		require.Empty(t, m.Error, "%s completed", m.Routing)
		require.NotEmpty(t, m.Samples, m.Routing)
		by[m.Routing] = m
	}
	det, ad, afi := by[AFCDModK], by[AFCAdaptive], by[AFCAFI]

	require.NotEmpty(t, det.HotSQS, "D-mod-K's hot-spot packets were seen")
	assert.Zero(t, det.AdaptedHot, "D-mod-K adapts nothing")
	assert.Empty(t, det.HotAFC)
	assert.Greater(t, len(ad.HotSQS), len(det.HotSQS), "Adaptive spreads the hot spot over more SQS VL queues: %v against %v", ad.HotSQS, det.HotSQS)
	assert.Positive(t, ad.AdaptedHot)

	assert.Positive(t, afi.AdaptedHot, "AFI adapted while the hot spot ran")
	assert.NotEmpty(t, afi.HotAFC, "adapted hot-spot packets travel in the AFC")
	for _, q := range afi.HotSQS {
		assert.True(t, slices.Contains(det.HotSQS, q), "AFI's hot-spot packets on SQS VL queue %s, which D-mod-K's paths do not use", q)
	}
	assert.Zero(t, afi.AdaptedTail, "adaptation stopped after the hot spot")
	assert.Less(t, afi.EndOccupancy, afi.Threshold, "every switch VL is below the threshold at the end")

	for _, c := range rep.Checks {
		assert.True(t, c.OK, "%s: %s", c.Name, c.Detail)
	}
	for _, f := range []string{"index.md", "report.json", "e6-afi.png", "e6-adaptive.png", "e6-d-mod-k.png"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
}
