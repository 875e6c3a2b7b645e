package sa

import (
	"fmt"
	"time"

	"ibfab/internal/clock"
	"ibfab/madport"
	"ibfab/sm"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// ClassVersion is the SA class version answered (IBA 1.2: 2).
const ClassVersion = 2

// Config configures an SA.
type Config struct {
	// Sender puts answers and reports on the wire; PortSender on the
	// SM's port when nil is not allowed: New fails.
	Sender Sender
	// Clock times service leases; the real clock when nil.
	Clock clock.Clock
	// SMKey is the SM_Key: a request that carries it sees SM_Keys in
	// SMInfoRecords and M_Keys in PortInfoRecords. 0: nobody does.
	SMKey uint64
	// NoBroadcastGroup leaves out the IPoIB broadcast group of the
	// default partition that the SA otherwise creates at start.
	NoBroadcastGroup bool
	// PacketLifeTime is the PacketLifeTime of paths and groups (IBA
	// encoding: 4.096 µs × 2^v); 0 means 18, as OpenSM's subnet timeout.
	PacketLifeTime uint8
}

// SA is a Subnet Administrator. It is not safe for concurrent use: the
// SM calls it from one goroutine.
type SA struct {
	cfg  Config
	clk  clock.Clock
	view *index // nil before the first Update

	services  []*service
	informs   []*subscription
	nextEnum  uint16
	mc        *mcast
	stats     Stats
	reportTID uint64                    // the last Report's TID
	reports   map[uint64]*pendingReport // Reports awaiting their ReportResponse, by TID
}

// Stats counts what the SA did.
type Stats struct {
	Requests    uint64            // SubnAdm requests taken
	WrongSMKey  uint64            // requests dropped: an SM_Key not 0 and not the SA's
	Answered    map[string]uint64 // answers by status name ("OK", "NoRecords" …)
	Reports     uint64            // Reports sent, resends included
	ReportAck   uint64            // ReportResponses received
	ReportsLost uint64            // Reports never answered
	SendFails   uint64
	MFTSets     uint64 // MFT blocks sent
	MFTFails    uint64
}

// New returns an SA.
func New(cfg Config) (*SA, error) {
	if cfg.Sender == nil {
		return nil, fmt.Errorf("sa: no sender")
	}
	if cfg.PacketLifeTime == 0 {
		cfg.PacketLifeTime = 18
	}
	s := &SA{cfg: cfg, clk: cfg.Clock, stats: Stats{Answered: map[string]uint64{}}, reports: map[uint64]*pendingReport{}}
	if s.clk == nil {
		s.clk = clock.Real()
	}
	s.mc = newMcast(s)
	if !cfg.NoBroadcastGroup {
		s.mc.createBroadcast()
	}
	return s, nil
}

// Stats returns the SA's counters.
func (s *SA) Stats() Stats {
	st := s.stats
	st.Answered = map[string]uint64{}
	for k, v := range s.stats.Answered {
		st.Answered[k] = v
	}
	return st
}

var _ sm.SubnetAdmin = (*SA)(nil)

// Update takes a new view of the subnet: records are built from it from
// now on, subscribers hear of the ports that came and went, and the
// multicast trees are recomputed.
func (s *SA) Update(v *sm.View) {
	old := s.view
	s.view = newIndex(v)
	s.reportChanges(old, s.view)
	s.mc.forgetSwitches(old, s.view)
	s.mc.rebuild()
}

// request is one SubnAdm request as the handlers see it.
type request struct {
	from   madport.MAD // addressing of the requester; Data is the MAD
	hdr    mad.SAMAD
	method mad.Method
	attr   mad.AttrID
	mask   uint64
	data   []byte // the record, SADataSize bytes
}

// reply is a handler's answer: a status and the records.
type reply struct {
	status  mad.Status
	records [][]byte
	// size is the size of one record of a table, when it is not the
	// requested attribute's (a MultiPathRecord query's PathRecords).
	size int
}

func fail(st mad.Status) reply { return reply{status: st} }

// HandleMAD answers one SubnAdm MAD. Responses that reach it are
// ReportResponses to its Reports.
func (s *SA) HandleMAD(m madport.MAD) {
	b := mad.SAMAD(m.Data)
	if !b.IsValid() {
		return
	}
	h := b.MAD()
	if ah, ok := s.cfg.Sender.(AckHandler); ok && b.RMPPVersion() != 0 &&
		mad.RMPPType(b.RMPPType()) != mad.RMPPTypeData && ah.HandleRMPP(m) {
		return // an ACK, STOP or ABORT of one of our transfers
	}
	if b.RMPPVersion() != 0 && mad.RMPP(m.Data).Active() && !h.Method().IsResponse() {
		// A request sent as an RMPP transfer: acknowledged, and taken
		// when it is one segment (an SA request fits one MAD).
		if ra, ok := s.cfg.Sender.(RequestAcker); ok && !ra.AckRequest(m) {
			return
		}
	}
	if h.Method().IsResponse() {
		if h.Method() == mad.MethodReportResp {
			s.reportAnswered(m)
		}
		return
	}
	if k := b.SMKey(); k != 0 && k != s.cfg.SMKey {
		// A wrong SM_Key is not answered at all (as OpenSM drops it):
		// a client probing keys learns nothing.
		s.stats.WrongSMKey++
		return
	}
	s.stats.Requests++
	r := &request{from: m, hdr: b, method: h.Method(), attr: h.AttrID(), mask: b.ComponentMask(), data: b.Data()}
	var rep reply
	switch {
	case h.BaseVersion() != 1 || h.ClassVersion() != ClassVersion:
		rep = fail(mad.StatusBadVersion)
	case h.Method() == mad.MethodReport:
		return // Reports go from the SA, not to it
	default:
		rep = s.serve(r)
	}
	s.respond(r, rep)
}

// serve dispatches a request by attribute and method.
func (s *SA) serve(r *request) reply {
	switch r.method {
	case mad.MethodGet, mad.MethodGetTable, mad.MethodSet, mad.MethodDelete, mad.MethodGetMulti:
	default:
		return fail(mad.StatusMethodUnsupported)
	}
	get := r.method == mad.MethodGet || r.method == mad.MethodGetTable
	switch r.attr {
	case mad.AttrSAClassPortInfo:
		if r.method != mad.MethodGet {
			return fail(mad.StatusMethodAttrUnsupported)
		}
		return s.classPortInfo()
	case mad.AttrSAServiceRecord:
		return s.serviceRecord(r)
	case mad.AttrSAMCMemberRecord:
		return s.mcMemberRecord(r)
	case mad.AttrSAInformInfo:
		if r.method != mad.MethodSet {
			return fail(mad.StatusMethodAttrUnsupported)
		}
		return s.informInfo(r)
	case mad.AttrSAMultiPathRecord:
		if r.method != mad.MethodGetMulti {
			return fail(mad.StatusMethodAttrUnsupported)
		}
		return s.multiPathRecords(r)
	}
	l, ok := mad.SALayout(r.attr)
	if !ok || !get {
		return fail(mad.StatusMethodAttrUnsupported)
	}
	if r.attr == mad.AttrSAPathRecord {
		return s.pathRecords(r)
	}
	if r.attr == mad.AttrSAPKeyTableRecord && !s.trusted(r) {
		return fail(mad.StatusSAReqInvalid) // P_Key tables are for the SM_Key's holders
	}
	build := s.tables()[r.attr]
	if build == nil {
		return fail(mad.StatusMethodAttrUnsupported)
	}
	if s.view == nil {
		return fail(mad.StatusSANoResources)
	}
	return reply{records: s.matching(r, l, build(r))}
}

// matching returns the records of recs that match r's query, with the
// special rules of two attributes: a PortInfoRecord query's
// CapabilityMask matches records with all its bits (capPortInfoCapMaskMatch,
// as saquery -s asks), and VLArbitration and SLtoVL queries name ports
// as qosQuery reads them.
func (s *SA) matching(r *request, l *mad.SARecordLayout, recs [][]byte) [][]byte {
	data, mask := r.data, r.mask
	if r.attr == mad.AttrSAVLArbRecord || r.attr == mad.AttrSASLtoVLRecord {
		data, mask = s.view.qosQuery(r.attr, data, mask)
	}
	capBit := mad.SAPortInfoRecordLayout.Bit("CapabilityMask")
	capMatch := r.attr == mad.AttrSAPortInfoRecord && mask&capBit != 0
	if capMatch {
		mask &^= capBit
	}
	c := mad.SAPortInfoRecordLayout.Components[mad.SAPortInfoRecordLayout.Component("CapabilityMask")]
	var out [][]byte
	for _, rec := range recs {
		if !l.Match(data, rec, mask) || capMatch && c.Uint(rec)&c.Uint(data) != c.Uint(data) {
			continue
		}
		out = append(out, rec)
	}
	return out
}

// respond answers r with rep: GetResp (Get, Set), GetTableResp or
// DeleteResp, the request's TID, attribute and component mask.
func (s *SA) respond(r *request, rep reply) {
	method := r.method | mad.MethodResponse
	switch r.method {
	case mad.MethodSet:
		method = mad.MethodGetResp
	case mad.MethodGetTable:
		method = mad.MethodGetTableResp
	case mad.MethodDelete:
		method = mad.MethodDeleteResp
	case mad.MethodGetMulti:
		method = mad.MethodGetMultiResp
	}
	table := r.method == mad.MethodGetTable || r.method == mad.MethodGetMulti
	st := rep.status
	if st == mad.StatusOK && !table {
		switch {
		case len(rep.records) == 0:
			st = mad.StatusSANoRecords
		case len(rep.records) > 1:
			st = mad.StatusSATooManyRecords
		}
	}
	h := r.hdr.MAD()
	f := Response{To: r.from, Header: mad.SAMADFields{MAD: mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm,
		ClassVersion: ClassVersion, Method: method, Status: st, TransactionID: h.TransactionID(), AttrID: h.AttrID(),
		AttrModifier: h.AttrModifier()}, ComponentMask: r.mask}}
	switch {
	case st != mad.StatusOK && !table:
		// A failed Get, Set or Delete returns the request's record.
		f.Payload = append([]byte(nil), r.data...)
	case table:
		size := rep.size
		if l, ok := mad.SALayout(r.attr); ok && size == 0 {
			size = l.Size
		}
		f.Header.AttributeOffset = uint16(size / 8)
		for _, rec := range rep.records {
			f.Payload = append(f.Payload, rec...)
		}
	default:
		f.Payload = rep.records[0]
	}
	name := mad.SAStatusName(st)
	if name == "" {
		name = (st &^ mad.StatusClassMask).String()
	}
	s.stats.Answered[name]++
	if err := s.cfg.Sender.SendSA(f); err != nil {
		s.stats.SendFails++
	}
}

