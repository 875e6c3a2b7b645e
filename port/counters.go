package port

import (
	"time"

	"ibfab/internal/enum"
	"ibfab/wire"
	"ibfab/wire/mad"
)

//go:generate go tool stringer -type=DropCause -linecomment

// DropCause says why a packet was dropped (design §3). Each drop is also
// counted in the PMA counter the spec assigns it, noted per cause. Its
// name (String, MarshalText) is what status output shows.
type DropCause uint8

// Drop causes.
const (
	// DropUnroutable: node: no forwarding entry (PortRcvSwitchRelayErrors).
	DropUnroutable DropCause = iota // unroutable
	// DropLoopback: node: output port = input port (PortRcvSwitchRelayErrors).
	DropLoopback // pout_eq_pin
	// DropNotActive: the port's state does not let the packet through
	// (PortXmitDiscards when sending).
	DropNotActive // port_not_active
	// DropVLMapping: VL not operational, non-SMP on VL15, SMP on a data
	// VL (PortRcvErrors / PortXmitDiscards).
	DropVLMapping // vl_mapping
	// DropVL15Overflow: VL15 receive buffer full (VL15Dropped).
	DropVL15Overflow // vl15_overflow
	// DropCRC: bad ICRC, VCRC or LPCRC (PortRcvErrors).
	DropCRC // crc_error
	// DropPKey: node: P_Key violation (PortRcvConstraintErrors;
	// PortXmitConstraintErrors when sending).
	DropPKey // pkey_violation
	// DropLinkDown: queued for sending when the link went down
	// (PortXmitDiscards).
	DropLinkDown // link_down_while_queued
	// DropMalformed: bad length, PktLen, PadCnt, PayLen, link Op, over
	// the MTU (PortRcvErrors / PortXmitDiscards).
	DropMalformed // malformed
	// DropBufferOverrun: the peer sent beyond its credits (PortRcvErrors,
	// ExcessiveBufferOverrunErrors).
	DropBufferOverrun // buffer_overrun
	// DropTxError: the endpoint failed to send (PortXmitDiscards).
	DropTxError // tx_error
	// DropInputDown: the input port went Down while the packet waited for
	// its output (no PMA counter).
	DropInputDown // input_port_down
)

// numDropCauses is the number of causes; it is no DropCause, so that
// stringer names none past the last.
const numDropCauses = int(DropInputDown) + 1

// dropCauses are the causes, by the names String gives them.
var dropCauses = enum.New("drop cause", DropUnroutable, DropLoopback, DropNotActive, DropVLMapping,
	DropVL15Overflow, DropCRC, DropPKey, DropLinkDown, DropMalformed, DropBufferOverrun, DropTxError, DropInputDown)

// MarshalText implements encoding.TextMarshaler.
func (c DropCause) MarshalText() ([]byte, error) { return dropCauses.Marshal(c) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *DropCause) UnmarshalText(text []byte) error { return dropCauses.Unmarshal(c, text) }

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
	xmitConstraint          uint64
	vl15Dropped             uint64
	bufferOverrun           uint64
	linkDowned              uint64
	xmitWait                time.Duration
	rcvDetail               [numRcvDetails]uint64 // PortRcvErrorDetails
	inactiveDiscards        uint64                // PortXmitDiscardDetails
	byOp                    map[uint8]*opCounts   // received packets by BTH OpCode
	vlWait                  [numVLs]time.Duration // PortVLXmitWaitCounters
	waitVLs                 uint16                // VLs with data queued when the current wait began
	vlWaitSince             time.Time             // when that wait began
}

// The PortRcvErrorDetails counters, in the attribute's order.
const (
	rcvLocalPhysical = iota
	rcvMalformed
	rcvBufferOverrun
	rcvDLIDMapping
	rcvVLMapping
	rcvLooping
	numRcvDetails
)

// opCounts are the packets and bytes received with one BTH OpCode, by VL.
type opCounts struct {
	pkts, bytes [numVLs]uint64
}

