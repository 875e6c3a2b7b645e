package port

import (
	"errors"

	"ibfab/link"
	"ibfab/wire"
)

// DeliverPacket implements link.Dispatcher. Every packet is checked before
// anything else looks at it: what fails is dropped and counted by cause,
// never passed on.
func (p *Port) DeliverPacket(k link.Kind, b []byte) {
	switch k {
	case link.KindData:
		p.deliverData(b)
	case link.KindLink:
		p.deliverLink(b)
	case link.KindTraining:
		p.deliverTraining(b)
	default:
		p.mu.Lock()
		p.dropLocked(DropMalformed, false)
		p.mu.Unlock()
	}
}

// deliverLink handles a flow-control packet: it is the training signal
// (the link comes up when the peer's first one arrives), the liveness
// signal, and carries the peer's credits.
func (p *Port) deliverLink(b []byte) {
	err := wire.VerifyFlowControl(b)
	p.mu.Lock()
	defer p.unlock()
	if p.closed || !p.linkSendOKLocked() {
		return // a dark port hears nothing
	}
	if err != nil {
		p.dropLocked(rxErrorCause(err), false)
		return
	}
	now := p.cfg.Clock.Now()
	if p.phys != physLinkUp {
		w, s, ok := p.negotiateLocked()
		if !ok {
			return // no training frame from the peer yet, or no common rate
		}
		p.setActiveLocked(w, s)
		p.linkUpLocked(now)
	}
	p.lastLinkRx = now
	p.receiveFCLocked(wire.FlowControl(b))
	p.heardLocked(now)
}

// rxErrorCause maps a wire verification error to its drop cause.
func rxErrorCause(err error) DropCause {
	if errors.Is(err, wire.ErrVCRC) || errors.Is(err, wire.ErrICRC) || errors.Is(err, wire.ErrLPCRC) {
		return DropCRC
	}
	return DropMalformed
}

// deliverData handles a data packet: verify, check it against the port's
// state and VLs (IBA §7.2: Init takes only SMPs, Armed takes data too and
// goes Active on the first data packet), take its space in the VL's buffer
// and hand it to the Receiver.
func (p *Port) deliverData(b []byte) {
	err := wire.Verify(b) // outside the lock: it reads every byte
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	n, vl, blocks, cause, ok := p.admitLocked(b, err)
	downs := p.downs.Load()
	switch {
	case !ok:
		p.dropPacketLocked(cause, false, b)
	case vl != VL15 && p.linkSendOKLocked():
		p.creditUpdateLocked(int(vl))
	}
	p.unlock()
	if !ok {
		return
	}
	pkt := NewPacket(b[:n])
	pkt.owner, pkt.downs, pkt.vl, pkt.blocks = p, downs, vl, blocks
	pkt.arrival = p.cfg.Clock.Now()
	if p.rcv == nil {
		pkt.Release()
		return
	}
	p.rcv.Receive(p, pkt)
}

// admitLocked decides on a received data packet whose verification
// returned verr. An accepted packet has its buffer space taken and the
// counters bumped, and its length, VL and size in blocks are returned; a
// refused one comes back as its drop cause.
func (p *Port) admitLocked(b []byte, verr error) (n int, vl uint8, blocks int, c DropCause, ok bool) {
	if p.phys != physLinkUp || !p.carrier {
		return 0, 0, 0, DropNotActive, false
	}
	if verr != nil {
		return 0, 0, 0, rxErrorCause(verr), false
	}
	n, _ = wire.PacketLen(b) // cannot fail after Verify
	if n > p.maxPkt {
		return 0, 0, 0, DropMalformed, false
	}
	b = b[:n]
	lrh := wire.LRH(b)
	v := int(lrh.VL())
	qp0 := isQP0(b)
	switch {
	case v == VL15 && !qp0, v != VL15 && qp0, v != VL15 && v >= p.operVLs:
		return 0, 0, 0, DropVLMapping, false
	case p.state == portDown, p.state == portInit && v != VL15:
		if v != VL15 {
			p.discardBlocksLocked(v, Blocks(n))
		}
		return 0, 0, 0, DropNotActive, false
	}

	blocks = Blocks(n)
	if v == VL15 {
		if p.vl15Used >= p.cfg.VL15Packets {
			return 0, 0, 0, DropVL15Overflow, false
		}
		p.vl15Used++
	} else {
		r := &p.rx[v]
		if r.used+blocks > max(r.capacity, r.admit) {
			return 0, 0, 0, DropBufferOverrun, false
		}
		r.used += blocks
		r.abr = uint16((int(r.abr) + blocks) & fcMask)
		if p.state == portArmed {
			p.setStateLocked(p.phys, portActive)
		}
	}
	k := &p.cnt
	k.rcvPkts++
	k.rcvBytes += uint64(n)
	if isMulticastLID(lrh.DLID()) {
		k.rcvMcast++
	}
	p.countOpLocked(b, v, n)
	return n, uint8(v), blocks, 0, true
}

// discardBlocksLocked counts the blocks of a sound data packet on VL vl
// that the port's state discards into ABR, as if received and released at
// once (§7.9.4: ABR follows every data packet but those refused for want
// of buffer space). The sender counted them in its FCTBS; left out, they
// would be credit lost until its next flow-control packet for that VL,
// which is seconds away once the link is up, while a peer kept Active
// behind a port the SM set Down goes on sending to it.
func (p *Port) discardBlocksLocked(vl, blocks int) {
	r := &p.rx[vl]
	r.abr = uint16((int(r.abr) + blocks) & fcMask)
	p.fcDue |= 1 << vl
	if p.linkSendOKLocked() {
		p.creditUpdateLocked(vl)
	}
}

// isQP0 reports whether a verified data packet is addressed to QP0, that
// is, is an SMP.
func isQP0(b []byte) bool {
	bth, ok := wire.PacketBTH(b) // raw packets have no QP
	return ok && bth.DestQP() == wire.QP0
}
