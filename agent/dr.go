package agent

import "ibfab/wire/mad"

// Directed-route processing, IBA 14.2.2. A directed-route SMP carries its
// route: InitialPath[i] is the port hop i leaves by on the way out, and
// each node on the way records in ReturnPath[i] the port it arrived on, so
// the response retraces the route. HopPointer says which hop the SMP is
// at, HopCount how many hops the directed part has. Optional LID-routed
// parts come before it (DrSLID, the requester's LID) and after it (DrDLID,
// the destination's LID); the permissive LID in either means "none".
//
// Outgoing (D=0), as a node receives it from port p:
//
//	hp == 0, hc > 0   a switch at the end of a LID-routed prefix: hp=1 and
//	                  leave by InitialPath[1] (a CA, or DrSLID permissive:
//	                  drop)
//	hp == 0, hc == 0  the destination, reached by the prefix alone: hp=1,
//	                  process
//	0 < hp < hc       switches only: ReturnPath[hp]=p, hp++, leave by
//	                  InitialPath[hp]
//	hp == hc          ReturnPath[hp]=p, hp++; DrDLID permissive: process
//	                  here; else a switch LID-routes on to DrDLID
//	hp == hc+1        the destination, reached by the LID-routed suffix
//
// Returning (D=1), as the responder sends it (hp == hc+1): back over the
// suffix to the switch that sent it when DrDLID is not permissive, else
// hp-- and leave by ReturnPath[hp]. As a node receives it:
//
//	hp == hc+1        a switch at the end of the suffix: hp--, leave by
//	                  ReturnPath[hp]
//	2 <= hp <= hc     switches only: hp--, leave by ReturnPath[hp]
//	hp == 1           hp=0; DrSLID permissive: this is the requester, hand
//	                  it to the SM; else a switch LID-routes it to DrSLID
//	hp == 0           the requester, reached by the prefix
//
// Anything else is dropped, as are output ports that do not exist (port 0
// included: it is not a way out of a switch) and hop counts the path
// cannot hold. LRH LIDs are permissive on directed hops and real LIDs on
// LID-routed ones.

// receiveDR handles a directed-route SMP that arrived on in.Port.
func (a *Agent) receiveDR(in Inbound) []Outbound {
	b := mad.DRSMP(own(in))
	if err := b.Validate(); err != nil || b.Direction() != b.MAD().Method().IsResponse() {
		// The D bit must say what the R bit says: requests go out,
		// responses come back.
		return a.drDrop()
	}
	viaLID := in.DLID != mad.PermissiveLID && a.HasLID(in.Port, in.DLID)
	if !b.Direction() {
		return a.drOutgoing(in, b, viaLID)
	}
	return a.drReturning(in, b, viaLID)
}

// drOutgoing handles a directed-route request (D=0) that arrived on
// in.Port, by the table of outgoing hops above; viaLID says whether it
// came LID-routed to one of the port's LIDs.
func (a *Agent) drOutgoing(in Inbound, b mad.DRSMP, viaLID bool) []Outbound {
	hp, hc := b.HopPointer(), b.HopCount()
	sw := a.isSwitch()
	switch {
	case hp == 0 && hc == 0:
		if b.DrSLID() == mad.PermissiveLID || !viaLID {
			return a.drDrop() // a hop count of 0 never leaves its requester
		}
		b.SetHopPointer(1)
		return a.drServe(in, b)
	case hp == 0:
		if !sw || b.DrSLID() == mad.PermissiveLID || !viaLID {
			return a.drDrop()
		}
		b.SetHopPointer(1)
		return a.relay(a.drForward(b, b.InitialPath()[1]))
	case hp < hc:
		if !sw {
			return a.drDrop()
		}
		b.ReturnPath()[hp] = in.Port
		b.SetHopPointer(hp + 1)
		return a.relay(a.drForward(b, b.InitialPath()[hp+1]))
	case hp == hc:
		b.ReturnPath()[hp] = in.Port
		b.SetHopPointer(hp + 1)
		if b.DrDLID() == mad.PermissiveLID {
			return a.drServe(in, b)
		}
		if !sw {
			return a.drDrop()
		}
		return a.relay(a.drLIDRoute(in.Port, b.DrDLID(), b))
	default: // hp == hc+1, by Validate
		if b.DrDLID() == mad.PermissiveLID || !viaLID {
			return a.drDrop()
		}
		return a.drServe(in, b)
	}
}

