package softswitch

import (
	"math"
	"sync/atomic"

	"ibfab/agent"
	"ibfab/port"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// Adaptive routing (issue 20; seed 003's AFI). The subnet manager sets,
// through the vendor class the agent serves, a mode, a threshold T in
// percent, an Adapted Flow Channel VL and, per destination LID, a group of
// alternative output ports (up ports, for destinations not below the
// switch); the agent publishes them as one immutable agent.ARTable, read
// with one atomic load per packet. A unicast data packet for dlid, whose
// LFT port is det, is routed when the crossbar routes it (at arrival in
// the VOQ architecture, when it reaches the head of its input FIFO in the
// IQ one) as follows, where occ(o, v) is output o's downstream occupancy
// of VL v from its credits (port.Port.Downstream: used/capacity of the
// peer's buffer; a VL the peer never credited counts as full) and
// vl(o) = SLtoVL(in, o, SL):
//
//	off:          det on vl(det)
//	adaptive:     the o in alternatives ∪ {det} of least occ(o, vl(o)), on vl(o)
//	adaptive-th:  det on vl(det) while occ(det, vl(det)) < T; else the o in
//	              the alternatives of least occ(o, vl(o)), on vl(o)
//	afi:          an adapted packet (BTH adapted bit): det on the AFC VL;
//	              else det on vl(det) while occ(det, vl(det)) < T; else the o
//	              in the alternatives of least occ(o, AFC), on the AFC VL,
//	              marked adapted (ICRC-masked: only the VCRC is resealed)
//
// Only Active ports compete, and never the input port; ties go to det,
// then to the lowest port number, so that a quiet fabric routes exactly as
// the LFT does. A det that is not Active counts as over the threshold
// (the packet is adapted rather than dropped); with no Active alternative
// the packet takes det and the usual drop causes apply. Packets without
// alternatives (DLIDs below the switch), multicast, VL15 and raw packets
// (no BTH to mark) are routed by the tables alone, but for an adapted
// packet in AFI mode, which keeps to the AFC to its destination. The occupancies are compared as fractions of each
// port's own capacity. An adapted packet is counted on its output port
// (PortCounts.Adapted) when it leaves by another port than det, or is
// marked. The cost is one Downstream call (one port lock) per candidate.

// arPorts is what a routing decision reads of the switch: the VL a packet
// on service level sl takes from in to out, and out's downstream view of
// one VL. *Switch is one; tests give others.
type arPorts interface {
	vlFor(in, out, sl uint8) uint8
	downstream(out, vl uint8) (used, capacity int, active bool)
}

func (s *Switch) vlFor(in, out, sl uint8) uint8 { return s.agent.VLFor(in, out, sl) }

func (s *Switch) downstream(out, vl uint8) (used, capacity int, active bool) {
	p := s.Port(out)
	if p == nil {
		return 0, 0, false
	}
	return p.Downstream(int(vl))
}

// occNotActive sorts a port that is not Active after every Active one.
const (
	occFull      = 1 << 16
	occNotActive = math.MaxUint32
)

// occupancy is a downstream occupancy in 1/65536 of the capacity. A VL
// whose peer never granted credit counts as full.
func occupancy(used, capacity int, active bool) uint32 {
	switch {
	case !active:
		return occNotActive
	case capacity <= 0:
		return occFull
	}
	return uint32(min(max(used, 0), capacity) * occFull / capacity)
}

// overThreshold reports whether output o's VL vl is at or over t percent
// occupied, or o cannot take the packet at all.
func overThreshold(ports arPorts, o, vl, t uint8) bool {
	used, capacity, active := ports.downstream(o, vl)
	return !active || capacity <= 0 || used*100 >= int(t)*capacity
}

// leastOccupied returns the port of alts, not in, with the least downstream
// occupancy, of the VL the packet would take there or, with onAFC, of
// the AFC VL afc; ties go to det, then to the lowest port. ok is false
// when no alternative is Active.
func leastOccupied(ports arPorts, in, det, sl uint8, alts []uint8, onAFC bool, afc uint8) (best uint8, ok bool) {
	bestOcc := uint32(occNotActive)
	for _, o := range alts {
		if o == in || o == 0 {
			continue
		}
		vl := afc
		if !onAFC {
			vl = ports.vlFor(in, o, sl)
		}
		occ := occupancy(ports.downstream(o, vl))
		if occ == occNotActive {
			continue
		}
		if !ok || occ < bestOcc || occ == bestOcc && best != det && (o == det || o < best) {
			best, bestOcc, ok = o, occ, true
		}
	}
	return best, ok
}

// decide is the adaptive routing decision for a unicast data packet on
// service level sl from port in whose LFT port is det, with alternatives
// alts (not empty) and, in AFI mode, adapted telling whether it carries
// the adapted bit: the output port, the VL it leaves on, and whether to
// mark it adapted.
func decide(t *agent.ARTable, ports arPorts, in, det, sl uint8, adapted bool, alts []uint8) (out, vl uint8, mark bool) {
	switch t.Mode {
	case mad.ARAdaptive:
		vDet := ports.vlFor(in, det, sl)
		best, bestOcc := det, occupancy(ports.downstream(det, vDet))
		for _, o := range alts {
			if o == det || o == in || o == 0 {
				continue
			}
			vl := ports.vlFor(in, o, sl)
			occ := occupancy(ports.downstream(o, vl))
			if occ < bestOcc || occ == bestOcc && occ != occNotActive && best != det && o < best {
				best, bestOcc = o, occ
			}
		}
		if best == det {
			return det, vDet, false
		}
		return best, ports.vlFor(in, best, sl), false
	case mad.ARAdaptiveTh:
		vDet := ports.vlFor(in, det, sl)
		if !overThreshold(ports, det, vDet, t.Threshold) {
			return det, vDet, false
		}
		best, ok := leastOccupied(ports, in, det, sl, alts, false, 0)
		if !ok {
			return det, vDet, false
		}
		return best, ports.vlFor(in, best, sl), false
	case mad.ARAFI:
		if adapted {
			return det, t.AFCVL, false // adapted once: never again
		}
		vDet := ports.vlFor(in, det, sl)
		if !overThreshold(ports, det, vDet, t.Threshold) {
			return det, vDet, false
		}
		best, ok := leastOccupied(ports, in, det, sl, alts, true, t.AFCVL)
		if !ok {
			return det, vDet, false
		}
		return best, t.AFCVL, true
	}
	return det, ports.vlFor(in, det, sl), false
}

// unicastOutput picks the output of a unicast packet that came in on port
// in, whose LFT port is det: det, or where adaptive routing takes it. It
// returns the port number, the port (nil with the drop cause when the
// packet cannot go there), the VL it leaves on, and whether to mark it
// adapted.
func (s *Switch) unicastOutput(in, det uint8, pkt *port.Packet, lrh wire.LRH) (out uint8, op *port.Port, vl uint8, mark bool, cause port.DropCause) {
	inVL, sl := pkt.VL(), lrh.SL()
	t := s.agent.ARTable()
	if t.Mode == mad.AROff || inVL == port.VL15 {
		op, vl, cause = s.output(in, det, inVL, sl)
		return det, op, vl, false, cause
	}
	adapted := false
	if t.Mode == mad.ARAFI {
		bth, ok := wire.PacketBTH(pkt.Bytes)
		if !ok {
			// A raw packet has no bit to carry the mark: the tables
			// route it.
			op, vl, cause = s.output(in, det, inVL, sl)
			return det, op, vl, false, cause
		}
		adapted = bth.Adapted()
	}
	alts := t.Alternatives(lrh.DLID())
	if len(alts) == 0 && !adapted {
		// Below the switch: one way down. An adapted packet still
		// keeps to the AFC.
		op, vl, cause = s.output(in, det, inVL, sl)
		return det, op, vl, false, cause
	}
	out, vl, mark = decide(t, s, in, det, sl, adapted, alts)
	op, vl, cause = s.outputOn(out, inVL, vl)
	return out, op, vl, mark, cause
}

// portCounts are the crossbar's counts of one port.
type portCounts struct {
	adapted atomic.Uint64                  // packets adaptive routing sent out of the port (see PortCounts)
	rcv     [port.MaxDataVLs]atomic.Uint64 // packets to switch received per data VL
	watched [port.MaxDataVLs]atomic.Uint64 // of those, for a watched DLID
}

// PortCounts are what the crossbar counted of one port since the switch
// started.
type PortCounts struct {
	// Adapted counts the packets adaptive routing sent out of the port
	// instead of their LFT port, and those it marked adapted (AFI) as
	// they left by it.
	Adapted uint64
	// RcvByVL counts the data packets the port received to switch (not
	// MADs for the switch's own agent), per VL of arrival.
	RcvByVL [port.MaxDataVLs]uint64
	// WatchedByVL counts those of them addressed to a watched DLID
	// (Watch), since the watch was set.
	WatchedByVL [port.MaxDataVLs]uint64
}

// PortCounts returns port n's counts; zero for a port the switch does not
// have.
func (s *Switch) PortCounts(n uint8) PortCounts {
	var c PortCounts
	if int(n) >= len(s.counts) {
		return c
	}
	k := &s.counts[n]
	c.Adapted = k.adapted.Load()
	for vl := range c.RcvByVL {
		c.RcvByVL[vl] = k.rcv[vl].Load()
		c.WatchedByVL[vl] = k.watched[vl].Load()
	}
	return c
}

// lidSet is a set of LIDs, one bit each.
type lidSet [1 << 16 / 64]uint64

func (w *lidSet) has(lid uint16) bool { return w[lid>>6]&(1<<(lid&63)) != 0 }

// Watch makes the switch count, per input port and VL, the data packets
// it receives for the DLIDs lids (PortCounts.WatchedByVL): where the
// packets of a hot spot sit. It replaces the LIDs watched before and
// zeroes the counts; no LIDs stops watching.
func (s *Switch) Watch(lids []uint16) {
	var w *lidSet
	if len(lids) > 0 {
		w = new(lidSet)
		for _, l := range lids {
			w[l>>6] |= 1 << (l & 63)
		}
	}
	s.watch.Store(nil)
	for i := range s.counts {
		for vl := range s.counts[i].watched {
			s.counts[i].watched[vl].Store(0)
		}
	}
	s.watch.Store(w)
}

// Watched returns the DLIDs Watch set, in order.
func (s *Switch) Watched() []uint16 {
	w := s.watch.Load()
	if w == nil {
		return nil
	}
	var lids []uint16
	for l := range 1 << 16 {
		if w.has(uint16(l)) {
			lids = append(lids, uint16(l))
		}
	}
	return lids
}

// countIn counts a data packet to switch that arrived on port in, VL vl,
// for dlid.
func (s *Switch) countIn(in, vl uint8, dlid uint16) {
	k := &s.counts[in]
	k.rcv[vl].Add(1)
	if w := s.watch.Load(); w != nil && w.has(dlid) {
		k.watched[vl].Add(1)
	}
}
