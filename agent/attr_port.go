package agent

import "ibfab/wire/mad"

// PortInfo, IBA 14.2.5.6. The agent keeps what the SM sets and the static
// capabilities; the live link facts (PortState, PortPhysicalState, the
// active width and speed) come from PortControl on every read. A switch's
// port 0 is virtual: always LinkUp and Active, and since the spec has
// base port 0 ignore the state bits of a Set, it accepts and ignores them.
//
// Logical state changes the SM may ask for:
//
//	any ──Set Down──► Down (the link retrains, back in Init)
//	Init ──Set Armed──► Armed ──Set Active──► Active
//
// A Set to the state the port is already in is accepted as a no-op (so a
// retried Set does no harm); every other request fails with an
// invalid-field status and changes nothing.

// portInfoTarget returns the port a PortInfo modifier names for an SMP
// that arrived on arrival: on a switch 0..NumPorts, on a CA the arrival
// port for 0 and any port for Get. Bit 31 (SMSupportsExtendedSpeeds) is
// not part of the port number.
func (a *Agent) portInfoTarget(mod uint32, arrival uint8, set bool) (uint8, bool) {
	if mod &^= mad.PortInfoSMSupportsExtendedSpeeds; mod > 0xff {
		return 0, false
	}
	n := uint8(mod)
	if a.isSwitch() {
		return n, n <= a.cfg.NumPorts
	}
	if n == 0 {
		return arrival, true
	}
	// A CA's SMA answers for its other ports but configures only its own.
	return n, n <= a.cfg.NumPorts && (!set || n == arrival)
}

// livePort reports whether port's state comes from PortControl.
func (a *Agent) livePort(port uint8) bool { return !(a.isSwitch() && port == 0) }

// portInfoLocked serves PortInfo; mu held. c.link holds the live state of
// the target port, read before mu was taken.
func (a *Agent) portInfoLocked(c *smpCtx) mad.Status {
	n, ok := a.portInfoTarget(c.mod, c.port, c.set)
	if !ok {
		return mad.StatusInvalidField
	}
	st := mad.StatusOK
	if c.set {
		// A refused Set still answers with the port as it is.
		st = a.setPortInfoLocked(c, n)
	}
	info := a.port[n].info
	info.LocalPortNum = c.port
	if c.hideMKey {
		info.MKey = 0
	}
	if !a.livePort(n) {
		info.PortState = mad.PortStateActive
		info.PortPhysicalState = mad.PhysStateLinkUp
	}
	clear(c.data)
	mad.PortInfo(c.data).Encode(&info)
	if a.livePort(n) {
		data := c.data
		caps := !a.isSwitch() // a switch says what it has on port 0
		c.refresh = func() {
			ls := a.cfg.Ports.Link(n)
			pi := mad.PortInfo(data)
			pi.SetPortState(ls.State)
			pi.SetPortPhysicalState(ls.Phys)
			setLinkRate(pi, ls, caps)
		}
	}
	return st
}

// setPortInfoLocked validates a Set(PortInfo) of port n and applies it;
// mu held. Nothing is applied unless every field is valid.
func (a *Agent) setPortInfoLocked(c *smpCtx, n uint8) mad.Status {
	req := mad.PortInfo(c.data).Fields()
	cur := &a.port[n].info
	next := *cur
	live := a.livePort(n)
	mgmt := !a.isSwitch() || n == 0 // holds the SMA's LID, M_Key, SM address

	if !validStates(c, &req, live, &next) {
		return mad.StatusInvalidField
	}
	wen, sen, ok := enabledLink(c, &req, cur, live)
	if !ok {
		return mad.StatusInvalidField
	}
	if sen, ok = enabledSpeeds(c, &req, sen, live); !ok {
		return mad.StatusInvalidField
	}
	if wen != 0 {
		next.LinkWidthEnabled = wen
	}
	if sen != 0 {
		next.LinkSpeedEnabled = sen.Legacy()
	}
	if !setMTUAndVLs(&req, cur, &next) {
		return mad.StatusInvalidField
	}
	if mgmt && !setManagement(&req, &next) {
		return mad.StatusInvalidField
	}
	setPlainFields(&req, &next)
	*cur = next
	a.applyPortInfoLocked(c, n, &req, wen, sen, live, mgmt)
	return mad.StatusOK
}

