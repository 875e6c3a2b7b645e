package hca

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"ibfab/internal/clock"
	"ibfab/internal/enum"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// Errors of the flow operations.
var (
	ErrFlowExists = errors.New("hca: flow ID in use")
	ErrNoFlow     = errors.New("hca: no such flow")
)

//go:generate go tool stringer -type=Pattern,DestOrder,CCMode -linecomment

// Pattern is how a flow spaces its packets.
type Pattern uint8

// Flow patterns.
const (
	// CBR sends at fixed intervals: the constant bit rate a QoS flow
	// reserves. The default.
	CBR Pattern = iota // cbr
	// Poisson sends with exponentially distributed gaps of the same mean.
	Poisson // poisson
)

// "" is the default, as when Pattern was a string.
var patterns = enum.New("pattern", CBR, Poisson).EmptyIsZero()

// MarshalText implements encoding.TextMarshaler.
func (p Pattern) MarshalText() ([]byte, error) { return patterns.Marshal(p) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Pattern) UnmarshalText(b []byte) error { return patterns.Unmarshal(p, b) }

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
	// MessageBytes, when not 0, makes each arrival a message of that many
	// bytes, split into packets of Payload bytes (the last one shorter,
	// but never below FlowHeaderSize), all stamped with the message's
	// generation time. Rate then counts the wire bytes of the message's
	// packets, so the arrivals come one message's wire time at Rate
	// apart; everything else (Offered, Sent, Dropped, the backlog and
	// MaxBacklog) still counts packets. A message finding less room in
	// the backlog than it has packets is dropped whole.
	MessageBytes int
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

	// Dests, when set, replaces DLID and SL (which must then be zero):
	// each arrival goes to one of them, on that destination's SL, drawn
	// as Order says. The arrivals share the flow's backlog, as the
	// messages one UD queue pair posts do.
	Dests []FlowDest
	// Order is how an arrival's destination is drawn from Dests: Uniform
	// (the default) or InTurn.
	Order DestOrder
	// Burst is how many arrivals in a row go to one destination of an
	// InTurn flow before the next; 0 means 1.
	Burst int
	// Messages, when not 0, ends the flow's arrivals after that many: a
	// finite transfer, done (FlowStats.Finished) once the last has left.
	Messages uint64
}

// FlowDest is one destination of a flow: its LID and the SL the flow's
// packets to it take.
type FlowDest struct {
	DLID uint16 `json:"dlid"`
	SL   uint8  `json:"sl"`
}

// DestOrder is how a flow with several destinations picks each arrival's.
type DestOrder uint8

// Destination orders.
const (
	// Uniform draws each arrival's destination uniformly, from the flow's
	// seed. The default.
	Uniform DestOrder = iota // uniform
	// InTurn takes the destinations in their order, Burst arrivals each,
	// and starts over after the last.
	InTurn // in-turn
)

// "" is the default, as when DestOrder was a string.
var destOrders = enum.New("destination order", Uniform, InTurn).EmptyIsZero()

// MarshalText implements encoding.TextMarshaler.
func (o DestOrder) MarshalText() ([]byte, error) { return destOrders.Marshal(o) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *DestOrder) UnmarshalText(b []byte) error { return destOrders.Unmarshal(o, b) }

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
	// MessageBytes and MessagePackets describe each arrival of a
	// message flow (see FlowConfig.MessageBytes); Messages counts them.
	MessageBytes   int    `json:"message_bytes,omitempty"`
	MessagePackets int    `json:"message_packets,omitempty"`
	Messages       uint64 `json:"messages,omitempty"`

	Offered     uint64 `json:"offered"`
	Sent        uint64 `json:"sent"`
	SentBytes   uint64 `json:"sent_bytes"`   // wire bytes of the packets sent
	SentPayload uint64 `json:"sent_payload"` // payload bytes of the packets sent
	Dropped     uint64 `json:"dropped"`      // arrivals that found the source backlog full
	Failed      uint64 `json:"failed"`       // packets the port refused (not Active, SL unmapped, …)
	Skipped     uint64 `json:"skipped"`      // arrivals lost to a stalled process (not in Offered)
	// Dests counts the destinations of a flow given several (DLID and
	// SL are then the first's); Finished says a flow of Messages
	// arrivals has had them all and sent or dropped every packet.
	Dests    int  `json:"dests,omitempty"`
	Finished bool `json:"finished,omitempty"`

	Backlog    int `json:"backlog"`     // packets waiting at the source now
	MaxBacklog int `json:"max_backlog"` // the most that waited at once
	// Elapsed is the flow's emulated time since it started or its
	// counters were last reset.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// flowPort is what a flow needs from its HCA port: send one payload by a
