package hca_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"ibfab/hca"
	"ibfab/port"
	"ibfab/wire/mad"
)

// activateVLs is activate with 4 operational data VLs and VLHighLimit
// limit on the port path reaches.
func activateVLs(t *testing.T, p *pair, path []uint8, lid uint16, limit uint8) {
	t.Helper()
	get := sm(t, p, p.a, p.ia, drRequest(t, mad.DRRequest{Method: mad.MethodGet, TransactionID: 20, AttrID: mad.AttrPortInfo, AttrModifier: 1, Path: path}))
	pi, err := mad.DecodePortInfo(get.Data())
	if err != nil {
		t.Fatalf("DecodePortInfo: %v", err)
	}
	for i, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		pi.LID, pi.PortState, pi.PortPhysicalState = lid, s, mad.PhysStateNoChange
		pi.OperationalVLs, pi.VLHighLimit = 3, limit // 3: VL0-3
		sm(t, p, p.a, p.ia, drRequest(t, mad.DRRequest{Method: mad.MethodSet, TransactionID: 21 + uint64(i), AttrID: mad.AttrPortInfo,
			AttrModifier: 1, Path: path, Data: mad.AppendPortInfo(nil, &pi)}))
	}
}

// setSL2VL programs a's SLtoVL table: SL n to VL n for n < 4, others VL0.
func setSL2VL(t *testing.T, p *pair) {
	t.Helper()
	var f mad.SLtoVLMappingTableFields
	for sl := range 4 {
		f.VL[sl] = uint8(sl)
	}
	sm(t, p, p.a, p.ia, drRequest(t, mad.DRRequest{Method: mad.MethodSet, TransactionID: 30, AttrID: mad.AttrSLtoVLMapping,
		Data: mad.AppendSLtoVLMappingTable(nil, &f)}))
}

// setVLArb programs block b of a's VL arbitration tables.
func setVLArb(t *testing.T, p *pair, b mad.VLArbBlock, es ...mad.VLArbEntry) {
	t.Helper()
	var f mad.VLArbitrationTableFields
	copy(f.Entries[:], es)
	sm(t, p, p.a, p.ia, drRequest(t, mad.DRRequest{Method: mad.MethodSet, TransactionID: 40 + uint64(b), AttrID: mad.AttrVLArbitration,
		AttrModifier: mad.VLArbModifier(b, 1), Data: mad.AppendVLArbitrationTable(nil, &f)}))
}

// flowPair is a pair with LIDs a=1, b=2, four data VLs, a's SL n on VL n
// (n < 4) and a's VLHighLimit limit.
func flowPair(t *testing.T, limit uint8) *pair {
	t.Helper()
	p := newPair(t)
	p.settle()
	activateVLs(t, p, []uint8{0, 1}, 2, limit)
	activateVLs(t, p, nil, 1, limit)
	setSL2VL(t, p)
	return p
}

