package hca

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"ibfab/internal/clock"
	"ibfab/wire"
)

var flowEpoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeFlowPort records what a flow sends; its VL queue length is set by
// the test (a starved VL keeps it at flowPortWindow).
type fakeFlowPort struct {
	clk    *clock.Manual
	queue  int
	err    error
	at     []time.Time // when each packet was handed over
	stamps []int64
	tags   []FlowTag
	routes []ccRoute
	sizes  []int
	cc     ccPacer       // nil: none
	pkt    time.Duration // packet time; 0: unknown
}

func (p *fakeFlowPort) port() flowPort {
	return flowPort{
		send: func(r ccRoute, b []byte) error {
			if p.err != nil {
				return p.err
			}
			ns, ok := readStamp(b)
			tag, tok := ReadFlowTag(b)
			if !ok || !tok {
				return errors.New("payload without stamp or tag")
			}
			p.at, p.stamps, p.tags = append(p.at, p.clk.Now()), append(p.stamps, ns), append(p.tags, tag)
			p.routes, p.sizes = append(p.routes, r), append(p.sizes, len(b))
			return nil
		},
		queued:  func(uint8) int { return p.queue },
		cc:      p.cc,
		pktTime: func(int) time.Duration { return p.pkt },
	}
}

// wireRate returns the rate at which packets of payload bytes leave every
// interval exactly.
func wireRate(payload int, interval time.Duration) uint64 {
	return uint64(wire.UDPacketSize(payload, false)*8) * uint64(time.Second/interval)
}

func TestFlowCBRIntervals(t *testing.T) {
	clk := clock.NewManual(flowEpoch)
	fp := &fakeFlowPort{clk: clk}
	f, err := newFlow(FlowConfig{ID: 5, DLID: 3, SL: 2, Rate: wireRate(2048, time.Millisecond)}, clk, fp.port())
	if err != nil {
		t.Fatal(err)
	}
	if f.stats.IntervalNs != int64(time.Millisecond) || f.stats.Pattern != CBR || f.stats.Payload != 2048 {
		t.Fatalf("defaults: %+v", f.stats)
	}
	f.startFlow()
	for range 100 {
		clk.AdvanceToNext()
	}
	if len(fp.at) != 100 {
		t.Fatalf("%d packets after 100 timer steps, want 100", len(fp.at))
	}
	for i, at := range fp.at {
		want := flowEpoch.Add(time.Duration(i+1) * time.Millisecond)
		if !at.Equal(want) || fp.stamps[i] != want.UnixNano() {
			t.Fatalf("packet %d sent at %v stamped %d, want both %v", i, at, fp.stamps[i], want)
		}
		if fp.tags[i] != (FlowTag{ID: 5, Seq: uint64(i)}) {
			t.Fatalf("packet %d tag %+v", i, fp.tags[i])
		}
	}
	// A coarse clock only bunches packets: the count stays the rate's.
	clk.Advance(50*time.Millisecond + 500*time.Microsecond)
	s := f.stop()
	if s.Sent != 150 || s.Offered != 150 || s.Dropped != 0 || s.Backlog != 0 {
		t.Errorf("after 150.5 ms: %+v, want 150 offered and sent", s)
	}
	if s.SentBytes != 150*uint64(s.WireBytes) || s.SentPayload != 150*2048 {
		t.Errorf("bytes: %+v", s)
	}
	if s.Elapsed != 150*time.Millisecond+500*time.Microsecond {
		t.Errorf("Elapsed %v", s.Elapsed)
	}
	clk.Advance(time.Second)
	if len(fp.at) != 150 {
		t.Errorf("a stopped flow sent %d more", len(fp.at)-150)
	}
}

