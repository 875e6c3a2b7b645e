package hca

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"ibfab/internal/clock"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// GeneratorConfig describes one traffic generator: Poisson arrivals at an
// offered load, destinations uniform over Dests or hot-spot, fixed payload.
type GeneratorConfig struct {
	// Load is the offered load in percent of Rate (0 < Load ≤ 100; more
	// is allowed, for overload tests). Load counts whole packets on the
	// wire, headers and CRCs included, as a link analyser would.
	Load float64
	// Rate is the link's data rate in bits per second (port.Rate()).
	Rate uint64
	// Payload is the UD payload size in bytes, at least StampSize: every
	// payload starts with a send stamp for the receiver's latency.
	Payload int
	// Dests are the destination LIDs drawn uniformly.
	Dests []uint16
	// HotSpot receives HotFraction (0..1) of the packets; the rest go
	// uniformly over Dests. HotFraction 0 means no hot spot.
	HotSpot     uint16
	HotFraction float64
	// Seed makes the arrival times and destinations reproducible.
	Seed uint64
	// MaxBacklog is how many packets may wait in the port's queue before
	// arrivals are counted as Backlogged instead of sent, so an overloaded
	// generator never blocks or grows the queue without bound; 0 means
	// DefaultMaxBacklog.
	MaxBacklog int
	// Periodic sends at fixed intervals to each destination in turn
	// instead of Poisson arrivals to random ones: a probe, whose receivers
	// hear each sender at a known interval, so that a gap several
	// intervals long means packets lost on the way, not chance.
	Periodic bool
}

// Generator defaults and limits.
const (
	StampSize         = stampSize // smallest payload: the send stamp
	DefaultMaxBacklog = 64
	// maxBurst bounds the packets one timer callback hands to the port; a
	// generator further behind than that (a stalled process) skips ahead
	// instead of flooding, counting the arrivals it skipped. Arrivals
	// counted as backlogged cost no sending and do not count.
	maxBurst = 1024
)

// GeneratorStats counts what a generator did. Offered is every arrival;
// each is then Sent, Backlogged or Failed.
type GeneratorStats struct {
	Offered      uint64            `json:"offered"`
	OfferedBytes uint64            `json:"offered_bytes"` // wire bytes of the offered packets
	Sent         uint64            `json:"sent"`
	Backlogged   uint64            `json:"backlogged"`
	Failed       uint64            `json:"failed"`
	Skipped      uint64            `json:"skipped"` // arrivals lost to a stall (not in Offered)
	PerDest      map[uint16]uint64 `json:"per_dest"`
	Elapsed      time.Duration     `json:"elapsed_ns"`
	// Stalls are the generator's most recent stalls (at most maxStalls,
	// oldest first): callbacks that ran StallMin or more after the time
	// their timer was set for, the process short of CPU, not a wait the
	// generator chose (a hold, a refusing port).
	Stalls []Stall `json:"stalls,omitempty"`
}

// Stall is a generator callback that ran late: it ran at EndNs (the
// clock's Unix ns) LateNs after it was due, and sent nothing in between.
type Stall struct {
	EndNs  int64 `json:"end_ns"`
	LateNs int64 `json:"late_ns"`
}

// StallMin is the lateness of a generator's callback that counts as a
// stall; maxStalls how many of the last the generator keeps.
const (
	StallMin  = 10 * time.Millisecond
	maxStalls = 32
)

// SendFunc transmits one generated payload to dlid.
type SendFunc func(dlid uint16, payload []byte) error

// errPaced is what an HCA's SendFunc returns for a packet whose
// destination's inter-packet delay (IBA congestion control) is not over:
// the generator has no source queue to keep it in, so the arrival counts
// as backlogged.
var errPaced = errors.New("hca: destination paced by congestion control")

