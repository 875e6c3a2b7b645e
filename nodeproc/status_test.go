package nodeproc

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
)

// TestAgentStatusJSON: the agent's counters and trap state sit side by
// side in the status's "agent" object, under snake_case names.
func TestAgentStatusJSON(t *testing.T) {
	st := Status{Name: "sw1", Agent: &AgentStatus{Stats: agent.Stats{Received: 7, TrapsSent: 2, TrapsDropped: 1},
		PortStateChange: true, TrapOutstanding: true}}
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var got struct {
		Agent map[string]any `json:"agent"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	assert.EqualValues(t, 7, got.Agent["received"])
	assert.EqualValues(t, 2, got.Agent["traps_sent"])
	assert.EqualValues(t, 1, got.Agent["traps_dropped"])
	assert.Equal(t, true, got.Agent["trap_outstanding"])
	assert.Equal(t, true, got.Agent["port_state_change"])
}
