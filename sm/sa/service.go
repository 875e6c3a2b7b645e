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
// Delete (deregister). The records answered carry a zero ServiceKey
// unless the request carries the SM_Key (IBA 15.2.5.14, as OpenSM).
func (s *SA) serviceRecord(r *request) reply {
	rep := s.serviceRecords(r)
	if !s.trusted(r) {
		c := mad.SAServiceRecordLayout.Components[mad.SAServiceRecordLayout.Component("ServiceKey")]
		for _, rec := range rep.records {
			clear(rec[c.Bit/8 : (c.Bit+c.Bits)/8])
		}
	}
	return rep
}

func (s *SA) serviceRecords(r *request) reply {
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
		return s.registerService(r, rec)
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

// registerService answers a ServiceRecord Set: the registration is made
// or replaced (same ServiceID, ServiceGID and ServiceP_Key). As OpenSM:
// ServiceID and ServiceGID are required (ReqInvalid without them), no
// ServiceLease means an indefinite one, no ServiceP_Key the default
// partition's. A unicast ServiceGID's port is found by its interface ID
// alone (osmtest sends the subnet prefix byte-swapped); ibsm refuses a
// GUID no port has (ReqInvalidGID), which OpenSM does only with a
// ServiceP_Key. With a ServiceP_Key, the requester and the service's
// port must hold it (ReqInvalid).
func (s *SA) registerService(r *request, rec []byte) reply {
	l := mad.SAServiceRecordLayout
	need := l.Bit("ServiceID") | l.Bit("ServiceGID")
	if r.mask&need != need {
		return fail(mad.StatusSAReqInvalid)
	}
	if r.mask&l.Bit("ServiceLease") == 0 {
		l.Components[4].SetUint(rec, uint64(mad.ServiceLeaseIndefinite))
	}
	withPKey := r.mask&l.Bit("ServiceP_Key") != 0
	if !withPKey {
		l.Components[2].SetUint(rec, 0xffff)
	}
	f, _ := mad.DecodeServiceRecord(rec)
	if st := s.servicePort(r, &f, withPKey); st != mad.StatusOK {
		return fail(st)
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
	// The answer is the record as registered, its lease as given.
	return reply{records: [][]byte{append([]byte(nil), rec...)}}
}

// servicePort checks a registration's ServiceGID and ServiceP_Key
// against the subnet (nothing to check before the first sweep).
func (s *SA) servicePort(r *request, f *mad.ServiceRecordFields, withPKey bool) mad.Status {
	x := s.view
	if x == nil || x.sn == nil || f.GID.IsMulticast() {
		return mad.StatusOK
	}
	i, ok := x.byGUID[f.GID.GUID()]
	if !ok {
		return mad.StatusSAReqInvalidGID
	}
	if !withPKey {
		return mad.StatusOK
	}
	e := x.ends[i]
	if !x.hasPKey(e.Node, e.Port, f.PKey, false) {
		return mad.StatusSAReqInvalid
	}
	if from, ok := x.owner(r.from.LID); ok && !x.hasPKey(from.Node, from.Port, f.PKey, false) {
		return mad.StatusSAReqInvalid
	}
	return mad.StatusOK
}
