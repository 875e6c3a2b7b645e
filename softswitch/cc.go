package softswitch

import (
	"sync/atomic"

	"ibfab/agent"
	"ibfab/port"
	"ibfab/wire"
)

// FECN marking (IBA Annex A10.2.1), in the crossbar just before a unicast
// packet is queued on its output port o, VL v, when the switch still owns
// its bytes:
//
//   - eligible: a data packet (not VL15) with a BTH, not a CNP, not already
//     carrying FECN (marked upstream: nothing to add), of at least
//     Packet_Size 64-byte blocks;
//   - o's VL v is congested when its queued blocks reach (16 −
//     Threshold)/16 of the VL's buffer (port.CongestionLevel; Threshold 0
//     never), as a root when o holds credit for the VL's head packet, as a
//     victim otherwise; a victim is marked only when Victim_Mask has o;
//   - of the packets that pass both, one in Marking_Rate+1 is marked (0:
//     every one), counted per port and VL;
//   - marking sets FECN, which the ICRC does not cover, and reseals the
//     VCRC; the agent logs the event, the port counts the mark.
//
// Multicast packets are not marked: the outputs on one VL share one
// buffer, so a mark for one would reach every destination.
//
// The settings come from the agent (CCSwitchMarking) through a table the
// switch rebuilds only when the agent's CCMarkingGeneration moves, so a
// packet costs two atomic loads when no port marks, and a Set takes effect
// with the next packet. Rebuilding also hands each port its Threshold,
// which it times its congested spells against (the PMA's
// PortXmitConCtrl, PortVLXmitTimeCong).

// ccTable is the marking settings of every port as of one generation.
type ccTable struct {
	gen  uint64
	any  bool              // some port has a non-zero Threshold
	port []agent.CCMarking // by port number
}

// ccState is the switch's marking state.
type ccState struct {
	table atomic.Pointer[ccTable]
	// seen counts, per port and VL, the packets that could be marked:
	// every Marking_Rate+1-th is.
	seen [][port.MaxDataVLs]atomic.Uint64
}

// ccMarking returns the current marking table.
func (s *Switch) ccMarking() *ccTable {
	gen := s.agent.CCMarkingGeneration()
	if t := s.cc.table.Load(); t != nil && t.gen == gen {
		return t
	}
	return s.ccRefresh(gen)
}

// ccRefresh rebuilds the table for generation gen (read before the
// settings: a Set in between makes the next packet rebuild again) and
// hands each port its Threshold.
func (s *Switch) ccRefresh(gen uint64) *ccTable {
	t := &ccTable{gen: gen, port: make([]agent.CCMarking, len(s.ports))}
	for n := 1; n < len(s.ports); n++ {
		m := s.agent.CCSwitchMarking(uint8(n))
		t.port[n] = m
		t.any = t.any || m.Threshold != 0
		if p := s.Port(uint8(n)); p != nil {
			p.SetCongestionThreshold(m.Threshold)
		}
	}
	s.cc.table.Store(t)
	return t
}

// ccMark marks pkt, about to leave by port out (op) on VL vl, when the
// port's settings and congestion call for it.
func (s *Switch) ccMark(out uint8, op *port.Port, vl uint8, pkt *port.Packet) {
	t := s.ccMarking()
	if !t.any || vl >= port.MaxDataVLs {
		return
	}
	m := t.port[out]
	if m.Threshold == 0 || port.Blocks(len(pkt.Bytes)) < int(m.PacketSize) {
		return
	}
	bth, ok := wire.PacketBTH(pkt.Bytes)
	if !ok || bth.OpCode() == wire.CNP || bth.FECN() {
		return
	}
	congested, root := op.TxCongestion(int(vl))
	if !congested || !root && !m.Victim {
		return
	}
	if s.cc.seen[out][vl].Add(1)%(uint64(m.MarkingRate)+1) != 0 {
		return
	}
	if markFECN(pkt.Bytes, bth) != nil {
		return // cannot happen for a packet the port verified
	}
	lrh := wire.LRH(pkt.Bytes)
	s.agent.CCLogSwitch(agent.CCSwitchEvent{Port: out, SLID: lrh.SLID(), DLID: lrh.DLID(), SL: lrh.SL()})
	op.CountFECNMark(int(vl))
	s.stats.fecnMarked.Add(1)
}

// markFECN sets FECN in bth, packet b's BTH, and reseals b's VCRC. The
// ICRC masks the bit (resv8a is a variant field), so it stands.
func markFECN(b []byte, bth wire.BTH) error {
	bth.SetFECN(true)
	return wire.SealVCRC(b)
}
