package port

import (
	"fmt"

	"ibfab/wire"
)

// Credit arithmetic of IBA §7.9, per data VL, in 64-byte blocks modulo
// 4096. Each port is the sender on its transmit side and the receiver on
// its receive side:
//
//	sender                                   receiver
//	FCTBS += blocks of each data packet sent  ABR += blocks of each data packet
//	FCCL   = the peer's last advertised limit         accepted into the buffer
//	                                          on a flow-control packet from the
//	                                          peer: ABR = its FCTBS (resync)
//	may send b blocks iff                     advertises
//	  (FCCL - (FCTBS + b)) mod 4096 <= 2048     FCCL = (ABR + min(free, 2048)) mod 4096
//
// Why it works: the receiver's ABR tracks the sender's FCTBS, so FCCL is
// "the sender's FCTBS once it has filled the free space". Packets in flight
// when the FCCL was computed are already in the sender's FCTBS and will take
// their share of the space they were counted against, so a stale FCCL is
// never too generous. The mod-4096 test reads a difference of 0..2048 as
// "the limit is ahead" and 2049..4095 as "behind", which is unambiguous
// because an FCCL is never more than 2048 ahead. A data packet the receiver
// drops (bad CRC, no buffer) was counted by the sender but not by ABR; the
// next flow-control packet's FCTBS resynchronizes ABR and the credits those
// blocks stood for come back.
//
// A packet's size in blocks counts the whole packet, LRH through VCRC,
// rounded up: both ends compute it from the same bytes, which is all the
// scheme needs (the spec's own rounding rule is the same in effect).

// Blocks returns the number of 64-byte flow-control blocks a packet of n
// bytes occupies.
func Blocks(n int) int { return (n + BlockSize - 1) / BlockSize }

// CanSend reports whether a sender whose credit limit is fccl and whose
// total blocks sent is fctbs may send a packet of the given size in blocks:
// (FCCL - (FCTBS + blocks)) mod 4096 <= 2048.
func CanSend(fccl, fctbs uint16, blocks int) bool {
	return (int(fccl)-int(fctbs)-blocks)&fcMask <= MaxCreditAdvance
}

// CreditLimit returns the FCCL a receiver advertises: its ABR plus the free
// blocks of the VL's buffer, at most 2048, modulo 4096.
func CreditLimit(abr uint16, free int) uint16 {
	free = min(max(free, 0), MaxCreditAdvance)
	return uint16((int(abr) + free) & fcMask)
}

// ahead reports whether limit a is beyond limit b (by 1 to 2048 blocks).
func ahead(a, b uint16) bool {
	d := (int(a) - int(b)) & fcMask
	return d > 0 && d <= MaxCreditAdvance
}

// available returns the blocks a sender may still send, 0 when the limit is
// behind it.
func available(fccl, fctbs uint16) int {
	d := (int(fccl) - int(fctbs)) & fcMask
	if d > MaxCreditAdvance {
		return 0
	}
	return d
}

// VLCredits is a snapshot of one data VL's flow-control state, for status
// output and tests.
type VLCredits struct {
	// Sender side.
	FCTBS     uint16 // total blocks sent, mod 4096
	FCCL      uint16 // the peer's last credit limit
	Available int    // blocks that may be sent now
	Queued    int    // packets waiting to be sent

	// Receiver side.
	ABR        uint16 // adjusted blocks received, mod 4096
	RxUsed     int    // blocks held by packets not yet released
	RxCapacity int    // the VL's buffer in blocks
}

