package sa

import (
	"encoding/binary"
	"maps"
	"slices"
	"time"

	"ibfab/madport"
	"ibfab/wire/mad"
)

// Traps the SA reports to subscribers (IBA 13.4.8.2, 14.2.5.1).
const (
	TrapGIDInService    = 64  // a port came into service
	TrapGIDOutOfService = 65  // a port went out of service
	TrapMcGroupCreated  = 66  // a multicast group was created
	TrapMcGroupDeleted  = 67  // a multicast group was deleted
	TrapLinkStateChange = 128 // a switch port changed state
)

// MaxSubscriptions and MaxServices bound what requesters can make the SA
// keep; past them a Set gets NoResources.
const (
	MaxSubscriptions = 4096
	MaxServices      = 16384
)

// subscription is one InformInfo Set that subscribed, and where Reports
// go.
type subscription struct {
	rec  mad.InformInfoRecordFields
	to   madport.MAD // LID, QP (InformInfo.QPN), P_Key of the subscriber
	sent uint64      // Reports sent
}

// informInfo answers an InformInfo Set: subscribe or unsubscribe the
// requesting port.
func (s *SA) informInfo(r *request) reply {
	f, err := mad.DecodeInformInfo(r.data)
	if err != nil {
		return fail(mad.StatusSAReqInvalid)
	}
	var subscriber mad.GID
	if s.view != nil && s.view.sn != nil {
		if e, ok := s.view.owner(r.from.LID); ok {
			subscriber = s.view.gid(e.Node, e.Port)
		}
	}
	if f.LIDRangeBegin != 0xffff && f.LIDRangeEnd != 0 && f.LIDRangeEnd < f.LIDRangeBegin {
		return fail(mad.StatusSAReqInvalid)
	}
	echo := [][]byte{mad.AppendInformInfo(nil, &f)}
	if f.Subscribe {
		for _, sub := range s.informs {
			if sub.rec.SubscriberGID == subscriber && sub.rec.InformInfo == f {
				return reply{records: echo} // already subscribed
			}
		}
		if len(s.informs) >= MaxSubscriptions {
			return fail(mad.StatusSANoResources)
		}
		s.nextEnum++
		sub := &subscription{rec: mad.InformInfoRecordFields{SubscriberGID: subscriber, Enum: s.nextEnum, InformInfo: f},
			to: madport.MAD{LID: r.from.LID, QP: f.QPN, PKey: r.from.PKey, SL: r.from.SL}}
		s.informs = append(s.informs, sub)
		return reply{records: echo}
	}
	kept := s.informs[:0]
	found := false
	for _, sub := range s.informs {
		i := sub.rec.InformInfo
		if sub.rec.SubscriberGID == subscriber && i.GID == f.GID && i.LIDRangeBegin == f.LIDRangeBegin &&
			i.LIDRangeEnd == f.LIDRangeEnd && i.Type == f.Type && i.TrapNumber == f.TrapNumber &&
			i.IsGeneric == f.IsGeneric && i.ProducerType == f.ProducerType {
			found = true
			continue
		}
		kept = append(kept, sub)
	}
	clear(s.informs[len(kept):])
	s.informs = kept
	if !found {
		return fail(mad.StatusSAReqInvalid)
	}
	return reply{records: echo}
}

// informInfoRecords lists the subscriptions.
func (s *SA) informInfoRecords(*request) [][]byte {
	var out [][]byte
	for _, sub := range s.informs {
		out = append(out, mad.AppendInformInfoRecord(nil, &sub.rec))
	}
	return out
}

// notify reports a generic notice to every subscriber it concerns: same
// trap number (or all), type (or all) and producer (or all), issuer LID in
// the range (for trap 128), GID the one subscribed to (traps 64 to 67).
func (s *SA) notify(n mad.NoticeFields, gid mad.GID) {
	for _, sub := range s.informs {
		i := sub.rec.InformInfo
		switch {
		case !i.IsGeneric,
			i.TrapNumber != 0xffff && i.TrapNumber != n.TrapNumber,
			i.Type != 0xffff && i.Type != uint16(n.Type),
			i.ProducerType != 0xffffff && i.ProducerType != 0 && i.ProducerType != n.ProducerType,
			n.TrapNumber == TrapLinkStateChange && i.LIDRangeBegin != 0xffff &&
				(n.IssuerLID < i.LIDRangeBegin || n.IssuerLID > max(i.LIDRangeEnd, i.LIDRangeBegin)),
			n.TrapNumber != TrapLinkStateChange && !i.GID.IsZero() && i.GID != gid:
			continue
		}
		s.reportTID++
		b := make([]byte, mad.NoticeWithGIDSize)
		mad.Notice(b).Encode(&n)
		rep := Response{To: sub.to, Header: mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1,
			MgmtClass: mad.ClassSubnAdm, ClassVersion: ClassVersion, Method: mad.MethodReport,
			TransactionID: s.reportTID, AttrID: mad.AttrNotice}}, Payload: b}
		sub.sent++
		s.reports[s.reportTID] = &pendingReport{rep: rep, due: s.now().Add(ReportTimeout), tries: 1}
		s.sendReport(rep)
	}
}

