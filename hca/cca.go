package hca

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/internal/enum"
	"ibfab/wire/mad"
)

// CCMode is how a CA's congestion control agent reacts to the
// notifications (CNPs, BECNs) its ports receive.
type CCMode uint8

// Congestion control modes.
const (
	// CCIBA throttles injection as Annex A10 has it: each notification
	// raises the destination's CCTI, a timer lowers it again, and the
	// CongestionControlTable entry at the CCTI is the inter-packet delay.
	// The default: what a CA does once the manager programs CC.
	CCIBA CCMode = iota // iba
	// CCOff ignores notifications (they are still counted).
	CCOff // off
	// CCDRB spreads traffic over the destination's LMC aliases instead
	// of throttling (seed 004 §4.6): Distributed Routing Balancing.
	CCDRB // drb
)

var ccModes = enum.New("congestion control mode", CCIBA, CCOff, CCDRB)

// MarshalText implements encoding.TextMarshaler.
func (m CCMode) MarshalText() ([]byte, error) { return ccModes.Marshal(m) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *CCMode) UnmarshalText(b []byte) error { return ccModes.Unmarshal(m, b) }

// DRB limits.
const (
	// DefaultDRBCap is how many paths DRB keeps open to a destination at
	// most, the base path included (the paper's experiments: 4).
	DefaultDRBCap = 4
	// MaxDRBCap is the most paths an LMC gives (2^7).
	MaxDRBCap = 128
)

// CCTIUnit is the unit of CCTI_Timer (A10.4.3.8): 1.024 µs.
const CCTIUnit = 1024 * time.Nanosecond

// CCADelay is the inter-packet delay (IPD) a CongestionControlTable
// entry asks after a packet that takes t on the wire at the port's rate:
// (t >> shift) × multiplier, the entry being shift (2 bits) : multiplier
// (14 bits). This is the Linux hfi1 driver's reading of the table
// (set_link_ipg: the maximum packet's egress time shifted right by the
// shift, times the multiplier); the shift makes the table's resolution
// a half, a quarter or an eighth of the packet time. An entry of 0 is no
// delay; shift 0, multiplier 1 leaves one packet time idle after each
// packet, halving the rate.
func CCADelay(entry uint16, t time.Duration) time.Duration {
	shift, mult := entry>>14, entry&0x3fff
	return (t >> shift) * time.Duration(mult)
}

// CCACounters count what a CA's congestion control saw and did.
type CCACounters struct {
	CNPSent      uint64 `json:"cnp_sent"`               // answers to FECN-marked packets
	CNPFailed    uint64 `json:"cnp_failed,omitempty"`   // answers the port refused
	CNPReceived  uint64 `json:"cnp_received"`           // CNPs addressed to this CA
	BECNReceived uint64 `json:"becn_received"`          // notifications: CNPs and other packets with BECN
	Ignored      uint64 `json:"ignored,omitempty"`      // notifications for SLs without CC settings, or mode off
	Opens        uint64 `json:"opens"`                  // DRB: paths opened
	Closes       uint64 `json:"closes"`                 // DRB: paths closed
	Events       uint64 `json:"events,omitempty"`       // IBA: CCTI at or above Trigger_Threshold, logged
	Paced        uint64 `json:"paced,omitempty"`        // packets that waited for their IPD
	PacedNs      uint64 `json:"paced_ns,omitempty"`     // total time they waited for it
	Throttled    uint64 `json:"throttled,omitempty"`    // generator arrivals refused while paced
	DRBRerouted  uint64 `json:"drb_rerouted,omitempty"` // packets sent on an alias, not the base
}

func (c *CCACounters) add(o CCACounters) {
	c.CNPSent += o.CNPSent
	c.CNPFailed += o.CNPFailed
	c.CNPReceived += o.CNPReceived
	c.BECNReceived += o.BECNReceived
	c.Ignored += o.Ignored
	c.Opens += o.Opens
	c.Closes += o.Closes
	c.Events += o.Events
	c.Paced += o.Paced
	c.PacedNs += o.PacedNs
	c.Throttled += o.Throttled
	c.DRBRerouted += o.DRBRerouted
}

