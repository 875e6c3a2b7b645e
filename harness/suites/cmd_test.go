package suites

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
)

// TestRunExperiments: `ibfab run` reads its experiments from the table:
// its usage line and its unknown-suite error name them in the table's
// order, and `run NAME -h` gives each one's own usage line.
func TestRunExperiments(t *testing.T) {
	assert.Equal(t, "thesis, qos, cc, afc, sm-failover", experimentNames(", "))
	assert.Equal(t, "run SUITE|all|thesis|qos|cc|afc|sm-failover [--out DIR] [--json] [--sm ibsm|opensm] [--mechanism basic|improved] [--name N]", runSynopsis)
	harness.Register(Command)
	var out, errb bytes.Buffer
	require.Equal(t, harness.ExitUsage, harness.Main([]string{"run", "nosuch"}, &out, &errb))
	assert.Contains(t, out.String()+errb.String(), ", all, thesis, qos, cc, afc, sm-failover")
	for _, e := range experiments {
		require.True(t, strings.HasPrefix(e.synopsis, "run "+e.name+" "), e.synopsis)
		var out, errb bytes.Buffer
		require.Equal(t, harness.ExitOK, harness.Main([]string{"run", e.name, "-h"}, &out, &errb), e.name)
		assert.Contains(t, out.String()+errb.String(), e.synopsis, e.name)
		out.Reset()
		errb.Reset()
		require.Equal(t, harness.ExitUsage, harness.Main([]string{"run", e.name, "extra"}, &out, &errb), e.name)
	}
}
