package qos

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/sm"
)

// TestQoSQuick runs `ibfab run qos --quick --sm all`: under ibsm's QoS
// the flows get their bandwidth and stay within their bounds while best
// effort saturates the bottleneck, f3 is refused at sw2[1], the link cut
// moves or reports both flows; as best effort they miss; OpenSM's QoS
// runs beside it. The report holds the plots, JSON and a capture that
// tshark decodes with no malformed frame.
func TestQoSQuick(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "opensm", "opensm")
	testenv.RequireProgram(t, "tshark", "tshark")
	fabrictest.UMAD2Sim(t)
	fabrictest.BuildBinaries(t)
	dir := t.TempDir()
	rep, err := RunQoS(context.Background(), QoSOptions{Out: dir, Fabric: fabrictest.Name("qos"), Quick: true,
		Modes: []QoSMode{QoSIbsm, QoSNone, QoSOpenSM}, Log: testsupport.LogWriter(t)})
	require.NoError(t, err)
	for _, m := range rep.Modes {
		for _, c := range m.Checks {
			t.Logf("%s %v %s: %s", m.Mode, c.OK, c.Name, c.Detail)
		}
	}
	require.True(t, rep.Passed, "every check passes")
	require.Len(t, rep.Modes, 3)

	with := rep.Modes[0]
	require.Equal(t, QoSIbsm, with.Mode)
	require.Len(t, with.Flows, 2)
	for _, f := range with.Flows {
		assert.GreaterOrEqual(t, f.ReceivedMbps, 0.98*f.RequestedMbps, f.ID)
		assert.LessOrEqual(t, f.P99Us, f.BoundUs, f.ID)
		assert.NotZero(t, f.SL, "%s runs on an SL of its own", f.ID)
	}
	require.NotNil(t, with.Rejected)
	assert.Equal(t, sm.QoSReject, with.Rejected.Action)
	assert.Equal(t, "sw2[1]", with.Rejected.Port)
	assert.NotEmpty(t, with.Cut)
	assert.Len(t, with.AfterCut, 2)
	assert.NotEmpty(t, with.Series)

	without := rep.Modes[1]
	missed := 0
	for _, f := range without.Flows {
		assert.Zero(t, f.SL)
		if !f.BandwidthMet || !f.LatencyMet {
			missed++
		}
	}
	assert.Positive(t, missed, "as best effort the flows miss")

	for _, f := range []string{"index.md", "report.json", "ibsm-qos-throughput.png", "ibsm-qos-latency.svg", "opensm-qos-throughput.png"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	require.NotNil(t, with.Capture)
	require.Empty(t, with.Capture.Error)
	require.Positive(t, with.Capture.Frames)
	out, err := exec.Command("tshark", "-r", filepath.Join(dir, QoSIbsm.String(), with.Capture.File)).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, strings.ToLower(string(out)), "malformed")
}

// TestQoSQuickHDR runs `ibfab run qos --quick --rate 4xHDR` (ibsm's QoS,
// then the flows as best effort; some 11 s): every link 4x HDR, the time
// scale and the flows scaled by 25 from 4x SDR's, and every check passes
// as at 4x SDR.
func TestQoSQuickHDR(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "tshark", "tshark")
	fabrictest.UMAD2Sim(t)
	fabrictest.BuildBinaries(t)
	dir := t.TempDir()
	rep, err := RunQoS(context.Background(), QoSOptions{Out: dir, Fabric: fabrictest.Name("qos"), Quick: true, Rate: hdr,
		Log: testsupport.LogWriter(t)})
	require.NoError(t, err)
	for _, m := range rep.Modes {
		for _, c := range m.Checks {
			t.Logf("%s %v %s: %s", m.Mode, c.OK, c.Name, c.Detail)
		}
	}
	require.True(t, rep.Passed, "every check passes")
	assert.Equal(t, hdr, rep.LinkRate)
	assert.InDelta(t, 6250, rep.TimeScale, 1e-9)
	require.Len(t, rep.Modes, 2)
	for _, m := range rep.Modes {
		assert.InDelta(t, 6250, m.TimeScale, 1e-9, m.Mode)
		assert.InDelta(t, 200000, m.LinkMbps, 1e-9, m.Mode)
	}
	require.Len(t, rep.Modes[0].Flows, 2)
	assert.InDelta(t, 50000, rep.Modes[0].Flows[0].RequestedMbps, 1e-9)
	var js struct {
		LinkRate  string  `json:"link_rate"`
		TimeScale float64 `json:"time_scale"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &js))
	assert.Equal(t, "4xHDR", js.LinkRate)
	assert.InDelta(t, 6250, js.TimeScale, 1e-9)
}