// dropLocked counts a drop by cause and in the PMA counter it belongs to;
// sending tells the transmit side from the receive side.
func (p *Port) dropLocked(c DropCause, sending bool) {
	if int(c) >= numDropCauses {
		return
	}
	p.drops[c]++
	k := &p.cnt
	p.countDetailLocked(c, sending)
	switch c {
	case DropUnroutable, DropLoopback:
		k.rcvSwitchRelay++
	case DropPKey:
		if sending {
			k.xmitConstraint++
		} else {
			k.rcvConstraint++
		}
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

// dropPacketLocked counts a drop of packet b (dropLocked) and records it
// in the port's DropLog.
func (p *Port) dropPacketLocked(c DropCause, sending bool, b []byte) {
	p.dropLocked(c, sending)
	if p.cfg.DropLog != nil {
		p.cfg.DropLog.recordPacket(p.cfg.Clock.Now().UnixNano(), p.cfg.Num, c, sending, b)
	}
}

// CountDropPacket is CountDrop for packet b, which the port's DropLog
// records.
func (p *Port) CountDropPacket(c DropCause, b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropPacketLocked(c, false, b)
}

// CountRouteDropPacket is CountDropPacket for a packet the node routed to
// its output port out and could not send there (the output is down, not
// Active, has no VL for it): the record names both ports.
func (p *Port) CountRouteDropPacket(c DropCause, b []byte, out uint8) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(c, false)
	if l := p.cfg.DropLog; l != nil {
		lrh := wire.LRH(b)
		if lrh.IsValid() && lrh.VL() != VL15 {
			l.Record(DropRecord{At: p.cfg.Clock.Now().UnixNano(), SLID: lrh.SLID(), DLID: lrh.DLID(), Port: p.cfg.Num, Out: out,
				Cause: c, VL: lrh.VL(), SL: lrh.SL()})
		}
	}
}

// CountXmitDropPacket is CountXmitDrop for packet b, which the port's
// DropLog records.
func (p *Port) CountXmitDropPacket(c DropCause, b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropPacketLocked(c, true, b)
}

// CountDrop counts a receive-side drop decided by the node (unroutable,
// Pout = Pin, P_Key violation, …) on this, the input, port.
func (p *Port) CountDrop(c DropCause) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(c, false)
}

// CountXmitDrop counts a transmit-side drop decided by the node on this,
// the output, port: a switch's outbound partition check (IBA 10.9.4) is
// the output port's, and counts in its PortXmitConstraintErrors.
func (p *Port) CountXmitDrop(c DropCause) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLocked(c, true)
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
		PortXmitConstraintErrors:     mad.SatAdd[uint8](0, k.xmitConstraint),
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
		{mad.PCSelXmitConstraintErrors, &k.xmitConstraint},
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

// countDetailLocked counts a drop in PortRcvErrorDetails or
// PortXmitDiscardDetails where the cause names one of their counters.
func (p *Port) countDetailLocked(c DropCause, sending bool) {
	k := &p.cnt
	if sending {
		if c == DropNotActive || c == DropLinkDown {
			k.inactiveDiscards++
		}
		return
	}
	switch c {
	case DropCRC:
		k.rcvDetail[rcvLocalPhysical]++
	case DropMalformed:
		k.rcvDetail[rcvMalformed]++
	case DropBufferOverrun:
		k.rcvDetail[rcvBufferOverrun]++
	case DropUnroutable:
		k.rcvDetail[rcvDLIDMapping]++
	case DropVLMapping:
		k.rcvDetail[rcvVLMapping]++
	case DropLoopback:
		k.rcvDetail[rcvLooping]++
	}
}

// countOpLocked counts an admitted data packet b of n bytes on VL vl by
// its BTH OpCode; a raw or IPv6 packet has no BTH and is not counted.
func (p *Port) countOpLocked(b []byte, vl, n int) {
	bth, ok := wire.PacketBTH(b)
	if !ok || vl >= numVLs {
		return
	}
	if vl != VL15 {
		p.countECNLocked(bth, wire.LRH(b).SL())
	}
	op := uint8(bth.OpCode())
	k := &p.cnt
	if k.byOp == nil {
		k.byOp = make(map[uint8]*opCounts)
	}
	c := k.byOp[op]
	if c == nil {
		c = new(opCounts)
		k.byOp[op] = c
	}
	c.pkts[vl]++
	c.bytes[vl] += uint64(n)
}

// noteWaitVLsLocked records, at the start of a PortXmitWait interval,
// the VLs that hold data: for the interval's length, each of them waits
// too.
func (p *Port) noteWaitVLsLocked(now time.Time) {
	var m uint16
	for vl := range min(p.operVLs, numVLs) {
		if p.tx[vl].q.len() > 0 {
			m |= 1 << vl
		}
	}
	p.cnt.waitVLs, p.cnt.vlWaitSince = m, now
}

// endWaitVLsLocked adds the interval that ends at now to the VLs that
// waited.
func (p *Port) endWaitVLsLocked(now time.Time) {
	k := &p.cnt
	d := now.Sub(k.vlWaitSince)
	for vl := range numVLs {
		if k.waitVLs&(1<<vl) != 0 && d > 0 {
			k.vlWait[vl] += d
		}
	}
	k.waitVLs = 0
}

