package hca

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"ibfab/internal/clock"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// Errors of the flow operations.
var (
	ErrFlowExists = errors.New("hca: flow ID in use")
	ErrNoFlow     = errors.New("hca: no such flow")
)

// Pattern is how a flow spaces its packets.
type Pattern string

// Flow patterns.
const (
	// CBR sends at fixed intervals: the constant bit rate a QoS flow
	// reserves.
	CBR Pattern = "cbr"
	// Poisson sends with exponentially distributed gaps of the same mean.
	Poisson Pattern = "poisson"
)

// Flow defaults.
const (
	DefaultFlowPayload = 2048
	// flowPortWindow is how many packets of a VL a flow lets wait in the
	// port's queue before it keeps further ones in its own backlog. The
	// port's queue is per VL, shared by every sender on it; the flow's
	// backlog is its own, so it is what MaxBacklog bounds and what is
	// counted per flow.
	flowPortWindow = 8
)

// FlowConfig is one flow of an HCA port: a stream of UD packets to one
// destination on one SL at a rate, beside the port's generator.
type FlowConfig struct {
	// ID names the flow among the flows of its HCA; packets carry it
	// (FlowTag), so the receiver accounts per (source LID, ID).
	ID   uint32
	DLID uint16
	SL   uint8
	// Rate is in bits per second of wire bytes: whole packets, LRH
	// through VCRC, as GeneratorConfig.Load counts them.
	Rate uint64
	// Payload is the UD payload in bytes, at least FlowHeaderSize; 0
	// means DefaultFlowPayload.
	Payload int
	// Pattern is CBR (the default) or Poisson.
	Pattern Pattern
	Seed    uint64
	// MaxBacklog bounds the packets generated and not yet handed to the
	// port, which wait at the source while the flow's VL has no room;
	// arrivals beyond it are dropped and counted. 0 means
	// DefaultMaxBacklog.
	MaxBacklog int
	// PKeyIndex and PKey choose the P_Key as TrafficConfig's do.
	PKeyIndex uint16
	PKey      mad.PKey
}

