package agent

import (
	"encoding/binary"

	"ibfab/wire"
	"ibfab/wire/mad"
)

// HandleMAD processes one MAD that arrived on physical port in.Port and
// returns what must be transmitted or handed to the node's SM: a response,
// a directed-route SMP forwarded through this node, or a MAD for the local
// SM. It returns nil for a MAD that is consumed or dropped; every drop is
// counted in Stats. No input makes it panic.
//
// The caller passes SMPs (QP0) whose DLID is permissive or one of the
// node's LIDs, and GMPs (QP1) addressed to the node; a switch's data plane
// forwards everything else itself.
func (a *Agent) HandleMAD(in Inbound) []Outbound {
	a.stats.received.Add(1)
	if len(in.MAD) < mad.MADSize || in.Port == 0 || in.Port > a.cfg.NumPorts {
		a.stats.malformed.Add(1)
		return nil
	}
	class := mad.MAD(in.MAD).MgmtClass()
	if class.IsSubn() != (in.DstQP == wire.QP0) {
		// SMPs live on QP0 and nothing else does (IBA 13.5.1).
		a.stats.malformed.Add(1)
		return nil
	}
	switch class {
	case mad.ClassSubnDirected:
		return a.receiveDR(in)
	case mad.ClassSubnLID:
		return a.receiveLIDSMP(in)
	}
	return a.receiveGMP(in)
}

// Send processes a MAD the node's own SM sends from r.Port, applying the
// originator's side of the SMI: a directed-route request leaves through
// InitialPath[1] (which on a CA must be r.Port), or through the LID-routed
// prefix to r.DLID; a directed-route response from the SM goes back along
// its return path; a hop count of 0, or a DLID of the node itself, reaches
// the node's own SMA, whose answer comes back as a Local Outbound.
func (a *Agent) Send(r Request) []Outbound {
	a.stats.received.Add(1)
	if len(r.MAD) < mad.MADSize || !a.validPort(r.Port) || (a.isSwitch() && r.Port != 0) {
		a.stats.malformed.Add(1)
		return nil
	}
	m := clone(r.MAD)
	switch mad.MAD(m).MgmtClass() {
	case mad.ClassSubnDirected:
		return a.sendDR(r, mad.DRSMP(m))
	case mad.ClassSubnLID:
		return a.sendLID(r, m, true)
	}
	return a.sendLID(r, m, false)
}

// sendLID sends a LID-routed MAD of the local SM to r.DLID, looping it
// back into the node when the DLID is the node's own.
func (a *Agent) sendLID(r Request, m []byte, smp bool) []Outbound {
	sma := a.smaPort(r.Port)
	slid := a.ownSLID(sma, 0)
	if a.HasLID(r.Port, r.DLID) {
		in := Inbound{Port: r.Port, SLID: slid, DLID: r.DLID, SL: r.SL, PKey: r.PKey, MAD: m}
		if !smp {
			in.SrcQP, in.DstQP = wire.QP1, orQP1(r.DestQP)
			if in.PKey == 0 {
				in.PKey = mad.DefaultPKey
			}
		}
		return a.loopback(in)
	}
	out, local, ok := a.routeTo(r.Port, r.DLID)
	if !ok || local {
		a.stats.unroutable.Add(1)
		return nil
	}
	if smp {
		return []Outbound{smpOut(out, slid, r.DLID, r.SL, m)}
	}
	pkey := r.PKey
	if pkey == 0 {
		pkey = mad.DefaultPKey
	}
	return a.gmpOut(sma, out, slid, r.DLID, r.SL, wire.QP1, orQP1(r.DestQP), pkey, m)
}

func orQP1(qp uint32) uint32 {
	if qp == 0 {
		return wire.QP1
	}
	return qp
}

// loopback processes a MAD the local SM addressed to the node itself.
// Whatever the node answers is for the SM, so it comes back Local.
func (a *Agent) loopback(in Inbound) []Outbound {
	var outs []Outbound
	switch mad.MAD(in.MAD).MgmtClass() {
	case mad.ClassSubnLID:
		outs = a.receiveLIDSMP(in)
	case mad.ClassSubnDirected:
		outs = a.receiveDR(in)
	default:
		outs = a.receiveGMP(in)
	}
	for i := range outs {
		// Responses from the node to itself are the SM's; forwarded
		// requests (a directed route starting here) still leave.
		if !outs[i].Local && mad.MAD(outs[i].MAD).Method().IsResponse() {
			outs[i].Local = true
			outs[i].Port = in.Port
			a.stats.local.Add(1)
		}
	}
	return outs
}

