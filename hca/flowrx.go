package hca

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Receiver time series defaults.
const (
	// DefaultFlowBucket is the interval of a received flow's time series.
	DefaultFlowBucket = 100 * time.Millisecond
	// MaxFlowSeries bounds each received flow's time series: the latest
	// intervals with packets are kept, older ones forgotten.
	MaxFlowSeries = 600
)

// flowKey is a received flow: its sender's LID and the ID it chose.
type flowKey struct {
	slid uint16
	id   uint32
}

// flowRx is the receiver's accounting of one flow; portStats.mu guards
// it.
type flowRx struct {
	sl                 uint8
	packets            uint64
	wireBytes, payload uint64
	firstWire          int   // wire bytes of the first packet
	first, last        int64 // arrivals, Unix ns
	nextSeq            uint64
	outOfOrder         uint64 // packets with a sequence number below one seen before
	hist               Histogram
	bucket             int64 // ns
	series             []SeriesPoint
}

// SeriesPoint is one interval of a received flow's time series: what
// arrived in [StartNs, StartNs + bucket).
type SeriesPoint struct {
	StartNs   int64   `json:"start_ns"`
	Packets   uint64  `json:"packets"`
	WireBytes uint64  `json:"wire_bytes"`
	BPS       float64 `json:"bps"` // wire bits per second over the interval
}

// FlowRxStats is what a port received of one flow. Latency is one way,
// from the send stamp (written when the sender generated the packet, so
// time queued at the source counts) to the arrival, on the emulated
// clock.
type FlowRxStats struct {
	Port         uint8  `json:"port"`
	SLID         uint16 `json:"slid"`
	ID           uint32 `json:"id"`
	SL           uint8  `json:"sl"`
	Packets      uint64 `json:"packets"`
	WireBytes    uint64 `json:"wire_bytes"`
	PayloadBytes uint64 `json:"payload_bytes"`
	FirstNs      int64  `json:"first_ns"` // first arrival, Unix ns
	LastNs       int64  `json:"last_ns"`
	// ThroughputBPS is the wire bits of every packet after the first
	// per second from the first arrival to the last: the flow's rate as
	// carried, exact for CBR.
	ThroughputBPS float64 `json:"throughput_bps"`
	// Lost counts sequence numbers not received below the highest one
	// seen (lost, refused at the source, or still to come reordered);
	// OutOfOrder the packets that came after a later one.
	Lost       uint64          `json:"lost"`
	OutOfOrder uint64          `json:"out_of_order"`
	Latency    LatencySnapshot `json:"latency"`
	BucketNs   int64           `json:"bucket_ns"`
	Series     []SeriesPoint   `json:"series"`
}

// receiveFlow counts a flow packet of wire bytes arriving at ns; s.mu is
// held.
func (s *portStats) receiveFlow(ns int64, slid uint16, sl uint8, tag FlowTag, wire, payload int, latency time.Duration, bucket time.Duration) {
	k := flowKey{slid: slid, id: tag.ID}
	if s.flows == nil {
		s.flows = map[flowKey]*flowRx{}
	}
	r := s.flows[k]
	if r == nil {
		r = &flowRx{sl: sl, first: ns, firstWire: wire, bucket: max(int64(bucket), 1)}
		s.flows[k] = r
	}
	r.packets++
	r.wireBytes += uint64(wire)
	r.payload += uint64(payload)
	r.last = ns
	if tag.Seq < r.nextSeq {
		r.outOfOrder++
	} else {
		r.nextSeq = tag.Seq + 1
	}
	r.hist.Add(latency)
	r.addToSeries(ns, wire)
}

// addToSeries counts a packet in the interval holding ns. Intervals are
// aligned to multiples of the bucket in Unix time, so the series of
// different flows line up.
func (r *flowRx) addToSeries(ns int64, wire int) {
	start := ns - ns%r.bucket
	if n := len(r.series); n > 0 && r.series[n-1].StartNs >= start {
		// Arrivals come in time order on one port; a clock step back
		// counts in the latest interval.
		r.series[n-1].Packets++
		r.series[n-1].WireBytes += uint64(wire)
		return
	}
	if len(r.series) == MaxFlowSeries {
		r.series = append(r.series[:0], r.series[1:]...)
	}
	r.series = append(r.series, SeriesPoint{StartNs: start, Packets: 1, WireBytes: uint64(wire)})
}

// snapshot returns the record as FlowRxStats.
func (r *flowRx) snapshot(num uint8, k flowKey) FlowRxStats {
	st := FlowRxStats{
		Port: num, SLID: k.slid, ID: k.id, SL: r.sl, Packets: r.packets, WireBytes: r.wireBytes, PayloadBytes: r.payload,
		FirstNs: r.first, LastNs: r.last, OutOfOrder: r.outOfOrder, Latency: r.hist.Snapshot(), BucketNs: r.bucket,
		Series: make([]SeriesPoint, len(r.series)),
	}
	if r.nextSeq > r.packets {
		st.Lost = r.nextSeq - r.packets
	}
	if span := r.last - r.first; span > 0 {
		st.ThroughputBPS = float64(r.wireBytes-uint64(r.firstWire)) * 8 / (float64(span) / 1e9)
	}
	for i, p := range r.series {
		p.BPS = float64(p.WireBytes) * 8 / (float64(r.bucket) / 1e9)
		st.Series[i] = p
	}
	return st
}

// FlowsReceived returns what every port received of each flow, ordered by
// port, source LID and ID; with reset, the records start over (a flow's
// next packet opens a new one, with the bucket then set).
func (h *HCA) FlowsReceived(reset bool) []FlowRxStats {
	out := []FlowRxStats{}
	for i := range h.pstat {
		s := &h.pstat[i]
		s.mu.Lock()
		for k, r := range s.flows {
			out = append(out, r.snapshot(uint8(i+1), k))
		}
		if reset {
			s.flows = nil
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b FlowRxStats) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.SLID, b.SLID), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// SetFlowBucket sets the interval of the time series of flow records
// created from now on (after a reset, or of flows not seen yet).
func (h *HCA) SetFlowBucket(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: flow series bucket %v", ErrConfig, d)
	}
	h.flowBucket.Store(int64(d))
	return nil
}
