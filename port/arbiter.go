package port

import "ibfab/wire/mad"

// ArbTableSize is the number of entries of each VL arbitration table.
const ArbTableSize = mad.VLArbMaxEntries

// Arbitration is a port's data-VL arbitration configuration (IBA
// §7.6.9.1, programmed by the SM through VLArbitrationTable and PortInfo
// VLHighLimit).
type Arbitration struct {
	High, Low [ArbTableSize]mad.VLArbEntry
	// HighLimit is LimitOfHighPriority: the high table may send
	// HighLimit × 4096 bytes before one low-priority packet gets a chance
	// (0: one high packet; HighLimitUnbounded: no limit).
	HighLimit uint8
}

// DefaultArbitration returns the tables a port starts with: the low table
// serves data VLs 0..dataVLs-1 round robin, 4 KiB each; the high table is
// empty. The SMA reports the same as the VLArbitrationTable after reset
// (agent.DefaultVLArbWeight).
func DefaultArbitration(dataVLs int) Arbitration {
	var a Arbitration
	for vl := range min(dataVLs, MaxDataVLs) {
		a.Low[vl] = mad.VLArbEntry{VL: uint8(vl), Weight: HighLimitUnit / BlockSize}
	}
	return a
}

// VLArbitration returns the port's arbitration configuration.
func (p *Port) VLArbitration() Arbitration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.arb.cfg
}

// SetVLArbitration replaces the port's arbitration configuration; the
// arbiter starts both tables over at their first entry.
func (p *Port) SetVLArbitration(a Arbitration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.arb.set(a)
	p.kickLocked()
}

// arbiter picks the next data VL to send from (IBA §7.6.9.1):
//
//   - Each table is walked cyclically. The current entry may send while it
//     has weight left (in 64-byte blocks; a packet is always sent whole, so
//     the last one may overshoot) and its VL has a packet with credits for
//     all of it. Otherwise the next entry becomes current with its full
//     weight. Entries of weight 0, or naming a VL that is not operational
//     (VL15 included), are skipped. A table that yields nothing after one
//     round has nothing to send.
//   - The high table goes first until it has sent HighLimit × 4096 bytes
//     (counted in whole blocks) since the low table last had its chance
//     (0: after one packet). Then one low-priority packet goes, if there
//     is one, and the high table resumes where it stopped. With 255 the
//     high table is never cut short.
//   - The scheme is work conserving: with no high packet the low table
//     sends, and a high table over its limit still sends when the low
//     table has nothing.
type arbiter struct {
	cfg       Arbitration
	hiLen     int // entries up to the last of non-zero weight: the rest
	loLen     int // are skipped anyway, so the walk need not visit them
	hi, lo    cursor
	highSent  int  // blocks the high table sent since the low one's last turn
	highSpent bool // the high table is over its limit
}

// cursor is a table's current entry and what is left of its weight.
type cursor struct {
	idx int
	rem int // blocks
}

func (a *arbiter) set(c Arbitration) {
	*a = arbiter{cfg: c, hiLen: usedLen(&c.High), loLen: usedLen(&c.Low)}
	a.hi = cursor{rem: int(c.High[0].Weight)}
	a.lo = cursor{rem: int(c.Low[0].Weight)}
}

// usedLen returns the index after t's last entry of non-zero weight.
func usedLen(t *[ArbTableSize]mad.VLArbEntry) int {
	for n := len(t); n > 0; n-- {
		if t[n-1].Weight != 0 {
			return n
		}
	}
	return 0
}

// availFunc returns the size in blocks of the packet a data VL would send
// next, and false when it has none it holds credits for.
type availFunc func(vl int) (blocks int, ok bool)

// scan walks the first n entries of table t from cursor c and returns the
// VL to send from, its packet's size and the cursor after sending it.
func scan(t *[ArbTableSize]mad.VLArbEntry, n int, c cursor, operVLs int, avail availFunc) (vl, blocks int, next cursor, ok bool) {
	if n == 0 {
		return 0, 0, c, false
	}
	for range n + 1 {
		e := t[c.idx]
		if e.Weight > 0 && int(e.VL) < operVLs && c.rem > 0 {
			if b, ok := avail(int(e.VL)); ok {
				c.rem -= b
				return int(e.VL), b, c, true
			}
		}
		c.idx = (c.idx + 1) % n
		c.rem = int(t[c.idx].Weight)
	}
	return 0, 0, c, false
}

// pick returns the data VL to send from next and advances the tables as
// sending its head packet does, or returns false when no VL can send.
func (a *arbiter) pick(operVLs int, avail availFunc) (int, bool) {
	if operVLs == 1 {
		// One data VL: there is nothing to arbitrate (§7.6.9 makes the
		// tables optional for such ports).
		_, ok := avail(0)
		return 0, ok
	}
	limit := int(a.cfg.HighLimit) * HighLimitUnit / BlockSize
	unbounded := a.cfg.HighLimit == HighLimitUnbounded
	hv, hb, hc, hok := scan(&a.cfg.High, a.hiLen, a.hi, operVLs, avail)
	if hok && (unbounded || !a.highSpent) {
		a.hi = hc
		if !unbounded {
			a.highSent += hb
			a.highSpent = a.highSent >= limit
		}
		return hv, true
	}
	lv, _, lc, lok := scan(&a.cfg.Low, a.loLen, a.lo, operVLs, avail)
	if lok {
		a.lo = lc
		a.highSent, a.highSpent = 0, false
		return lv, true
	}
	if hok {
		// Over its limit, but the low table has nothing: the limit starts
		// over with this packet.
		a.hi = hc
		a.highSent = hb
		a.highSpent = a.highSent >= limit
		return hv, true
	}
	return 0, false
}