// Queued returns how many packets wait in VL vl's transmit queue: Credits'
// Queued alone, for callers that poll it per packet.
func (p *Port) Queued(vl int) int {
	if vl < 0 || vl >= numVLs {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tx[vl].q.len()
}

// Credits returns the flow-control state of data VL vl; for VL15, only its
// queue and its receive buffer, in packets; zero for a VL the port does not
// have.
func (p *Port) Credits(vl int) VLCredits {
	p.mu.Lock()
	defer p.mu.Unlock()
	if vl < 0 || vl >= numVLs {
		return VLCredits{}
	}
	t, r := &p.tx[vl], &p.rx[vl]
	c := VLCredits{Queued: t.q.len()}
	if vl == VL15 {
		c.RxUsed, c.RxCapacity = p.vl15Used, p.cfg.VL15Packets
		return c
	}
	if vl >= p.cfg.DataVLs {
		return VLCredits{}
	}
	c.FCTBS, c.FCCL, c.Available = t.fctbs, t.fccl, available(t.fccl, t.fctbs)
	c.ABR, c.RxUsed, c.RxCapacity = r.abr, r.used, r.capacity
	return c
}

// Downstream returns what the port knows, from its credits alone, of the
// peer's receive buffer of data VL vl: capacity is the largest credit
// window (FCCL − FCTBS) the peer advertised on vl since the link last
// trained, which is its buffer (up to the 2048 blocks a window can hold)
// as soon as one flow-control packet found it empty, and used is what of
// that window is gone now: blocks in flight and held by the peer.
// Occupancy is used/capacity. active reports whether the port is Active
// with vl operational, so that a data packet queued here can leave.
// Capacity 0 means the peer never granted credit on vl (no buffer there,
// or the link has not trained). When the peer's limit moves back (it
// trained again, or SetVLBlocks shrank its buffer) the capacity is learnt
// afresh from that window on; growth shows at once. Adaptive routing
// calls it per packet and alternative: it takes the port's lock once.
func (p *Port) Downstream(vl int) (used, capacity int, active bool) {
	if vl < 0 || vl >= MaxDataVLs {
		return 0, 0, false
	}
	p.mu.Lock()
	t := &p.tx[vl]
	capacity = t.maxWin
	used = max(capacity-available(t.fccl, t.fctbs), 0)
	active = vl < p.operVLs && p.sendableLocked(vl)
	p.mu.Unlock()
	return used, capacity, active
}

// ResetDownstream starts every data VL's downstream capacity (Downstream)
// afresh from the credit window the peer grants now: on an idle link
// whose peer has advertised its buffers, their sizes. Downstream follows
// a peer's SetVLBlocks by itself; this is for a view that a busy link's
// transient windows left below the peer's size.
func (p *Port) ResetDownstream() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for vl := range MaxDataVLs {
		t := &p.tx[vl]
		t.maxWin = available(t.fccl, t.fctbs)
	}
}

// SetVLBlocks resizes the receive buffers at run time, with
// Config.VLBlocks' meaning (VLs past the end of blocks get RxBlocks) and
// checks. What changes is the credit the port advertises from now on:
// each changed VL's new limit goes to the peer in a flow-control packet
// at once, so a buffer that grows is credited at once. One that shrinks
// drops nothing. Its limit moves back (none while it holds more than its
// new size), which the peer reads as less credit as soon as it hears it;
// what the peer sent before that against the old credit is still taken
// in, beyond the new size if need be, and the packets held stay until
// released. Shrinking to 0 starves the VL for good.
func (p *Port) SetVLBlocks(blocks []int) error {
	caps, err := p.cfg.vlCapacities(blocks)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.unlock()
	for vl, c := range caps {
		r := &p.rx[vl]
		if r.capacity == c {
			continue
		}
		// The old size bounds what was held and granted: the peer may
		// still fill it until it hears the new limit (rxRelease brings
		// it down).
		r.admit = max(r.admit, c)
		r.capacity = c
		p.fcDue |= 1 << vl
	}
	p.congLevelsLocked()
	if p.fcDue != 0 && p.linkSendOKLocked() {
		p.kickLocked()
	}
	return nil
}

// resetCreditsLocked starts the flow-control counters of every VL afresh,
// as link training does (§7.9.4): nothing sent, nothing received, no
// credit until the peer advertises some. Buffer occupancy is kept: packets
// the node still holds still take their blocks.
func (p *Port) resetCreditsLocked() {
	for vl := range p.tx {
		p.tx[vl].fctbs, p.tx[vl].fccl, p.tx[vl].maxWin = 0, 0, 0
		r := &p.rx[vl]
		r.abr = 0
		r.admit = r.capacity // nothing is granted before the next training
	}
}

// appendFCLocked appends the flow-control packet of data VL vl to dst: our
// FCTBS as sender, our FCCL as receiver. Op is Init until the port is
// Armed, Normal after (§7.9.4).
func (p *Port) appendFCLocked(dst []byte, vl int) []byte {
	op := wire.FlowControlNormal
	if p.state < portArmed {
		op = wire.FlowControlInit
	}
	r := &p.rx[vl]
	r.fccl = CreditLimit(r.abr, r.capacity-r.used)
	return wire.AppendFlowControl(dst, &wire.FlowControlFields{
		Op:    op,
		FCTBS: p.tx[vl].fctbs,
		VL:    uint8(vl),
		FCCL:  r.fccl,
	})
}

