package interop_test

// The congestion mechanism under OpenSM's CC manager: OpenSM configures
// marking and throttling (congestion_control TRUE), and the devices then
// act on it, as they do under ibsm --cc.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/hca"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// ccThrottleConf is OpenSM's configuration: switches mark a VL whose
// queue holds 2/16 of its buffer, one packet in four; CAs control per SL
// (SL 0), one table step per BECN, recovering one step per 20 × 1.024 µs;
// the table's step i delays a packet by i/4 of its own time.
func ccThrottleConf() string {
	var b strings.Builder
	b.WriteString(`force_log_flush TRUE
congestion_control TRUE
cc_sw_cong_setting_control_map 0x1f
cc_sw_cong_setting_threshold 0xe
cc_sw_cong_setting_packet_size 1
cc_sw_cong_setting_marking_rate 0x3
cc_ca_cong_setting_port_control 0x1
cc_ca_cong_setting_control_map 0x1
cc_ca_cong_setting_ccti_timer 0 20
cc_ca_cong_setting_ccti_increase 0 1
cc_ca_cong_setting_trigger_threshold 0 8
cc_ca_cong_setting_ccti_min 0 0
cc_cct `)
	cct := make([]string, 64)
	for i := range cct {
		cct[i] = "2:" + strconv.Itoa(i)
	}
	b.WriteString(strings.Join(cct, ",") + "\n")
	return b.String()
}

// TestCongestionControlOpenSMThrottles: on a line of three switches, two
// hosts send to the third at 3/4 of the link rate each, so the middle
// switch's link to the last is offered 1.5 times its rate. Under
// OpenSM's CC manager that port marks FECN, the destination answers with
// CNPs, and the sources' CCTI rises and its table's delay paces their
// injection.
func TestCongestionControlOpenSMThrottles(t *testing.T) {
	topo, err := topologies.Mesh(3)
	require.NoError(t, err)
	// A slower clock keeps the links, not the CPU, the bottleneck.
	f := fabrictest.Up(t, "cct", topo, harness.UpOptions{TimeScale: 100})
	dir := t.TempDir()
	conf := filepath.Join(dir, "opensm.conf")
	require.NoError(t, os.WriteFile(conf, []byte(ccThrottleConf()), 0o644))
	o := &fabrictest.OpenSM{Log: filepath.Join(dir, "opensm.log"), Dir: dir}
	o.D = f.StartUMAD("ca2", "env", "OSM_CACHE_DIR="+dir, "opensm", "-F", conf, "-f", o.Log)
	o.WaitLog(t, ccWait, 0, "SUBNET UP")
	lid := map[string]uint16{}
	fabrictest.Wait(t, ccWait, "every port Active with a LID", func() bool {
		for _, n := range f.Status().Nodes {
			if n.Ports[0].LID == 0 || slices.ContainsFunc(n.Ports, func(p nodeproc.PortStatus) bool {
				return p.Peer != "" && p.State != "Active"
			}) {
				return false
			}
			lid[n.Name] = n.Ports[0].LID
		}
		return true
	})
	// OpenSM programs CC after the subnet is up: wait for the sources'
	// table to arrive before loading the link.
	fabrictest.Wait(t, ccWait, "OpenSM's CC settings at the sources", func() bool {
		for _, h := range []string{"ca0", "ca1"} {
			out, _, err := f.For(t).UMAD("ca2", "ibccquery", "CongestionControlTable", strconv.Itoa(int(lid[h])))
			if err != nil || !strings.Contains(out, "CCTI_Limit:......................63") {
				return false
			}
		}
		return true
	})

	ctx := context.Background()
	rate := f.Node("ca0").Ports[0].Rate
	require.NotZero(t, rate)
	for i, h := range []string{"ca0", "ca1"} {
		_, err := harness.StartFlow(ctx, f.Name, h, nodeproc.FlowArgs{ID: 1, DLID: lid["ca2"], RateBPS: rate * 3 / 4,
			Payload: 2048, Pattern: hca.Poisson, Seed: uint64(i + 1), MaxBacklog: 4096})
		require.NoError(t, err)
	}
	// 30 ms of emulated time at scale 100: thousands of packets, many
	// timer periods.
	time.Sleep(3 * time.Second)
	var sent [2]nodeproc.FlowStats
	var cca [2]nodeproc.CCAStatus
	for i, h := range []string{"ca0", "ca1"} {
		cca[i], err = harness.CCA(ctx, f.Name, h, nodeproc.CCAArgs{})
		require.NoError(t, err)
		sent[i], err = harness.StopFlow(ctx, f.Name, h, 1)
		require.NoError(t, err)
	}

	// sw1's port towards sw2 (port 2: towards higher x) is the root.
	var marked uint64
	for _, p := range f.Node("sw1").Ports {
		if p.Port == 2 && p.Congestion != nil {
			marked = p.Congestion.Marked
		}
	}
	assert.Positive(t, marked, "sw1[2] marked FECN")
	for i, h := range []string{"ca0", "ca1"} {
		c, s := cca[i], sent[i]
		t.Logf("%s: %d CNPs, %d BECNs, dests %+v; offered %d, sent %d, backlog %d", h, c.CNPReceived,
			c.BECNReceived, c.Dests, s.Offered, s.Sent, s.Backlog)
		assert.Equal(t, hca.CCIBA, c.Mode, h)
		assert.Positive(t, c.BECNReceived, "%s heard BECNs", h)
		// The CCT's delay held packets back at the source (the link's
		// own backpressure, without CC, delays none this way).
		assert.Positive(t, c.Paced, "%s paced packets by its CCT", h)
		assert.Positive(t, c.PacedNs, "%s spent time paced", h)
	}
	exited, err := o.D.Exited()
	require.False(t, exited, "opensm exited (%v)", err)
}