func TestFlowPoissonRate(t *testing.T) {
	clk := clock.NewManual(flowEpoch)
	fp := &fakeFlowPort{clk: clk}
	const interval = 10 * time.Microsecond
	f, err := newFlow(FlowConfig{ID: 1, DLID: 3, Rate: wireRate(256, interval), Payload: 256, Pattern: Poisson, Seed: 3}, clk, fp.port())
	if err != nil {
		t.Fatal(err)
	}
	f.startFlow()
	for range 100 {
		clk.Advance(time.Millisecond)
	}
	s := f.stop()
	want := float64(100 * time.Millisecond / interval)
	if d := math.Abs(float64(s.Sent) - want); d > 4*math.Sqrt(want) {
		t.Errorf("Poisson flow sent %d in 100 ms, want %.0f ± %.0f", s.Sent, want, 4*math.Sqrt(want))
	}
	var irregular bool
	for i := 2; i < len(fp.at); i++ {
		if fp.at[i].Sub(fp.at[i-1]) != fp.at[1].Sub(fp.at[0]) {
			irregular = true
			break
		}
	}
	if !irregular {
		t.Error("Poisson gaps all equal")
	}
}

// TestFlowSourceBacklog: while the VL's queue is full the flow keeps its
// packets, stamped when generated, up to MaxBacklog and drops the rest;
// once the VL drains it sends the backlog oldest first, so the receiver
// sees the time queued at the source as latency.
func TestFlowSourceBacklog(t *testing.T) {
	clk := clock.NewManual(flowEpoch)
	fp := &fakeFlowPort{clk: clk, queue: flowPortWindow}
	f, err := newFlow(FlowConfig{ID: 9, DLID: 3, Rate: wireRate(64, time.Microsecond), Payload: 64, MaxBacklog: 5}, clk, fp.port())
	if err != nil {
		t.Fatal(err)
	}
	f.startFlow()
	clk.Advance(8 * time.Microsecond) // 8 arrivals, room for 5
	s := f.snapshot(false)
	if s.Offered != 8 || s.Backlog != 5 || s.MaxBacklog != 5 || s.Dropped != 3 || s.Sent != 0 {
		t.Fatalf("starved: %+v, want 8 offered, 5 backlogged, 3 dropped", s)
	}
	fp.queue = 0
	clk.Advance(time.Microsecond) // the 9th arrival finds room
	s = f.snapshot(false)
	if s.Sent != 6 || s.Backlog != 0 || s.Offered != 9 {
		t.Fatalf("drained: %+v, want 6 sent", s)
	}
	for i := range 5 {
		if want := flowEpoch.Add(time.Duration(i+1) * time.Microsecond).UnixNano(); fp.stamps[i] != want {
			t.Errorf("backlogged packet %d stamped %d, want its generation %d", i, fp.stamps[i], want)
		}
		if !fp.at[i].Equal(flowEpoch.Add(9 * time.Microsecond)) {
			t.Errorf("backlogged packet %d sent at %v", i, fp.at[i])
		}
	}
	// Reset: counts start over, the flow keeps running.
	f.snapshot(true)
	clk.Advance(2 * time.Microsecond)
	if s = f.snapshot(false); s.Sent != 2 || s.Offered != 2 || s.Elapsed != 2*time.Microsecond || s.MaxBacklog != 0 {
		t.Errorf("after reset: %+v", s)
	}
	fp.err = errors.New("port refuses")
	clk.Advance(3 * time.Microsecond)
	if s = f.stop(); s.Failed != 3 || s.Sent != 2 {
		t.Errorf("refused: %+v, want 3 failed", s)
	}
	// Sequence numbers run on across a reset and count refused packets.
	if n := len(fp.tags); fp.tags[n-1].Seq != uint64(n-1) {
		t.Errorf("last sequence %d, want %d", fp.tags[n-1].Seq, n-1)
	}
}

