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
// port for 0 and any port for Get.
func (a *Agent) portInfoTarget(mod uint32, arrival uint8, set bool) (uint8, bool) {
	if mod > 0xff {
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
		c.refresh = func() {
			ls := a.ports.Link(n)
			pi := mad.PortInfo(data)
			pi.SetPortState(ls.State)
			pi.SetPortPhysicalState(ls.Phys)
			pi.SetLinkWidthActive(ls.Width)
			pi.SetLinkSpeedActive(ls.Speed)
			if ls.WidthSupported != 0 {
				pi.SetLinkWidthSupported(ls.WidthSupported)
				pi.SetLinkWidthEnabled(ls.WidthEnabled)
			}
			if ls.SpeedSupported != 0 {
				pi.SetLinkSpeedSupported(ls.SpeedSupported)
				pi.SetLinkSpeedEnabled(ls.SpeedEnabled)
			}
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

	switch req.PortState {
	case mad.PortStateNoChange:
	case mad.PortStateDown, mad.PortStateArmed, mad.PortStateActive:
		if live && !legalTransition(c.link.State, req.PortState) {
			return mad.StatusInvalidField
		}
	default:
		return mad.StatusInvalidField
	}
	switch req.PortPhysicalState {
	case mad.PhysStateNoChange, mad.PhysStatePolling, mad.PhysStateDisabled:
	default:
		return mad.StatusInvalidField
	}
	switch req.LinkDownDefaultState {
	case mad.PhysStateNoChange:
	case mad.PhysStateSleep, mad.PhysStatePolling:
		next.LinkDownDefaultState = req.LinkDownDefaultState
	default:
		return mad.StatusInvalidField
	}
	// What a live port supports comes from the data plane.
	wsup, ssup := cur.LinkWidthSupported, cur.LinkSpeedSupported
	if live && c.link.WidthSupported != 0 {
		wsup = c.link.WidthSupported
	}
	if live && c.link.SpeedSupported != 0 {
		ssup = c.link.SpeedSupported
	}
	var wen mad.LinkWidth
	switch w := req.LinkWidthEnabled; {
	case w == mad.LinkWidthNoChange:
	case w == mad.LinkWidthSetToSupported:
		wen = wsup
	case w&^wsup != 0:
		return mad.StatusInvalidField
	default:
		wen = w
	}
	var sen mad.LinkSpeed
	switch s := req.LinkSpeedEnabled; {
	case s == mad.LinkSpeedNoChange:
	case s == mad.LinkSpeedSetToSupported:
		sen = ssup
	case s&^ssup != 0:
		return mad.StatusInvalidField
	default:
		sen = s
	}
	if wen != 0 {
		next.LinkWidthEnabled = wen
	}
	if sen != 0 {
		next.LinkSpeedEnabled = sen
	}
	if req.NeighborMTU == 0 || req.NeighborMTU > cur.MTUCap {
		return mad.StatusInvalidField
	}
	next.NeighborMTU = req.NeighborMTU
	if req.OperationalVLs > cur.VLCap {
		return mad.StatusInvalidField
	}
	if req.OperationalVLs != 0 {
		next.OperationalVLs = req.OperationalVLs
	}
	if mgmt {
		if !unicastOrZero(req.LID) || !unicastOrZero(req.MasterSMLID) {
			return mad.StatusInvalidField
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
	}
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
	*cur = next

	pc := PortConfig{
		LID: next.LID, LMC: next.LMC, MasterSMLID: next.MasterSMLID, MasterSMSL: next.MasterSMSL,
		NeighborMTU: next.NeighborMTU, OperationalVLs: next.OperationalVLs, VLHighLimit: next.VLHighLimit,
		HOQLife: next.HOQLife, VLStallCount: next.VLStallCount,
		PartitionEnforcementInbound:  next.PartitionEnforcementInbound,
		PartitionEnforcementOutbound: next.PartitionEnforcementOutbound,
	}
	stored := pc // the data plane's copy; pc goes on to Configure
	a.tables.config[n].Store(&stored)
	arb := a.VLArbitration(n)
	arb.VLHighLimit = next.VLHighLimit
	a.tables.vlarb[n].Store(&arb)
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
				c.fail(a.ports.SetPhysState(n, phys))
			}
			if state != mad.PortStateNoChange && state != c.link.State {
				c.fail(a.ports.SetState(n, state))
			}
		}
		a.ports.Configure(n, pc)
		a.emit(traps)
	})
	return mad.StatusOK
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
