package runner

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

// TestSMProcEvents: ibsm's events are kept apart from its results, which
// carry an event field of their own (the sweep or assimilation).
func TestSMProcEvents(t *testing.T) {
	p := &SMProc{}
	for _, tc := range []struct {
		line  string
		event bool
	}{
		{`{"event":"sweep","subnet_up":true}`, false},
		{`{"event":"assimilation","subnet_up":false}`, false},
		{`{"subnet_up":true}`, false},
		{`{"event":"qos","action":"admit"}`, true},
		{`{"event":"cc_log","node":"sw1","type":"switch"}`, true},
		{`not json`, false},
	} {
		assert.Equal(t, tc.event, p.event([]byte(tc.line)), tc.line)
	}
	assert.Len(t, p.QoSEvents(), 1)
	require.Len(t, p.CCLogEvents(), 1)
	assert.Equal(t, "sw1", p.CCLogEvents()[0].Node)
}