// route, the length of the transmit queue of an SL's VL, the port's
// congestion control (nil: none) and how long a packet of some wire
// bytes takes on the link (0: unknown).
type flowPort struct {
	send    func(r ccRoute, payload []byte) error
	queued  func(sl uint8) int
	cc      ccPacer
	pktTime func(wire int) time.Duration
}

// ccPacer is what a sender asks of the port's congestion control for
// each packet: the earliest time the next one to a destination and SL
// may leave (IBA's inter-packet delay), the route it takes (DRB's
// aliases), and that it left (at now; it was held from ready on).
type ccPacer interface {
	holdUntil(dlid uint16, sl uint8) time.Time
	pick(dlid uint16, sl uint8) ccRoute
	sent(r ccRoute, now, ready time.Time, wire int)
}

// noCC is the pacer of a port without congestion control.
type noCC struct{}

func (noCC) holdUntil(uint16, uint8) time.Time { return time.Time{} }
func (noCC) pick(dlid uint16, sl uint8) ccRoute {
	return ccRoute{dlid: dlid, sl: sl, key: ccKey{base: dlid, sl: sl}}
}
func (noCC) sent(ccRoute, time.Time, time.Time, int) {}

// pending is a packet waiting at the source: its stamp (Unix ns),
// payload bytes and destination (an index in flow.dests).
type pending struct {
	stamp int64
	size  int
	dst   int
}

// flow emits one flow's packets, driven by a clock timer like Generator.
// Each arrival is stamped when it is generated and waits in the flow's
// backlog until its VL's queue in the port has room, so time queued at
// the source shows in the receiver's latency and a flow starved by
// arbitration shows as a growing backlog, then as drops.
type flow struct {
	cfg   FlowConfig
	clk   clock.Clock
	port  flowPort
	sizes []int      // payload bytes of the packets of an arrival
	dests []FlowDest // Dests, or the one of DLID and SL
	pick  *rand.Rand // a Uniform flow's destination draws

	mu sync.Mutex
	schedule
	start   time.Time
	timer   clock.Timer
	stopped bool
	seq     uint64
	backlog []pending // the packets waiting at the source, oldest first
	// arrivals counts every arrival since the start (resets keep it):
	// what InTurn and Messages count.
	arrivals uint64
	stats    FlowStats
	payload  []byte

	// The head packet's route once chosen (DRB spends a choice on it),
	// and since when it has been held by its IPD.
	route    ccRoute
	routed   bool
	heldFrom time.Time
	// wake drains the backlog again when the head may leave (its IPD is
	// over) or the VL's queue should have room; wakeAt is when it fires
	// (zero: not armed).
	wake   clock.Timer
	wakeAt time.Time
}

// newFlow validates cfg and returns a stopped flow.
func newFlow(cfg FlowConfig, clk clock.Clock, fp flowPort) (*flow, error) {
	if cfg.Payload == 0 {
		cfg.Payload = DefaultFlowPayload
	}
	if cfg.MaxBacklog == 0 {
		cfg.MaxBacklog = DefaultMaxBacklog
	}
	switch {
	case cfg.Rate == 0:
		return nil, fmt.Errorf("%w: flow %d: rate 0 bits/s", ErrConfig, cfg.ID)
	case cfg.Payload < FlowHeaderSize:
		return nil, fmt.Errorf("%w: flow %d: payload %d < %d", ErrConfig, cfg.ID, cfg.Payload, FlowHeaderSize)
	case !patterns.Valid(cfg.Pattern):
		return nil, fmt.Errorf("%w: flow %d: %w", ErrConfig, cfg.ID, patterns.Check(cfg.Pattern))
	case cfg.MaxBacklog < 0:
		return nil, fmt.Errorf("%w: flow %d: max backlog %d", ErrConfig, cfg.ID, cfg.MaxBacklog)
	case cfg.MessageBytes < 0:
		return nil, fmt.Errorf("%w: flow %d: message of %d bytes", ErrConfig, cfg.ID, cfg.MessageBytes)
	}
	dests, err := flowDests(&cfg)
	if err != nil {
		return nil, err
	}
	sizes := messageSizes(cfg.MessageBytes, cfg.Payload)
	if len(sizes) > cfg.MaxBacklog {
		return nil, fmt.Errorf("%w: flow %d: a message of %d packets never fits a backlog of %d", ErrConfig, cfg.ID, len(sizes), cfg.MaxBacklog)
	}
	if clk == nil {
		clk = clock.Real()
	}
	if fp.cc == nil {
		fp.cc = noCC{}
	}
	if fp.pktTime == nil {
		fp.pktTime = func(int) time.Duration { return 0 }
	}
	var w int // wire bytes of an arrival
	for _, n := range sizes {
		w += wire.UDPacketSize(n, false)
	}
	f := &flow{
		cfg: cfg, clk: clk, port: fp, sizes: sizes, dests: dests,
		schedule: newSchedule(float64(w*8)/float64(cfg.Rate)*1e9, cfg.Pattern == CBR, cfg.Seed),
		payload:  make([]byte, cfg.Payload),
		// Its own stream, so that the arrival times do not depend on
		// the number of destinations.
		pick: rand.New(rand.NewPCG(cfg.Seed^0x5bd1e995, cfg.Seed)),
	}
	f.stats = FlowStats{ID: cfg.ID, DLID: dests[0].DLID, SL: dests[0].SL, Rate: cfg.Rate, Payload: cfg.Payload,
		WireBytes: wire.UDPacketSize(cfg.Payload, false), Pattern: cfg.Pattern, IntervalNs: int64(f.mean)}
	if len(cfg.Dests) > 0 {
		f.stats.Dests = len(dests)
	}
	if cfg.MessageBytes > 0 {
		f.stats.MessageBytes, f.stats.MessagePackets = cfg.MessageBytes, len(sizes)
	}
	return f, nil
}

