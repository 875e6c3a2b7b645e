package softswitch

import (
	"ibfab/port"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// Multicast LIDs (IBA 4.1.2): 0xc000 up to, not including, the permissive
// LID.
const (
	mcastFirst = mad.MulticastLIDBase
	mcastLast  = mad.PermissiveLID - 1
)

// receive is the crossbar: every packet port in accepts comes here, on the
// port's delivery goroutine. It either gives the packet to the agent or
// routes it, still holding the input buffer, to output ports: at once in
// the VOQ architecture and for VL15, through the input's FIFO of its VL
// in the IQ architecture (arch.go).
func (s *Switch) receive(in uint8, p *port.Port, pkt *port.Packet) {
	lrh := wire.LRH(pkt.Bytes)
	if !lrh.IsValid() {
		p.CountDrop(port.DropMalformed)
		pkt.Release()
		return
	}
	if pkt.VL() != port.VL15 && !s.inboundPKeyOK(in, pkt.Bytes) {
		s.drop(p, pkt, port.DropPKey)
		return
	}
	if inb, err := ParseMAD(in, pkt.Bytes); err == nil {
		if s.forAgent(inb) {
			s.toAgent(inb, pkt)
			return
		}
	} else if pkt.VL() == port.VL15 {
		// The port lets only QP0 packets onto VL15; one too short to
		// carry a MAD is malformed, not something to switch.
		p.CountDrop(port.DropMalformed)
		pkt.Release()
		return
	}
	if vl := pkt.VL(); vl < port.MaxDataVLs {
		s.countIn(in, vl, lrh.DLID())
		if s.queueInput(in, pkt) {
			return
		}
	}
	s.route(in, p, pkt)
}

// route sends pkt, which came in on port in (p), to its output ports: by
// the MFT for a multicast DLID; else by the LFT, or where adaptive routing
// takes it (adaptive.go).
func (s *Switch) route(in uint8, p *port.Port, pkt *port.Packet) {
	lrh := wire.LRH(pkt.Bytes)
	dlid := lrh.DLID()
	if dlid >= mcastFirst && dlid <= mcastLast {
		s.multicast(in, p, pkt, dlid)
		return
	}
	det, ok := s.agent.OutPort(dlid)
	switch {
	case !ok || det == 0:
		// Port 0 is the switch itself, and what reaches it here is
		// no MAD the agent takes.
		s.drop(p, pkt, port.DropUnroutable)
		return
	case det == in:
		s.drop(p, pkt, port.DropLoopback)
		return
	}
	out, op, vl, mark, cause := s.unicastOutput(in, det, pkt, lrh)
	if op == nil {
		p.CountRouteDropPacket(cause, pkt.Bytes, out)
		pkt.Release()
		return
	}
	if !s.outboundPKeyOK(out, vl, pkt.Bytes) {
		op.CountXmitDropPacket(port.DropPKey, pkt.Bytes)
		pkt.Release()
		return
	}
	if mark {
		if bth, ok := wire.PacketBTH(pkt.Bytes); ok {
			bth.SetAdapted(true)
		}
	}
	if !s.retag(pkt, vl, mark) {
		s.drop(p, pkt, port.DropMalformed)
		return
	}
	s.ccMark(out, op, vl, pkt)
	if out != det || mark {
		s.counts[out].adapted.Add(1)
	}
	s.stats.forwarded.Add(1)
	if op.Send(pkt) != nil {
		s.stats.sendFailed.Add(1)
	}
}

// multicast sends pkt out of every port of mlid's MFT entry but the input.
// The input buffer is held until the last output has sent it.
func (s *Switch) multicast(in uint8, p *port.Port, pkt *port.Packet, mlid uint16) {
	set, ok := s.agent.MulticastPorts(mlid)
	if !ok {
		s.drop(p, pkt, port.DropUnroutable)
		return
	}
	type target struct {
		p  *port.Port
		vl uint8
	}
	var outs []target
	sl := wire.LRH(pkt.Bytes).SL()
	for _, o := range set.Ports() {
		if o == 0 || o == in {
			continue
		}
		op, vl, cause := s.output(in, o, pkt.VL(), sl)
		if op == nil {
			p.CountRouteDropPacket(cause, pkt.Bytes, o)
			continue
		}
		if !s.outboundPKeyOK(o, vl, pkt.Bytes) {
			op.CountXmitDropPacket(port.DropPKey, pkt.Bytes)
			continue
		}
		outs = append(outs, target{op, vl})
	}
	if len(outs) == 0 {
		pkt.Release()
		return
	}
	s.stats.multicast.Add(1)
	// Outputs on another VL than the first get their own copy; the
	// others share the input buffer.
	first := outs[0].vl
	for _, t := range outs[1:] {
		if t.vl == first {
			pkt.Ref()
		}
	}
	for _, t := range outs[1:] {
		if t.vl == first {
			continue
		}
		cp := port.NewPacket(pkt.Bytes)
		if !s.retag(cp, t.vl, false) || t.p.Send(cp) != nil {
			s.stats.sendFailed.Add(1)
		}
	}
	if !s.retag(pkt, first, false) {
		// Cannot happen for a verified packet; release every
		// reference the shared sends would have taken.
		for _, t := range outs {
			if t.vl == first {
				pkt.Release()
			}
		}
		p.CountDrop(port.DropMalformed)
		return
	}
	for _, t := range outs {
		if t.vl == first && t.p.Send(pkt) != nil {
			s.stats.sendFailed.Add(1)
		}
	}
}

// output picks output port o for a packet that came in on port in on VL
// inVL with service level sl, and the VL it leaves on; it returns a nil
// port and the drop cause when the packet cannot go there.
func (s *Switch) output(in, o, inVL, sl uint8) (*port.Port, uint8, port.DropCause) {
	vl := uint8(port.VL15)
	if inVL != port.VL15 {
		vl = s.agent.VLFor(in, o, sl)
	}
	return s.outputOn(o, inVL, vl)
}

// outputOn is output for a packet that is to leave by port o on VL vl.
func (s *Switch) outputOn(o, inVL, vl uint8) (*port.Port, uint8, port.DropCause) {
	op := s.Port(o)
	if op == nil {
		return nil, 0, port.DropLinkDown
	}
	st := op.State()
	if st.Phys != mad.PhysStateLinkUp || st.Port == mad.PortStateDown {
		return nil, 0, port.DropLinkDown
	}
	if inVL == port.VL15 {
		// SMPs stay on VL15 and pass in Init and Armed.
		return op, port.VL15, 0
	}
	if vl == port.VL15 {
		return nil, 0, port.DropVLMapping
	}
	if st.Port != mad.PortStateActive {
		return nil, 0, port.DropNotActive
	}
	return op, vl, 0
}

// retag sets the packet's LRH VL to vl and reseals its VCRC when that
// changes it (the ICRC does not cover the VL), or when dirty says the
// caller changed another ICRC-masked bit.
func (s *Switch) retag(pkt *port.Packet, vl uint8, dirty bool) bool {
	lrh := wire.LRH(pkt.Bytes)
	if lrh.VL() == vl && !dirty {
		return true
	}
	lrh.SetVL(vl)
	return wire.SealVCRC(pkt.Bytes) == nil
}

// drop counts a crossbar drop on the input port (its DropLog records the
// packet) and frees the buffer.
func (s *Switch) drop(p *port.Port, pkt *port.Packet, c port.DropCause) {
	p.CountDropPacket(c, pkt.Bytes)
	pkt.Release()
}

// Partition enforcement at the switch's external ports (IBA 10.9.4). The
// SM turns it on per port with PortInfo.PartitionEnforcementInbound and
// Outbound and fills the port's P_Key table; a data packet whose P_Key has
// no entry there is dropped: on the way in before it is routed, counted in
// the input port's PortRcvConstraintErrors, on the way out counted in the
// output port's PortXmitConstraintErrors. SMPs (VL15, QP0) are exempt, and
// raw packets carry no P_Key (the switch advertises no raw filtering).

// inboundPKeyOK reports whether packet b, a data packet that came in on
// port in, passes in's inbound partition check.
func (s *Switch) inboundPKeyOK(in uint8, b []byte) bool {
	if !s.agent.PortConfig(in).PartitionEnforcementInbound {
		return true
	}
	k, ok := packetPKey(b)
	return !ok || s.agent.PartitionMember(in, k)
}

// outboundPKeyOK reports whether packet b may leave by port out on VL vl.
func (s *Switch) outboundPKeyOK(out, vl uint8, b []byte) bool {
	if vl == port.VL15 || !s.agent.PortConfig(out).PartitionEnforcementOutbound {
		return true
	}
	k, ok := packetPKey(b)
	return !ok || s.agent.PartitionMember(out, k)
}

// packetPKey returns the BTH P_Key of packet b, and false for a raw packet
// or one too short to hold a BTH.
func packetPKey(b []byte) (mad.PKey, bool) {
	bth, ok := wire.PacketBTH(b)
	if !ok {
		return 0, false
	}
	return mad.PKey(bth.PKey()), true
}