// TestFlowsSLtoVL: two flows on SLs 1 and 2 and best-effort traffic on
// SL0 leave a's port on VLs 1, 2 and 0 (a's SLtoVL), and b accounts each
// flow exactly: what the sender sent, packet for packet and byte for byte,
// with its latencies; best effort keeps the port's histogram.
func TestFlowsSLtoVL(t *testing.T) {
	p := flowPair(t, 0)
	rate := p.a.Port(1).Rate()
	for _, fc := range []hca.FlowConfig{
		{ID: 1, DLID: 2, SL: 1, Rate: rate / 10},
		{ID: 2, DLID: 2, SL: 2, Rate: rate / 20, Payload: 512, Pattern: hca.Poisson, Seed: 4},
	} {
		if _, err := p.a.StartFlow(1, fc); err != nil {
			t.Fatalf("StartFlow(%d): %v", fc.ID, err)
		}
	}
	if _, err := p.a.StartTraffic(1, hca.TrafficConfig{GeneratorConfig: hca.GeneratorConfig{Load: 20, Payload: 256, Dests: []uint16{2}, Seed: 1}}); err != nil {
		t.Fatalf("StartTraffic: %v", err)
	}
	p.runFor(t, 2*time.Millisecond)
	gen, _ := p.a.StopTraffic(1)
	sent := map[uint32]hca.FlowStats{}
	for _, id := range []uint32{1, 2} {
		s, err := p.a.StopFlow(id)
		if err != nil {
			t.Fatalf("StopFlow(%d): %v", id, err)
		}
		sent[id] = s
	}
	p.runFor(t, 100*time.Microsecond) // drain
	if s := sent[1]; s.Sent < 50 || s.VL != 1 || s.Dropped != 0 || s.Failed != 0 {
		t.Errorf("flow 1: %+v", s)
	}
	if s := sent[2]; s.Sent < 50 || s.VL != 2 || s.Dropped != 0 || s.Failed != 0 {
		t.Errorf("flow 2: %+v", s)
	}
	got := p.b.FlowsReceived(false)
	if len(got) != 2 {
		t.Fatalf("b received %d flows, want 2: %+v", len(got), got)
	}
	for _, r := range got {
		s := sent[r.ID]
		if r.SLID != 1 || r.Port != 1 || r.SL != s.SL || r.Packets != s.Sent || r.WireBytes != s.SentBytes ||
			r.PayloadBytes != s.SentPayload || r.Lost != 0 || r.OutOfOrder != 0 {
			t.Errorf("flow %d received %+v, sent %+v", r.ID, r, s)
		}
		if l := r.Latency; l.Count != r.Packets || l.P50Ns > l.P99Ns || l.P99Ns > l.P999Ns || l.P999Ns > l.MaxNs {
			t.Errorf("flow %d latency %+v", r.ID, l)
		}
	}
	vl := p.a.Port(1).XmitByVL()
	if vl[1].Packets != sent[1].Sent || vl[2].Packets != sent[2].Sent || vl[0].Packets != gen.Sent || vl[1].Bytes != sent[1].SentBytes {
		t.Errorf("a's VLs 0, 1, 2 sent %+v %+v %+v; generator %d, flows %d, %d", vl[0], vl[1], vl[2], gen.Sent, sent[1].Sent, sent[2].Sent)
	}
	bs := p.b.Stats().Ports[0]
	if bs.RxStamped != gen.Sent || bs.Latency.Count != gen.Sent || bs.RxFlow != sent[1].Sent+sent[2].Sent {
		t.Errorf("b's port: stamped %d (histogram %d), flow %d; generator sent %d", bs.RxStamped, bs.Latency.Count, bs.RxFlow, gen.Sent)
	}
	if r := p.b.FlowsReceived(true); len(r) != 2 || len(p.b.FlowsReceived(false)) != 0 {
		t.Errorf("reset: %d records before, %d after", len(r), len(p.b.FlowsReceived(false)))
	}
}

