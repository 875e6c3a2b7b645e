package madfuzz_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/harness/madfuzz"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/topologies"
)

// TestLiveQuick is ibfab fuzz --quick on the default fabric with ibsm as
// master: 10,000 MADs of every shape (LIDs known, so GMPs and LID-routed
// SMPs too) from another HCA, every node answering every check, no
// process dead.
func TestLiveQuick(t *testing.T) {
	f := fabrictest.Up(t, "fuzz", topologies.Default(), harness.UpOptions{})
	d := f.StartUMAD("ca4", fabrictest.Bin(t, "ibsm"), "--port", "sim", "--json")
	fabrictest.Wait(t, 30*time.Second, "ibsm: subnet up", func() bool {
		if exited, err := d.Exited(); exited {
			t.Fatalf("ibsm exited (%v):\n%s", err, d.Output())
		}
		return strings.Contains(d.Output(), `"subnet_up":true`)
	})
	r, err := madfuzz.Live(t.Context(), madfuzz.LiveConfig{Fabric: f.Name, From: "ca7", MADs: 10_000, Seed: 3, CheckEvery: 2000})
	require.NoError(t, err)
	t.Logf("%d MADs at %.0f/s: %d answered, by status %v, by shape %v; RSS grew %d KiB at most (%s)", r.Sent, r.MADsPerS,
		r.Answered, r.ByStatus, r.ByShape, r.RSSGrowth>>10, r.RSSNode)
	assert.True(t, r.Passed, "failures %+v, dead %v", r.Failures, r.Dead)
	assert.Equal(t, 10_000, r.Sent)
	assert.Equal(t, 5, r.Checks)
	for _, s := range []madfuzz.Shape{madfuzz.ShapeGMP, madfuzz.ShapeLIDSMP, madfuzz.ShapeRMPP, madfuzz.ShapeBadRoute} {
		assert.Positive(t, r.ByShape[s.String()], "shape %s", s)
	}
	assert.Positive(t, r.Answered)
}