func TestFlowConfigErrors(t *testing.T) {
	ok := FlowConfig{ID: 1, DLID: 2, Rate: 1e9}
	tests := []struct {
		name   string
		change func(*FlowConfig)
	}{
		{"zero rate", func(c *FlowConfig) { c.Rate = 0 }},
		{"payload below the header", func(c *FlowConfig) { c.Payload = FlowHeaderSize - 1 }},
		{"unknown pattern", func(c *FlowConfig) { c.Pattern = Pattern(9) }},
		{"negative backlog", func(c *FlowConfig) { c.MaxBacklog = -1 }},
		{"no destination", func(c *FlowConfig) { c.DLID = 0 }},
		{"SL 16", func(c *FlowConfig) { c.SL = 16 }},
		{"destination list and DLID", func(c *FlowConfig) { c.Dests = []FlowDest{{DLID: 4}} }},
		{"listed destination without LID", func(c *FlowConfig) { c.DLID, c.Dests = 0, []FlowDest{{DLID: 4}, {SL: 1}} }},
		{"listed destination on SL 16", func(c *FlowConfig) { c.DLID, c.Dests = 0, []FlowDest{{DLID: 4, SL: 16}} }},
		{"unknown order", func(c *FlowConfig) { c.Order = DestOrder(9) }},
		{"negative burst", func(c *FlowConfig) { c.Burst = -1 }},
	}
	fp := &fakeFlowPort{clk: clock.NewManual(flowEpoch)}
	if _, err := newFlow(ok, fp.clk, fp.port()); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.change(&c)
			if _, err := newFlow(c, fp.clk, fp.port()); !errors.Is(err, ErrConfig) {
				t.Errorf("newFlow: %v, want ErrConfig", err)
			}
		})
	}
}

// TestFlowRxAccounting: per (source, ID) records with exact counts,
// latency percentiles, loss and reordering from the sequence, and a time
// series in aligned intervals.
func TestFlowRxAccounting(t *testing.T) {
	var s portStats
	s.hist = newHistogram()
	const bucket = 100 * time.Millisecond
	at := func(ms int) time.Time { return flowEpoch.Add(time.Duration(ms) * time.Millisecond) }
	pkt := func(slid uint16, id uint32, seq uint64, sent time.Time) rxPacket {
		b := make([]byte, 100)
		putStamp(b, sent.UnixNano())
		PutFlowTag(b, FlowTag{ID: id, Seq: seq})
		return rxPacket{slid: slid, sl: 3, wire: wire.UDPacketSize(100, false), payload: b}
	}
	// Flow (1, 7): 100 packets 1 ms apart, latency i µs; seq 50 lost, 60
	// arrives after 61.
	for i := range 100 {
		seq := uint64(i)
		switch i {
		case 50:
			continue
		case 60:
			seq = 61
		case 61:
			seq = 60
		}
		s.receive(at(i), pkt(1, 7, seq, at(i).Add(-time.Duration(i+1)*time.Microsecond)), bucket)
	}
	// Same ID from another source is another flow; a generator's packet
	// goes to the port histogram.
	s.receive(at(5), pkt(2, 7, 0, at(4)), bucket)
	gen := make([]byte, 100)
	putStamp(gen, at(0).UnixNano())
	s.receive(at(1), rxPacket{slid: 4, payload: gen, wire: 140}, bucket)

	if s.rxPackets != 101 || s.rxFlow != 100 || s.rxStamped != 1 || s.hist.Count() != 1 {
		t.Fatalf("port counts: packets %d flow %d stamped %d hist %d", s.rxPackets, s.rxFlow, s.rxStamped, s.hist.Count())
	}
	r := s.flows[flowKey{slid: 1, id: 7}].snapshot(1, flowKey{slid: 1, id: 7})
	w := uint64(wire.UDPacketSize(100, false))
	if r.Packets != 99 || r.WireBytes != 99*w || r.PayloadBytes != 9900 || r.SL != 3 {
		t.Errorf("counts %+v", r)
	}
	if r.Lost != 1 || r.OutOfOrder != 1 {
		t.Errorf("lost %d, out of order %d; want 1, 1", r.Lost, r.OutOfOrder)
	}
	// Latencies 1..100 µs without 51: quantiles to within a bucket (1/128)
	// of the nearest-rank sample (p99: the 99th of 99, 100 µs).
	l := r.Latency
	near := func(got int64, want time.Duration) bool {
		return got >= int64(want) && float64(got) <= float64(want)*1.01
	}
	if !near(l.P50Ns, 50*time.Microsecond) || !near(l.P99Ns, 100*time.Microsecond) || l.MaxNs != int64(100*time.Microsecond) ||
		l.P999Ns != l.MaxNs || l.MinNs != int64(time.Microsecond) {
		t.Errorf("latency p50 %d p99 %d p99.9 %d max %d min %d", l.P50Ns, l.P99Ns, l.P999Ns, l.MaxNs, l.MinNs)
	}
	// 99 packets from 0 to 99 ms: the 98 after the first in 99 ms.
	if want := float64(98*w*8) / 0.099; math.Abs(r.ThroughputBPS-want) > 1 {
		t.Errorf("throughput %.0f, want %.0f", r.ThroughputBPS, want)
	}
	if len(r.Series) != 1 || r.Series[0].Packets != 99 || r.Series[0].StartNs != at(0).UnixNano() || r.BucketNs != int64(bucket) {
		t.Errorf("series %+v", r.Series)
	}
	// The series keeps the latest MaxFlowSeries intervals.
	for i := range MaxFlowSeries + 10 {
		s.receive(at(1000+100*i), pkt(3, 1, uint64(i), at(1000+100*i)), bucket)
	}
	r = s.flows[flowKey{slid: 3, id: 1}].snapshot(1, flowKey{slid: 3, id: 1})
	if len(r.Series) != MaxFlowSeries || r.Series[0].StartNs != at(2000).UnixNano() {
		t.Errorf("series of %d intervals from %d, want %d from %d", len(r.Series), r.Series[0].StartNs, MaxFlowSeries, at(2000).UnixNano())
	}
	if bps := r.Series[0].BPS; bps != float64(w*8)/0.1 {
		t.Errorf("interval rate %.0f", bps)
	}
}

