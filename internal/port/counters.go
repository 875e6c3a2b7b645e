package port

import (
	"fmt"
	"time"

	"ibfab/wire/mad"
)

// DropCause says why a packet was dropped (design §3). Each drop is also
// counted in the PMA counter the spec assigns it, noted per cause.
type DropCause uint8

// Drop causes.
const (
	DropUnroutable    DropCause = iota // node: no forwarding entry (PortRcvSwitchRelayErrors)
	DropLoopback                       // node: output port = input port (PortRcvSwitchRelayErrors)
	DropNotActive                      // the port's state does not let the packet through (PortXmitDiscards when sending)
	DropVLMapping                      // VL not operational, non-SMP on VL15, SMP on a data VL (PortRcvErrors / PortXmitDiscards)
	DropVL15Overflow                   // VL15 receive buffer full (VL15Dropped)
	DropCRC                            // bad ICRC, VCRC or LPCRC (PortRcvErrors)
	DropPKey                           // node: P_Key violation (PortRcvConstraintErrors)
	DropLinkDown                       // queued for sending when the link went down (PortXmitDiscards)
	DropMalformed                      // bad length, PktLen, PadCnt, PayLen, link Op, over the MTU (PortRcvErrors / PortXmitDiscards)
	DropBufferOverrun                  // the peer sent beyond its credits (PortRcvErrors, ExcessiveBufferOverrunErrors)
	DropTxError                        // the endpoint failed to send (PortXmitDiscards)
	DropInputDown                      // the input port went Down while the packet waited for its output (no PMA counter)
	numDropCauses
)

var dropNames = [numDropCauses]string{
	DropUnroutable:    "unroutable",
	DropLoopback:      "pout_eq_pin",
	DropNotActive:     "port_not_active",
	DropVLMapping:     "vl_mapping",
	DropVL15Overflow:  "vl15_overflow",
	DropCRC:           "crc_error",
	DropPKey:          "pkey_violation",
	DropLinkDown:      "link_down_while_queued",
	DropMalformed:     "malformed",
	DropBufferOverrun: "buffer_overrun",
	DropTxError:       "tx_error",
	DropInputDown:     "input_port_down",
}

// String returns the cause's name as status output shows it.
func (c DropCause) String() string {
	if c < numDropCauses {
		return dropNames[c]
	}
	return fmt.Sprintf("DropCause(%d)", uint8(c))
}

// DropCounts holds a port's drops by cause, indexed by DropCause.
type DropCounts [numDropCauses]uint64

// Total returns the sum over all causes.
func (d DropCounts) Total() uint64 {
	var n uint64
	for _, v := range d {
		n += v
	}
	return n
}

// Map returns the non-zero counts by cause name, for JSON status.
func (d DropCounts) Map() map[string]uint64 {
	m := make(map[string]uint64)
	for c, v := range d {
		if v != 0 {
			m[DropCause(c).String()] = v
		}
	}
	return m
}

// LinkCounters counts link-level events the PMA attributes have no place
// for.
type LinkCounters struct {
	FCSent         uint64 // flow-control packets sent
	FCReceived     uint64 // valid flow-control packets received
	FCInitReceived uint64 // of those, with Op Init
	FCTBSResyncs   uint64 // received FCTBS differed from ABR (blocks lost)
	// Training frames (link width and speed, see LinkRate) sent and
	// received valid.
	TrainingSent, TrainingReceived uint64
}

// counters are the PMA counters as 64-bit totals; snapshots saturate them
// to the attributes' widths. mu of the Port protects them.
type counters struct {
	xmitBytes, rcvBytes     uint64
	xmitPkts, rcvPkts       uint64
	xmitMcast, rcvMcast     uint64
	rcvErrors, xmitDiscards uint64
	rcvSwitchRelay          uint64
	rcvConstraint           uint64
	vl15Dropped             uint64
	bufferOverrun           uint64
	linkDowned              uint64
	xmitWait                time.Duration
}

// dropLocked counts a drop by cause and in the PMA counter it belongs to;
// sending tells the transmit side from the receive side.
func (p *Port) dropLocked(c DropCause, sending bool) {
	if c >= numDropCauses {
		return
	}
	p.drops[c]++
	k := &p.cnt
	switch c {
	case DropUnroutable, DropLoopback:
		k.rcvSwitchRelay++
	case DropPKey:
		k.rcvConstraint++
	case DropVL15Overflow:
		k.vl15Dropped++
	case DropBufferOverrun:
		k.rcvErrors++
		k.bufferOverrun++
	case DropLinkDown, DropTxError:
		k.xmitDiscards++
	case DropNotActive, DropVLMapping, DropCRC, DropMalformed:
		if sending {
			k.xmitDiscards++
		} else if c != DropNotActive {
			k.rcvErrors++
		}
	}
}

// CountDrop counts a receive-side drop decided by the node (unroutable,
// Pout = Pin, P_Key violation, …) on this, the input, port.
func (p *Port) CountDrop(c DropCause) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(c, false)
}

// Drops returns the port's drops by cause.
func (p *Port) Drops() DropCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.drops
}

// LinkCounters returns the port's link-level counters.
func (p *Port) LinkCounters() LinkCounters {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lc
}

// xmitWaitLocked returns PortXmitWait's time, the wait in progress
// included.
func (p *Port) xmitWaitLocked() time.Duration {
	w := p.cnt.xmitWait
	if !p.waitSince.IsZero() {
		w += p.cfg.Clock.Now().Sub(p.waitSince)
	}
	return w
}

