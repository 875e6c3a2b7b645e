package nodeproc

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCCAOp(t *testing.T) {
	n := hcaNode(t)
	call := func(args string) (CCAStatus, string, error) {
		var raw json.RawMessage
		if args != "" {
			raw = json.RawMessage(args)
		}
		res, err := n.handle(context.Background(), "cca", raw)
		if err != nil {
			return CCAStatus{}, "", err
		}
		b, err := json.Marshal(res)
		require.NoError(t, err)
		return res.(CCAStatus), string(b), nil
	}
	tests := []struct {
		name, args string
		wantMode   string
		wantCap    int
		wantErr    string
	}{
		{"read the default", "", "iba", 4, ""},
		{"read with empty args", "{}", "iba", 4, ""},
		{"DRB with a cap", `{"mode":"drb","cap":2}`, "drb", 2, ""},
		{"off keeps the cap", `{"mode":"off"}`, "off", 2, ""},
		{"unknown mode", `{"mode":"fast"}`, "", 0, "congestion control mode"},
		{"cap beyond 128", `{"mode":"drb","cap":129}`, "", 0, "cap 129"},
		{"negative cap", `{"mode":"drb","cap":-1}`, "", 0, "cap -1"},
		{"cap without mode", `{"cap":3}`, "", 0, "without a mode"},
		{"unknown field", `{"mode":"iba","lmc":2}`, "", 0, "unknown field"},
		{"back to IBA", `{"mode":"iba"}`, "iba", 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, js, err := call(tt.args)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantMode, s.Mode.String())
			assert.Contains(t, js, `"mode":"`+tt.wantMode+`"`)
			assert.Equal(t, tt.wantCap, s.Cap)
			for _, key := range []string{`"mode":`, `"cap":`, `"cnp_sent":0`, `"cnp_received":0`, `"becn_received":0`, `"opens":0`, `"closes":0`, `"dests":[]`} {
				assert.Contains(t, js, key)
			}
		})
	}
}

func TestFlowStartMessage(t *testing.T) {
	n := hcaNode(t)
	res, err := n.handle(context.Background(), "flow-start", json.RawMessage(`{"id":4,"dlid":2,"rate_bps":1000000000,"payload":2048,"message_bytes":4096}`))
	require.NoError(t, err)
	fs := res.(FlowStats)
	assert.Equal(t, 4096, fs.MessageBytes)
	assert.Equal(t, 2, fs.MessagePackets)
	assert.Equal(t, int64(2*fs.WireBytes*8), fs.IntervalNs, "one message's wire bits at 1 Gb/s, in ns")
}