// Generator emits UD packets with exponentially distributed gaps, driven by
// a clock timer: each callback sends every arrival due by now and sets the
// timer for the next, so nothing spins and a coarse timer only bunches
// packets, without changing the offered load.
type Generator struct {
	cfg     GeneratorConfig
	clk     clock.Clock
	send    SendFunc
	backlog func() int
	wire    int // wire bytes per packet

	mu sync.Mutex
	schedule
	start   time.Time
	timer   clock.Timer
	stopped bool
	stats   GeneratorStats
	perDest []uint64 // by index in cfg.Dests, the hot spot last
	turn    int      // the last destination of a periodic generator
	payload []byte

	// The hold while the port's queue is full (see maxHold).
	hold    time.Duration // 0: not holding
	heldAt  time.Time
	heldQ   int     // packets queued when the hold began
	drained bool    // the queue drained during the last hold
	drainNs float64 // ns per packet it drained at then; 0: unknown
	// wakeAt is when the timer was last set to fire; stalls the ring of
	// the last callbacks that fired StallMin or more after it (nStalls
	// ever recorded).
	wakeAt  time.Time
	stalls  [maxStalls]Stall
	nStalls int
	// refused: the port refused the last packet, and the generator waits
	// about bulkMin arrivals before it tries again, unless Resume ends
	// the wait.
	refused bool
}

// NewGenerator returns a stopped generator that sends through send;
// backlog, if not nil, reports the packets waiting in the port's queue.
func NewGenerator(cfg GeneratorConfig, clk clock.Clock, send SendFunc, backlog func() int) (*Generator, error) {
	switch {
	case !(cfg.Load > 0) || cfg.Load > 1000:
		return nil, fmt.Errorf("%w: load %v%%", ErrConfig, cfg.Load)
	case cfg.Rate == 0:
		return nil, fmt.Errorf("%w: zero rate", ErrConfig)
	case cfg.Payload < StampSize:
		return nil, fmt.Errorf("%w: payload %d < %d", ErrConfig, cfg.Payload, StampSize)
	case cfg.HotFraction < 0 || cfg.HotFraction > 1:
		return nil, fmt.Errorf("%w: hot fraction %v", ErrConfig, cfg.HotFraction)
	case len(cfg.Dests) == 0 && cfg.HotFraction < 1:
		return nil, fmt.Errorf("%w: no destinations", ErrConfig)
	case cfg.Periodic && (len(cfg.Dests) == 0 || cfg.HotFraction > 0):
		return nil, fmt.Errorf("%w: a periodic generator takes destinations in turn, without a hot spot", ErrConfig)
	case send == nil:
		return nil, fmt.Errorf("%w: nil send", ErrConfig)
	}
	if clk == nil {
		clk = clock.Real()
	}
	if cfg.MaxBacklog == 0 {
		cfg.MaxBacklog = DefaultMaxBacklog
	}
	cfg.Dests = append([]uint16(nil), cfg.Dests...)
	w := wire.UDPacketSize(cfg.Payload, false)
	bitsPerPkt := float64(w * 8)
	g := &Generator{
		cfg: cfg, clk: clk, send: send, backlog: backlog, wire: w,
		schedule: newSchedule(bitsPerPkt/(float64(cfg.Rate)*cfg.Load/100)*1e9, cfg.Periodic, cfg.Seed),
		payload:  make([]byte, cfg.Payload),
	}
	g.perDest = make([]uint64, len(cfg.Dests)+1)
	return g, nil
}

// MeanGap returns the mean time between arrivals the load asks for.
func (g *Generator) MeanGap() time.Duration { return time.Duration(g.mean) }

// Start starts the arrivals; the first one comes one random gap from now.
// Starting a started or stopped generator does nothing.
func (g *Generator) Start() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timer != nil || g.stopped {
		return
	}
	g.start = g.clk.Now()
	g.next = g.start.Add(g.gap())
	g.wakeAt = g.next
	g.timer = g.clk.AfterFunc(g.next.Sub(g.start), g.fire)
}

// Stop stops the arrivals for good. It must not be called from the send
// function.
func (g *Generator) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	g.stopped = true
	g.stats.Elapsed = g.clk.Now().Sub(g.start)
	if g.timer != nil {
		g.timer.Stop()
	} else {
		g.stats.Elapsed = 0
	}
}