// validStates checks the requested port state (a transition the SM may
// make from the link's), physical state and link-down default state, and
// takes the last into next.
func validStates(c *smpCtx, req *mad.PortInfoFields, live bool, next *mad.PortInfoFields) bool {
	switch req.PortState {
	case mad.PortStateNoChange:
	case mad.PortStateDown, mad.PortStateArmed, mad.PortStateActive:
		if live && !legalTransition(c.link.State, req.PortState) {
			return false
		}
	default:
		return false
	}
	switch req.PortPhysicalState {
	case mad.PhysStateNoChange, mad.PhysStatePolling, mad.PhysStateDisabled:
	default:
		return false
	}
	switch req.LinkDownDefaultState {
	case mad.PhysStateNoChange:
	case mad.PhysStateSleep, mad.PhysStatePolling:
		next.LinkDownDefaultState = req.LinkDownDefaultState
	default:
		return false
	}
	return true
}

// enabledLink returns the link widths and speeds the request enables (0:
// no change), which must be among those the port supports; ok false when
// they are not.
func enabledLink(c *smpCtx, req *mad.PortInfoFields, cur *mad.PortInfoFields, live bool) (wen mad.LinkWidth, sen mad.LinkSpeed, ok bool) {
	// What a live port supports comes from the data plane.
	wsup, ssup := cur.LinkWidthSupported, cur.LinkSpeedSupported
	if live && c.link.WidthSupported != 0 {
		wsup = c.link.WidthSupported
	}
	if live && c.link.SpeedSupported != 0 {
		ssup = c.link.SpeedSupported.Legacy() // the extended ones: enabledSpeeds
	}
	switch w := req.LinkWidthEnabled; {
	case w == mad.LinkWidthNoChange:
	case w == mad.LinkWidthSetToSupported:
		wen = wsup
	case w&^wsup != 0:
		return 0, 0, false
	default:
		wen = w
	}
	switch s := req.LinkSpeedEnabled; {
	case s == mad.LinkSpeedNoChange:
	case s == mad.LinkSpeedSetToSupported:
		sen = ssup
	case s&^ssup != 0:
		return 0, 0, false
	default:
		sen = s
	}
	return wen, sen, true
}

// setMTUAndVLs takes the neighbour MTU (1 to the port's MTUCap) and the
// operational VLs (up to VLCap; 0 no change) into next.
func setMTUAndVLs(req, cur, next *mad.PortInfoFields) bool {
	if req.NeighborMTU == 0 || req.NeighborMTU > cur.MTUCap {
		return false
	}
	next.NeighborMTU = req.NeighborMTU
	if req.OperationalVLs > cur.VLCap {
		return false
	}
	if req.OperationalVLs != 0 {
		next.OperationalVLs = req.OperationalVLs
	}
	return true
}

// setManagement takes the fields of a management port (a CA's, a
// switch's port 0) into next: M_Key, GID prefix, LID, the SM's address,
// subnet timeout; the LIDs must be unicast or 0.
func setManagement(req, next *mad.PortInfoFields) bool {
	if !unicastOrZero(req.LID) || !unicastOrZero(req.MasterSMLID) {
		return false
	}
	next.MKey = req.MKey
	next.GIDPrefix = req.GIDPrefix
	next.LID = req.LID
	next.LMC = req.LMC
	next.MasterSMLID = req.MasterSMLID
	next.MasterSMSL = req.MasterSMSL
	next.MKeyLeasePeriod = req.MKeyLeasePeriod
	next.MKeyProtectBits = req.MKeyProtectBits
	next.SubnetTimeOut = req.SubnetTimeOut
	return true
}

