package harness_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/hca"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// flowScale is the time scale of the flow test: as the hot-spot tests',
// a 4x SDR link then carries 32 Mb/s of real time, which two senders and
// one switch move with pacing holding on a busy 2-core machine.
const flowScale = 250

// star3 is star with a third HCA, ca3, on the switch's port 3.
func star3(tb testing.TB) *topologies.Topology {
	topo := fabrictest.Star(tb)
	i, err := topo.AddNode(topologies.Node{Type: topologies.CA, Name: "ca3", NumPorts: 1, GUID: 0x4000})
	require.NoError(tb, err)
	require.NoError(tb, topo.Connect(topologies.PortRef{Node: i, Port: 1}, topologies.PortRef{Node: 0, Port: 3}, 0, 0))
	return topo
}

// qos programs, as a QoS manager would, SL n on VL n for SLs 0-7 on every
// port of every node, and on the switch's port out to ca3 (the
// bottleneck) VLs 1 and 2 in the high-priority table with no limit, best
// effort (VL0) alone in the low one.
func qos(t *testing.T, f *fabrictest.Fabric, sm *fabrictest.SM) {
	var sl2vl mad.SLtoVLMappingTableFields
	for sl := range 8 {
		sl2vl.VL[sl] = uint8(sl)
	}
	data := mad.AppendSLtoVLMappingTable(nil, &sl2vl)
	all := mad.SLtoVLModifier{AllInPorts: true, AllOutPorts: true}.Modifier()
	_, err := sm.DR(mad.MethodSet, mad.AttrSLtoVLMapping, all, data, f.Index("sw1"))
	require.NoError(t, err)
	for _, h := range []string{"ca1", "ca2", "ca3"} {
		_, err := sm.DR(mad.MethodSet, mad.AttrSLtoVLMapping, 0, data, f.Index(h))
		require.NoError(t, err)
	}
	setBlock := func(b mad.VLArbBlock, es ...mad.VLArbEntry) {
		var blk mad.VLArbitrationTableFields
		copy(blk.Entries[:], es)
		_, err := sm.DR(mad.MethodSet, mad.AttrVLArbitration, mad.VLArbModifier(b, 3), mad.AppendVLArbitrationTable(nil, &blk), f.Index("sw1"))
		require.NoError(t, err)
	}
	setBlock(mad.VLArbHigh0, mad.VLArbEntry{VL: 1, Weight: 255}, mad.VLArbEntry{VL: 2, Weight: 255})
	setBlock(mad.VLArbLow0, mad.VLArbEntry{VL: 0, Weight: 255})
	require.NoError(t, sm.SetPortInfo(f.Index("sw1"), 3, func(pi *mad.PortInfoFields) { pi.VLHighLimit = 255 }))
}

// vlBytes returns what port p of node sent per VL.
func vlBytes(st nodeproc.Status, p int) map[int]uint64 {
	out := map[int]uint64{}
	for _, v := range st.Ports[p-1].VLXmit {
		out[v.VL] = v.Bytes
	}
	return out
}

// vlShares returns the share of the link's rate each VL of port p of
// node got over d (real time) from now.
func vlShares(f *fabrictest.Fabric, node string, p int, d time.Duration, rate uint64) map[int]float64 {
	b0, t0 := vlBytes(f.Node(node), p), time.Now()
	time.Sleep(d)
	b1, t1 := vlBytes(f.Node(node), p), time.Now()
	emulated := t1.Sub(t0).Seconds() / f.Scale
	share := map[int]float64{}
	for vl := range b1 {
		share[vl] = float64(b1[vl]-b0[vl]) * 8 / emulated / float64(rate)
	}
	return share
}