// drReturning handles a directed-route response (D=1) that arrived on
// in.Port, by the table of returning hops above.
func (a *Agent) drReturning(in Inbound, b mad.DRSMP, viaLID bool) []Outbound {
	hp, hc := b.HopPointer(), b.HopCount()
	sw := a.isSwitch()
	switch {
	case hc > 0 && hp == hc+1:
		if !sw || b.DrDLID() == mad.PermissiveLID || !viaLID {
			return a.drDrop()
		}
		b.SetHopPointer(hp - 1)
		return a.relay(a.drForward(b, b.ReturnPath()[hp-1]))
	case hp >= 2 && hp <= hc:
		if !sw {
			return a.drDrop()
		}
		b.SetHopPointer(hp - 1)
		return a.relay(a.drForward(b, b.ReturnPath()[hp-1]))
	case hp == 1:
		b.SetHopPointer(0)
		if b.DrSLID() == mad.PermissiveLID {
			return a.toLocal(in, b)
		}
		if !sw {
			return a.drDrop()
		}
		return a.relay(a.drLIDRoute(in.Port, b.DrSLID(), b))
	case hp == 0:
		if b.DrSLID() == mad.PermissiveLID || !viaLID {
			return a.drDrop()
		}
		return a.toLocal(in, b)
	}
	return a.drDrop()
}

// sendDR starts a directed-route SMP of the local SM on its way.
func (a *Agent) sendDR(r Request, b mad.DRSMP) []Outbound {
	if err := b.Validate(); err != nil || b.Direction() != b.MAD().Method().IsResponse() {
		return a.drDrop()
	}
	in := Inbound{Port: r.Port, SLID: a.ownSLID(a.smaPort(r.Port), 0), DLID: mad.PermissiveLID, SL: r.SL}
	if b.Direction() {
		// The SM answers a directed-route request (SMInfo, say): send it
		// back the way the request came, as an SMA would. The request's
		// LRH SLID is what the SM passes as DLID.
		in.SLID = r.DLID
		return a.drReturn(in, b)
	}
	if b.HopPointer() != 0 {
		return a.drDrop()
	}
	if b.DrSLID() != mad.PermissiveLID {
		// The LID-routed prefix: to the first switch of the directed part.
		return a.sendLID(r, b, true)
	}
	if b.HopCount() == 0 {
		b.SetHopPointer(1)
		return a.drServe(in, b)
	}
	b.SetHopPointer(1)
	out := b.InitialPath()[1]
	if !a.isSwitch() && out != r.Port {
		// A CA's first hop is the port the SM sends from.
		return a.drDrop()
	}
	return a.drForward(b, out)
}

// drServe processes an SMP that reached its destination here, then sends
// the response back.
func (a *Agent) drServe(in Inbound, b mad.DRSMP) []Outbound {
	switch a.serveSMP(in.Port, b, true, false) {
	case verdictRespond:
		b.SetDirection(true)
		return a.drReturn(in, b)
	case verdictLocal:
		return a.toLocal(in, b)
	case verdictBadMKey:
		return a.badMKey(in, b, true)
	}
	return nil
}

// drReturn sends a directed-route response from the node that served it.
func (a *Agent) drReturn(in Inbound, b mad.DRSMP) []Outbound {
	hp, hc := b.HopPointer(), b.HopCount()
	switch {
	case hc > 0 && hp == hc+1:
		if b.DrDLID() != mad.PermissiveLID {
			// The request came over the LID-routed suffix: answer the
			// switch that sent it, which resumes the directed return.
			return a.drLIDRoute(in.Port, in.SLID, b)
		}
		b.SetHopPointer(hp - 1)
		return a.drForward(b, b.ReturnPath()[hp-1])
	case hc == 0 && hp == 1:
		b.SetHopPointer(0)
		if b.DrSLID() == mad.PermissiveLID {
			return a.toLocal(in, b) // the requester is the node's own SM
		}
		return a.drLIDRoute(in.Port, b.DrSLID(), b)
	}
	return a.drDrop()
}

// drForward sends b out of port out on a directed hop.
func (a *Agent) drForward(b mad.DRSMP, out uint8) []Outbound {
	if out == 0 || out > a.cfg.NumPorts {
		return a.drDrop()
	}
	return []Outbound{smpOut(out, mad.PermissiveLID, mad.PermissiveLID, 0, b)}
}

// drLIDRoute sends b over a LID-routed part of its route, to dlid.
func (a *Agent) drLIDRoute(arrival uint8, dlid uint16, b mad.DRSMP) []Outbound {
	slid := a.PortConfig(a.smaPort(arrival)).LID
	if slid == 0 || dlid == 0 || dlid >= mad.MulticastLIDBase {
		// LID-routed parts need real unicast LIDs at both ends.
		return a.drDrop()
	}
	out, local, ok := a.routeTo(arrival, dlid)
	switch {
	case !ok:
		a.stats.unroutable.Add(1)
		return nil
	case local && b.Direction():
		// The requester is this node: deliver to the SM here.
		return a.toLocal(Inbound{Port: arrival, SLID: slid, DLID: dlid}, b)
	case local:
		// A suffix from this node to itself is no suffix.
		return a.drDrop()
	}
	return []Outbound{smpOut(out, slid, dlid, 0, b)}
}

// relay counts outs as forwarded through this node.
func (a *Agent) relay(outs []Outbound) []Outbound {
	for _, o := range outs {
		if !o.Local {
			a.stats.forwarded.Add(1)
		}
	}
	return outs
}

func (a *Agent) drDrop() []Outbound {
	a.stats.drDropped.Add(1)
	return nil
}
