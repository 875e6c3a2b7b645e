package port

import (
	"errors"
	"fmt"
	"time"

	"ibfab/internal/clock"
	"ibfab/wire/mad"
)

// Short names for the states the port moves through.
const (
	portDown   = mad.PortStateDown
	portInit   = mad.PortStateInit
	portArmed  = mad.PortStateArmed
	portActive = mad.PortStateActive

	physPolling  = mad.PhysStatePolling
	physDisabled = mad.PhysStateDisabled
	physLinkUp   = mad.PhysStateLinkUp
)

// State is a port's physical and logical state, as PortInfo reports them.
type State struct {
	Phys mad.PhysState
	Port mad.PortState
}

// String returns the state as "LinkUp/Active".
func (s State) String() string { return s.Phys.String() + "/" + s.Port.String() }

// Errors of SetState and SetPhysState.
var (
	ErrTransition = errors.New("port: state transition not allowed")
	ErrPhysState  = errors.New("port: physical state not settable")
)

// State returns the port's current state.
func (p *Port) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stateLocked()
}

func (p *Port) stateLocked() State { return State{Phys: p.phys, Port: p.state} }

// SetState applies a PortInfo PortState Set (IBA §7.2, §14.2.5.6):
//
//   - NoChange does nothing;
//   - Down takes the port down (queued packets are dropped and counted)
//     and, the physical link being up, retrains it: the transmitter goes
//     dark for RetrainDelay, so the peer loses the link too, and the link
//     comes back in Init when both ends train again (without a
//     link.Transmitter, the port goes straight back to Init on its own);
//   - Armed is allowed from Init, Active from Armed (setting the state the
//     port is in is no change).
//
// Anything else is ErrTransition.
func (p *Port) SetState(s mad.PortState) error {
	p.mu.Lock()
	defer p.unlock()
	if p.closed {
		return fmt.Errorf("%w: port closed", ErrTransition)
	}
	switch {
	case s == mad.PortStateNoChange, s == p.state && s != portDown:
		return nil
	case s == portDown:
		if p.phys != physLinkUp {
			p.downLocked(p.phys, false)
			return nil
		}
		if p.retrainLocked() {
			return nil
		}
		p.downLocked(physLinkUp, false)
		p.setStateLocked(physLinkUp, portInit)
		return nil
	case s == portArmed && p.state == portInit,
		s == portActive && p.state == portArmed:
		p.setStateLocked(p.phys, s)
		return nil
	}
	return fmt.Errorf("%w: %v to %v", ErrTransition, p.state, s)
}

// SetPhysState applies a PortInfo PortPhysicalState Set: Disabled turns
// the transmitter off until further notice (the peer loses the carrier at
// once, as on a dark fibre; without a link.Transmitter, the peer's
// liveness timeout takes its end down), Polling turns a Disabled port back
// on, or makes a port whose link is up retrain as SetState(Down) does
// (what ibportstate's reset asks). NoChange does nothing; other states are
// ErrPhysState.
func (p *Port) SetPhysState(s mad.PhysState) error {
	p.mu.Lock()
	defer p.unlock()
	if p.closed {
		return fmt.Errorf("%w: port closed", ErrPhysState)
	}
	switch s {
	case mad.PhysStateNoChange:
	case physDisabled:
		if p.phys != physDisabled && !p.goDarkLocked(physDisabled) {
			p.downLocked(physDisabled, false)
		}
	case physPolling:
		switch p.phys {
		case physLinkUp:
			if p.retrainLocked() {
				return nil
			}
			p.downLocked(physPolling, false)
		case physDisabled:
			p.stopRetrainLocked()
			p.setStateLocked(physPolling, portDown)
			p.setTransmitterLocked(true)
		}
		p.startTrainingLocked()
	default:
		return fmt.Errorf("%w: %v", ErrPhysState, s)
	}
	return nil
}

// retrainLocked takes a port whose link is up through retraining: Down and
// Polling, its transmitter dark for RetrainDelay (see goDarkLocked) so
// that the peer loses the link as well, then on again to train. It
// returns false, doing nothing, when the endpoint cannot turn its
// transmitter off.
func (p *Port) retrainLocked() bool { return p.goDarkLocked(physPolling) }