// FlowStats is a flow's sender side. Every arrival is Offered, then
// Dropped (the source backlog was full), Failed (the port refused it),
// Sent, or still waiting in Backlog.
type FlowStats struct {
	ID         uint32  `json:"id"`
	Port       uint8   `json:"port"`
	DLID       uint16  `json:"dlid"`
	SL         uint8   `json:"sl"`
	VL         uint8   `json:"vl"` // what the port's SLtoVL gave SL at the start
	Rate       uint64  `json:"rate_bps"`
	Payload    int     `json:"payload"`
	WireBytes  int     `json:"wire_bytes"` // of each packet
	Pattern    Pattern `json:"pattern"`
	IntervalNs int64   `json:"interval_ns"` // mean gap between arrivals

	Offered     uint64 `json:"offered"`
	Sent        uint64 `json:"sent"`
	SentBytes   uint64 `json:"sent_bytes"`   // wire bytes of the packets sent
	SentPayload uint64 `json:"sent_payload"` // payload bytes of the packets sent
	Dropped     uint64 `json:"dropped"`      // arrivals that found the source backlog full
	Failed      uint64 `json:"failed"`       // packets the port refused (not Active, SL unmapped, …)
	Skipped     uint64 `json:"skipped"`      // arrivals lost to a stalled process (not in Offered)
	Backlog     int    `json:"backlog"`      // packets waiting at the source now
	MaxBacklog  int    `json:"max_backlog"`  // the most that waited at once
	// Elapsed is the flow's emulated time since it started or its
	// counters were last reset.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// flowPort is what a flow needs from its HCA port: send one payload, and
// the length of its VL's transmit queue.
type flowPort struct {
	send   func(payload []byte) error
	queued func() int
}

// flow emits one flow's packets, driven by a clock timer like Generator.
// Each arrival is stamped when it is generated and waits in the flow's
// backlog until its VL's queue in the port has room, so time queued at
// the source shows in the receiver's latency and a flow starved by
// arbitration shows as a growing backlog, then as drops.
type flow struct {
	cfg  FlowConfig
	clk  clock.Clock
	port flowPort

	mu sync.Mutex
	schedule
	start   time.Time
	timer   clock.Timer
	stopped bool
	seq     uint64
	backlog []int64 // send stamps (Unix ns) of the packets waiting at the source
	stats   FlowStats
	payload []byte
}

// newFlow validates cfg and returns a stopped flow.
func newFlow(cfg FlowConfig, clk clock.Clock, fp flowPort) (*flow, error) {
	if cfg.Payload == 0 {
		cfg.Payload = DefaultFlowPayload
	}
	if cfg.Pattern == "" {
		cfg.Pattern = CBR
	}
	if cfg.MaxBacklog == 0 {
		cfg.MaxBacklog = DefaultMaxBacklog
	}
	switch {
	case cfg.Rate == 0:
		return nil, fmt.Errorf("%w: flow %d: rate 0 bits/s", ErrConfig, cfg.ID)
	case cfg.Payload < FlowHeaderSize:
		return nil, fmt.Errorf("%w: flow %d: payload %d < %d", ErrConfig, cfg.ID, cfg.Payload, FlowHeaderSize)
	case cfg.Pattern != CBR && cfg.Pattern != Poisson:
		return nil, fmt.Errorf("%w: flow %d: pattern %q (want %q or %q)", ErrConfig, cfg.ID, cfg.Pattern, CBR, Poisson)
	case cfg.MaxBacklog < 0:
		return nil, fmt.Errorf("%w: flow %d: max backlog %d", ErrConfig, cfg.ID, cfg.MaxBacklog)
	case cfg.DLID == 0:
		return nil, fmt.Errorf("%w: flow %d: no destination LID", ErrConfig, cfg.ID)
	case cfg.SL >= mad.NumSLs:
		return nil, fmt.Errorf("%w: flow %d: SL %d", ErrConfig, cfg.ID, cfg.SL)
	}
	if clk == nil {
		clk = clock.Real()
	}
	w := wire.UDPacketSize(cfg.Payload, false)
	f := &flow{
		cfg: cfg, clk: clk, port: fp,
		schedule: newSchedule(float64(w*8)/float64(cfg.Rate)*1e9, cfg.Pattern == CBR, cfg.Seed),
		payload:  make([]byte, cfg.Payload),
	}
	f.stats = FlowStats{ID: cfg.ID, DLID: cfg.DLID, SL: cfg.SL, Rate: cfg.Rate, Payload: cfg.Payload,
		WireBytes: w, Pattern: cfg.Pattern, IntervalNs: int64(f.mean)}
	return f, nil
}

// startFlow schedules the first arrival one gap from now.
func (f *flow) startFlow() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.start = f.clk.Now()
	f.next = f.start.Add(f.gap())
	f.timer = f.clk.AfterFunc(f.next.Sub(f.start), f.fire)
}

// stop ends the flow for good; what waits at the source is not sent.
func (f *flow) stop() FlowStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.stopped = true
		f.stats.Elapsed = f.clk.Now().Sub(f.start)
		if f.timer != nil {
			f.timer.Stop()
		}
	}
	return f.snapshotLocked()
}

// snapshot returns the flow's counters; with reset, they start over.
func (f *flow) snapshot(reset bool) FlowStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.snapshotLocked()
	if reset && !f.stopped {
		keep := f.stats
		f.stats = FlowStats{ID: keep.ID, Port: keep.Port, DLID: keep.DLID, SL: keep.SL, VL: keep.VL, Rate: keep.Rate,
			Payload: keep.Payload, WireBytes: keep.WireBytes, Pattern: keep.Pattern, IntervalNs: keep.IntervalNs,
			MaxBacklog: len(f.backlog)}
		f.start = f.clk.Now()
	}
	return s
}

func (f *flow) snapshotLocked() FlowStats {
	s := f.stats
	s.Backlog = len(f.backlog)
	if !f.stopped {
		s.Elapsed = f.clk.Now().Sub(f.start)
	}
	return s
}

// fire runs on the clock: every arrival due by now is generated (see
// arrive) and the timer is set for the next. A flow far behind (a stalled
// process) skips arrivals beyond maxBurst rather than flood the port.
func (f *flow) fire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	now := f.clk.Now()
	for n := 0; !f.next.After(now); n++ {
		if n == maxBurst {
			f.stats.Skipped += f.skipDue(now)
			break
		}
		f.arrive(now)
		f.next = f.next.Add(f.gap())
	}
	f.timer.Reset(f.next.Sub(now))
}

