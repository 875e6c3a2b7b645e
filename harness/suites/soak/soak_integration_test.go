package soak

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/fabricnet"
	"ibfab/harness/suites/runner"
	"ibfab/internal/testsupport"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
)

// TestSoakQuick runs `ibfab run soak --quick`: every kind of disturbance
// at least once on the default fabric under traffic, ibsm Master and
// OpenSM Standby, and asserts the report's checks one by one: each
// disturbance settled within its bound and dropped only at its downed
// links, nothing dropped while quiet, no process, namespace, descriptor
// or goroutine left over. Memory is judged only after the warm-up, which
// a quick soak does not outlast (its check is skipped, the slopes are
// reported). The quick soak takes about 45 s here.
func TestSoakQuick(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "opensm", "opensm")
	fabrictest.UMAD2Sim(t)
	fabrictest.BuildBinaries(t)
	name := fmt.Sprintf("sk%d", os.Getpid())
	dir, err := os.MkdirTemp("", "ibfab-"+name+"-")
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("report and SM logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	start := time.Now()
	rep, err := Run(context.Background(), Options{Out: dir, Fabric: name, Quick: true, Seed: 1, Log: testsupport.LogWriter(t)})
	require.NoError(t, err)
	t.Logf("quick soak: %.0f s", time.Since(start).Seconds())
	left, _ := fabricnet.Namespaces(name)
	assert.Empty(t, left, "namespaces left behind")
	assert.Empty(t, rep.Error)
	for _, c := range rep.Checks {
		t.Logf("%s %s: %s", runner.Mark(c), c.Name, c.Detail)
		assert.True(t, c.OK || c.Skipped, "%s: %s", c.Name, c.Detail)
	}
	seen := map[Kind]bool{}
	for _, d := range rep.Disturbances {
		seen[d.Kind] = true
		assert.True(t, d.Passed, "#%d %s %s: %+v", d.N, d.Kind, d.Target(), d.Checks)
		require.NotNil(t, d.SettleMs, "#%d %s", d.N, d.Kind)
		assert.LessOrEqual(t, *d.SettleMs, d.BoundMs, "#%d %s", d.N, d.Kind)
	}
	assert.Len(t, seen, len(kinds.Values()), "every kind ran")
	assert.Positive(t, rep.Counters.Received)
	assert.NotEmpty(t, rep.Memory)
	assert.True(t, rep.Passed)
	for _, f := range []string{"index.md", "report.json", "ibsm-1.jsonl", "opensm-ca7/opensm.log"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
}