// Stats returns a snapshot of the generator's counters.
func (g *Generator) Stats() GeneratorStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.stats
	if !g.stopped && g.timer != nil {
		s.Elapsed = g.clk.Now().Sub(g.start)
	}
	for i := max(0, g.nStalls-maxStalls); i < g.nStalls; i++ {
		s.Stalls = append(s.Stalls, g.stalls[i%maxStalls])
	}
	s.PerDest = make(map[uint16]uint64, len(g.perDest))
	for i, v := range g.perDest {
		if v == 0 {
			continue
		}
		d := g.cfg.HotSpot
		if i < len(g.cfg.Dests) {
			d = g.cfg.Dests[i]
		}
		s.PerDest[d] += v
	}
	return s
}

// dest draws the next destination's index in perDest.
func (g *Generator) dest() int {
	if g.cfg.Periodic {
		g.turn = (g.turn + 1) % len(g.cfg.Dests)
		return g.turn
	}
	if g.cfg.HotFraction > 0 && g.rng.Float64() < g.cfg.HotFraction {
		return len(g.cfg.Dests)
	}
	return g.rng.IntN(len(g.cfg.Dests))
}

// fire runs on the clock: it emits the arrivals due by now. The lock is
// held across send, which serializes the stats and the payload buffer;
// send must not call back into the generator.
func (g *Generator) fire() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	now := g.clk.Now()
	g.noteLateness(now)
	q := qRoom{room: -1} // queue room left, read from the port when first needed
	if g.hold > 0 {
		q = g.endHold(now)
	}
	for n := 0; !g.next.After(now); {
		if n == maxBurst {
			g.stats.Skipped += g.skipDue(now)
			break
		}
		if (q.full || q.failed) && g.countAll(now, q.failed) {
			break
		}
		if g.emit(now, &q) {
			n++
		}
		g.next = g.next.Add(g.gap())
	}
	wait := g.next.Sub(now)
	g.refused = q.failed
	switch {
	case q.failed:
		// The port refuses packets (not Active): try again once about
		// bulkMin arrivals are due, and count those in one step, unless
		// the port says first that it takes packets again (Resume).
		wait = max(wait, min(time.Duration(bulkMin*g.mean), maxHold))
	case q.full:
		wait = max(wait, g.startHold(now, g.cfg.MaxBacklog-q.room))
	default:
		g.hold = 0
	}
	g.wakeAt = now.Add(wait)
	g.timer.Reset(wait)
}

// noteLateness records a stall when the callback running at now came
// StallMin or more after its timer was due.
func (g *Generator) noteLateness(now time.Time) {
	if g.wakeAt.IsZero() {
		return
	}
	if late := now.Sub(g.wakeAt); late >= StallMin {
		g.stalls[g.nStalls%maxStalls] = Stall{EndNs: now.UnixNano(), LateNs: int64(late)}
		g.nStalls++
	}
}

// Resume tells the generator that its port takes packets again (it went
// Active). A generator waiting after a refused packet counts the arrivals
// due until now as refused, as they were, and goes on from the next one:
// the source sends again at once, as an application whose port came back
// would, not up to maxHold later. Otherwise Resume does nothing.
func (g *Generator) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped || g.timer == nil || !g.refused {
		return
	}
	now := g.clk.Now()
	q := qRoom{room: -1, failed: true}
	for !g.next.After(now) && !g.countAll(now, true) {
		g.emit(now, &q)
		g.next = g.next.Add(g.gap())
	}
	g.refused = false
	g.wakeAt = g.next
	g.timer.Reset(g.next.Sub(now))
}

// qRoom is what the port's queue has left as last seen (room -1: not read
// yet), whether it was full when read, and whether the port refused a
// packet in this callback (failed).
type qRoom struct {
	room   int
	full   bool
	failed bool
}

