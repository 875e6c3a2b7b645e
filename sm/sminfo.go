package sm

import (
	"context"
	"fmt"

	"ibfab/madport"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// SMInfo and traps: what the SM answers between and during its own
// transactions.
//
// Election (IBA 14.4): after discovery the SM asks every other port with
// the IsSM capability for its SMInfo. An SM already Master wins; among the
// others the highest priority wins, then the lowest GUID. This SM becomes
// Master when it wins, else Standby, and a standby SM neither routes nor
// configures.

// mySMInfo returns this SM's SMInfo; the SM_Key only for a requester that
// knows it.
func (s *SM) mySMInfo(theirKey uint64) mad.SMInfoFields {
	f := mad.SMInfoFields{GUID: s.guid, ActCount: s.actCount, Priority: s.cfg.Priority, SMState: s.state}
	if theirKey == s.cfg.SMKey {
		f.SMKey = s.cfg.SMKey
	}
	return f
}

// beats reports whether SM a wins the election against SM b.
func beats(a, b mad.SMInfoFields) bool {
	if (a.SMState == mad.SMStateMaster) != (b.SMState == mad.SMStateMaster) {
		return a.SMState == mad.SMStateMaster
	}
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return a.GUID < b.GUID
}

// elect asks the other SMs of the subnet for their SMInfo and decides.
func (s *SM) elect(ctx context.Context, sn *Subnet, res *Result) error {
	var others []mad.SMInfoFields
	for i := range sn.Topo.NumNodes() {
		for p, pi := range sn.PortInfo[i] {
			if !sn.Have[i][p] || pi.CapabilityMask&mad.PortCapIsSM == 0 || (i == sn.SMNode && p == sn.SMPort) {
				continue
			}
			if sn.IsSwitch(i) && p != 0 {
				continue
			}
			s.tx.get(request{dr: true, path: sn.path(i, p), attr: mad.AttrSMInfo, mod: uint32(p)}, func(r *response) {
				if r.err != nil {
					res.Warnings = append(res.Warnings, fmt.Sprintf("SM at %s port %d does not answer SMInfo: %v",
						sn.Topo.Node(i).Name, p, r.err))
					return
				}
				others = append(others, mad.SMInfo(r.data).Fields())
			})
		}
	}
	if err := s.tx.run(ctx); err != nil {
		return err
	}
	me := s.mySMInfo(0)
	me.SMState = mad.SMStateDiscovering
	for _, o := range others {
		if o.GUID != s.guid && beats(o, me) {
			s.state = mad.SMStateStandby
			res.Reason = fmt.Sprintf("SM %#x (priority %d, %v) wins the election", o.GUID, o.Priority, o.SMState)
			return nil
		}
	}
	s.state = mad.SMStateMaster
	return nil
}

// unsolicited handles a request or trap that reached the SM.
func (s *SM) unsolicited(m madport.MAD) {
	h := mad.MAD(m.Data)
	switch {
	case h.AttrID() == mad.AttrSMInfo && (h.Method() == mad.MethodGet || h.Method() == mad.MethodSet):
		s.answerSMInfo(m)
	case h.Method() == mad.MethodTrap && h.AttrID() == mad.AttrNotice && h.MgmtClass() == mad.ClassSubnLID:
		s.repress(m)
	default:
		s.tx.stats.Unexpected++
	}
}

// answerSMInfo answers SMInfo Get and Set. A Set carries another SM's
// request in its modifier (IBA 14.4.1): Handover makes this SM master,
// Disable makes it NotActive, Standby standby, Discover rediscover.
func (s *SM) answerSMInfo(m madport.MAD) {
	h := mad.MAD(m.Data)
	dr := h.MgmtClass() == mad.ClassSubnDirected
	var data []byte
	if dr {
		data = mad.DRSMP(m.Data).Data()
	} else {
		data = mad.SMP(m.Data).Data()
	}
	theirs := mad.SMInfo(data).Fields()
	if h.Method() == mad.MethodSet && theirs.SMKey == s.cfg.SMKey {
		switch h.AttrModifier() {
		case mad.SMInfoHandover:
			s.state, s.dirty = mad.SMStateMaster, true
		case mad.SMInfoDisable:
			s.state = mad.SMStateNotActive
		case mad.SMInfoStandby:
			s.state = mad.SMStateStandby
		case mad.SMInfoDiscover:
			s.state, s.dirty = mad.SMStateDiscovering, true
		}
	}
	resp := append([]byte(nil), m.Data...)
	mine := s.mySMInfo(theirs.SMKey)
	rh := mad.MAD(resp)
	rh.SetMethod(mad.MethodGetResp)
	if dr {
		b := mad.DRSMP(resp)
		b.SetDirection(true)
		b.SetStatus(mad.StatusOK)
		clear(b.Data())
		mad.SMInfo(b.Data()).Encode(&mine)
	} else {
		rh.SetStatus(mad.StatusOK)
		b := mad.SMP(resp)
		clear(b.Data())
		mad.SMInfo(b.Data()).Encode(&mine)
	}
	s.smInfos++
	s.tx.phaseStats(PhaseWatch).SMPs++
	_ = s.port.Send(madport.MAD{LID: m.LID, QP: wire.QP0, SL: m.SL, Data: resp})
}

// repress answers a trap with TrapRepress, so the switch stops repeating
// it, and notes it for Check.
func (s *SM) repress(m madport.MAD) {
	s.trapped = true
	if lid, ok := trap128LID(m.Data); ok {
		s.trapLIDs[lid] = true
		if s.onTrap != nil {
			defer s.onTrap() // after the TrapRepress
		}
	} else {
		s.badTraps++
	}
	b := append([]byte(nil), m.Data...)
	mad.MAD(b).SetMethod(mad.MethodTrapRepress)
	s.represses++
	s.tx.phaseStats(PhaseWatch).SMPs++
	_ = s.port.Send(madport.MAD{LID: m.LID, QP: wire.QP0, SL: m.SL, Data: b})
}

// trap128LID returns the switch LID a Trap 128 (a LID-routed SubnTrap of
// Notice, generic, trap number 128) carries in its details.
func trap128LID(b []byte) (uint16, bool) {
	if len(b) < mad.MADSize || mad.MAD(b).MgmtClass() != mad.ClassSubnLID {
		return 0, false
	}
	n := mad.Notice(mad.SMP(b).Data())
	if !n.IsValid() || !n.IsGeneric() || n.TrapNumber() != mad.TrapLinkStateChange {
		return 0, false
	}
	lid := n.Trap128LID()
	if lid == 0 || lid >= mad.MulticastLIDBase {
		return 0, false
	}
	return lid, true
}