// OptionalCounters returns the counters of the optional PMA attribute a
// (IBA 16.1.4) as 64-bit totals, in the attribute's order (per VL for the
// VL attributes), and whether the port counts a at all. op is the BTH
// OpCode the OpCode-filtered attributes count. The PMA saturates them to
// the attribute's width.
//
// Every packet received is counted by OpCode and VL, so any OpCode can be
// asked for at any time. PortVLXmitWait counts, for each VL, the
// XmitWaitTick ticks of the port's waits (no VL could send) during which
// that VL held data from the wait's start: a VL that starves while
// another sends is not counted. PortVLXmitFlowCtlUpdateErrors is not
// counted: the link layer has no flow-control update watchdog (§7.9.4).
// Of PortXmitDiscardDetails only PortInactiveDiscards is: the port has no
// lifetime limits and tells no MTU discard from other malformed ones.
//
// The congestion control attributes (congestion.go): SwPortVLCongestion
// counts, per VL, the packets the node could mark that found the VL
// congested (TxCongestion); PortRcvConCtrl and PortSLRcvFECN/BECN the
// data packets received with FECN or BECN; PortXmitConCtrl the
// XmitWaitTick ticks during which any data VL was congested,
// PortVLXmitTimeCong those of each VL. The agent serves the first and
// the last two at switches only (mad.PMACounterLayout.SwitchOnly).
func (p *Port) OptionalCounters(a mad.AttrID, op uint8) (c [mad.PMAMaxCounters]uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := &p.cnt
	switch a {
	case mad.AttrPortRcvErrorDetails:
		copy(c[:], k.rcvDetail[:])
	case mad.AttrPortXmitDiscardDetails:
		c[0] = k.inactiveDiscards
	case mad.AttrPortOpRcvCounters:
		if o := k.byOp[op]; o != nil {
			for vl := range numVLs {
				c[0] += o.pkts[vl]
				c[1] += o.bytes[vl] / 4
			}
		}
	case mad.AttrPortFlowCtlCounters:
		c[0], c[1] = p.lc.FCSent, p.lc.FCReceived
	case mad.AttrPortVLOpPackets:
		if o := k.byOp[op]; o != nil {
			copy(c[:], o.pkts[:])
		}
	case mad.AttrPortVLOpData:
		if o := k.byOp[op]; o != nil {
			for vl, b := range o.bytes {
				c[vl] = b / 4
			}
		}
	case mad.AttrPortVLXmitFlowCtlUpdateErrors:
		// Zero: see above.
	case mad.AttrPortVLXmitWaitCounters:
		if p.cfg.XmitWaitTick > 0 {
			running := p.cfg.Clock.Now().Sub(k.vlWaitSince)
			for vl, w := range k.vlWait {
				if k.waitVLs&(1<<vl) != 0 {
					w += running
				}
				c[vl] = uint64(w / p.cfg.XmitWaitTick)
			}
		}
	default:
		return c, p.congOptionalLocked(a, &c)
	}
	return c, true
}

// CountsOptional reports whether a port counts the optional PMA attribute
// a: every one mad lays out.
func CountsOptional(a mad.AttrID) bool {
	_, ok := mad.PMAOptionalLayouts[a]
	return ok
}

// ResetOptionalCounters zeroes the counters of attribute a that sel
// selects (bit i: counter i), as a PMA Set does; op is the OpCode of the
// OpCode-filtered attributes.
func (p *Port) ResetOptionalCounters(a mad.AttrID, op uint8, sel uint16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := &p.cnt
	o := k.byOp[op]
	for i := range mad.PMAMaxCounters {
		if sel&(1<<i) == 0 {
			continue
		}
		switch a {
		case mad.AttrPortRcvErrorDetails:
			if i < numRcvDetails {
				k.rcvDetail[i] = 0
			}
		case mad.AttrPortXmitDiscardDetails:
			if i == 0 {
				k.inactiveDiscards = 0
			}
		case mad.AttrPortOpRcvCounters:
			if o != nil && i < 2 {
				for vl := range numVLs {
					if i == 0 {
						o.pkts[vl] = 0
					} else {
						o.bytes[vl] = 0
					}
				}
			}
		case mad.AttrPortFlowCtlCounters:
			switch i {
			case 0:
				p.lc.FCSent = 0
			case 1:
				p.lc.FCReceived = 0
			}
		case mad.AttrPortVLOpPackets:
			if o != nil {
				o.pkts[i] = 0
			}
		case mad.AttrPortVLOpData:
			if o != nil {
				o.bytes[i] = 0
			}
		case mad.AttrSwPortVLCongestion, mad.AttrPortRcvConCtrl, mad.AttrPortSLRcvFECN, mad.AttrPortSLRcvBECN,
			mad.AttrPortXmitConCtrl, mad.AttrPortVLXmitTimeCong:
			p.congResetLocked(a, i)
		case mad.AttrPortVLXmitWaitCounters:
			k.vlWait[i] = 0
			if k.waitVLs&(1<<i) != 0 {
				// A wait is running: only its part after the reset counts.
				k.vlWait[i] = -p.cfg.Clock.Now().Sub(k.vlWaitSince)
			}
		}
	}
}

// VLXmit is what a port's transmitter wrote on one VL: packets and bytes,
// LRH through VCRC, as the link rate counts them.
type VLXmit struct {
	Packets uint64
	Bytes   uint64
}

// XmitByVL returns the packets and bytes the port has sent on each VL
// (VL15 included) since it was built: what the VL arbiter gave each VL.
// PMA counter resets do not touch them.
func (p *Port) XmitByVL() [numVLs]VLXmit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.vlTx
}
