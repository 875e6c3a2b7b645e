package agent

import (
	"time"

	"ibfab/internal/clock"
	"ibfab/wire/mad"
)

// Traps, IBA 13.4.9 and 14.2.5.1. When the data plane reports that a
// switch port went Down→Init or fell to Down from any state (the changes
// the SM did not make itself), the switch sets SwitchInfo.PortStateChange
// and sends Trap 128 — SubnTrap(Notice), LID-routed from the switch's LID
// to PortInfo.MasterSMLID on MasterSMSL and VL15 — once port 0 has a LID
// and knows the SM's (a change the SM clears from PortStateChange before
// then is not reported: it has seen it). It repeats the same trap (same TID) every
// TrapRepeatInterval until the SM answers with SubnTrapRepress(Notice)
// carrying that TID, or acknowledges it with Set(Notice). Changes while a
// trap is outstanding are covered by it: the notice names the switch, not
// the port, and the SM reads the ports itself.

// Bounds of the trap repeat interval.
const (
	MinTrapRepeat = 100 * time.Millisecond // keeps SubnetTimeOut 0 from flooding VL15
	MaxTrapRepeat = time.Minute
)

// timeUnit is the unit of the spec's exponential timeouts: 4.096 µs × 2^v.
const timeUnit = 4096 * time.Nanosecond

// TrapRepeatInterval returns how long the SMA waits for a TrapRepress
// before sending a trap again: the trap's way to the SM and the repress's
// way back (4.096 µs × 2^SubnetTimeOut each), plus the SM's time to answer
// (4.096 µs × 2^RespTimeValue), clamped to [MinTrapRepeat, MaxTrapRepeat].
func TrapRepeatInterval(subnetTimeOut, respTimeValue uint8) time.Duration {
	d := 2*timeUnit<<(subnetTimeOut&31) + timeUnit<<(respTimeValue&31)
	return min(max(d, MinTrapRepeat), MaxTrapRepeat)
}

// trapState is the switch's Trap 128: reported or waiting to be.
type trapState struct {
	pending     bool   // a change to report once the SM's LID is known
	outstanding bool   // sent, not yet repressed
	tid         uint64 // of the outstanding trap
	count       uint16 // NoticeCount of the last trap
	genTimer           // the repeat
}

// genTimer is one of the agent's timers (a trap's repeat, an M_Key
// lease): its callback takes the agent's mu and acts only if its
// generation is still the timer's, because a clock.Timer's Stop cannot
// recall a callback that has already begun.
type genTimer struct {
	timer clock.Timer // nil when not armed
	gen   uint64      // bumped on every stop, so a stale callback does nothing
}

// start arms the timer to call fire after d with the generation it was
// armed in, to be passed to fired; mu held.
func (t *genTimer) start(c clock.Clock, d time.Duration, fire func(gen uint64)) {
	gen := t.gen
	t.timer = c.AfterFunc(d, func() { fire(gen) })
}

// stop disarms the timer; a callback already under way does nothing. mu
// held.
func (t *genTimer) stop() {
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	t.gen++
}

// armed reports whether the timer is set and has not fired; mu held.
func (t *genTimer) armed() bool { return t.timer != nil }

// fired is the callback's check, mu held: it reports whether gen is still
// the timer's (not stopped since), and if so the timer is no longer armed.
func (t *genTimer) fired(gen uint64) bool {
	if gen != t.gen {
		return false
	}
	t.timer = nil
	return true
}

// PortStateChanged tells the agent that the state of port (1..NumPorts)
// may have changed; it reads the new state through PortControl.Link. The
// data plane calls it on every change it makes by itself: link up, link
// lost, Armed→Active on the first data packet. Calls that report no change
// are harmless.
func (a *Agent) PortStateChanged(port uint8) {
	if port == 0 || port > a.cfg.NumPorts {
		return
	}
	ls := a.cfg.Ports.Link(port)
	a.mu.Lock()
	p := &a.port[port]
	old := p.last
	p.last = ls.State
	var outs []Outbound
	if a.isSwitch() && reportable(old, ls.State) {
		// A new trap even while an older one waits for its repress: the
		// SM hears of this change now, not at the older one's next
		// repeat (about a second with OpenSM's subnet timeout), as a
		// switch traps each event. It replaces the older one, whose
		// repress no longer matches.
		a.sw.portStateChange = true
		a.trap.pending = true
		outs = a.flushTrapLocked()
	}
	a.mu.Unlock()
	a.emit(outs)
}

