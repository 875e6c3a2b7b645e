package qos

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/hca"
	"ibfab/internal/opensmrun"
	"ibfab/sm/qos"
	"ibfab/topologies"
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
	high, err := openSMHighTable(reqs, runner.RateBps(runner.TunedRate))
	require.NoError(t, err)
	m, err := qos.NewManager(qos.Params{})
	require.NoError(t, err)
	want := map[opensmrun.ArbEntry]int{}
	for _, r := range reqs {
		f, err := m.Admit(r, offlinePath(runner.RateBps(runner.TunedRate)))
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
	assert.Contains(t, md, "Every link 4xSDR, time scale 250", "the zero rate is 4x SDR")
	assert.Contains(t, md, "every link 4xSDR (8 Gb/s of data)")
	assert.Contains(t, md, "f1 (a1→b1, 2000 Mb/s, 1000 µs end to end)")
	assert.NotContains(t, md, "scaled by")
	assert.Contains(t, md, "- ok f1 bandwidth: received")
	assert.Contains(t, md, "FAIL", "not Passed")
}

var hdr = topologies.Rate{Width: topologies.Width4x, Speed: topologies.SpeedHDR}

// TestQoSAtRate: at 4x HDR, 25 times 4x SDR's data rate, the time scale
// and the flows' rates are 25 times larger and their bounds 25 times
// shorter, so that ibsm's mapping makes the same decisions: the same
// levels, entries and weights, f3 still too big for b1's link.
func TestQoSAtRate(t *testing.T) {
	sdr, at := qosAtRate(topologies.Rate{}), qosAtRate(hdr)
	assert.Equal(t, runner.TunedRate, sdr.rate)
	assert.InDelta(t, QoSTimeScale, sdr.scale, 1e-9)
	assert.Equal(t, qosF1, sdr.f1)
	assert.InDelta(t, 6250, at.scale, 1e-9)
	assert.Equal(t, uint64(200e9), at.bps)
	assert.InDelta(t, 50000, at.f1.Mbps, 1e-9)
	assert.InDelta(t, 40, at.f1.LatencyUs, 1e-9)
	assert.InDelta(t, 12, at.f2.LatencyUs, 1e-9)
	assert.InDelta(t, 75000, at.f3.Mbps, 1e-9)
	assert.Equal(t, qosF2.id, at.f2.id)
	admit := func(a qosAt) []qos.Hop {
		var hops []qos.Hop
		fs, err := offlineAdmit([]qos.Request{a.f1.Request, a.f2.Request}, a.bps)
		require.NoError(t, err)
		for _, f := range fs {
			for _, h := range f.Hops {
				h.BoundUs = 0 // in µs: 25 times shorter
				hops = append(hops, h)
			}
		}
		return hops
	}
	assert.Equal(t, admit(sdr), admit(at), "the same decisions at both rates")

	md := qosMarkdown(&QoSReport{LinkRate: hdr, TimeScale: at.scale, Measure: 3})
	assert.Contains(t, md, "Every link 4xHDR, time scale 6250")
	assert.Contains(t, md, "every link 4xHDR (200 Gb/s of data)")
	assert.Contains(t, md, "f2 (a2→b1, 25000 Mb/s, 12 µs)")
	assert.Contains(t, md, "scaled by 25")
}

// TestRunQoSCmdRate: a rate the parser does not know is a usage error
// listing the valid ones, a rate the nodes do not emulate one too; -h
// shows the flag and its default.
func TestRunQoSCmdRate(t *testing.T) {
	var out bytes.Buffer
	env := &harness.Env{Stdout: &out, Stderr: &out}
	for arg, msg := range map[string]string{"4xFOO": "valid: {1,2,4,8,12}x{SDR,", "4xFDR10": "not emulated"} {
		err := runQoSCmd(env, []string{"--rate", arg})
		var ue *harness.UsageError
		assert.True(t, errors.As(err, &ue), "%s: %v", arg, err)
		assert.ErrorContains(t, err, msg, arg)
	}
	out.Reset()
	require.NoError(t, runQoSCmd(env, []string{"-h"}))
	assert.Contains(t, out.String(), "-rate RATE")
	assert.Contains(t, out.String(), "(default 4xSDR)")
}
