package port

import (
	"errors"
	"net"
	"time"

	"ibfab/link"
	"ibfab/wire"
)

// transmit is the port's transmitter goroutine, the only writer to the
// endpoint, which keeps each flow-control packet's FCTBS in step with the
// data packets before it on the wire. Each round, under mu:
//
//  1. flow-control packets that are due go out first: they are six bytes,
//     outside the credit scheme and unpaced, and what keeps the peer
//     sending;
//  2. with no packet queued that the port's state lets out, it parks until
//     kicked;
//  3. if the pacer says the link is still busy with earlier packets by
//     more than the slack, it sleeps on the clock until then;
//  4. the next packet is picked, VL15 first, then by the arbiter among the
//     data VLs holding credits for their head packet, and written; with no
//     credit anywhere it parks until credits come (PortXmitWait counts).
//
// Writes happen with mu released.
func (p *Port) transmit() {
	defer p.wg.Done()
	var fcBuf, tsBuf []byte
	p.mu.Lock()
	for !p.closed {
		if p.writing {
			p.txCond.Wait() // an inline flow-control send holds the endpoint
			continue
		}
		if p.tsDue && p.linkSendOKLocked() {
			// The training frame goes before the flow-control packets
			// that would complete the peer's training.
			tsBuf = link.AppendTraining(tsBuf[:0], p.trainingLocked(p.tsReply))
			p.tsDue = false
			p.lc.TrainingSent++
			p.mu.Unlock()
			_ = p.ep.WritePacket(link.KindTraining, tsBuf) // a lost one is sent again with the next training signals
			p.mu.Lock()
			continue
		}
		p.tsDue = p.tsDue && p.linkSendOKLocked()
		if p.fcDue != 0 && p.linkSendOKLocked() {
			fcBuf = p.takeFCsLocked(fcBuf[:0])
			p.mu.Unlock()
			for b := fcBuf; len(b) > 0; b = b[wire.FlowControlSize:] {
				_ = p.ep.WritePacket(link.KindLink, b[:wire.FlowControlSize]) // a lost one is made good by the next
			}
			p.mu.Lock()
			continue
		}
		p.fcDue = 0 // nothing can carry them; training asks again

		now := p.cfg.Clock.Now()
		if !p.queuedLocked() {
			p.endWaitLocked(now)
			p.pace.idle = true
			p.parkLocked()
			continue
		}
		if !p.cfg.Unpaced {
			if d := p.pace.next.Sub(now); d > p.cfg.PaceSlack {
				p.armPaceLocked(d)
				p.parkLocked()
				continue
			}
		}
		vl, ok := p.pickLocked()
		if !ok {
			// Waiting for credits is not idleness: the schedule stands, so
			// that a wait the pacer's own catching up caused (a late timer,
			// then a burst that outran the credit window) costs nothing.
			p.noteWaitLocked(now)
			p.parkLocked()
			continue
		}
		p.writeDataLocked(vl, now)
	}
	p.idleCond.Broadcast()
	p.mu.Unlock()
}

// writeDataLocked sends the head packet of vl, which pickLocked chose:
// it books the packet's credits, pacing and counters, then writes it with
// mu released. The caller holds the endpoint (the transmitter, or an
// inline sender with writing set).
func (p *Port) writeDataLocked(vl int, now time.Time) {
	e := p.tx[vl].q.pop()
	p.congNoteLocked(vl)
	if vl != VL15 {
		t := &p.tx[vl]
		t.fctbs = uint16((int(t.fctbs) + e.blocks) & fcMask)
	}
	p.endWaitLocked(now)
	if !p.cfg.Unpaced {
		p.pace.sent(now, e.n, p.cfg.CatchUp)
	}
	p.written++
	if p.cfg.TxQueueLimit > 0 {
		p.spaceCond.Broadcast()
	}
	p.mu.Unlock()

	err := p.ep.WritePacket(link.KindData, e.pkt.Bytes[:e.n])
	var lrh [wire.LRHSize]byte // the DropLog's copy of a packet not sent
	if err != nil {
		copy(lrh[:], e.pkt.Bytes)
	}
	e.pkt.Release()

	p.mu.Lock()
	switch {
	case err == nil:
		k := &p.cnt
		k.xmitPkts++
		k.xmitBytes += uint64(e.n)
		p.vlTx[vl].Packets++
		p.vlTx[vl].Bytes += uint64(e.n)
		if e.mcast {
			k.xmitMcast++
		}
	case errors.Is(err, net.ErrClosed):
	case errors.Is(err, link.ErrNoCarrier):
		p.dropPacketLocked(DropLinkDown, true, lrh[:])
	default:
		p.dropPacketLocked(DropTxError, true, lrh[:])
	}
}

