package sm_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/sm/qos"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// events collects QoS events from the SM's goroutine.
type events struct{ recorder[sm.QoSEvent] }

// of returns the events of one action.
func (e *events) of(action sm.QoSAction) []sm.QoSEvent {
	var out []sm.QoSEvent
	for _, ev := range e.list() {
		if ev.Action == action {
			out = append(out, ev)
		}
	}
	return out
}

// checkQoSTables asserts that every port the flows cross holds exactly
// their reservations in its high-priority table, with the high limit set,
// and that SL n maps to VL n there.
func checkQoSTables(t *testing.T, b *bench, flows []*qos.Flow) {
	t.Helper()
	want := map[qos.PortKey]map[mad.VLArbEntry]int{}
	for _, f := range flows {
		for i, k := range f.Keys() {
			if want[k] == nil {
				want[k] = map[mad.VLArbEntry]int{}
			}
			want[k][mad.VLArbEntry{VL: f.Hops[i].VL, Weight: uint8(f.Hops[i].Weight)}] += f.Hops[i].Entries
		}
	}
	for k, w := range want {
		i, ok := b.topo.LookupGUID(k.GUID)
		require.True(t, ok)
		a := b.f.Node(i).Agent
		arb := a.VLArbitration(uint8(k.Port))
		got := map[mad.VLArbEntry]int{}
		for _, e := range arb.High {
			if e.Weight > 0 {
				got[e]++
			}
		}
		name := b.topo.Node(i).Name
		assert.Equal(t, w, got, "%s port %d high-priority table", name, k.Port)
		assert.NotZero(t, arb.VLHighLimit, "%s port %d VLHighLimit", name, k.Port)
		assert.Equal(t, mad.VLArbEntry{VL: 0, Weight: sm.DefaultVLArbWeight}, arb.Low[0])
		assert.Zero(t, arb.Low[1].Weight, "best effort alone in the low table")
		in := uint8(0)
		if b.topo.Node(i).Type == topologies.Switch {
			in = uint8(cabledPorts(b.topo, i)[0])
			if int(in) == k.Port {
				in = uint8(cabledPorts(b.topo, i)[1])
			}
		}
		n := mad.NumDataVLs(a.PortConfig(uint8(k.Port)).OperationalVLs)
		for sl, vl := range qos.SLtoVL(n) {
			assert.Equal(t, vl, a.VLFor(in, uint8(k.Port), uint8(sl)), "%s SL %d", name, sl)
		}
	}
}

func TestQoSSweep(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	var ev events
	s := b.newSM(t, sm.Config{QoS: &sm.QoSConfig{OnEvent: ev.add, Flows: []qos.Request{
		{ID: "f1", Src: "ca4", Dst: "ca12", Mbps: 400, LatencyUs: 1000},
		{ID: "f2", Src: "ca7", Dst: "ca12", Mbps: 1500, LatencyUs: 100, Scope: qos.PerHop},
		{ID: "nohost", Src: "ca4", Dst: "ca99", Mbps: 1, LatencyUs: 1000},
	}}})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	ph, ok := res.Phase(sm.PhaseQoS)
	require.True(t, ok)
	assert.NotZero(t, ph.SMPs)

	admits := ev.of(sm.QoSAdmit)
	require.Len(t, admits, 2)
	rej := ev.of(sm.QoSReject)
	require.Len(t, rej, 1)
	assert.Equal(t, "nohost", rej[0].ID)
	assert.Contains(t, rej[0].Reason, "ca99")
	var flows []*qos.Flow
	for _, e := range admits {
		flows = append(flows, e.Flow)
		assert.GreaterOrEqual(t, len(e.Flow.Hops), 2, "%s: the CA port and a switch port at least", e.ID)
	}
	checkQoSTables(t, b, flows)
}