// ReportTimeout is how long a Report waits for its ReportResponse before
// it is sent again; ReportTries bounds the sends.
const (
	ReportTimeout = time.Second
	ReportTries   = 4
)

// pendingReport is a Report not yet answered.
type pendingReport struct {
	rep   Response
	due   time.Time
	tries int
}

func (s *SA) sendReport(rep Response) {
	if err := s.cfg.Sender.SendSA(rep); err != nil {
		s.stats.SendFails++
		return
	}
	s.stats.Reports++
}

// reportAnswered takes a ReportResponse: its Report is done.
func (s *SA) reportAnswered(m madport.MAD) {
	tid := mad.MAD(m.Data).TransactionID()
	if p, ok := s.reports[tid]; ok && p.rep.To.LID == m.LID {
		delete(s.reports, tid)
		s.stats.ReportAck++
	}
}

// resendReports sends again the Reports whose ReportResponse is late,
// and gives up on those sent ReportTries times.
func (s *SA) resendReports() {
	now := s.now()
	tids := slices.Sorted(maps.Keys(s.reports))
	for _, tid := range tids {
		p := s.reports[tid]
		if now.Before(p.due) {
			continue
		}
		if p.tries >= ReportTries {
			delete(s.reports, tid)
			s.stats.ReportsLost++
			continue
		}
		p.tries++
		p.due = now.Add(ReportTimeout)
		s.sendReport(p.rep)
	}
}

// smNotice returns a notice the SA issues (traps 64 to 67): generic,
// subnet management, from the class manager at the SM's LID, with gid in
// its details.
func (s *SA) smNotice(trap uint16, gid mad.GID) mad.NoticeFields {
	n := mad.NoticeFields{IsGeneric: true, Type: mad.NoticeSubnetManagement, ProducerType: mad.ProducerClassManager,
		TrapNumber: trap, IssuerLID: s.smLID()}
	copy(n.DataDetails[6:], gid[:])
	sm := s.smGID()
	copy(n.IssuerGID[:], sm[:])
	return n
}

func (s *SA) smLID() uint16 {
	if s.view != nil && len(s.view.v.SMs) > 0 {
		return s.view.v.SMs[0].LID
	}
	return 0
}

func (s *SA) smGID() mad.GID {
	if s.view == nil || s.view.sn == nil {
		return mad.GID{}
	}
	sn := s.view.sn
	return s.view.gid(sn.SMNode, sn.SMPort)
}

// reportChanges tells subscribers what changed between two views: ports
// that came into service or left it, and switch ports whose state
// changed.
func (s *SA) reportChanges(old, cur *index) {
	if old == nil || old.sn == nil || cur.sn == nil || len(s.informs) == 0 {
		return
	}
	for g := range cur.byGID {
		if _, ok := old.byGID[g]; !ok {
			s.notify(s.smNotice(TrapGIDInService, g), g)
		}
	}
	for g := range old.byGID {
		if _, ok := cur.byGID[g]; !ok {
			s.notify(s.smNotice(TrapGIDOutOfService, g), g)
		}
	}
	type swPort struct {
		guid uint64
		port int
	}
	states := func(x *index) map[swPort]mad.PortState {
		m := map[swPort]mad.PortState{}
		for _, i := range x.sn.Switches() {
			n := x.sn.Topo.Node(i)
			for p := 1; p <= n.NumPorts; p++ {
				if pi, ok := x.portInfo(i, p); ok {
					m[swPort{n.GUID, p}] = pi.PortState
				}
			}
		}
		return m
	}
	before := states(old)
	for _, i := range cur.sn.Switches() {
		n := cur.sn.Topo.Node(i)
		changed := false
		for p := 1; p <= n.NumPorts && !changed; p++ {
			pi, _ := cur.portInfo(i, p)
			was, ok := before[swPort{n.GUID, p}]
			changed = ok && (was == mad.PortStateActive) != (pi.PortState == mad.PortStateActive)
		}
		if !changed {
			continue
		}
		lid := cur.lidOf(i, 0)
		n128 := mad.NoticeFields{IsGeneric: true, Type: mad.NoticeUrgent, ProducerType: mad.ProducerSwitch,
			TrapNumber: TrapLinkStateChange, IssuerLID: lid}
		binary.BigEndian.PutUint16(n128.DataDetails[0:], lid)
		g := cur.gid(i, 0)
		copy(n128.IssuerGID[:], g[:])
		s.notify(n128, g)
	}
}
