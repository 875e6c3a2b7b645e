package port

import (
	"time"

	"ibfab/wire"
	"ibfab/wire/mad"
)

// Congestion control (IBA Annex A10) at a port: what a switch's FECN
// marking asks of its output ports, and the congestion counters of the
// PMA and of status.
//
// A data VL of the port is congested while the blocks queued for it reach
// (16 − Threshold)/16 of the VL's receive buffer (Config.RxBlocks, or its
// VLBlocks entry), the switch's buffer for that VL; Threshold 0 never.
// The switch sets the
// Threshold its congestion control agent holds for the port
// (SetCongestionThreshold) and asks, for each packet it could mark,
// TxCongestion: congested, and as a root (the port holds credit for the
// VL's head packet: it is its own link that is too slow) or as a victim
// (it waits for credit: the congestion is downstream). The queued blocks
// are a running sum kept by the queue, and the congested state is updated
// on every queue change, which times it (PortXmitConCtrl,
// PortVLXmitTimeCong) at no cost when Threshold is 0.

// congestion is a port's congestion state and counters; the Port's mu
// protects it.
type congestion struct {
	level     [MaxDataVLs]int // queued blocks at which each data VL is congested; 0: never
	threshold uint8           // the Threshold level was derived from; 0: detection off
	vls       uint16          // data VLs congested now, bit per VL

	vlSince   [numVLs]time.Time     // when each congested VL became so
	vlTime    [numVLs]time.Duration // time each VL was congested, finished intervals
	portSince time.Time             // when the first VL of the current spell became congested
	portTime  time.Duration         // time any VL was congested, finished spells

	seen    [numVLs]uint64 // eligible packets that found the VL congested (SwPortVLCongestion)
	marked  [numVLs]uint64 // packets the node marked with FECN leaving on the VL
	rcvFECN [numSLs]uint64 // data packets received with FECN, by SL
	rcvBECN [numSLs]uint64 // data packets received with BECN, by SL

	// base holds the totals at the PMA's last reset of each counter:
	// the PMA reads total − base, status the totals.
	base congestionBase
}

// congestionBase is what a PMA Set subtracts from the congestion totals.
type congestionBase struct {
	seen             [numVLs]uint64
	rcvFECN, rcvBECN [numSLs]uint64
	pktFECN, pktBECN uint64 // PortRcvConCtrl: sums over the SLs
	vlTime           [numVLs]time.Duration
	portTime         time.Duration
}

// numSLs is the number of service levels.
const numSLs = 16

// CongestionLevel returns the queued blocks at which a VL with a receive
// buffer of rxBlocks is congested under Threshold t (A10.2.1): the
// smallest whole number of blocks ≥ (16 − t)/16 × rxBlocks, or 0 (never)
// for t 0. t above 15 counts as 15.
func CongestionLevel(t uint8, rxBlocks int) int {
	if t == 0 {
		return 0
	}
	t = min(t, 15)
	return ((16-int(t))*rxBlocks + 15) / 16
}

// SetCongestionThreshold sets the Threshold (0..15) the port's data VLs
// are congested against; 0 turns detection off. A change takes effect at
// once for the time counters: VLs over the new level are congested from
// now, those under it no longer.
func (p *Port) SetCongestionThreshold(t uint8) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &p.cong
	if c.threshold == t {
		return
	}
	c.threshold = t
	p.congLevelsLocked()
}

// congLevelsLocked derives each data VL's congestion level from the
// Threshold and the VL's buffer, and follows the VLs' congested states
// to the new levels.
func (p *Port) congLevelsLocked() {
	c := &p.cong
	for vl := range MaxDataVLs {
		c.level[vl] = CongestionLevel(c.threshold, p.rx[vl].capacity)
		p.congNoteLocked(vl)
	}
}

// congestedLocked reports whether data VL vl is congested.
func (p *Port) congestedLocked(vl int) bool {
	lv := p.cong.level[vl]
	return lv > 0 && p.tx[vl].q.blocks >= lv
}

// congNoteLocked follows data VL vl's congested state after its queue
// changed, timing the spells.
func (p *Port) congNoteLocked(vl int) {
	c := &p.cong
	if vl >= MaxDataVLs || (c.threshold == 0 && c.vls == 0) {
		return
	}
	bit := uint16(1) << vl
	now, was := p.congestedLocked(vl), c.vls&bit != 0
	if now == was {
		return
	}
	t := p.cfg.Clock.Now()
	if now {
		if c.vls == 0 {
			c.portSince = t
		}
		c.vls |= bit
		c.vlSince[vl] = t
		return
	}
	c.vls &^= bit
	c.vlTime[vl] += t.Sub(c.vlSince[vl])
	if c.vls == 0 {
		c.portTime += t.Sub(c.portSince)
	}
}