// setPlainFields takes the fields every value of which is valid into next.
func setPlainFields(req, next *mad.PortInfoFields) {
	next.VLHighLimit = req.VLHighLimit
	next.HOQLife = req.HOQLife
	next.VLStallCount = req.VLStallCount
	next.PartitionEnforcementInbound = req.PartitionEnforcementInbound
	next.PartitionEnforcementOutbound = req.PartitionEnforcementOutbound
	next.FilterRawInbound = req.FilterRawInbound
	next.FilterRawOutbound = req.FilterRawOutbound
	next.MKeyViolations = req.MKeyViolations
	next.PKeyViolations = req.PKeyViolations
	next.QKeyViolations = req.QKeyViolations
	next.LocalPhyErrors = req.LocalPhyErrors
	next.OverrunErrors = req.OverrunErrors
	next.InitTypeReply = req.InitTypeReply
}

// applyPortInfoLocked hands port n's PortInfo, just set, to the data
// plane: its configuration and VL arbitration now, and after the answer
// the requested physical and port states, the enabled widths and speeds
// (wen, sen) and the traps a switch held for want of the SM's LID.
func (a *Agent) applyPortInfoLocked(c *smpCtx, n uint8, req *mad.PortInfoFields, wen mad.LinkWidth, sen mad.LinkSpeed, live, mgmt bool) {
	next := &a.port[n].info
	pc := PortConfig{
		LID: next.LID, LMC: next.LMC, MasterSMLID: next.MasterSMLID, MasterSMSL: next.MasterSMSL,
		NeighborMTU: next.NeighborMTU, OperationalVLs: next.OperationalVLs, VLHighLimit: next.VLHighLimit,
		HOQLife: next.HOQLife, VLStallCount: next.VLStallCount,
		PartitionEnforcementInbound:  next.PartitionEnforcementInbound,
		PartitionEnforcementOutbound: next.PartitionEnforcementOutbound,
	}
	// The data plane's copy, stored only when it changed: an SM sets every
	// port's PortInfo, mostly to what it holds already. A port without a
	// LID of its own (a switch's external port) shares it with the ports
	// alike.
	if *a.tables.config[n].Load() != pc {
		stored := pc // pc goes on to Configure
		if pc.LID == 0 {
			a.tables.config[n].Store(sharedConfigs.get(stored))
		} else {
			a.tables.config[n].Store(&stored)
		}
	}
	if arb := a.VLArbitration(n); arb.VLHighLimit != next.VLHighLimit {
		arb.VLHighLimit = next.VLHighLimit
		a.tables.vlarb[n].Store(&arb)
	}
	a.applyVLArbLocked(c, n)

	var traps []Outbound
	if mgmt && a.isSwitch() {
		traps = a.flushTrapLocked() // the SM's LID may just have become known
	}
	pc.LinkWidthEnabled, pc.LinkSpeedEnabled = wen, sen
	phys, state := req.PortPhysicalState, req.PortState
	c.after = append(c.after, func() {
		if live {
			if phys != mad.PhysStateNoChange {
				c.fail(a.cfg.Ports.SetPhysState(n, phys))
			}
			if state != mad.PortStateNoChange && state != c.link.State {
				c.fail(a.cfg.Ports.SetState(n, state))
			}
		}
		a.cfg.Ports.Configure(n, pc)
		a.emit(traps)
	})
}

// legalTransition reports whether the SM may move a port from cur to req.
func legalTransition(cur, req mad.PortState) bool {
	switch req {
	case mad.PortStateDown:
		return true
	case mad.PortStateArmed:
		return cur == mad.PortStateInit || cur == mad.PortStateArmed
	case mad.PortStateActive:
		return cur == mad.PortStateArmed || cur == mad.PortStateActive
	}
	return false
}

// unicastOrZero reports whether lid is a unicast LID or 0 (none).
func unicastOrZero(lid uint16) bool { return lid < mad.MulticastLIDBase }