// goDarkLocked takes the port Down to phys (Polling: retraining, Disabled)
// and turns its transmitter off after DrainTime, during which only VL15
// may still leave: the response to the SMP that asked for the change goes
// out first, as on silicon, where the SMA answers before the PHY drops.
// Nothing trains meanwhile. After a retraining's RetrainDelay the
// transmitter comes back on. It returns false, doing nothing, when the
// endpoint cannot turn its transmitter off.
func (p *Port) goDarkLocked(phys mad.PhysState) bool {
	if p.tr == nil {
		return false
	}
	p.stopRetrainLocked()
	p.downLocked(phys, false)
	if p.txOff {
		return true // dark already
	}
	p.draining = true
	if p.drainTimer == nil {
		p.drainTimer = p.cfg.Clock.AfterFunc(p.cfg.DrainTime, p.drained)
	} else {
		p.drainTimer.Reset(p.cfg.DrainTime)
	}
	return true
}

// drained ends a port's drain time: the transmitter goes dark, and a
// retraining port schedules it back on.
func (p *Port) drained() {
	p.mu.Lock()
	defer p.unlock()
	if p.closed || !p.draining {
		return
	}
	p.draining = false
	p.flushLocked(DropLinkDown, VL15, VL15+1)
	p.setTransmitterLocked(false)
	if p.phys == physDisabled {
		return
	}
	if p.retrainTimer == nil {
		p.retrainTimer = p.cfg.Clock.AfterFunc(p.cfg.RetrainDelay, p.retrainDone)
	} else {
		p.retrainTimer.Reset(p.cfg.RetrainDelay)
	}
}

// stopRetrainLocked cancels a pending drain end or transmitter-on.
func (p *Port) stopRetrainLocked() {
	p.draining = false
	for _, t := range []clock.Timer{p.drainTimer, p.retrainTimer} {
		if t != nil {
			t.Stop()
		}
	}
}

// retrainDone ends a retraining's dark period: the transmitter goes on
// again, unless the port was Disabled meanwhile.
func (p *Port) retrainDone() {
	p.mu.Lock()
	defer p.unlock()
	if p.closed || p.phys == physDisabled {
		return
	}
	p.setTransmitterLocked(true)
	p.startTrainingLocked()
}

// setTransmitterLocked records whether the transmitter should be on;
// unlock applies it to the endpoint (outside mu: the endpoint's carrier
// change comes back through CarrierChanged). A port whose transmitter is
// off sends and hears nothing, training included.
func (p *Port) setTransmitterLocked(on bool) {
	if p.tr == nil || p.txOff == !on {
		return
	}
	p.txOff = !on
	p.txDirty = true
}

// syncTransmitter applies the transmitter state the port wants to the
// endpoint, when it changed. One caller at a time, so the endpoint ends
// in the state last wanted.
func (p *Port) syncTransmitter() {
	p.txMu.Lock()
	defer p.txMu.Unlock()
	p.mu.Lock()
	on, dirty := !p.txOff, p.txDirty
	p.txDirty = false
	p.mu.Unlock()
	if !dirty || on == p.txOn {
		return
	}
	if err := p.tr.SetTransmitter(on); err != nil {
		p.txErrors.Add(1)
		return
	}
	p.txOn = on
}

// setStateLocked moves to (phys, state), queues the state-change event
// and wakes whoever the change concerns.
func (p *Port) setStateLocked(phys mad.PhysState, state mad.PortState) {
	from := p.stateLocked()
	p.phys, p.state = phys, state
	to := p.stateLocked()
	if from == to {
		return
	}
	if p.cfg.OnStateChange != nil {
		p.events = append(p.events, stateEvent{from, to})
	}
	p.spaceCond.Broadcast()
	p.kickLocked()
}

// startTrainingLocked makes a port that can talk send its flow-control
// packets now: they are the training signal the peer is waiting for.
func (p *Port) startTrainingLocked() {
	if p.linkSendOKLocked() {
		p.tsDue, p.tsReply = true, false
		p.fcDue |= p.allVLsMask()
		p.kickLocked()
	}
}

// linkUpLocked completes training: the peer's training frame and link
// packets arrived. The flow-control counters start afresh, the liveness
// timer starts, and the peer is sent our training frame (a Reply: it may
// have missed the first) and our credits at once so that it trains too.
func (p *Port) linkUpLocked(now time.Time) {
	p.resetCreditsLocked()
	p.lastLinkRx = now
	p.armLivenessLocked(p.cfg.LivenessTimeout)
	p.setStateLocked(physLinkUp, portInit)
	p.tsDue, p.tsReply = true, true
	p.fcDue |= p.allVLsMask()
	if p.keepTimer != nil { // nil only while New has not armed it yet
		p.armKeepaliveLocked(now, p.upKeepaliveLocked(now))
	}
}

