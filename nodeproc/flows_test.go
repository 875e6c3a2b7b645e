package nodeproc

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/hca"
	"ibfab/internal/clock"
	"ibfab/link"
	"ibfab/link/pipe"
)

// hcaNode is a Node around a one-port HCA on a pipe with no peer: enough
// for the control ops, whose packets the port refuses.
func hcaNode(t *testing.T) *Node {
	t.Helper()
	a, b := pipe.NewPairWith(pipe.Options{NameA: "p1"})
	t.Cleanup(func() { b.Close() })
	ca, err := hca.New(hca.Config{NodeGUID: 0x1234, Ports: []link.Endpoint{a}, Clock: clock.NewManual(time.Unix(0, 0))})
	require.NoError(t, err)
	t.Cleanup(func() { ca.Close() })
	return &Node{kind: KindHCA, name: "ca1", ca: ca, hub: newMADHub(), done: make(chan struct{})}
}

func TestFlowOps(t *testing.T) {
	n := hcaNode(t)
	call := func(op, args string) (any, error) {
		var raw json.RawMessage
		if args != "" {
			raw = json.RawMessage(args)
		}
		return n.handle(context.Background(), op, raw)
	}
	for _, c := range []struct {
		name, op, args, wantErr string
	}{
		{"start without args", "flow-start", "", "missing args"},
		{"start without id", "flow-start", `{"dlid":2,"rate_bps":1000000}`, "id required"},
		{"start with an unknown field", "flow-start", `{"id":1,"dlid":2,"rate_bps":1000000,"load":5}`, "unknown field"},
		{"start with a bad type", "flow-start", `{"id":"one"}`, "args"},
		{"start without rate", "flow-start", `{"id":1,"dlid":2}`, "rate 0"},
		{"start without destination", "flow-start", `{"id":1,"rate_bps":1000000}`, "no destination"},
		{"start with a bad pattern", "flow-start", `{"id":1,"dlid":2,"rate_bps":1000000,"pattern":"burst"}`, "pattern"},
		{"start on a missing port", "flow-start", `{"id":1,"port":3,"dlid":2,"rate_bps":1000000}`, "no such port"},
		{"start with both P_Key choices", "flow-start", `{"id":1,"dlid":2,"rate_bps":1000000,"pkey":32767,"pkey_index":1}`, "both"},
		{"start", "flow-start", `{"id":1,"dlid":2,"sl":3,"rate_bps":1000000000,"payload":512}`, ""},
		{"start the same id", "flow-start", `{"id":1,"dlid":2,"rate_bps":1000000}`, "flow ID in use"},
		{"stop without id", "flow-stop", `{}`, "id required"},
		{"stop without args", "flow-stop", "", "missing args"},
		{"stop an unknown id", "flow-stop", `{"id":9}`, "no such flow"},
		{"flows with a bad bucket", "flows", `{"bucket_ms":-1}`, "bucket_ms"},
		{"flows with an unknown field", "flows", `{"all":true}`, "unknown field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := call(c.op, c.args)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			fs, ok := res.(FlowStats)
			require.True(t, ok, "result %T", res)
			assert.Equal(t, FlowStats{ID: 1, Port: 1, DLID: 2, SL: 3, VL: 0, Rate: 1e9, Payload: 512, WireBytes: 546,
				Pattern: hca.CBR, IntervalNs: 4368}, fs)
		})
	}
	res, err := call("flows", "")
	require.NoError(t, err)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var rep FlowsReport
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Sent, 1)
	assert.Equal(t, uint32(1), rep.Sent[0].ID)
	assert.NotNil(t, rep.Received)
	assert.Contains(t, string(b), `"received":[]`)
	res, err = call("flow-stop", `{"id":1}`)
	require.NoError(t, err)
	assert.Equal(t, uint32(1), res.(FlowStats).ID)
	_, err = call("flows", `{"reset":true,"bucket_ms":10}`)
	require.NoError(t, err)

	// Batches: all or none start; stop by IDs or all.
	_, err = call("flows-start", `{"flows":[{"id":2,"dests":[{"dlid":2,"sl":1},{"dlid":3}],"order":"in-turn","rate_bps":1000000},{"id":3,"rate_bps":1000000}]}`)
	require.ErrorContains(t, err, "flow 2 of 2 (id 3)")
	res, err = call("flows", "")
	require.NoError(t, err)
	assert.Empty(t, res.(FlowsReport).Sent, "a failed batch leaves no flow running")
	res, err = call("flows-start", `{"flows":[{"id":2,"dests":[{"dlid":2,"sl":1},{"dlid":3}],"order":"in-turn","rate_bps":1000000,"messages":4},{"id":3,"dlid":2,"rate_bps":1000000}]}`)
	require.NoError(t, err)
	started := res.([]FlowStats)
	require.Len(t, started, 2)
	assert.Equal(t, 2, started[0].Dests)
	_, err = call("flows-stop", `{"ids":[2],"all":true}`)
	require.ErrorContains(t, err, "both")
	res, err = call("flows-stop", `{"ids":[2,9]}`)
	require.NoError(t, err)
	assert.Len(t, res.([]FlowStats), 1, "an unknown id is skipped")
	res, err = call("flows-stop", `{"all":true}`)
	require.NoError(t, err)
	require.Len(t, res.([]FlowStats), 1)
	assert.Equal(t, uint32(3), res.([]FlowStats)[0].ID)
}