// reportable reports whether a change from old to cur sets
// PortStateChange: every change except the SM's own steps up, Init→Armed→
// Active. A port seen in Init after Armed or Active went down in between.
func reportable(old, cur mad.PortState) bool {
	if old == cur {
		return false
	}
	return !(old >= mad.PortStateInit && cur > old)
}

// flushTrapLocked sends the pending trap if the SM can be reached; mu held.
func (a *Agent) flushTrapLocked() []Outbound {
	p0 := &a.port[0].info
	if !a.trap.pending || a.closed || p0.LID == 0 || p0.MasterSMLID == 0 {
		return nil
	}
	a.trap.pending = false
	a.trap.stop() // the older trap's repeats, if one is outstanding
	a.trap.outstanding = true
	a.tidSeq++
	a.trap.tid = uint64(a.cfg.NodeGUID)<<32 | uint64(a.tidSeq)
	a.trap.count++
	a.scheduleTrapLocked()
	return a.trapOutLocked()
}

func (a *Agent) scheduleTrapLocked() {
	p0 := &a.port[0].info
	a.trap.start(a.cfg.Clock, TrapRepeatInterval(p0.SubnetTimeOut, p0.RespTimeValue), a.repeatTrap)
}

// repeatTrap sends the outstanding trap again and schedules the next.
func (a *Agent) repeatTrap(gen uint64) {
	a.mu.Lock()
	if !a.trap.fired(gen) || !a.trap.outstanding || a.closed {
		a.mu.Unlock()
		return
	}
	outs := a.trapOutLocked()
	a.scheduleTrapLocked()
	a.mu.Unlock()
	a.emit(outs)
}

// trapOutLocked builds the outstanding Trap 128; mu held.
func (a *Agent) trapOutLocked() []Outbound {
	p0 := &a.port[0].info
	n := mad.Trap128(p0.LID)
	n.NoticeCount = a.trap.count & 0x7fff
	f := mad.SMPFields{Method: mad.MethodTrap, TransactionID: a.trap.tid, AttrID: mad.AttrNotice, MKey: p0.MKey}
	mad.Notice(f.Data[:]).Encode(&n)
	out, local, ok := a.routeTo(0, p0.MasterSMLID)
	if !ok {
		a.stats.trapsDropped.Add(1)
		return nil
	}
	o := smpOut(out, p0.LID, p0.MasterSMLID, p0.MasterSMSL, mad.AppendSMP(nil, &f))
	o.Local = local
	return []Outbound{o}
}

// emit hands traps to the Sender; mu not held.
func (a *Agent) emit(outs []Outbound) {
	for _, o := range outs {
		if a.cfg.Sender == nil {
			a.stats.trapsDropped.Add(1)
			continue
		}
		a.stats.trapsSent.Add(1)
		a.cfg.Sender.Send(o)
	}
}

// repressLocked stops the outstanding trap if tid is its TID, and reports
// whether it did; mu held. Only the low 32 bits are compared: the upper
// half of a TID belongs to the MAD stack of the SM's node (the kernel's
// umad puts its agent number there, and libumad2sim clears it on the
// TrapRepress OpenSM sends back), and a repress comes LID-routed to this
// switch, whose one outstanding trap it can only mean. A repress that
// stops nothing may be for the node's own SM (serveSMP decides).
func (a *Agent) repressLocked(tid uint64) bool {
	if a.repressMKeyTrapLocked(tid) {
		return true
	}
	if !a.trap.outstanding || uint32(a.trap.tid) != uint32(tid) {
		return false
	}
	a.trap.outstanding = false
	a.trap.stop()
	return true
}

// noticeLocked serves the Notice attribute: Get reads the outstanding
// notice (or the empty one), Set with the outstanding notice's
// NoticeCount acknowledges it like a TrapRepress would.
func (a *Agent) noticeLocked(c *smpCtx) mad.Status {
	if c.set {
		got := mad.Notice(c.data)
		if a.trap.outstanding && got.NoticeCount() == a.trap.count&0x7fff {
			a.trap.outstanding = false
			a.trap.stop()
		}
	}
	n := mad.NoticeFields{Type: mad.NoticeEmpty}
	if a.isSwitch() && a.trap.outstanding {
		n = mad.Trap128(a.port[0].info.LID)
		n.NoticeCount = a.trap.count & 0x7fff
	}
	clear(c.data)
	mad.Notice(c.data).Encode(&n)
	return mad.StatusOK
}

// TrapOutstanding reports whether a Trap 128 was sent and not yet
// repressed: while it is, further changes raise no new trap.
func (a *Agent) TrapOutstanding() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.trap.outstanding
}

// PortStateChange reports the switch's SwitchInfo.PortStateChange bit.
func (a *Agent) PortStateChange() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sw.portStateChange
}
