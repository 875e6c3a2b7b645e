package agent

import (
	"sync/atomic"

	"ibfab/wire/mad"
)

// Stats counts what the agent did with the MADs it was given. Every MAD
// that is dropped lands in exactly one of the drop counters; a MAD that is
// answered with an error status lands in one of the status counters.
type Stats struct {
	Received  uint64 `json:"received"`   // MADs given to HandleMAD and Send
	Responses uint64 `json:"responses"`  // responses produced (any status)
	Forwarded uint64 `json:"forwarded"`  // directed-route SMPs passed on through this node
	Local     uint64 `json:"local"`      // MADs handed to the node's own SM
	TrapsSent uint64 `json:"traps_sent"` // traps emitted, repeats included

	// Answered with an error status.
	BadVersion          uint64 `json:"bad_version"` // base or class version
	MethodUnsupported   uint64 `json:"method_unsupported"`
	MethodAttrUnsupport uint64 `json:"method_attr_unsupported"` // unknown attribute, or method not valid for it
	InvalidField        uint64 `json:"invalid_field"`

	// Adaptive routing (class 0x0A, ar.go): requests answered, whatever
	// their status, and Sets that changed the table the crossbar reads.
	ARRequests uint64 `json:"ar_requests"`
	ARUpdates  uint64 `json:"ar_updates"`

	// Dropped.
	Malformed       uint64 `json:"malformed"`         // too short, or an unknown arrival port
	DRDropped       uint64 `json:"dr_dropped"`        // failed a directed-route check (hop pointer, path port, D bit, LIDs)
	Misaddressed    uint64 `json:"misaddressed"`      // LID-routed MAD for a LID this node does not have
	Unroutable      uint64 `json:"unroutable"`        // response or trap with no forwarding table entry, or unmapped VL
	MKeyViolations  uint64 `json:"mkey_violations"`   // failed the M_Key check: dropped silently
	PKeyViolations  uint64 `json:"pkey_violations"`   // GMP whose P_Key the port's table does not match
	CCKeyViolations uint64 `json:"cc_key_violations"` // congestion control MAD with a wrong CC_Key: dropped silently
	Unexpected      uint64 `json:"unexpected"`        // responses and other MADs no one here takes
	TrapsDropped    uint64 `json:"traps_dropped"`     // traps that could not be sent (no Sender, no route)
}

// stats is Stats kept in atomics, so the counters need no lock.
type stats struct {
	received, responses, forwarded, local, trapsSent           atomic.Uint64
	badVersion, methodUnsupported, methodAttrUnsup, invalidFld atomic.Uint64
	malformed, drDropped, misaddressed, unroutable             atomic.Uint64
	mkeyViolations, pkeyViolations, unexpected, trapsDropped   atomic.Uint64
	ccKeyViolations, arRequests, arUpdates                     atomic.Uint64
}

// Stats returns a snapshot of the agent's counters.
func (a *Agent) Stats() Stats {
	s := &a.stats
	return Stats{
		Received:            s.received.Load(),
		Responses:           s.responses.Load(),
		Forwarded:           s.forwarded.Load(),
		Local:               s.local.Load(),
		TrapsSent:           s.trapsSent.Load(),
		BadVersion:          s.badVersion.Load(),
		MethodUnsupported:   s.methodUnsupported.Load(),
		MethodAttrUnsupport: s.methodAttrUnsup.Load(),
		InvalidField:        s.invalidFld.Load(),
		ARRequests:          s.arRequests.Load(),
		ARUpdates:           s.arUpdates.Load(),
		Malformed:           s.malformed.Load(),
		DRDropped:           s.drDropped.Load(),
		Misaddressed:        s.misaddressed.Load(),
		Unroutable:          s.unroutable.Load(),
		MKeyViolations:      s.mkeyViolations.Load(),
		PKeyViolations:      s.pkeyViolations.Load(),
		CCKeyViolations:     s.ccKeyViolations.Load(),
		Unexpected:          s.unexpected.Load(),
		TrapsDropped:        s.trapsDropped.Load(),
	}
}

// Dropped returns the sum of the drop counters.
func (s Stats) Dropped() uint64 {
	return s.Malformed + s.DRDropped + s.Misaddressed + s.Unroutable +
		s.MKeyViolations + s.PKeyViolations + s.CCKeyViolations + s.Unexpected
}

// countStatus counts a response's error status.
func (s *stats) countStatus(st mad.Status) {
	switch st.Code() {
	case mad.StatusBadVersion:
		s.badVersion.Add(1)
	case mad.StatusMethodUnsupported:
		s.methodUnsupported.Add(1)
	case mad.StatusMethodAttrUnsupported:
		s.methodAttrUnsup.Add(1)
	case mad.StatusInvalidField:
		s.invalidFld.Add(1)
	}
}