// CCADest is the congestion control state of one destination (base LID)
// and SL of a port: in IBA mode its CCTI and the IPD that gives the last
// packet sent; in DRB mode the paths open (alias DLIDs, base first) and
// each one's notification count.
type CCADest struct {
	Port          uint8    `json:"port"`
	DLID          uint16   `json:"dlid"` // base LID
	SL            uint8    `json:"sl"`   // the flows' SL; alias i travels on SL+i
	CCTI          uint16   `json:"ccti"`
	IPDNs         int64    `json:"ipd_ns"`
	Active        []uint16 `json:"active"`
	Notifications []uint64 `json:"notifications"` // per path of Active
}

// CCAStatus is an HCA's congestion control: mode, DRB's cap, counters
// summed over its ports, and every destination with state.
type CCAStatus struct {
	Mode CCMode `json:"mode"`
	Cap  int    `json:"cap"`
	CCACounters
	Dests []CCADest `json:"dests"`
}

// ccaPort is what a port's CCA needs from its HCA: the settings the
// manager programmed (read on each notification and timer, never per
// packet), the port's LMC (the aliases of every destination are taken to
// be as many as the port's own), its data rate, its largest packet and
// the CongestionLog.
type ccaPort struct {
	settings func() agent.CCCA
	lmc      func() uint8
	rate     func() uint64 // bits/s
	maxWire  func() int    // bytes of an MTU-sized packet
	logCA    func(agent.CCCAEvent)
}

// ccKey is a destination and SL of a port: the base LID (aliases map to
// it) and the SL the flows send on.
type ccKey struct {
	base uint16
	sl   uint8
}

// ccRoute is where one packet goes: the DLID and SL it carries (an alias
// and its SL in DRB mode) and the state it counts against.
type ccRoute struct {
	dlid uint16
	sl   uint8
	key  ccKey
	path int
}

// ccDest is one destination's state. IBA: the CCTI, the table entry at
// it and the earliest time the next packet may leave. DRB: paths
// 0..active-1 are open (opened in order, closed in reverse), notes counts
// the notifications on each, cur is the smooth weighted round robin's.
type ccDest struct {
	key      ccKey
	ccti     uint16
	entry    uint16
	nextSend time.Time
	lastWire int

	paths    int // 1..cap: the aliases DRB may use
	active   int
	notes    []uint64
	cur      []float64
	notified bool // a notification since the timer last fired

	period time.Duration
	timer  clock.Timer
	timing bool
}

// cca is the congestion control agent of one CA port. Notifications
// arrive from the receive path (notify), packets ask it where and when
// they may go (holdUntil, pick, sent), and each destination's timer
// recovers: all under mu, which nothing else is taken under.
type cca struct {
	num  uint8
	clk  clock.Clock
	port ccaPort

	mu    sync.Mutex
	mode  CCMode
	cap   int
	dests map[ccKey]*ccDest
	cnt   CCACounters
}

func newCCA(num uint8, clk clock.Clock, p ccaPort) *cca {
	return &cca{num: num, clk: clk, port: p, mode: CCIBA, cap: DefaultDRBCap, dests: map[ccKey]*ccDest{}}
}

// setMode changes the mode and cap (0 keeps it); every destination
// starts over, its timers stopped.
func (c *cca) setMode(m CCMode, capacity int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.dests {
		if d.timer != nil {
			d.timer.Stop()
		}
	}
	c.dests = map[ccKey]*ccDest{}
	c.mode = m
	if capacity > 0 {
		c.cap = capacity
	}
}

// aliasMask is the low LID bits the port's LMC leaves to the aliases.
func (c *cca) aliasMask() uint16 {
	return uint16(1)<<min(c.port.lmc(), 7) - 1
}

// programmed reports whether the manager gave sl congestion control: a
// CCTI_Timer to recover with and a CCTI_Increase to react with. An SL
// without both is left alone, so with nothing programmed nothing acts.
func programmed(s *agent.CCCA, sl uint8) bool {
	e := s.SL[sl&0xf]
	return e.CCTITimer != 0 && e.CCTIIncrease != 0
}