// takeFCsLocked appends the flow-control packets that are due to dst and
// clears them.
func (p *Port) takeFCsLocked(dst []byte) []byte {
	due := p.fcDue & p.allVLsMask()
	p.fcDue = 0
	if due != 0 {
		p.lastFCTx = p.cfg.Clock.Now()
	}
	for vl := range p.operVLs {
		if due&(1<<vl) != 0 {
			dst = p.appendFCLocked(dst, vl)
			p.lc.FCSent++
			p.written++
		}
	}
	return dst
}

// sendFCsInlineLocked sends the due flow-control packets from the calling
// goroutine, sparing the parked transmitter a wake-up per credit update
// (most of a receiving port's work). The caller has checked that the
// transmitter is parked, so nothing else writes meanwhile.
func (p *Port) sendFCsInlineLocked() {
	p.writing = true
	buf := p.takeFCsLocked(p.fcBuf[:0])
	p.mu.Unlock()
	for b := buf; len(b) > 0; b = b[wire.FlowControlSize:] {
		_ = p.ep.WritePacket(link.KindLink, b[:wire.FlowControlSize]) // a lost one is made good by the next
	}
	p.mu.Lock()
	p.fcBuf = buf[:0]
	p.writing = false
	p.txCond.Signal()
	p.idleCond.Broadcast()
}

// sendOrKickLocked has a packet just queued sent: by the caller, when the
// transmitter is parked and the packet may go at once, else by the
// transmitter, kicked. Sending from the caller spares the hand-off to the
// transmitter goroutine, which in a node process costs the time until the
// caller parks (a receiver's next read, a generator's next timer): on the
// 2-core machine a third of a hop's time went there (docs/DESIGN.md §3a).
// What goes first is decided as the transmitter would decide it (pickLocked);
// anything that must wait (pacing, credits, flow-control and training
// packets owed, a drain) is the transmitter's, which the kick hands over.
func (p *Port) sendOrKickLocked() {
	if !p.parked || p.wake || p.writing || p.closed || p.tsDue || p.fcDue != 0 {
		p.kickLocked()
		return
	}
	now := p.cfg.Clock.Now()
	if !p.cfg.Unpaced && p.pace.next.Sub(now) > p.cfg.PaceSlack {
		p.kickLocked()
		return
	}
	vl, ok := p.pickLocked()
	if !ok {
		p.kickLocked()
		return
	}
	p.writing = true
	p.writeDataLocked(vl, now)
	p.writing = false
	switch {
	case p.queuedLocked() || p.fcDue != 0 || p.tsDue:
		p.kickLocked()
	default:
		// The queues ran empty, as the transmitter would have found
		// them: a packet after a quiet spell starts a new schedule
		// rather than catching up on the old one.
		p.pace.idle = true
	}
	p.txCond.Signal()
	p.idleCond.Broadcast()
}

// queuedLocked reports whether a packet the port's state lets out is
// queued, credits or not.
func (p *Port) queuedLocked() bool {
	if p.tx[VL15].q.len() > 0 && p.sendableLocked(VL15) {
		return true
	}
	if !p.sendableLocked(0) {
		return false
	}
	for vl := range p.operVLs {
		if p.tx[vl].q.len() > 0 {
			return true
		}
	}
	return false
}

// pickLocked returns the VL whose head packet goes next, and advances the
// arbiter, or returns false when none may go: VL15 first, then the data
// VLs by arbitration among those holding credits for their head packet.
func (p *Port) pickLocked() (int, bool) {
	if p.tx[VL15].q.len() > 0 && p.sendableLocked(VL15) {
		return VL15, true
	}
	if !p.sendableLocked(0) {
		return 0, false
	}
	return p.arb.pick(p.operVLs, p.creditedHead)
}

