package sa

import (
	"time"

	"ibfab/wire/mad"
)

// service is a registered ServiceRecord and when its lease ends (zero:
// never).
type service struct {
	rec     []byte // the record as registered, Lease as given
	expires time.Time
}

// srKey is what identifies a registration: ServiceID, ServiceGID and
// ServiceP_Key (IBA 15.2.5.14: a Set with the same three replaces it).
func srKey(rec []byte) string { return string(rec[0:26]) }

// expireServices drops the registrations whose lease ended.
func (s *SA) expireServices() {
	now := s.now()
	kept := s.services[:0]
	for _, sv := range s.services {
		if sv.expires.IsZero() || now.Before(sv.expires) {
			kept = append(kept, sv)
		}
	}
	clear(s.services[len(kept):])
	s.services = kept
}

// current returns sv's record with the lease left, in seconds.
func (s *SA) current(sv *service) []byte {
	rec := append([]byte(nil), sv.rec...)
	if !sv.expires.IsZero() {
		left := max(0, int64(sv.expires.Sub(s.now())/time.Second))
		mad.SAServiceRecordLayout.Components[4].SetUint(rec, uint64(left))
	}
	return rec
}

// serviceRecord answers ServiceRecord Get, GetTable, Set (register) and
// Delete (deregister).
func (s *SA) serviceRecord(r *request) reply {
	l := mad.SAServiceRecordLayout
	s.expireServices()
	rec := append([]byte(nil), r.data[:l.Size]...)
	switch r.method {
	case mad.MethodGet, mad.MethodGetTable:
		var out [][]byte
		for _, sv := range s.services {
			cur := s.current(sv)
			if l.Match(rec, cur, r.mask&^l.Bit("ServiceLease")) {
				out = append(out, cur)
			}
		}
		return reply{records: out}
	case mad.MethodSet:
		need := l.Bit("ServiceID") | l.Bit("ServiceGID")
		if r.mask&need != need {
			return fail(mad.StatusSAReqInsufficient)
		}
		if r.mask&l.Bit("ServiceP_Key") == 0 {
			l.Components[2].SetUint(rec, 0xffff)
		}
		f, _ := mad.DecodeServiceRecord(rec)
		if s.view != nil {
			if _, ok := s.view.byGID[f.GID]; !ok {
				return fail(mad.StatusSAReqInvalidGID)
			}
		}
		sv := &service{rec: rec}
		if f.Lease != mad.ServiceLeaseIndefinite {
			sv.expires = s.now().Add(time.Duration(f.Lease) * time.Second)
		}
		replaced := false
		for i, old := range s.services {
			if srKey(old.rec) == srKey(rec) {
				s.services[i], replaced = sv, true
			}
		}
		if !replaced {
			if len(s.services) >= MaxServices {
				return fail(mad.StatusSANoResources)
			}
			s.services = append(s.services, sv)
		}
		return reply{records: [][]byte{s.current(sv)}}
	case mad.MethodDelete:
		var gone [][]byte
		kept := s.services[:0]
		for _, sv := range s.services {
			if l.Match(rec, sv.rec, r.mask&^l.Bit("ServiceLease")) {
				gone = append(gone, s.current(sv))
				continue
			}
			kept = append(kept, sv)
		}
		clear(s.services[len(kept):])
		s.services = kept
		if len(gone) > 1 {
			gone = gone[:1] // the Delete answers with one record; all matching went
		}
		return reply{records: gone}
	}
	return fail(mad.StatusMethodAttrUnsupported)
}