// TestQoSControl: flows added and deleted while the SM watches the subnet
// reach the tables; one that does not fit is refused with the port; a
// link cut reroutes or loses the flows it carried.
func TestQoSControl(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	var ev events
	sent := countAttrs(b)
	s := b.newSM(t, sm.Config{
		QoS:                &sm.QoSConfig{OnEvent: ev.add},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep},
	})
	ctx := runSM(t, s)
	call := func(op sm.QoSOp, r qos.Request) sm.QoSReply {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		rep, err := s.QoSCall(cctx, op, r)
		require.NoError(t, err)
		return rep
	}
	// The first call may come before the subnet is up: it waits.
	rep := call(sm.QoSOpAdd, qos.Request{ID: "a", Src: "ca4", Dst: "ca13", Mbps: 1000, LatencyUs: 2000})
	require.NotNil(t, rep.Event)
	require.Contains(t, []sm.QoSAction{sm.QoSAdmit, sm.QoSPending}, rep.Event.Action, rep.Event.Reason)
	require.Eventually(t, func() bool { return len(call(sm.QoSOpList, qos.Request{}).Flows) == 1 }, 10*time.Second, 10*time.Millisecond)

	arbBefore := sent(mad.AttrVLArbitration)
	rep = call(sm.QoSOpAdd, qos.Request{ID: "b", Src: "ca7", Dst: "ca13", Mbps: 2000, LatencyUs: 2000})
	require.Equal(t, sm.QoSAdmit, rep.Event.Action, rep.Event.Reason)
	assert.NotZero(t, rep.Event.Blocks)
	assert.EqualValues(t, rep.Event.SMPs, rep.Event.Blocks, "only the changed blocks")
	assert.Equal(t, rep.Event.Blocks, sent(mad.AttrVLArbitration)-arbBefore)

	rep = call(sm.QoSOpAdd, qos.Request{ID: "huge", Src: "ca11", Dst: "ca13", Mbps: 6000, LatencyUs: 2000})
	assert.Equal(t, sm.QoSReject, rep.Event.Action)
	assert.NotEmpty(t, rep.Event.Port)
	rep = call(sm.QoSOpAdd, qos.Request{ID: "b", Src: "ca7", Dst: "ca13", Mbps: 1, LatencyUs: 2000})
	assert.Equal(t, sm.QoSReject, rep.Event.Action, "a second flow b")

	list := call(sm.QoSOpList, qos.Request{})
	require.Len(t, list.Flows, 2)
	assert.NotEmpty(t, list.Ports)
	checkQoSTables(t, b, list.Flows)

	rep = call(sm.QoSOpDel, qos.Request{ID: "a"})
	require.Equal(t, sm.QoSRelease, rep.Event.Action)
	list = call(sm.QoSOpList, qos.Request{})
	require.Len(t, list.Flows, 1)
	checkQoSTables(t, b, list.Flows)
	_, err := s.QoSCall(ctx, sm.QoSOpDel, qos.Request{ID: "a"})
	assert.Error(t, err, "a is gone")
}

// TestQoSReroute: a link cut on a flow's path moves the flow to its new
// route, releasing the entries of the ports it left.
func TestQoSReroute(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	var ev events
	s := upAndQuiet(t, b, sm.Config{
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep},
		QoS: &sm.QoSConfig{OnEvent: ev.add, Flows: []qos.Request{
			{ID: "f", Src: "ca4", Dst: "ca12", Mbps: 500, LatencyUs: 2000},
		}},
	})
	admits := ev.of(sm.QoSAdmit)
	require.Len(t, admits, 1)
	old := admits[0].Flow
	sw1, _ := b.topo.Lookup("sw1")
	cut := old.Keys()[1]
	require.Equal(t, b.topo.Node(sw1).GUID, cut.GUID, "the second hop leaves sw1")

	require.NoError(t, b.port.SetLink("sw1", uint8(cut.Port), false))
	res := assimilate(t, s, sm.TriggerSweep)
	_, ok := res.Phase(sm.PhaseQoS)
	require.True(t, ok)
	moved := ev.of(sm.QoSReroute)
	require.Len(t, moved, 1, "%+v", ev.of(sm.QoSLost))
	nf := moved[0].Flow
	assert.NotEqual(t, old.Keys(), nf.Keys())
	checkQoSTables(t, b, []*qos.Flow{nf})
	onlyFlows(t, b, []*qos.Flow{nf}, cut)

	// Back up: the cut port is configured again, and holds only what the
	// flow's route (moved back or not) puts there.
	require.NoError(t, b.port.SetLink("sw1", uint8(cut.Port), true))
	assimilate(t, s, sm.TriggerSweep)
	all := ev.list()
	list := all[len(all)-1]
	f := nf
	if list.Action == sm.QoSReroute {
		f = list.Flow
	}
	checkQoSTables(t, b, []*qos.Flow{f})
	onlyFlows(t, b, []*qos.Flow{f})
}

// onlyFlows asserts that no cabled port but those of flows holds a
// high-priority entry, except the ports in skip (links down).
func onlyFlows(t *testing.T, b *bench, flows []*qos.Flow, skip ...qos.PortKey) {
	t.Helper()
	on := map[qos.PortKey]bool{}
	for _, k := range skip {
		on[k] = true
	}
	for _, f := range flows {
		for _, k := range f.Keys() {
			on[k] = true
		}
	}
	for i := range b.topo.NumNodes() {
		for _, p := range cabledPorts(b.topo, i) {
			if on[qos.PortKey{GUID: b.topo.Node(i).GUID, Port: p}] {
				continue
			}
			for _, e := range b.f.Node(i).Agent.VLArbitration(uint8(p)).High {
				assert.Zero(t, e.Weight, "%s port %d holds an entry of no flow", b.topo.Node(i).Name, p)
			}
		}
	}
}