// Counters returns the PortCounters attribute's counters (IBA 16.1.3.5):
// data in 4-byte words, every counter stuck at its maximum instead of
// wrapping. PortSelect and CounterSelect are left for the PMA to fill.
func (p *Port) Counters() mad.PortCountersFields {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := &p.cnt
	var wait uint64
	if p.cfg.XmitWaitTick > 0 {
		wait = uint64(p.xmitWaitLocked() / p.cfg.XmitWaitTick)
	}
	return mad.PortCountersFields{
		LinkDownedCounter:            mad.SatAdd[uint8](0, k.linkDowned),
		PortRcvErrors:                mad.SatAdd[uint16](0, k.rcvErrors),
		PortRcvSwitchRelayErrors:     mad.SatAdd[uint16](0, k.rcvSwitchRelay),
		PortXmitDiscards:             mad.SatAdd[uint16](0, k.xmitDiscards),
		PortRcvConstraintErrors:      mad.SatAdd[uint8](0, k.rcvConstraint),
		ExcessiveBufferOverrunErrors: mad.SatAdd4(0, k.bufferOverrun),
		VL15Dropped:                  mad.SatAdd[uint16](0, k.vl15Dropped),
		PortXmitData:                 mad.SatAdd[uint32](0, k.xmitBytes/4),
		PortRcvData:                  mad.SatAdd[uint32](0, k.rcvBytes/4),
		PortXmitPkts:                 mad.SatAdd[uint32](0, k.xmitPkts),
		PortRcvPkts:                  mad.SatAdd[uint32](0, k.rcvPkts),
		PortXmitWait:                 mad.SatAdd[uint32](0, wait),
	}
}

// CountersExtended returns the PortCountersExtended attribute's counters;
// they share their totals with Counters.
func (p *Port) CountersExtended() mad.PortCountersExtendedFields {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := &p.cnt
	return mad.PortCountersExtendedFields{
		PortXmitData:          k.xmitBytes / 4,
		PortRcvData:           k.rcvBytes / 4,
		PortXmitPkts:          k.xmitPkts,
		PortRcvPkts:           k.rcvPkts,
		PortUnicastXmitPkts:   k.xmitPkts - k.xmitMcast,
		PortUnicastRcvPkts:    k.rcvPkts - k.rcvMcast,
		PortMulticastXmitPkts: k.xmitMcast,
		PortMulticastRcvPkts:  k.rcvMcast,
	}
}

// ResetCounters clears the counters a PortCounters Set selects
// (mad.PCSel… bits in sel, mad.PCSel2XmitWait in sel2). The drops by cause
// are not PMA counters and stay.
func (p *Port) ResetCounters(sel uint16, sel2 uint8) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := &p.cnt
	for _, r := range []struct {
		bit uint16
		c   *uint64
	}{
		{mad.PCSelLinkDowned, &k.linkDowned},
		{mad.PCSelRcvErrors, &k.rcvErrors},
		{mad.PCSelRcvSwitchRelayErrors, &k.rcvSwitchRelay},
		{mad.PCSelXmitDiscards, &k.xmitDiscards},
		{mad.PCSelRcvConstraintErrors, &k.rcvConstraint},
		{mad.PCSelExcessiveBufferOverrunErrors, &k.bufferOverrun},
		{mad.PCSelVL15Dropped, &k.vl15Dropped},
		{mad.PCSelXmitData, &k.xmitBytes},
		{mad.PCSelRcvData, &k.rcvBytes},
	} {
		if sel&r.bit != 0 {
			*r.c = 0
		}
	}
	if sel&mad.PCSelXmitPkts != 0 {
		k.xmitPkts, k.xmitMcast = 0, 0
	}
	if sel&mad.PCSelRcvPkts != 0 {
		k.rcvPkts, k.rcvMcast = 0, 0
	}
	if sel2&mad.PCSel2XmitWait != 0 {
		k.xmitWait = 0
		if !p.waitSince.IsZero() {
			p.waitSince = p.cfg.Clock.Now()
		}
	}
}

// ResetCountersExtended clears the counters a PortCountersExtended Set
// selects (mad.PCExtSel… bits). The unicast and multicast packet counts
// are derived from shared totals, so clearing either clears both.
func (p *Port) ResetCountersExtended(sel uint16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := &p.cnt
	if sel&mad.PCExtSelXmitData != 0 {
		k.xmitBytes = 0
	}
	if sel&mad.PCExtSelRcvData != 0 {
		k.rcvBytes = 0
	}
	if sel&(mad.PCExtSelXmitPkts|mad.PCExtSelUnicastXmitPkts|mad.PCExtSelMulticastXmitPkts) != 0 {
		k.xmitPkts, k.xmitMcast = 0, 0
	}
	if sel&(mad.PCExtSelRcvPkts|mad.PCExtSelUnicastRcvPkts|mad.PCExtSelMulticastRcvPkts) != 0 {
		k.rcvPkts, k.rcvMcast = 0, 0
	}
}

// isMulticastLID reports whether a DLID is a multicast LID (0xC000-0xFFFE;
// 0xFFFF is the permissive LID).
func isMulticastLID(lid uint16) bool { return lid >= 0xC000 && lid != 0xFFFF }