// notify takes a notification that arrived with SLID slid on sl: a CNP
// answering one of this port's packets, or a packet with BECN. The SLID
// is the LID the marked packet was sent to, so its alias bits tell the
// path in DRB mode, where alias i travels on SL+i.
func (c *cca) notify(slid uint16, sl uint8, cnp bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cnp {
		c.cnt.CNPReceived++
	}
	c.cnt.BECNReceived++
	if c.mode == CCOff {
		c.cnt.Ignored++
		return
	}
	mask := c.aliasMask()
	path := int(slid & mask)
	k := ccKey{base: slid &^ mask, sl: sl}
	if c.mode == CCDRB {
		if int(sl) < path {
			c.cnt.Ignored++ // no SL of ours sends this alias on sl
			return
		}
		k.sl = sl - uint8(path)
	} else {
		path = 0
	}
	s := c.port.settings()
	if !programmed(&s, k.sl) {
		c.cnt.Ignored++
		return
	}
	d := c.destLocked(k, &s)
	d.period = time.Duration(s.SL[k.sl].CCTITimer) * CCTIUnit
	if c.mode == CCDRB {
		c.openLocked(d, path)
	} else {
		c.raiseLocked(d, &s)
	}
	c.armLocked(d)
}

// destLocked returns k's state, made on first use: CCTI at CCTI_Min (the
// floor the timer stops at), the base path open.
func (c *cca) destLocked(k ccKey, s *agent.CCCA) *ccDest {
	d := c.dests[k]
	if d != nil {
		return d
	}
	d = &ccDest{key: k, ccti: min(uint16(s.SL[k.sl].CCTIMin), s.Limit), active: 1}
	d.entry = tableEntry(s, d.ccti)
	d.paths = min(int(c.aliasMask())+1, c.cap, int(mad.NumSLs-k.sl))
	d.notes = make([]uint64, d.paths)
	d.cur = make([]float64, d.paths)
	c.dests[k] = d
	return d
}

// tableEntry is the CCT's entry at i, 0 (no delay) beyond the table.
func tableEntry(s *agent.CCCA, i uint16) uint16 {
	if int(i) < len(s.Table) {
		return s.Table[i]
	}
	return 0
}

// raiseLocked is IBA's reaction: CCTI += CCTI_Increase, at most
// CCTI_Limit, and a CongestionLog event while the CCTI is at or above a
// non-zero Trigger_Threshold.
func (c *cca) raiseLocked(d *ccDest, s *agent.CCCA) {
	e := s.SL[d.key.sl]
	d.notes[0]++
	d.ccti = min(d.ccti+uint16(e.CCTIIncrease), s.Limit)
	d.entry = tableEntry(s, d.ccti)
	if e.TriggerThreshold != 0 && d.ccti >= uint16(e.TriggerThreshold) {
		c.cnt.Events++
		c.port.logCA(agent.CCCAEvent{LocalQP: DataQP, SL: d.key.sl, ServiceType: 3, RemoteQP: DataQP, RemoteLID: d.key.base})
	}
}

// openLocked is DRB's reaction to a notification on path: count it there
// (a path closed meanwhile counts nothing) and open the next path unless
// the cap is reached.
func (c *cca) openLocked(d *ccDest, path int) {
	d.notified = true
	if path < d.active {
		d.notes[path]++
	}
	if d.active < d.paths {
		d.notes[d.active], d.cur[d.active] = 0, 0
		d.active++
		c.cnt.Opens++
	}
}

// armLocked starts d's timer unless it runs.
func (c *cca) armLocked(d *ccDest) {
	if d.timing || d.period <= 0 {
		return
	}
	d.timing = true
	if d.timer == nil {
		d.timer = c.clk.AfterFunc(d.period, func() { c.tick(d) })
		return
	}
	d.timer.Reset(d.period)
}

// tick is a destination's CCTI_Timer period ending. IBA: the CCTI falls
// by one towards CCTI_Min. DRB: a period without notifications closes the
// most recently opened path (never the base) and halves the counts. The
// timer runs again only while there is something left to do: no timer
// ticks at the floor.
func (c *cca) tick(d *ccDest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dests[d.key] != d || !d.timing {
		return // the mode changed meanwhile
	}
	s := c.port.settings()
	if !programmed(&s, d.key.sl) {
		// The manager took the SL's settings away: it stops acting.
		d.timing = false
		delete(c.dests, d.key)
		return
	}
	e := s.SL[d.key.sl]
	d.period = time.Duration(e.CCTITimer) * CCTIUnit
	var more bool
	if c.mode == CCDRB {
		more = c.contractLocked(d)
	} else {
		floor := min(uint16(e.CCTIMin), s.Limit)
		if d.ccti > floor {
			d.ccti--
		}
		d.ccti = min(d.ccti, s.Limit) // the manager may have lowered it
		d.entry = tableEntry(&s, d.ccti)
		more = d.ccti > floor
	}
	d.timing = false
	if more {
		c.armLocked(d)
	}
}