// classPortInfo answers ClassPortInfo: the SA's capabilities.
func (s *SA) classPortInfo() reply {
	// No redirection: the SA answers at QP1 itself, as OpenSM's
	// ClassPortInfo says it (QP 1, the QP1 Q_Key).
	f := mad.ClassPortInfoFields{BaseVersion: 1, ClassVersion: ClassVersion,
		CapabilityMask: capTrapSupported | capOptionalRecords | capMulticastSupported | capMultiPathSupported |
			capPortInfoCapMaskMatch,
		CapabilityMask2: cap2MulticastTopSupported, RespTimeValue: 18,
		Redirect: mad.ClassPortInfoAddr{QP: 1, QKey: wire.QP1QKey}, Trap: mad.ClassPortInfoAddr{QKey: wire.QP1QKey}}
	return reply{records: [][]byte{mad.AppendClassPortInfo(nil, &f)}}
}

// SA ClassPortInfo CapabilityMask bits (IBA 15.2.5.1; OpenSM's
// osm_base.h names them the same way).
const (
	capTrapSupported      = 1 << 0  // IsSubnetTrapSupported: Reports are sent
	capOptionalRecords    = 1 << 8  // IsSubnetOptionalRecordsSupported
	capMulticastSupported = 1 << 9  // IsUDMulticastSupported
	capMultiPathSupported = 1 << 10 // IsMultiPathSupported
	// IsPortInfoCapMaskMatchSupported: a PortInfoRecord query's
	// CapabilityMask matches records with all its bits.
	capPortInfoCapMaskMatch = 1 << 13

	// CapabilityMask2: IsMulticastFDBTopSupported (saquery then shows
	// SwitchInfo's MulticastFDBTop).
	cap2MulticastTopSupported = 1 << 3
)