// flowDests checks a flow's destinations and returns them: Dests, or
// the single one DLID and SL name. It fills in Order and Burst.
func flowDests(cfg *FlowConfig) ([]FlowDest, error) {
	if cfg.Burst == 0 {
		cfg.Burst = 1
	}
	switch {
	case !destOrders.Valid(cfg.Order):
		return nil, fmt.Errorf("%w: flow %d: %w", ErrConfig, cfg.ID, destOrders.Check(cfg.Order))
	case cfg.Burst < 0:
		return nil, fmt.Errorf("%w: flow %d: burst %d", ErrConfig, cfg.ID, cfg.Burst)
	case len(cfg.Dests) > 0 && (cfg.DLID != 0 || cfg.SL != 0):
		return nil, fmt.Errorf("%w: flow %d: a destination list and a DLID or SL", ErrConfig, cfg.ID)
	}
	dests := cfg.Dests
	if len(dests) == 0 {
		dests = []FlowDest{{DLID: cfg.DLID, SL: cfg.SL}}
	}
	for _, d := range dests {
		switch {
		case d.DLID == 0:
			return nil, fmt.Errorf("%w: flow %d: no destination LID", ErrConfig, cfg.ID)
		case d.SL >= mad.NumSLs:
			return nil, fmt.Errorf("%w: flow %d: SL %d", ErrConfig, cfg.ID, d.SL)
		}
	}
	return slices.Clone(dests), nil
}

// nextDest returns the destination of the arrival about to be made.
func (f *flow) nextDest() int {
	n := len(f.dests)
	if n == 1 {
		return 0
	}
	if f.cfg.Order == InTurn {
		return int(f.arrivals/uint64(f.cfg.Burst)) % n
	}
	return f.pick.IntN(n)
}

// messageSizes splits a message of n bytes into payloads of at most
// payload bytes, the last shorter but at least FlowHeaderSize (it carries
// the stamp and tag too); n 0 is one packet of payload bytes.
func messageSizes(n, payload int) []int {
	if n == 0 {
		return []int{payload}
	}
	sizes := make([]int, 0, (n+payload-1)/payload)
	for ; n > payload; n -= payload {
		sizes = append(sizes, payload)
	}
	return append(sizes, max(n, FlowHeaderSize))
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
		if f.wake != nil {
			f.wake.Stop()
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
			MessageBytes: keep.MessageBytes, MessagePackets: keep.MessagePackets, Dests: keep.Dests,
			MaxBacklog: len(f.backlog)}
		f.start = f.clk.Now()
	}
	return s
}

func (f *flow) snapshotLocked() FlowStats {
	s := f.stats
	s.Backlog = len(f.backlog)
	s.Finished = f.allArrived() && len(f.backlog) == 0
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
		if f.allArrived() {
			return // the timer is not set again
		}
		if n == maxBurst {
			f.stats.Skipped += f.skipDue(now)
			break
		}
		f.arrive(now)
		f.next = f.next.Add(f.gap())
	}
	if !f.allArrived() {
		f.timer.Reset(f.next.Sub(now))
	}
}

// allArrived reports whether a flow of Messages arrivals has had them.
func (f *flow) allArrived() bool { return f.cfg.Messages > 0 && f.arrivals >= f.cfg.Messages }