// TxQueue returns the blocks queued for sending on VL vl, and whether the
// port holds credit for all of the VL's head packet (false with an empty
// queue).
func (p *Port) TxQueue(vl int) (blocks int, headCredit bool) {
	if vl < 0 || vl >= numVLs {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.creditedHead(vl)
	return p.tx[vl].q.blocks, ok || (vl == VL15 && p.tx[vl].q.len() > 0)
}

// TxCongestion reports whether data VL vl is congested, for a packet the
// node may mark with FECN as it queues it here, and if so whether as a
// root (the port holds credit for the VL's head packet) rather than as a
// victim. A congested answer counts in SwPortVLCongestion.
func (p *Port) TxCongestion(vl int) (congested, root bool) {
	if vl < 0 || vl >= MaxDataVLs {
		return false, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.congestedLocked(vl) {
		return false, false
	}
	p.cong.seen[vl]++
	_, root = p.creditedHead(vl)
	return true, root || p.cfg.IgnoreCredits
}

// CountFECNMark counts a packet the node marked with FECN as it left by
// this port on VL vl.
func (p *Port) CountFECNMark(vl int) {
	if vl < 0 || vl >= numVLs {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cong.marked[vl]++
}

// countECNLocked counts a received data packet whose BTH (from
// wire.PacketBTH, so whole) carries FECN or BECN, by the LRH's SL sl.
func (p *Port) countECNLocked(bth wire.BTH, sl uint8) {
	sl &= numSLs - 1
	if bth.FECN() {
		p.cong.rcvFECN[sl]++
	}
	if bth.BECN() {
		p.cong.rcvBECN[sl]++
	}
}

// CongestionCounters is a port's congestion control counts since it was
// built: PMA Sets do not reset them (status reads them as running totals).
type CongestionCounters struct {
	// MarkedByVL counts the packets the node marked with FECN leaving by
	// this port, per VL.
	MarkedByVL [numVLs]uint64
	// RcvFECN and RcvBECN count the data packets received with FECN and
	// with BECN, per SL.
	RcvFECN, RcvBECN [numSLs]uint64
}

// Marked returns the FECN marks over all VLs.
func (c CongestionCounters) Marked() uint64 { return sum(c.MarkedByVL[:]) }

// RcvFECNTotal and RcvBECNTotal return the received counts over all SLs.
func (c CongestionCounters) RcvFECNTotal() uint64 { return sum(c.RcvFECN[:]) }

// RcvBECNTotal returns the data packets received with BECN over all SLs.
func (c CongestionCounters) RcvBECNTotal() uint64 { return sum(c.RcvBECN[:]) }

func sum(v []uint64) uint64 {
	var n uint64
	for _, x := range v {
		n += x
	}
	return n
}

// Congestion returns the port's congestion counters.
func (p *Port) Congestion() CongestionCounters {
	p.mu.Lock()
	defer p.mu.Unlock()
	return CongestionCounters{MarkedByVL: p.cong.marked, RcvFECN: p.cong.rcvFECN, RcvBECN: p.cong.rcvBECN}
}

// congTimesLocked returns the time each data VL and the port (any VL) has
// been congested, the spells running now included.
func (p *Port) congTimesLocked() (vl [numVLs]time.Duration, port time.Duration) {
	c := &p.cong
	vl, port = c.vlTime, c.portTime
	if c.vls == 0 {
		return vl, port
	}
	now := p.cfg.Clock.Now()
	for v := range MaxDataVLs {
		if c.vls&(1<<v) != 0 {
			vl[v] += now.Sub(c.vlSince[v])
		}
	}
	return vl, port + now.Sub(c.portSince)
}

// congOptionalLocked fills the counters of the congestion control PMA
// attribute a, and reports whether a is one. Times are in XmitWaitTick
// units, as PortXmitWait.
func (p *Port) congOptionalLocked(a mad.AttrID, c *[mad.PMAMaxCounters]uint64) bool {
	k, b := &p.cong, &p.cong.base
	ticks := func(d time.Duration) uint64 {
		if p.cfg.XmitWaitTick <= 0 || d <= 0 {
			return 0
		}
		return uint64(d / p.cfg.XmitWaitTick)
	}
	switch a {
	case mad.AttrSwPortVLCongestion:
		for vl := range c {
			c[vl] = k.seen[vl] - b.seen[vl]
		}
	case mad.AttrPortRcvConCtrl:
		c[0] = sum(k.rcvFECN[:]) - b.pktFECN
		c[1] = sum(k.rcvBECN[:]) - b.pktBECN
	case mad.AttrPortSLRcvFECN:
		for sl := range c {
			c[sl] = k.rcvFECN[sl] - b.rcvFECN[sl]
		}
	case mad.AttrPortSLRcvBECN:
		for sl := range c {
			c[sl] = k.rcvBECN[sl] - b.rcvBECN[sl]
		}
	case mad.AttrPortXmitConCtrl:
		_, port := p.congTimesLocked()
		c[0] = ticks(port - b.portTime)
	case mad.AttrPortVLXmitTimeCong:
		vls, _ := p.congTimesLocked()
		for vl := range MaxDataVLs {
			c[vl] = ticks(vls[vl] - b.vlTime[vl])
		}
	default:
		return false
	}
	return true
}

// congResetLocked resets counter i of the congestion control PMA
// attribute a: its base becomes the total.
func (p *Port) congResetLocked(a mad.AttrID, i int) {
	k, b := &p.cong, &p.cong.base
	switch a {
	case mad.AttrSwPortVLCongestion:
		b.seen[i] = k.seen[i]
	case mad.AttrPortRcvConCtrl:
		switch i {
		case 0:
			b.pktFECN = sum(k.rcvFECN[:])
		case 1:
			b.pktBECN = sum(k.rcvBECN[:])
		}
	case mad.AttrPortSLRcvFECN:
		b.rcvFECN[i] = k.rcvFECN[i]
	case mad.AttrPortSLRcvBECN:
		b.rcvBECN[i] = k.rcvBECN[i]
	case mad.AttrPortXmitConCtrl:
		if i == 0 {
			_, b.portTime = p.congTimesLocked()
		}
	case mad.AttrPortVLXmitTimeCong:
		if i < MaxDataVLs {
			vls, _ := p.congTimesLocked()
			b.vlTime[i] = vls[i]
		}
	}
}
