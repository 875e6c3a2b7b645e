package port

import (
	"errors"
	"fmt"
	"time"

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
//   - Down takes the port down (queued packets are dropped and counted),
//     and, the physical link being up, straight back to Init;
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
		p.downLocked(p.phys, false)
		if p.phys == physLinkUp {
			p.setStateLocked(physLinkUp, portInit)
		}
		return nil
	case s == portArmed && p.state == portInit,
		s == portActive && p.state == portArmed:
		p.setStateLocked(p.phys, s)
		return nil
	}
	return fmt.Errorf("%w: %v to %v", ErrTransition, p.state, s)
}

// SetPhysState applies a PortInfo PortPhysicalState Set: Disabled turns
// the transmitter off (the peer's liveness timeout then takes its end
// down, as a dark fibre would), Polling turns a Disabled port back on, or
// makes a port whose link is up retrain. NoChange does nothing; other
// states are ErrPhysState.
func (p *Port) SetPhysState(s mad.PhysState) error {
	p.mu.Lock()
	defer p.unlock()
	if p.closed {
		return fmt.Errorf("%w: port closed", ErrPhysState)
	}
	switch s {
	case mad.PhysStateNoChange:
	case physDisabled:
		if p.phys != physDisabled {
			p.downLocked(physDisabled, false)
		}
	case physPolling:
		if p.phys == physLinkUp {
			p.downLocked(physPolling, false)
		} else if p.phys == physDisabled {
			p.setStateLocked(physPolling, portDown)
		}
		p.startTrainingLocked()
	default:
		return fmt.Errorf("%w: %v", ErrPhysState, s)
	}
	return nil
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
		p.fcDue |= p.allVLsMask()
		p.kickLocked()
	}
}

// linkUpLocked completes training: the peer's link packets arrive. The
// flow-control counters start afresh, the liveness timer starts, and the
// peer is sent our credits at once so that it trains too.
func (p *Port) linkUpLocked(now time.Time) {
	p.resetCreditsLocked()
	p.lastLinkRx = now
	p.armLivenessLocked(p.cfg.LivenessTimeout)
	p.setStateLocked(physLinkUp, portInit)
	p.fcDue |= p.allVLsMask()
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
	if phys != physLinkUp && p.liveTimer != nil {
		p.liveTimer.Stop()
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
			p.dropLocked(c, true)
			p.toRelease = append(p.toRelease, e.pkt)
		}
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
	if p.liveTimer == nil {
		p.liveTimer = p.cfg.Clock.AfterFunc(d, p.livenessExpired)
		return
	}
	p.liveTimer.Reset(d)
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

// keepalive runs every KeepaliveInterval. Before the link is up every
// operational data VL is owed a flow-control packet, the training signal;
// once up, one VL in turn is, which is enough for the peer's liveness and
// still refreshes each VL's credits every few intervals, at a quarter of
// the wake-ups an idle fabric would otherwise cost.
func (p *Port) keepalive() {
	p.mu.Lock()
	defer p.unlock()
	if p.closed {
		return
	}
	if p.phys == physLinkUp && p.linkSendOKLocked() {
		p.keepVL = (p.keepVL + 1) % p.operVLs
		p.fcDue |= 1 << p.keepVL
		p.kickLocked()
	} else {
		p.startTrainingLocked()
	}
	p.keepTimer.Reset(p.cfg.KeepaliveInterval)
}

// stateEvent is a state change waiting for OnStateChange.
type stateEvent struct{ from, to State }

// unlock releases p.mu, then releases the packets dropped under it and
// delivers queued state changes: both call out of the port (into another
// port's lock, or the node), which must not happen with p.mu held.
func (p *Port) unlock() {
	rel := p.toRelease
	p.toRelease = nil
	deliver := len(p.events) > 0 && !p.delivering
	p.mu.Unlock()
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
