package nodeproc

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/wire/mad"
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

// TestPortCongestionStatus: a port's status carries its congestion counts
// under the contract's names, MarkedByVL one per operational data VL.
func TestPortCongestionStatus(t *testing.T) {
	ea, eb := pipe.NewPair()
	t.Cleanup(func() { eb.Close() })
	p, err := port.New(ea, port.Config{DataVLs: 4}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	require.NoError(t, p.SetOperationalVLs(2))
	p.CountFECNMark(1)
	p.CountFECNMark(1)
	p.CountFECNMark(0)
	ps := portStatus(3, p, 9)
	require.NotNil(t, ps.Congestion)
	assert.Equal(t, CongestionStatus{Marked: 3, MarkedByVL: []uint64{1, 2}}, *ps.Congestion)
	b, err := json.Marshal(ps)
	require.NoError(t, err)
	var got struct {
		Congestion map[string]any `json:"congestion"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	assert.EqualValues(t, 3, got.Congestion["marked"])
	assert.Equal(t, []any{1.0, 2.0}, got.Congestion["marked_by_vl"])
	assert.Contains(t, got.Congestion, "rcv_fecn")
	assert.Contains(t, got.Congestion, "rcv_becn")
	assert.Nil(t, portStatus(4, nil, 0).Congestion, "an uncabled port has none")
}

// TestPKeyStrings: a P_Key table's non-zero entries, in table order, as
// four hex digits with the membership bit.
func TestPKeyStrings(t *testing.T) {
	tests := []struct {
		name string
		keys []mad.PKey
		want []string
	}{
		{"reset table", []mad.PKey{mad.DefaultPKey, 0, 0, 0}, []string{"0xffff"}},
		{"limited default", []mad.PKey{0x7fff}, []string{"0x7fff"}},
		{"partitions, gaps skipped", []mad.PKey{0xffff, 0, 0x8001, 0x0002}, []string{"0xffff", "0x8001", "0x0002"}},
		{"no table", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, PKeyStrings(tt.keys)) })
	}
}

// TestStatusPKeys: every port of a switch reports its P_Key table from
// the agent, the reset table's one entry before any SM, under "pkeys".
func TestStatusPKeys(t *testing.T) {
	st := switchNode(t).Status()
	require.Len(t, st.Ports, 4)
	for _, p := range st.Ports {
		assert.Equal(t, []string{"0xffff"}, p.PKeys, "port %d", p.Port)
	}
	b, err := json.Marshal(st.Ports[0])
	require.NoError(t, err)
	assert.Contains(t, string(b), `"pkeys":["0xffff"]`)
}