// creditedHead is the arbiter's availFunc: the head packet of data VL vl,
// if the peer's credit limit covers all of it.
func (p *Port) creditedHead(vl int) (int, bool) {
	t := &p.tx[vl]
	if t.q.len() == 0 {
		return 0, false
	}
	b := t.q.peek().blocks
	return b, p.cfg.IgnoreCredits || CanSend(t.fccl, t.fctbs, b)
}

// parkLocked waits, mu released, until the transmitter is kicked or the
// port closes.
func (p *Port) parkLocked() {
	p.parked = true
	p.idleCond.Broadcast()
	for !p.wake && !p.closed {
		p.txCond.Wait()
	}
	p.wake, p.parked = false, false
}

// kickLocked wakes the transmitter: something it may act on has changed.
func (p *Port) kickLocked() {
	p.wake = true
	p.txCond.Signal()
}

// armPaceLocked makes the pacing timer kick the transmitter in d, unless
// it is already set for the same moment.
func (p *Port) armPaceLocked(d time.Duration) {
	if p.paceArmed && p.paceAt.Equal(p.pace.next) {
		return
	}
	p.paceArmed, p.paceAt = true, p.pace.next
	if p.paceTimer == nil {
		p.paceTimer = p.cfg.Clock.AfterFunc(d, p.paceExpired)
		return
	}
	p.paceTimer.Reset(d)
}

func (p *Port) paceExpired() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paceArmed = false
	p.kickLocked()
}

// noteWaitLocked starts a PortXmitWait interval when data is queued on an
// operational VL of an Active port but nothing could be picked: the VLs
// with packets lack credits (or the arbitration tables exclude them).
func (p *Port) noteWaitLocked(now time.Time) {
	if !p.waitSince.IsZero() || p.state != portActive {
		return
	}
	for vl := range p.operVLs {
		if p.tx[vl].q.len() > 0 {
			p.waitSince = now
			p.noteWaitVLsLocked(now)
			return
		}
	}
}

// endWaitLocked ends a PortXmitWait interval, if one runs.
func (p *Port) endWaitLocked(now time.Time) {
	if p.waitSince.IsZero() {
		return
	}
	if d := now.Sub(p.waitSince); d > 0 {
		p.cnt.xmitWait += d
	}
	p.endWaitVLsLocked(now)
	p.waitSince = time.Time{}
}

// pacer schedules packet starts at the link's data rate. next is the
// earliest moment the next packet may start: the previous one's start
// plus its serialization time, n·8/rate, kept exact over many packets by
// carrying the remainder of the division.
//
// The transmitter sends when next is at most PaceSlack away and otherwise
// sleeps on the clock until next: it never busy-waits, and arms at most one
// timer per PaceSlack's worth of packets. A timer fires late (on a loaded
// machine by up to a millisecond), so a transmitter that stays backlogged
// keeps its schedule: next advances from the old next, not from now, and
// packets go back to back until they are on time again. Waiting for
// credits counts as backlogged, or a late timer's catch-up burst that
// outruns the credit window would lose the time for good. The schedule
// restarts from now only after the queues ran empty (a quiet link never
// bursts) or when it is more than CatchUp behind.
//
// Error bound: a packet never starts more than PaceSlack before its slot
// in the schedule, nor, while backlogged, more than CatchUp after it
// without the schedule being reset. Over any window of T emulated time the
// bytes sent are at most rate·(T + PaceSlack + CatchUp) plus one packet,
// and over a backlogged run with credits the long-run rate is the data
// rate exactly, as far as the machine keeps up (BenchmarkUnpaced). With
// PaceSlack 0 (tests on the manual clock) every packet starts exactly one
// serialization time after the previous one.
type pacer struct {
	rate  uint64    // bits per second
	next  time.Time // earliest start of the next packet
	carry uint64    // remainder of bits·1e9 / rate not yet in next
	idle  bool      // the queues ran empty since the last packet
}

// sent books a packet of n bytes starting now.
func (pc *pacer) sent(now time.Time, n int, catchUp time.Duration) {
	start := pc.next
	if late := now.Sub(start); late > 0 && (pc.idle || late > catchUp) {
		start, pc.carry = now, 0
	}
	pc.idle = false
	v := uint64(n)*8*uint64(time.Second) + pc.carry
	pc.next = start.Add(time.Duration(v / pc.rate))
	pc.carry = v % pc.rate
}