// receiveLIDSMP handles a LID-routed SMP addressed to this node.
func (a *Agent) receiveLIDSMP(in Inbound) []Outbound {
	if in.DLID != mad.PermissiveLID && !a.HasLID(in.Port, in.DLID) {
		a.stats.misaddressed.Add(1)
		return nil
	}
	m := own(in)
	switch a.serveSMP(in.Port, m, false, false) {
	case verdictRespond:
		out, local, ok := a.routeTo(in.Port, in.SLID)
		if !ok {
			a.stats.unroutable.Add(1)
			return nil
		}
		o := smpOut(out, a.ownSLID(a.smaPort(in.Port), in.DLID), in.SLID, in.SL, m)
		if local {
			o.Local = true
			a.stats.local.Add(1)
		}
		return []Outbound{o}
	case verdictLocal:
		return a.toLocal(in, m)
	case verdictBadMKey:
		return a.badMKey(in, m, false)
	}
	return nil
}

// toLocal hands m to the SM attached at the SMA in.Port belongs to.
func (a *Agent) toLocal(in Inbound, m []byte) []Outbound {
	a.stats.local.Add(1)
	o := Outbound{
		Local: true, Port: a.smaPort(in.Port), SLID: in.SLID, DLID: in.DLID, SL: in.SL,
		SrcQP: in.SrcQP, DestQP: in.DstQP, PKey: in.PKey, MAD: m,
	}
	if mad.MAD(m).MgmtClass().IsSubn() {
		o.VL = vl15
	}
	return []Outbound{o}
}

// routeTo returns the port a packet from this node to dlid leaves by:
// a CA answers through the port the request came in on; a switch looks the
// DLID up in its LFT. local reports a DLID of the node itself.
func (a *Agent) routeTo(arrival uint8, dlid uint16) (out uint8, local, ok bool) {
	if dlid == mad.PermissiveLID {
		// Nothing to look up: back out of the port the request came from.
		return arrival, arrival == 0, true
	}
	if a.HasLID(arrival, dlid) {
		return arrival, true, true
	}
	if !a.isSwitch() {
		return arrival, false, dlid != 0
	}
	p, ok := a.OutPort(dlid)
	if !ok || p == 0 {
		return 0, false, false
	}
	return p, false, true
}

// ownSLID returns the SLID of a packet the SMA of port sma sends: the LID
// the request was addressed to when that is one of ours, else the base
// LID, else the permissive LID while the SM has assigned none.
func (a *Agent) ownSLID(sma uint8, dlid uint16) uint16 {
	c := a.PortConfig(sma)
	switch {
	case lidInRange(c.LID, c.LMC, dlid):
		return dlid
	case c.LID != 0:
		return c.LID
	}
	return mad.PermissiveLID
}

// verdict is what serving a MAD came to.
type verdict uint8

const (
	verdictDrop     verdict = iota // counted and dropped
	verdictRespond                 // m now holds the response
	verdictLocal                   // m is for the local SM
	verdictConsumed                // handled, nothing to send (TrapRepress)
	verdictBadMKey                 // dropped for its M_Key: the caller reports it (badMKey)
)

// serveSMP serves an SMP that reached this node's SMA on port (0: from the
// switch's own SM): checks, M_Key, then the attribute. On verdictRespond m
// has been turned into the GetResp, status included (for a directed-route
// SMP the D bit is the caller's to set). exempt skips the M_Key check, for
// the node's own reads (LocalGet).
func (a *Agent) serveSMP(port uint8, m []byte, dr, exempt bool) verdict {
	h := mad.MAD(m)
	meth := h.Method()
	if meth.IsResponse() || meth == mad.MethodTrap {
		// SMA-to-SM traffic: responses to the SM's requests, and traps.
		return verdictLocal
	}
	if h.BaseVersion() != mad.BaseVersion || h.ClassVersion() != mad.SubnVersion {
		return a.respond(m, dr, mad.StatusBadVersion)
	}
	switch meth {
	case mad.MethodGet, mad.MethodSet, mad.MethodTrapRepress:
	default:
		return a.respond(m, dr, mad.StatusMethodUnsupported)
	}
	c := smpCtx{port: port, set: meth == mad.MethodSet, attr: h.AttrID(), mod: h.AttrModifier(),
		tid: h.TransactionID(), data: m[smpDataOffset : smpDataOffset+mad.SMPDataSize]}
	if c.attr == mad.AttrPortInfo {
		// Read the link before taking mu: PortControl is never called
		// with it held.
		if n, ok := a.portInfoTarget(c.mod, port, c.set); ok && a.livePort(n) {
			c.link = a.cfg.Ports.Link(n)
		}
	}
	a.mu.Lock()
	if c.attr == mad.AttrSMInfo && meth != mad.MethodTrapRepress {
		// SMInfo belongs to the SM, not the SMA (IBA 14.4).
		sm := a.hasSM(port)
		a.mu.Unlock()
		if sm {
			return verdictLocal
		}
		return a.respond(m, dr, mad.StatusMethodAttrUnsupported)
	}
	ok, hide := true, false
	if !exempt {
		ok, hide = a.checkMKeyLocked(a.smaPort(port), meth, binary.BigEndian.Uint64(m[smpMKeyOffset:]))
	}
	if !ok {
		a.mu.Unlock()
		a.stats.mkeyViolations.Add(1)
		return verdictBadMKey
	}
	c.hideMKey = hide
	if meth == mad.MethodTrapRepress {
		own := c.attr == mad.AttrNotice && a.repressLocked(c.tid)
		sm := a.hasSM(port)
		a.mu.Unlock()
		switch {
		case own:
			return verdictConsumed
		case sm:
			// The repress of a trap the node's own SM sent (OpenSM's
			// Trap 144 to itself or to another master): a TrapRepress is
			// a response to the node's MAD layer, which matches it to the
			// trap by TID.
			return verdictLocal
		case c.attr == mad.AttrNotice:
			return verdictConsumed // the repress of a repeat the first one already stopped
		}
		a.stats.unexpected.Add(1)
		return verdictDrop
	}
	st := a.dispatchLocked(&c)
	a.mu.Unlock()
	for _, f := range c.after {
		f()
	}
	if c.refresh != nil {
		c.refresh()
	}
	if c.failed && st == mad.StatusOK {
		st = mad.StatusInvalidField
	}
	return a.respond(m, dr, st)
}