// receiveFCLocked applies a verified flow-control packet from the peer:
// its FCCL is our new credit limit, its FCTBS resynchronizes our ABR.
// VLs the port does not operate are ignored (the peer may implement more).
func (p *Port) receiveFCLocked(fc wire.FlowControl) {
	p.lc.FCReceived++
	if fc.Op() == wire.FlowControlInit {
		p.lc.FCInitReceived++
	}
	vl := int(fc.VL())
	if vl >= p.operVLs {
		return
	}
	t, r := &p.tx[vl], &p.rx[vl]
	if t.fccl != fc.FCCL() {
		if ahead(t.fccl, fc.FCCL()) {
			// A receiver's limit moves back only when its counters start
			// over (the peer trained again: packets it sent before, with
			// its old ABR, may arrive after our own training) or its
			// buffer shrank (SetVLBlocks): its buffer is learnt afresh.
			t.maxWin = 0
		}
		t.fccl = fc.FCCL()
		if t.q.len() > 0 {
			p.kickLocked()
		}
	}
	if w := available(t.fccl, t.fctbs); w > t.maxWin {
		t.maxWin = w
	}
	if r.abr != fc.FCTBS() {
		// Blocks the peer sent never made it into our buffer (dropped,
		// or sent before a retrain): take them back and tell the peer.
		p.lc.FCTBSResyncs++
		r.abr = fc.FCTBS()
		p.fcDue |= 1 << vl
		p.kickLocked()
	}
}

// rxRelease returns a released packet's buffer space: a VL15 slot, or the
// blocks of a data VL, for which the peer is then sent a credit update.
func (p *Port) rxRelease(vl uint8, blocks int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if vl == VL15 {
		p.vl15Used = max(p.vl15Used-1, 0)
		return
	}
	r := &p.rx[vl]
	r.used = max(r.used-blocks, 0)
	if r.admit > r.capacity {
		// What a shrunk buffer still took in beyond its size leaves.
		r.admit = max(r.admit-blocks, r.capacity)
	}
	if p.closed || !p.linkSendOKLocked() || int(vl) >= p.operVLs {
		return
	}
	p.fcDue |= 1 << vl
	p.creditUpdateLocked(int(vl))
}

// creditUpdateLocked sends data VL vl's pending credit update (its fcDue
// bit) once the peer's credit left from our last advertisement falls to
// half the buffer; until then the update rides with a later one, or with
// whatever the transmitter sends first, instead of costing a packet and a
// wake-up per released packet. It is checked on each release and each
// arrival, which is when that credit changes. A parked transmitter is
// spared the wake-up: the caller writes the update itself.
func (p *Port) creditUpdateLocked(vl int) {
	if p.fcDue&(1<<vl) == 0 || !p.creditOwedLocked(vl) {
		return
	}
	if p.parked && !p.wake && !p.writing {
		p.sendFCsInlineLocked()
		return
	}
	p.kickLocked()
}

// creditOwedLocked reports whether data VL vl's freed blocks are worth a
// flow-control packet now: with a CreditSlack, once that many are freed
// and not yet advertised; by default once the peer's remaining credit has
// fallen to half the buffer, never deferred below one largest packet (a
// peer blocked on its head packet must get the update).
func (p *Port) creditOwedLocked(vl int) bool {
	r := &p.rx[vl]
	left := available(r.fccl, r.abr) // the credit the peer still holds
	if p.slack > 0 {
		return min(r.capacity, MaxCreditAdvance)-r.used-left >= p.slack
	}
	return left <= max(min(r.capacity, MaxCreditAdvance)/2, Blocks(p.maxPkt))
}

// SetCreditSlack sets Config.CreditSlack at run time; a negative n is
// refused.
func (p *Port) SetCreditSlack(n int) error {
	if n < 0 {
		return fmt.Errorf("%w: credit slack of %d blocks", ErrConfig, n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slack = n
	return nil
}

// allVLsMask returns the fcDue bits of the operational data VLs.
func (p *Port) allVLsMask() uint16 { return 1<<p.operVLs - 1 }

// linkSendOKLocked reports whether link packets may go out: the carrier is
// up, the port is not Disabled, its transmitter is on and not about to go
// dark (training included). A port that may not send does not listen
// either.
func (p *Port) linkSendOKLocked() bool {
	return p.carrier && p.phys != physDisabled && !p.txOff && !p.draining
}