// Response is one SA answer or Report: the MAD and SA headers and the
// payload, of any length; a Sender puts it on the wire.
type Response struct {
	To      madport.MAD // the requester's address (LID, QP, P_Key, SL); its Data is ignored
	Header  mad.SAMADFields
	Payload []byte
}

// Sender sends SA answers.
type Sender interface {
	SendSA(r Response) error
}

// Segments builds the MADs of r: one when the payload fits, else the RMPP
// DATA segments (each with the SA header repeated, as OpenSM's segments
// carry it) in order.
func Segments(r *Response) [][]byte {
	f := r.Header
	rmpp := usesRMPP(r)
	n := max(1, (len(r.Payload)+mad.SADataSize-1)/mad.SADataSize)
	out := make([][]byte, 0, n)
	for i := range n {
		g := f
		g.Data = [mad.SADataSize]byte{}
		chunk := r.Payload[min(i*mad.SADataSize, len(r.Payload)):min((i+1)*mad.SADataSize, len(r.Payload))]
		copy(g.Data[:], chunk)
		if rmpp {
			g.RMPPVersion, g.RMPPType, g.SegmentNumber = mad.RMPPVersion1, uint8(mad.RMPPTypeData), uint32(i+1)
			g.RMPPFlags = uint8(mad.RMPPFlagActive)
			if i == 0 {
				g.RMPPFlags |= uint8(mad.RMPPFlagFirst)
				g.PayloadLength = uint32(mad.SAHeaderSize + len(r.Payload))
			}
			if i == n-1 {
				g.RMPPFlags |= uint8(mad.RMPPFlagLast)
				g.PayloadLength = uint32(mad.SAHeaderSize + len(chunk))
			}
		}
		out = append(out, mad.AppendSAMAD(nil, &g))
	}
	return out
}

// usesRMPP reports whether answer r goes with an RMPP header: a
// GetTableResp or GetMultiResp, or one longer than a MAD.
func usesRMPP(r *Response) bool {
	m := r.Header.MAD.Method
	return m == mad.MethodGetTableResp || m == mad.MethodGetMultiResp || len(r.Payload) > mad.SADataSize
}

// now is the SA's time.
func (s *SA) now() time.Time { return s.clk.Now() }