// A generator that finds the port's queue full holds: it sleeps until
// about half of the queue should have drained, at the rate it drained in
// the last hold, instead of waking for each arrival only to count it as
// backlogged. An offered load far above what the fabric carries (a
// saturation measurement, or time scale 1, where a link asks for more
// packets than the machine can move) thus costs the sender little CPU,
// which the switches need to move the packets. The arrivals due during a
// hold are still counted as offered and backlogged (see countAll).
//
// A hold is at most twice the last one and at most maxHold. A queue that
// did not drain keeps the hold as it was, so a stalled port gets its
// generator back within one hold once it drains again. Only while no
// drain rate is known yet does a hold with no drain double, up to
// maxBlindHold mean gaps (a port blocked from the start: short in real
// time even at a high time scale, where maxHold is long).
const (
	maxHold      = 100 * time.Millisecond
	maxBlindHold = 1024
)

// startHold begins a hold with queued packets in the port's queue and
// returns its length.
func (g *Generator) startHold(now time.Time, queued int) time.Duration {
	half := float64(max(g.cfg.MaxBacklog/2, 1))
	var h time.Duration
	switch {
	case g.drainNs == 0 && g.hold == 0:
		h = time.Duration(half * g.mean) // blind: at the offered rate
	case g.drainNs == 0:
		h = min(2*g.hold, time.Duration(maxBlindHold*g.mean))
	case g.hold == 0:
		h = time.Duration(half * g.drainNs)
	case !g.drained:
		h = g.hold
	default:
		h = min(time.Duration(half*g.drainNs), 2*g.hold)
	}
	h = min(max(h, 1), maxHold)
	g.hold, g.heldAt, g.heldQ = h, now, queued
	return h
}

// endHold reads the queue after a hold and learns the rate it drained at.
// A queue found empty drained at least that fast (the port idled for part
// of the hold), so the next hold is about half as long.
func (g *Generator) endHold(now time.Time) qRoom {
	queued := g.backlog()
	d := g.heldQ - queued
	g.drained = d > 0 && now.After(g.heldAt)
	if g.drained {
		g.drainNs = float64(now.Sub(g.heldAt)) / float64(d)
	}
	room := g.cfg.MaxBacklog - queued
	return qRoom{room: room, full: room <= 0}
}

// bulkMin is the fewest arrivals countAll counts at once.
const bulkMin = 32

// countAll counts every arrival due by now as offered and backlogged (or
// failed, when the port refuses packets), in one step, when about bulkMin
// or more are due: without the port's queue to fill, or with a port that
// takes nothing, there is nothing to draw them one by one for, and a hold
// at a load far above the link's would spend its CPU on that. Arrivals are
// memoryless, so the count in the span is Poisson (drawn from its normal
// approximation, good at that size), the destinations split as they would
// be drawn, and the next arrival is one gap after now. It reports whether
// it counted them.
func (g *Generator) countAll(now time.Time, failed bool) bool {
	lam := float64(now.Sub(g.next)) / g.mean
	if lam < bulkMin {
		return false
	}
	n := 1 + g.normalCount(lam, lam, math.MaxInt) // the one due at next, and those after
	g.stats.Offered += uint64(n)
	g.stats.OfferedBytes += uint64(n * g.wire)
	if failed {
		g.stats.Failed += uint64(n)
	} else {
		g.stats.Backlogged += uint64(n)
	}
	hot := 0
	if h := g.cfg.HotFraction; h > 0 {
		hot = g.normalCount(float64(n)*h, float64(n)*h*(1-h), n)
	}
	g.perDest[len(g.cfg.Dests)] += uint64(hot)
	if k := len(g.cfg.Dests); k > 0 {
		rest := n - hot
		for i := range k {
			g.perDest[i] += uint64(rest / k)
		}
		for range rest % k {
			g.perDest[g.rng.IntN(k)]++
		}
	}
	g.next = now.Add(g.gap())
	return true
}

// normalCount draws a count of the given mean and variance, in [0, hi].
func (g *Generator) normalCount(mean, variance float64, hi int) int {
	x := math.Round(mean + math.Sqrt(variance)*g.rng.NormFloat64())
	return int(min(max(x, 0), float64(hi)))
}