// upKeepaliveLocked returns when a port whose link is up next has a
// keepalive to consider: the next point of the grid, or for a quiet end
// the moment its peer will have been silent for probeAfter.
func (p *Port) upKeepaliveLocked(now time.Time) time.Duration {
	if !p.cfg.KeepaliveAnswers {
		return p.untilGridLocked(now)
	}
	return max(p.lastLinkRx.Add(p.probeAfter()).Sub(now), 0)
}

// downLocked takes the port's logical state Down, and its physical state to
// phys; counted says the link was lost (LinkDownedCounter) rather than
// taken down by the SM. Queued packets are dropped as link down while
// queued; the packets received before, wherever the node queued them, are
// orphans from now on (DropOrphans).
func (p *Port) downLocked(phys mad.PhysState, counted bool) {
	if counted && p.phys == physLinkUp {
		p.cnt.linkDowned++
	}
	if p.state != portDown {
		p.downs.Add(1)
	}
	if phys != physLinkUp {
		if p.liveTimer != nil {
			p.liveTimer.Stop()
		}
		p.peerKnown = false // the next training learns the peer afresh
	}
	p.flushLocked(DropLinkDown, 0, numVLs)
	p.endWaitLocked(p.cfg.Clock.Now())
	p.setStateLocked(phys, portDown)
}

// flushLocked drops every packet queued on VLs lo..hi-1 for cause c,
// counting each; unlock releases them.
func (p *Port) flushLocked(c DropCause, lo, hi int) {
	for vl := lo; vl < hi; vl++ {
		q := &p.tx[vl].q
		for q.len() > 0 {
			e := q.pop()
			p.dropPacketLocked(c, true, e.pkt.Bytes)
			p.toRelease = append(p.toRelease, e.pkt)
		}
		p.congNoteLocked(vl)
	}
	p.spaceCond.Broadcast()
}

// CarrierChanged implements link.Dispatcher: carrier loss takes the link
// down at once; carrier up starts training.
func (p *Port) CarrierChanged(up bool) {
	p.mu.Lock()
	defer p.unlock()
	p.carrierLocked(up)
}

// carrierLocked applies a carrier level.
func (p *Port) carrierLocked(up bool) {
	if p.closed || p.carrier == up {
		return
	}
	p.carrier = up
	if !up {
		if p.phys != physDisabled {
			p.downLocked(physPolling, true)
		}
		return
	}
	p.startTrainingLocked()
}

// armLivenessLocked (re)starts the liveness timer to fire in d.
func (p *Port) armLivenessLocked(d time.Duration) {
	p.liveAt = p.cfg.Clock.Now().Add(d)
	if p.liveTimer == nil {
		p.liveTimer = p.cfg.Clock.AfterFunc(d, p.livenessExpired)
		return
	}
	p.liveTimer.Reset(d)
}

// armKeepaliveLocked makes the keepalive timer fire in d.
func (p *Port) armKeepaliveLocked(now time.Time, d time.Duration) {
	p.keepAt = now.Add(d)
	p.keepTimer.Reset(d)
}

// livenessExpired runs when the liveness timer fires. The timer is not
// reset per received link packet: it fires at the deadline the last one
// set when it was armed, and is re-armed to the deadline the latest packet
// set, so a busy link costs one timer event per timeout.
func (p *Port) livenessExpired() {
	p.mu.Lock()
	defer p.unlock()
	if p.closed || p.phys != physLinkUp {
		return
	}
	idle := p.cfg.Clock.Now().Sub(p.lastLinkRx)
	if idle < p.cfg.LivenessTimeout {
		p.armLivenessLocked(p.cfg.LivenessTimeout - idle)
		return
	}
	p.downLocked(physPolling, true)
}

// heardLocked notes a link packet from the peer at now. A timer due
// within half its span moves later at once, so that on a link whose
// packets keep coming neither the liveness timer nor a quiet end's
// keepalive timer ever fires: each would wake the process for nothing.
// (Moving a timer costs a heap update, so one further away waits; a busy
// link brings a packet every few microseconds.) A quiet end then answers.
func (p *Port) heardLocked(now time.Time) {
	if p.liveAt.Sub(now) < p.cfg.LivenessTimeout/2 {
		p.armLivenessLocked(p.cfg.LivenessTimeout)
	}
	if !p.cfg.KeepaliveAnswers {
		return
	}
	if p.keepAt.Sub(now) < p.probeAfter()/2 {
		p.armKeepaliveLocked(now, p.probeAfter())
	}
	if p.fcQuietLocked(now) {
		p.oweKeepaliveLocked()
		// Inline only when no training frame is owed: the transmitter
		// sends that first (a link just up owes the peer its Reply), and
		// the flow-control packets alone would not bring the peer up.
		if p.parked && !p.wake && !p.writing && !p.tsDue {
			p.sendFCsInlineLocked()
		} else {
			p.kickLocked()
		}
	}
}

