package suites

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
)

// TestSMResultTrigger: an ibsm line's trigger and modes read into an
// SMResult, whose Trigger is a word both SMs share, and write back under
// the same keys.
func TestSMResultTrigger(t *testing.T) {
	line, err := json.Marshal(sm.Result{Event: "assimilation", Trigger: sm.TriggerTrap,
		Discovery: sm.DiscoveryFull, Distribution: sm.DistCutPorts})
	require.NoError(t, err)
	var x SMResult
	require.NoError(t, json.Unmarshal(line, &x))
	assert.Equal(t, "trap", x.Trigger)
	assert.Equal(t, sm.DiscoveryFull, x.Discovery)
	assert.Equal(t, sm.DistCutPorts, x.Distribution)

	x = osmResult(osmSweep{Trigger: "start"}, 0, true)
	out, err := json.Marshal(x)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"trigger":"start"`)
	assert.NotContains(t, string(out), `"discovery"`)
}