// emit offers one arrival and reports whether it was handed to send. The
// queue only shrinks behind our back, so the port is asked for its length
// only when the room last seen runs out, and not again in the same
// callback once it was full — a generator far above the link rate would
// otherwise spend its time there.
func (g *Generator) emit(now time.Time, q *qRoom) bool {
	i := g.dest()
	g.stats.Offered++
	g.stats.OfferedBytes += uint64(g.wire)
	g.perDest[i]++
	if g.backlog != nil && q.room <= 0 && !q.full {
		q.room = g.cfg.MaxBacklog - g.backlog()
		q.full = q.room <= 0
	}
	switch {
	case q.failed:
		// No packet is built for a port that refused one just now.
		g.stats.Failed++
		return false
	case q.full:
		g.stats.Backlogged++
		return false
	}
	d := g.cfg.HotSpot
	if i < len(g.cfg.Dests) {
		d = g.cfg.Dests[i]
	}
	putStamp(g.payload, now.UnixNano())
	if err := g.send(d, g.payload); errors.Is(err, errPaced) {
		// The destination's IPD is not over: like a full queue, the
		// arrival is not sent, but other destinations may be.
		g.stats.Backlogged++
		return false
	} else if err != nil {
		g.stats.Failed++
		q.failed = true
		return true
	}
	g.stats.Sent++
	q.room--
	return true
}

// TrafficConfig starts a generator on an HCA port: GeneratorConfig with the
// rate taken from the port, plus the UD addressing.
type TrafficConfig struct {
	GeneratorConfig
	SL     uint8
	DestQP uint32 // 0 means DataQP
	// PKeyIndex is the index in the port's P_Key table of the P_Key the
	// packets carry, as a QP is bound to one (perftest's --pkey_index);
	// the packets carry what the entry holds when they are sent.
	PKeyIndex uint16
	// PKey, when not 0, chooses the index instead: that of the entry
	// equal to PKey, else of the first with its base (HCA.PKeyIndex).
	// StartTraffic fails when the table holds neither.
	PKey mad.PKey
}

// StartTraffic starts a generator on port num, replacing the one running
// there. The rate is the port's data rate (width × speed, 8b/10b).
func (h *HCA) StartTraffic(num uint8, tc TrafficConfig) (*Generator, error) {
	p := h.Port(num)
	if p == nil {
		return nil, fmt.Errorf("%w: %d", ErrPort, num)
	}
	if tc.DestQP == 0 {
		tc.DestQP = DataQP
	}
	tc.Rate = p.Rate()
	if tc.PKey != 0 {
		idx, err := h.PKeyIndex(num, tc.PKey)
		if err != nil {
			return nil, err
		}
		tc.PKeyIndex = idx
	} else if _, err := h.sendPKey(num, tc.PKeyIndex); err != nil {
		return nil, err
	}
	c := h.ccas[num-1]
	send := func(dlid uint16, payload []byte) error {
		now := h.clk.Now()
		if now.Before(c.holdUntil(dlid, tc.SL)) {
			c.countThrottled()
			return errPaced
		}
		r := c.pick(dlid, tc.SL)
		if err := h.sendUD(num, r.dlid, r.sl, tc.DestQP, tc.PKeyIndex, payload); err != nil {
			return err
		}
		c.sent(r, now, now, wire.UDPacketSize(len(payload), false))
		return nil
	}
	backlog := func() int {
		vl := h.agent.VLFor(0, num, tc.SL)
		return p.Queued(int(vl))
	}
	g, err := NewGenerator(tc.GeneratorConfig, h.clk, send, backlog)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.mu.closed {
		h.mu.Unlock()
		return nil, ErrClosed
	}
	old := h.mu.gens[num]
	h.mu.gens[num] = g
	g.Start()
	h.mu.Unlock()
	if old != nil {
		old.Stop()
	}
	return g, nil
}

// StopTraffic stops port num's generator, if any, and returns its stats.
func (h *HCA) StopTraffic(num uint8) (GeneratorStats, bool) {
	h.mu.Lock()
	g := h.mu.gens[num]
	delete(h.mu.gens, num)
	h.mu.Unlock()
	if g == nil {
		return GeneratorStats{}, false
	}
	g.Stop()
	return g.Stats(), true
}

func (h *HCA) generator(num uint8) *Generator {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.gens[num]
}