// arrive generates one arrival at now, its packets stamped now. They
// join the source backlog, unless it has no room for all of them even
// after handing the port what it takes, and the backlog goes to the port
// as far as it can: what is left waits at the source.
func (f *flow) arrive(now time.Time) {
	n := len(f.sizes)
	dst := f.nextDest()
	f.arrivals++
	f.stats.Offered += uint64(n)
	if f.cfg.MessageBytes > 0 {
		f.stats.Messages++
	}
	if len(f.backlog)+n > f.cfg.MaxBacklog {
		f.drain(now) // the VL may have room by now
	}
	if len(f.backlog)+n > f.cfg.MaxBacklog {
		f.stats.Dropped += uint64(n)
		return
	}
	for _, size := range f.sizes {
		f.backlog = append(f.backlog, pending{stamp: now.UnixNano(), size: size, dst: dst})
	}
	f.drain(now)
	f.stats.MaxBacklog = max(f.stats.MaxBacklog, len(f.backlog))
}

// drain hands the backlog to the port, oldest first, while the
// congestion control lets the head packet leave and its VL's queue holds
// fewer than flowPortWindow packets. A packet the port refuses is counted
// as failed and not tried again. What stops the drain arms the wake
// timer: the end of the head's IPD, or the time the VL's queue should
// have drained half the window (never a spin).
func (f *flow) drain(now time.Time) {
	sent := 0
	defer func() { f.backlog = append(f.backlog[:0], f.backlog[sent:]...) }()
	for len(f.backlog) > sent {
		pk := f.backlog[sent]
		d := f.dests[pk.dst]
		if at := f.port.cc.holdUntil(d.DLID, d.SL); now.Before(at) {
			if f.heldFrom.IsZero() {
				f.heldFrom = now
			}
			f.wakeUp(now, at)
			return
		}
		if !f.routed {
			f.route, f.routed = f.port.cc.pick(d.DLID, d.SL), true
		}
		w := wire.UDPacketSize(pk.size, false)
		if f.port.queued(f.route.sl) >= flowPortWindow {
			if t := f.port.pktTime(w); t > 0 {
				f.wakeUp(now, now.Add(t*flowPortWindow/2))
			}
			return
		}
		sent++
		f.sendOne(now, pk, w)
	}
}

// sendOne hands packet pk of w wire bytes to the port by the head's
// route.
func (f *flow) sendOne(now time.Time, pk pending, w int) {
	b := f.payload[:pk.size]
	putStamp(b, pk.stamp)
	PutFlowTag(b, FlowTag{ID: f.cfg.ID, Seq: f.seq})
	f.seq++
	r := f.route
	ready := f.heldFrom
	if ready.IsZero() {
		ready = now
	}
	f.routed, f.heldFrom = false, time.Time{}
	if err := f.port.send(r, b); err != nil {
		f.stats.Failed++
		return
	}
	f.port.cc.sent(r, now, ready, w)
	f.stats.Sent++
	f.stats.SentBytes += uint64(w)
	f.stats.SentPayload += uint64(pk.size)
}

// wakeUp arms the wake timer for at, unless it fires sooner already.
func (f *flow) wakeUp(now, at time.Time) {
	if !f.wakeAt.IsZero() && !f.wakeAt.After(at) {
		return
	}
	f.wakeAt = at
	if f.wake == nil {
		f.wake = f.clk.AfterFunc(at.Sub(now), f.woken)
		return
	}
	f.wake.Reset(at.Sub(now))
}

// woken runs on the clock when the head packet may leave.
func (f *flow) woken() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.wakeAt = time.Time{}
	f.drain(f.clk.Now())
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
	for _, d := range append([]FlowDest{{SL: fc.SL}}, fc.Dests...) {
		if d.SL < mad.NumSLs && h.agent.VLFor(0, num, d.SL) >= 15 {
			return FlowStats{}, fmt.Errorf("flow %d: %w: SL %d on port %d", fc.ID, ErrUnmapped, d.SL, num)
		}
	}
	c := h.ccas[num-1]
	fp := flowPort{
		send: func(r ccRoute, payload []byte) error {
			return h.sendUD(num, r.dlid, r.sl, DataQP, fc.PKeyIndex, payload)
		},
		// The VL is looked up each time: the SM may remap the SL.
		queued:  func(sl uint8) int { return p.Queued(int(h.agent.VLFor(0, num, sl))) },
		cc:      c,
		pktTime: c.wireTime,
	}
	f, err := newFlow(fc, h.clk, fp)
	if err != nil {
		return FlowStats{}, err
	}
	f.stats.Port, f.stats.VL = num, h.agent.VLFor(0, num, f.stats.SL)
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