// contractLocked is DRB's period: it reports whether another is needed.
func (c *cca) contractLocked(d *ccDest) bool {
	if d.notified {
		d.notified = false
		return true
	}
	if d.active > 1 {
		d.active--
		d.notes[d.active], d.cur[d.active] = 0, 0
		c.cnt.Closes++
	}
	busy := d.active > 1
	for i := range d.active {
		d.notes[i] /= 2
		busy = busy || d.notes[i] > 0
	}
	return busy
}

// holdUntil is the earliest time the next packet to (dlid, sl) may leave.
func (c *cca) holdUntil(dlid uint16, sl uint8) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mode != CCIBA {
		return time.Time{}
	}
	if d := c.dests[ccKey{base: dlid &^ c.aliasMask(), sl: sl}]; d != nil {
		return d.nextSend
	}
	return time.Time{}
}

// pick routes the next packet to (dlid, sl). In DRB mode it chooses
// among the open paths by smooth weighted round robin, path i weighing
// 1/(1 + its notifications): deterministic, and each path's share of
// the packets converges to its weight's share.
func (c *cca) pick(dlid uint16, sl uint8) ccRoute {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := ccKey{base: dlid &^ c.aliasMask(), sl: sl}
	r := ccRoute{dlid: dlid, sl: sl, key: k}
	d := c.dests[k]
	if c.mode != CCDRB || d == nil || d.active <= 1 {
		return r
	}
	best, total := 0, 0.0
	for i := range d.active {
		w := 1 / (1 + float64(d.notes[i]))
		d.cur[i] += w
		total += w
		if d.cur[i] > d.cur[best] {
			best = i
		}
	}
	d.cur[best] -= total
	if best > 0 {
		c.cnt.DRBRerouted++
		r.dlid, r.sl, r.path = k.base+uint16(best), sl+uint8(best), best
	}
	return r
}

// sent records a packet of wire bytes routed r leaving at now, which
// waited since ready for its IPD: the next to its destination may not
// leave before it has had its time on the wire and the IPD after it.
func (c *cca) sent(r ccRoute, now, ready time.Time, wire int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mode != CCIBA {
		return
	}
	d := c.dests[r.key]
	if d == nil {
		return
	}
	d.lastWire = wire
	if w := now.Sub(ready); w > 0 {
		c.cnt.Paced++
		c.cnt.PacedNs += uint64(w)
	}
	t := c.wireTime(wire)
	if ipd := CCADelay(d.entry, t); ipd > 0 {
		d.nextSend = now.Add(t + ipd)
	}
}

// wireTime is how long wire bytes take at the port's rate; 0 when the
// rate is unknown (the link is down).
func (c *cca) wireTime(wire int) time.Duration {
	r := c.port.rate()
	if r == 0 {
		return 0
	}
	return time.Duration(uint64(wire) * 8 * uint64(time.Second) / r)
}

// countCNP counts an answer to a FECN sent, or refused by the port.
func (c *cca) countCNP(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.cnt.CNPFailed++
		return
	}
	c.cnt.CNPSent++
}

// countThrottled counts a generator arrival refused while paced.
func (c *cca) countThrottled() {
	c.mu.Lock()
	c.cnt.Throttled++
	c.mu.Unlock()
}

// counters returns the port's counters.
func (c *cca) counters() CCACounters {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cnt
}

// status appends the port's destinations to out, by LID and SL.
func (c *cca) status(out []CCADest) []CCADest {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := len(out)
	for _, d := range c.dests {
		wire := d.lastWire
		if wire == 0 {
			wire = c.port.maxWire()
		}
		e := CCADest{Port: c.num, DLID: d.key.base, SL: d.key.sl, CCTI: d.ccti,
			Active: make([]uint16, d.active), Notifications: make([]uint64, d.active)}
		if c.mode == CCIBA {
			e.IPDNs = int64(CCADelay(d.entry, c.wireTime(wire)))
		}
		for i := range d.active {
			e.Active[i] = d.key.base + uint16(i)
			e.Notifications[i] = d.notes[i]
		}
		out = append(out, e)
	}
	slices.SortFunc(out[start:], func(a, b CCADest) int {
		return cmp.Or(cmp.Compare(a.DLID, b.DLID), cmp.Compare(a.SL, b.SL))
	})
	return out
}