// TestFlows: two flows from ca2 to ca3 on SLs 1 and 2 (CBR at 50 % of the
// link, Poisson at 20 %) and best effort from ca1 to ca3 offering the
// whole link meet at the switch's port to ca3. With the flows' VLs in the
// high-priority table there, each flow keeps its rate, best effort gets
// what is left and the link stays full. Put back into one round-robin low
// table with best effort, flow 1 gets only its fair share and the rest of
// its packets are dropped at its source. ca3 accounts every flow packet
// for packet and byte for byte against what ca2 sent, with latencies.
func TestFlows(t *testing.T) {
	f := fabrictest.Up(t, "flows", star3(t), harness.UpOptions{TimeScale: flowScale})
	sm := f.NewSM("ca1")
	require.NoError(t, sm.Configure())
	qos(t, f, sm)
	ctx := context.Background()
	lid := func(n string) uint16 { return sm.LID[f.Index(n)] }
	rate := f.Node("ca2").Ports[0].Rate
	require.NotZero(t, rate)

	_, err := harness.Flows(ctx, f.Name, "ca3", nodeproc.FlowsArgs{Reset: true, BucketMS: 2})
	require.NoError(t, err)
	f.MustCall("ca1", "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 100, Dests: []uint16{lid("ca3")}, Seed: 1}, nil)
	want := map[uint32]nodeproc.FlowArgs{
		1: {ID: 1, DLID: lid("ca3"), SL: 1, RateBPS: rate * 5 / 10},
		2: {ID: 2, DLID: lid("ca3"), SL: 2, RateBPS: rate * 2 / 10, Payload: 1024, Pattern: hca.Poisson, Seed: 2},
	}
	for _, id := range []uint32{1, 2} {
		s, err := harness.StartFlow(ctx, f.Name, "ca2", want[id])
		require.NoError(t, err)
		assert.Equal(t, want[id].SL, s.VL, "flow %d's VL at ca2's port (its SLtoVL)", id)
	}
	_, err = harness.StartFlow(ctx, f.Name, "ca2", want[1])
	assert.ErrorContains(t, err, "flow ID in use")

	// The bottleneck's share per VL in the middle of the run.
	time.Sleep(3 * time.Second)
	qosShare := vlShares(f, "sw1", 3, 5*time.Second, rate)
	t.Logf("QoS tables: sw1[3] (to ca3) per VL, of the link: VL0 best effort %.3f, VL1 flow 1 %.3f, VL2 flow 2 %.3f, sum %.3f",
		qosShare[0], qosShare[1], qosShare[2], qosShare[0]+qosShare[1]+qosShare[2])
	mid, err := harness.Flows(ctx, f.Name, "ca2", nodeproc.FlowsArgs{})
	require.NoError(t, err)
	require.Len(t, mid.Sent, 2)
	for _, s := range mid.Sent {
		assert.Zero(t, s.Dropped, "flow %d dropped at its source under QoS tables", s.ID)
	}

	// One round-robin low table for all three VLs: flow 1 gets its fair
	// share, (1 - 0.2) / 2, of the link.
	var blk mad.VLArbitrationTableFields
	_, err = sm.DR(mad.MethodSet, mad.AttrVLArbitration, mad.VLArbModifier(mad.VLArbHigh0, 3), mad.AppendVLArbitrationTable(nil, &blk), f.Index("sw1"))
	require.NoError(t, err)
	copy(blk.Entries[:], []mad.VLArbEntry{{VL: 0, Weight: 32}, {VL: 1, Weight: 32}, {VL: 2, Weight: 32}})
	_, err = sm.DR(mad.MethodSet, mad.AttrVLArbitration, mad.VLArbModifier(mad.VLArbLow0, 3), mad.AppendVLArbitrationTable(nil, &blk), f.Index("sw1"))
	require.NoError(t, err)
	time.Sleep(2 * time.Second)
	rrShare := vlShares(f, "sw1", 3, 5*time.Second, rate)
	t.Logf("round robin: sw1[3] per VL, of the link: VL0 best effort %.3f, VL1 flow 1 %.3f, VL2 flow 2 %.3f, sum %.3f",
		rrShare[0], rrShare[1], rrShare[2], rrShare[0]+rrShare[1]+rrShare[2])

	gen := struct {
		Sent       uint64 `json:"sent"`
		Backlogged uint64 `json:"backlogged"`
	}{}
	f.MustCall("ca1", "traffic-stop", map[string]int{"port": 1}, &gen)
	sent := map[uint32]nodeproc.FlowStats{}
	for _, id := range []uint32{1, 2} {
		s, err := harness.StopFlow(ctx, f.Name, "ca2", id)
		require.NoError(t, err)
		sent[id] = s
	}
	_, err = harness.StopFlow(ctx, f.Name, "ca2", 1)
	assert.ErrorContains(t, err, "no such flow")

	// Wait until everything sent has arrived.
	total := gen.Sent + sent[1].Sent + sent[2].Sent
	fabrictest.Wait(t, 30*time.Second, "every packet at ca3", func() bool {
		return f.Node("ca3").Ports[0].Traffic.RxPackets >= total
	})
	rep, err := harness.Flows(ctx, f.Name, "ca3", nodeproc.FlowsArgs{})
	require.NoError(t, err)
	require.Len(t, rep.Received, 2)
	for _, r := range rep.Received {
		s, l := sent[r.ID], r.Latency
		assert.Equal(t, lid("ca2"), r.SLID)
		assert.Equal(t, s.SL, r.SL)
		assert.Equal(t, s.Sent, r.Packets, "flow %d packets", r.ID)
		assert.Equal(t, s.SentBytes, r.WireBytes, "flow %d wire bytes", r.ID)
		assert.Equal(t, s.SentPayload, r.PayloadBytes, "flow %d payload bytes", r.ID)
		assert.Zero(t, r.Lost, "flow %d lost", r.ID)
		assert.Positive(t, l.P50Ns, "flow %d p50", r.ID)
		assert.True(t, l.P50Ns <= l.P99Ns && l.P99Ns <= l.P999Ns && l.P999Ns <= l.MaxNs, "flow %d latency %+v", r.ID, l)
		got := r.ThroughputBPS / float64(want[r.ID].RateBPS)
		if r.ID == 2 {
			// Below its fair share in both phases, flow 2 always kept its rate.
			assert.InDelta(t, 1, got, 0.05, "flow %d carried %.3f of its rate", r.ID, got)
		}
		var series []float64
		for _, p := range r.Series {
			series = append(series, p.BPS/float64(rate))
		}
		t.Logf("flow %d (SL%d): sent %d, received %d packets, %.3f of its rate; latency p50 %v p99 %v p99.9 %v max %v; backlog max %d; "+
			"dropped at the source %d; per 2 ms of the link: %.2f", r.ID, r.SL, s.Sent, r.Packets, got, time.Duration(l.P50Ns), time.Duration(l.P99Ns),
			time.Duration(l.P999Ns), time.Duration(l.MaxNs), s.MaxBacklog, s.Dropped, series)
	}
	// The bottleneck port sent exactly the flows' bytes on their VLs.
	end := vlBytes(f.Node("sw1"), 3)
	assert.Equal(t, sent[1].SentBytes, end[1], "sw1[3] VL1 bytes / flow 1's")
	assert.Equal(t, sent[2].SentBytes, end[2], "sw1[3] VL2 bytes / flow 2's")
	// Best effort saturated the link; under the QoS tables the flows kept
	// their rates, under round robin flow 1 lost to best effort.
	assert.Positive(t, gen.Backlogged, "best effort did not saturate the link")
	assert.InDelta(t, 0.5, qosShare[1], 0.04, "flow 1's share of the bottleneck under QoS tables")
	assert.InDelta(t, 0.2, qosShare[2], 0.04, "flow 2's share of the bottleneck under QoS tables")
	assert.Greater(t, qosShare[0], 0.2, "best effort's share of the bottleneck under QoS tables")
	assert.InDelta(t, 0.4, rrShare[1], 0.04, "flow 1's share of the bottleneck under round robin")
	assert.InDelta(t, 0.2, rrShare[2], 0.04, "flow 2's share of the bottleneck under round robin")
	assert.InDelta(t, 0.4, rrShare[0], 0.04, "best effort's share of the bottleneck under round robin")
	assert.Greater(t, sent[1].Dropped, mid.Sent[0].Dropped, "flow 1 dropped nothing at its source under round robin")
	ca3 := f.Node("ca3").Ports[0].Traffic
	assert.Equal(t, total, ca3.RxPackets, "ca3 received every packet sent to it")
	assert.Equal(t, sent[1].Sent+sent[2].Sent, ca3.RxFlow)
	assert.Equal(t, gen.Sent, ca3.Latency.Count, "best effort keeps the port's histogram")
	t.Logf("best effort: %d sent, %d backlogged at ca1; latency p50 %v p99 %v", gen.Sent, gen.Backlogged,
		time.Duration(ca3.Latency.P50Ns), time.Duration(ca3.Latency.P99Ns))
	// ibfab status --json shows the bottleneck's tables and per-VL counts.
	st := f.Status()
	i := slices.IndexFunc(st.Nodes, func(n harness.NodeStatus) bool { return n.Name == "sw1" })
	require.GreaterOrEqual(t, i, 0)
	p3 := st.Nodes[i].Ports[2]
	assert.Equal(t, []nodeproc.ArbEntry{{VL: 0, Weight: 32}, {VL: 1, Weight: 32}, {VL: 2, Weight: 32}}, p3.Arbitration.Low)
	assert.Empty(t, p3.Arbitration.High)
	require.NotEmpty(t, p3.VLXmit)
	assert.Equal(t, sent[1].SentBytes, p3.VLXmit[1].Bytes, "status vl_xmit of sw1[3] VL1")
}