// TestFlowsArbitration: a's transmitter runs the VLArbitration tables the
// SM set. With VL1 alone in the high table and VLHighLimit 255, a flow on
// SL1 at 60 % of the link keeps its rate while a flow on SL2 offering the
// whole link gets the rest, and the shortfall shows at its source as
// drops with the backlog full, not as a slower sender.
func TestFlowsArbitration(t *testing.T) {
	p := flowPair(t, port.HighLimitUnbounded)
	setVLArb(t, p, mad.VLArbHigh0, mad.VLArbEntry{VL: 1, Weight: 255})
	setVLArb(t, p, mad.VLArbLow0, mad.VLArbEntry{VL: 2, Weight: 32}, mad.VLArbEntry{VL: 0, Weight: 32})
	arb := p.a.Port(1).VLArbitration()
	if arb.HighLimit != port.HighLimitUnbounded || arb.High[0] != (mad.VLArbEntry{VL: 1, Weight: 255}) || arb.Low[0].VL != 2 {
		t.Fatalf("a's port runs %+v", arb)
	}
	rate := p.a.Port(1).Rate()
	for _, fc := range []hca.FlowConfig{
		{ID: 10, DLID: 2, SL: 1, Rate: rate * 6 / 10},
		{ID: 20, DLID: 2, SL: 2, Rate: rate},
	} {
		if _, err := p.a.StartFlow(1, fc); err != nil {
			t.Fatalf("StartFlow(%d): %v", fc.ID, err)
		}
	}
	p.runFor(t, 3*time.Millisecond)
	hi, _ := p.a.StopFlow(10)
	lo, _ := p.a.StopFlow(20)
	p.runFor(t, 100*time.Microsecond)
	rx := map[uint32]hca.FlowRxStats{}
	for _, r := range p.b.FlowsReceived(false) {
		rx[r.ID] = r
	}
	share := func(id uint32) float64 { return rx[id].ThroughputBPS / float64(rate) }
	if hi.Dropped != 0 || hi.Offered-hi.Sent > 1 || math.Abs(share(10)-0.6) > 0.03 {
		t.Errorf("high-priority flow: %.3f of the link, sender %+v", share(10), hi)
	}
	if lo.Dropped == 0 || lo.MaxBacklog != hca.DefaultMaxBacklog || math.Abs(share(20)-0.4) > 0.05 {
		t.Errorf("low-priority flow: %.3f of the link, sender %+v", share(20), lo)
	}
	if l10, l20 := rx[10].Latency, rx[20].Latency; l10.P99Ns >= l20.P50Ns {
		t.Errorf("high-priority p99 %d ns not below low-priority p50 %d ns", l10.P99Ns, l20.P50Ns)
	}
	t.Logf("high: %.3f of the link, p50 %d p99 %d ns; low: %.3f, p50 %d p99 %d ns, %d dropped at the source",
		share(10), rx[10].Latency.P50Ns, rx[10].Latency.P99Ns, share(20), rx[20].Latency.P50Ns, rx[20].Latency.P99Ns, lo.Dropped)
}

func TestFlowErrors(t *testing.T) {
	p := newPair(t)
	ok := hca.FlowConfig{ID: 1, DLID: 2, Rate: 1e9}
	if _, err := p.a.StartFlow(1, ok); err != nil {
		t.Fatalf("StartFlow: %v", err)
	}
	if _, err := p.a.StartFlow(1, ok); !errors.Is(err, hca.ErrFlowExists) {
		t.Errorf("same ID again: %v, want ErrFlowExists", err)
	}
	if _, err := p.a.StartFlow(2, hca.FlowConfig{ID: 2, DLID: 2, Rate: 1e9}); !errors.Is(err, hca.ErrPort) {
		t.Errorf("port 2: %v, want ErrPort", err)
	}
	if _, err := p.a.StartFlow(1, hca.FlowConfig{ID: 3, DLID: 2, Rate: 1e9, PKeyIndex: 5}); !errors.Is(err, hca.ErrPKey) {
		t.Errorf("P_Key index 5: %v, want ErrPKey", err)
	}
	if _, err := p.a.StartFlow(1, hca.FlowConfig{ID: 4, DLID: 2}); !errors.Is(err, hca.ErrConfig) {
		t.Errorf("no rate: %v, want ErrConfig", err)
	}
	if _, err := p.a.StopFlow(9); !errors.Is(err, hca.ErrNoFlow) {
		t.Errorf("StopFlow(9): %v, want ErrNoFlow", err)
	}
	if got := p.a.FlowsSent(false); len(got) != 1 || got[0].ID != 1 {
		t.Errorf("FlowsSent: %+v", got)
	}
	// A flow on a port that is not Active yet counts its packets as
	// failed, and never panics.
	p.runFor(t, 100*time.Microsecond)
	if s, err := p.a.StopFlow(1); err != nil || s.Failed == 0 || s.Sent != 0 {
		t.Errorf("StopFlow(1) = %+v, %v; want failures on an Init port", s, err)
	}
	if err := p.a.SetFlowBucket(0); !errors.Is(err, hca.ErrConfig) {
		t.Errorf("SetFlowBucket(0): %v", err)
	}
}
