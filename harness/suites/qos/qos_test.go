package qos

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness/suites/runner"
	"ibfab/hca"
	"ibfab/internal/opensmrun"
	"ibfab/sm/qos"
)

func TestP99Between(t *testing.T) {
	before := []hca.Bucket{{LeNs: 100, Count: 10}, {LeNs: 200, Count: 5}}
	for _, tc := range []struct {
		name  string
		after []hca.Bucket
		want  int64
	}{
		{"nothing new", before, 0},
		{"all in one bucket", []hca.Bucket{{LeNs: 100, Count: 110}, {LeNs: 200, Count: 5}}, 100},
		{"the tail decides", []hca.Bucket{{LeNs: 100, Count: 108}, {LeNs: 200, Count: 5}, {LeNs: 900, Count: 2}}, 900},
		{"one percent exactly", []hca.Bucket{{LeNs: 100, Count: 109}, {LeNs: 200, Count: 5}, {LeNs: 900, Count: 1}}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, runner.P99Between(before, tc.after))
		})
	}
}

// TestOpenSMHighTable: OpenSM's high table holds each flow's entries with
// the weight ibsm's mapping gives them, on the flow's VL, dealt in turn.
func TestOpenSMHighTable(t *testing.T) {
	reqs := []qos.Request{qosF1.Request, qosF2.Request}
	high, err := openSMHighTable(reqs)
	require.NoError(t, err)
	m, err := qos.NewManager(qos.Params{})
	require.NoError(t, err)
	want := map[opensmrun.ArbEntry]int{}
	for _, r := range reqs {
		f, err := m.Admit(r, offlinePath())
		require.NoError(t, err)
		want[opensmrun.ArbEntry{VL: int(f.Hops[0].VL), Weight: f.Hops[0].Weight}] += f.Hops[0].Entries
	}
	got := map[opensmrun.ArbEntry]int{}
	for _, e := range high {
		got[e]++
	}
	assert.Equal(t, want, got)
	require.GreaterOrEqual(t, len(high), 2)
	assert.NotEqual(t, high[0].VL, high[1].VL, "the flows' entries alternate")
	conf, err := opensmrun.IBSMQoS(2048, high)
	require.NoError(t, err)
	line := ""
	for _, l := range strings.Split(conf.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "qos_vlarb_high "); ok {
			line = v
		}
	}
	assert.Len(t, strings.Split(line, ","), len(high), "every entry in OpenSM's option: %q", line)
	assert.Contains(t, conf.String(), "qos_sl2vl 0,1,2,3,4,5,6,7,0,0,0,0,0,0,0,0")
}

// TestQoSCompare: the experiment shows something only if the flows miss
// without QoS.
func TestQoSCompare(t *testing.T) {
	met := QoSFlowResult{ID: "f1", BandwidthMet: true, LatencyMet: true}
	missed := QoSFlowResult{ID: "f2", BandwidthMet: true, LatencyMet: false}
	for _, tc := range []struct {
		name    string
		without []QoSFlowResult
		ok      bool
	}{
		{"both met", []QoSFlowResult{met, met}, false},
		{"one missed", []QoSFlowResult{met, missed}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &QoSReport{Modes: []QoSModeReport{{Mode: QoSIbsm}, {Mode: QoSNone, Flows: tc.without}}}
			cs := qosCompare(rep)
			require.Len(t, cs, 1)
			assert.Equal(t, tc.ok, cs[0].OK, cs[0].Detail)
		})
	}
	assert.Empty(t, qosCompare(&QoSReport{Modes: []QoSModeReport{{Mode: QoSOpenSM}}}), "nothing to compare")
}

func TestQoSMarkdown(t *testing.T) {
	rep := &QoSReport{TimeScale: QoSTimeScale, Measure: 3, Modes: []QoSModeReport{{Mode: QoSIbsm, Fabric: "q_q",
		Flows:  []QoSFlowResult{{ID: "f1", SL: 2, RequestedMbps: 2000, ReceivedMbps: 1999, BoundUs: 1000, P99Us: 20, PromisedUs: 116.8, BandwidthMet: true, LatencyMet: true}},
		Checks: []runner.Check{{Name: "f1 bandwidth", OK: true, Detail: "received"}}}}}
	md := qosMarkdown(rep)
	assert.Contains(t, md, "| ibsm-qos | f1 | 2 | 2000 | 1999.0 |")
	assert.Contains(t, md, "116.8")
	assert.Contains(t, md, "Time scale 250")
	assert.Contains(t, md, "- ok f1 bandwidth: received")
	assert.Contains(t, md, "FAIL", "not Passed")
}