// Offsets shared by both SMP formats.
const (
	smpMKeyOffset = 24
	smpDataOffset = 64
)

// respond turns the request m into its GetResp with status st.
func (a *Agent) respond(m []byte, dr bool, st mad.Status) verdict {
	h := mad.MAD(m)
	h.SetMethod(mad.MethodGetResp)
	if dr {
		mad.DRSMP(m).SetStatus(st)
	} else {
		h.SetStatus(st)
	}
	a.stats.responses.Add(1)
	a.stats.countStatus(st)
	return verdictRespond
}

// smpCtx is what an attribute handler works on.
type smpCtx struct {
	port     uint8 // arrival port; 0 for the switch's own SM
	set      bool
	attr     mad.AttrID
	mod      uint32
	tid      uint64
	hideMKey bool   // M_Key protection level 1: PortInfo.M_Key reads as 0
	data     []byte // the response's SMP data, holding the request's on entry
	// after runs once mu is released: calls into PortControl and Sender.
	after []func()
	// refresh runs after that, to patch live link facts into data.
	refresh func()
	link    LinkState // live state of a PortInfo target, read before mu
	failed  bool      // PortControl refused a change: invalid field
}

// fail records a PortControl error.
func (c *smpCtx) fail(err error) {
	if err != nil {
		c.failed = true
	}
}

// dispatchLocked serves c's attribute; mu held.
func (a *Agent) dispatchLocked(c *smpCtx) mad.Status {
	switch c.attr {
	case mad.AttrNodeInfo:
		return getOnly(c, a.nodeInfoLocked)
	case mad.AttrNodeDescription:
		return getOnly(c, a.nodeDescLocked)
	case mad.AttrPortInfo:
		return a.portInfoLocked(c)
	case mad.AttrGUIDInfo:
		return a.guidInfoLocked(c)
	case mad.AttrPKeyTable:
		return a.pkeyTableLocked(c)
	case mad.AttrSLtoVLMapping:
		return a.sl2vlLocked(c)
	case mad.AttrVLArbitration:
		return a.vlarbLocked(c)
	case mad.AttrNotice:
		return a.noticeLocked(c)
	}
	if a.isSwitch() {
		switch c.attr {
		case mad.AttrSwitchInfo:
			return a.switchInfoLocked(c)
		case mad.AttrLinearFwdTbl:
			return a.lftLocked(c)
		case mad.AttrMulticastFwdTbl:
			return a.mftLocked(c)
		}
	}
	return mad.StatusMethodAttrUnsupported
}

// getOnly serves a read-only attribute.
func getOnly(c *smpCtx, get func(*smpCtx) mad.Status) mad.Status {
	if c.set {
		return mad.StatusMethodAttrUnsupported
	}
	return get(c)
}

// own returns the MAD of in to work on: in.MAD itself when the caller
// handed it over (Owned), else a copy.
func own(in Inbound) []byte {
	if in.Owned {
		return in.MAD[:mad.MADSize:mad.MADSize]
	}
	return clone(in.MAD)
}

func clone(b []byte) []byte {
	m := make([]byte, mad.MADSize)
	copy(m, b)
	return m
}