// TestFlowDests: a flow with a destination list sends each arrival, all
// its packets, to one destination on that destination's SL: in turn, a
// burst each, or uniformly; Messages ends the arrivals and the flow says
// when it is finished.
func TestFlowDests(t *testing.T) {
	dests := []FlowDest{{DLID: 4, SL: 0}, {DLID: 5, SL: 1}, {DLID: 6, SL: 2}}
	tests := []struct {
		name     string
		order    DestOrder
		burst    int
		messages uint64
		want     func(t *testing.T, got []uint16)
	}{
		{"in turn, bursts of 2", InTurn, 2, 12, func(t *testing.T, got []uint16) {
			want := []uint16{4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6}
			if !slices.Equal(got, want) {
				t.Errorf("destinations %v, want %v", got, want)
			}
		}},
		{"uniform", Uniform, 0, 3000, func(t *testing.T, got []uint16) {
			n := map[uint16]int{}
			for _, d := range got {
				n[d]++
			}
			for _, d := range dests {
				// 1000 expected each; 5 standard deviations is about 130.
				if c := n[d.DLID]; c < 870 || c > 1130 {
					t.Errorf("destination %d drawn %d times of 3000", d.DLID, c)
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewManual(flowEpoch)
			fp := &fakeFlowPort{clk: clk}
			// Messages of two packets: both go to the arrival's destination.
			f, err := newFlow(FlowConfig{ID: 1, Rate: wireRate(64, time.Microsecond) / 2, Payload: 64, MessageBytes: 128,
				Dests: dests, Order: tt.order, Burst: tt.burst, Messages: tt.messages, Seed: 7, MaxBacklog: 8}, clk, fp.port())
			if err != nil {
				t.Fatal(err)
			}
			f.startFlow()
			clk.Advance(time.Duration(tt.messages+5) * 4 * time.Microsecond) // a message every 4 µs
			s := f.snapshot(false)
			if s.Offered != 2*tt.messages || s.Sent != 2*tt.messages || !s.Finished || s.Dests != 3 {
				t.Fatalf("stats %+v, want %d messages all sent and finished", s, tt.messages)
			}
			var got []uint16
			for i := 0; i < len(fp.routes); i += 2 {
				a, b := fp.routes[i], fp.routes[i+1]
				if a.dlid != b.dlid {
					t.Fatalf("message %d split over %d and %d", i/2, a.dlid, b.dlid)
				}
				if want := dests[slices.IndexFunc(dests, func(d FlowDest) bool { return d.DLID == a.dlid })].SL; a.sl != want {
					t.Errorf("packet to %d on SL %d, want %d", a.dlid, a.sl, want)
				}
				got = append(got, a.dlid)
			}
			tt.want(t, got)
		})
	}
}