// probeAfter is how long a quiet end (KeepaliveAnswers) lets its peer be
// silent before it sends a keepalive of its own.
func (p *Port) probeAfter() time.Duration { return p.cfg.LivenessTimeout / 2 }

// oweKeepaliveLocked owes the peer a flow-control packet for the next
// data VL in turn: one is enough for the peer's liveness, and turn by turn
// each VL's credits are refreshed every few intervals.
func (p *Port) oweKeepaliveLocked() {
	p.keepVL = (p.keepVL + 1) % p.operVLs
	p.fcDue |= 1 << p.keepVL
}

// keepalive runs when the keepalive timer fires. Before the link is up
// every operational data VL is owed a flow-control packet, the training
// signal, every interval. Once up, one VL in turn is, on the epoch's grid
// (KeepaliveEpoch), unless the port sent one within half an interval; a
// quiet end (KeepaliveAnswers) sends one only when its peer has been
// silent for probeAfter.
func (p *Port) keepalive() {
	p.mu.Lock()
	defer p.unlock()
	if p.closed {
		return
	}
	now := p.cfg.Clock.Now()
	if p.phys != physLinkUp || !p.linkSendOKLocked() {
		p.startTrainingLocked()
		p.armKeepaliveLocked(now, p.cfg.KeepaliveInterval)
		return
	}
	if p.cfg.KeepaliveAnswers {
		if d := p.upKeepaliveLocked(now); d > 0 {
			p.armKeepaliveLocked(now, d) // the peer was heard meanwhile
			return
		}
		p.oweKeepaliveLocked()
		p.kickLocked()
		p.armKeepaliveLocked(now, p.cfg.KeepaliveInterval) // asked: wait an interval for the answer
		return
	}
	// A link that carries traffic sends flow-control packets anyway: no
	// keepalive then, so that only idle links wake at the grid points and
	// a loaded fabric's experiments see no burst of them.
	if p.fcQuietLocked(now) {
		p.oweKeepaliveLocked()
		p.kickLocked()
	}
	p.armKeepaliveLocked(now, p.untilGridLocked(now))
}

// fcQuietLocked reports whether the port has sent no flow-control packet
// for half a keepalive interval: the peer is then owed one, as a keepalive
// or a quiet end's answer.
func (p *Port) fcQuietLocked(now time.Time) bool {
	return now.Sub(p.lastFCTx) >= p.cfg.KeepaliveInterval/2
}

// untilGridLocked returns the time from now to the next keepalive on the
// grid of KeepaliveEpoch, or an interval without one.
func (p *Port) untilGridLocked(now time.Time) time.Duration {
	iv := p.cfg.KeepaliveInterval
	if p.cfg.KeepaliveEpoch.IsZero() {
		return iv
	}
	since := now.Sub(p.cfg.KeepaliveEpoch) % iv
	if since < 0 {
		since += iv
	}
	return iv - since
}

// stateEvent is a state change waiting for OnStateChange.
type stateEvent struct{ from, to State }

// unlock releases p.mu, then turns the transmitter on or off as wanted,
// releases the packets dropped under it and delivers queued state
// changes: all call out of the port (into the endpoint, another port's
// lock, or the node), which must not happen with p.mu held.
func (p *Port) unlock() {
	rel := p.toRelease
	p.toRelease = nil
	deliver := len(p.events) > 0 && !p.delivering
	power := p.txDirty
	p.mu.Unlock()
	if power {
		p.syncTransmitter()
	}
	for _, pkt := range rel {
		pkt.Release()
	}
	if deliver {
		p.deliverEvents()
	}
}

// deliverEvents calls OnStateChange for each queued change, in order. One
// goroutine delivers at a time; changes queued meanwhile (by the callback
// itself, say) are picked up by it.
func (p *Port) deliverEvents() {
	p.mu.Lock()
	if p.delivering {
		p.mu.Unlock()
		return
	}
	p.delivering = true
	for len(p.events) > 0 {
		evs := p.events
		p.events = nil
		p.mu.Unlock()
		for _, e := range evs {
			p.cfg.OnStateChange(p, e.from, e.to)
		}
		p.mu.Lock()
	}
	p.delivering = false
	p.mu.Unlock()
}