// arrive generates one packet at now, stamped now. It joins the source
// backlog, unless that is full even after handing the port what its VL
// has room for, and the backlog goes to the port as far as it can: what
// is left waits at the source.
func (f *flow) arrive(now time.Time) {
	f.stats.Offered++
	if len(f.backlog) >= f.cfg.MaxBacklog {
		f.drain() // the VL may have room by now
	}
	if len(f.backlog) >= f.cfg.MaxBacklog {
		f.stats.Dropped++
		return
	}
	f.backlog = append(f.backlog, now.UnixNano())
	f.drain()
	f.stats.MaxBacklog = max(f.stats.MaxBacklog, len(f.backlog))
}

// drain hands the backlog to the port, oldest first, while the VL's
// queue holds fewer than flowPortWindow packets. A packet the port
// refuses is counted as failed and not tried again.
func (f *flow) drain() {
	sent := 0
	for len(f.backlog) > sent && f.port.queued() < flowPortWindow {
		putStamp(f.payload, f.backlog[sent])
		PutFlowTag(f.payload, FlowTag{ID: f.cfg.ID, Seq: f.seq})
		f.seq++
		sent++
		if err := f.port.send(f.payload); err != nil {
			f.stats.Failed++
			continue
		}
		f.stats.Sent++
		f.stats.SentBytes += uint64(f.stats.WireBytes)
		f.stats.SentPayload += uint64(f.cfg.Payload)
	}
	f.backlog = append(f.backlog[:0], f.backlog[sent:]...)
}

// StartFlow starts flow fc on port num. Its ID must not be in use on
// this HCA; its P_Key and SL must be usable on the port now (the SL
// mapped to a data VL by the port's SLtoVL table).
func (h *HCA) StartFlow(num uint8, fc FlowConfig) (FlowStats, error) {
	p := h.Port(num)
	if p == nil {
		return FlowStats{}, fmt.Errorf("%w: %d", ErrPort, num)
	}
	if fc.PKey != 0 {
		idx, err := h.PKeyIndex(num, fc.PKey)
		if err != nil {
			return FlowStats{}, err
		}
		fc.PKeyIndex = idx
	} else if _, err := h.sendPKey(num, fc.PKeyIndex); err != nil {
		return FlowStats{}, err
	}
	if fc.SL < mad.NumSLs && h.agent.VLFor(0, num, fc.SL) >= 15 {
		return FlowStats{}, fmt.Errorf("flow %d: %w: SL %d on port %d", fc.ID, ErrUnmapped, fc.SL, num)
	}
	fp := flowPort{
		send: func(payload []byte) error {
			return h.sendUD(num, fc.DLID, fc.SL, DataQP, fc.PKeyIndex, payload)
		},
		// The VL is looked up each time: the SM may remap the SL.
		queued: func() int { return p.Queued(int(h.agent.VLFor(0, num, fc.SL))) },
	}
	f, err := newFlow(fc, h.clk, fp)
	if err != nil {
		return FlowStats{}, err
	}
	f.stats.Port, f.stats.VL = num, h.agent.VLFor(0, num, fc.SL)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.mu.closed:
		return FlowStats{}, ErrClosed
	case h.mu.flows[fc.ID] != nil:
		return FlowStats{}, fmt.Errorf("%w: %d", ErrFlowExists, fc.ID)
	}
	h.mu.flows[fc.ID] = f
	f.startFlow()
	return f.snapshot(false), nil
}

// StopFlow stops flow id and returns its sender's counters.
func (h *HCA) StopFlow(id uint32) (FlowStats, error) {
	h.mu.Lock()
	f := h.mu.flows[id]
	delete(h.mu.flows, id)
	h.mu.Unlock()
	if f == nil {
		return FlowStats{}, fmt.Errorf("%w: %d", ErrNoFlow, id)
	}
	return f.stop(), nil
}

// FlowsSent returns the sender counters of every running flow, by ID;
// with reset, each flow's counters start over.
func (h *HCA) FlowsSent(reset bool) []FlowStats {
	h.mu.Lock()
	fs := make([]*flow, 0, len(h.mu.flows))
	for _, f := range h.mu.flows {
		fs = append(fs, f)
	}
	h.mu.Unlock()
	out := make([]FlowStats, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.snapshot(reset))
	}
	slices.SortFunc(out, func(a, b FlowStats) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
