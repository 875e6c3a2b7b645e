package mad

import (
	"fmt"
	"strings"
)

// Status is the MAD status word (IBA 13.4.7). In a directed-route SMP the
// top bit is the D (direction) bit instead, so only the low 15 bits are
// status there; DRSMP.Status strips it.
//
//	 15             8 7     5 4      2    1       0
//	+----------------+-------+--------+--------+------+
//	| class-specific | rsvd  |  code  |redirect| busy |
//	+----------------+-------+--------+--------+------+
type Status uint16

// Status bits and codes (IBA 13.4.7).
const (
	StatusOK Status = 0x0000

	// StatusBusy: the request was not processed; retry it later.
	StatusBusy Status = 0x0001
	// StatusRedirect: the requester must redirect to the agent named in
	// the ClassPortInfo data of this response.
	StatusRedirect Status = 0x0002

	// StatusBadVersion: the base or class version is not supported.
	StatusBadVersion Status = 1 << statusCodeShift
	// StatusMethodUnsupported: the method is not supported for the class.
	StatusMethodUnsupported Status = 2 << statusCodeShift
	// StatusMethodAttrUnsupported: the method/attribute combination is not
	// supported (this is also the answer for an unknown attribute).
	StatusMethodAttrUnsupported Status = 3 << statusCodeShift
	// StatusInvalidField: one or more fields of the attribute or the
	// attribute modifier hold an invalid value.
	StatusInvalidField Status = 7 << statusCodeShift

	// StatusCodeMask selects the 3-bit invalid-field code.
	StatusCodeMask Status = 7 << statusCodeShift
	// StatusClassMask selects the class-specific byte.
	StatusClassMask Status = 0xff00
)

const statusCodeShift = 2

// Busy reports whether the busy bit is set.
func (s Status) Busy() bool { return s&StatusBusy != 0 }

// Redirect reports whether the redirect-required bit is set.
func (s Status) Redirect() bool { return s&StatusRedirect != 0 }

// Code returns s with everything but the invalid-field code cleared, so it
// compares equal to StatusBadVersion, StatusInvalidField and so on.
func (s Status) Code() Status { return s & StatusCodeMask }

// String names the bits and the code that are set, joined by "|"; "OK" for 0.
func (s Status) String() string {
	if s == StatusOK {
		return "OK"
	}
	var parts []string
	if s.Busy() {
		parts = append(parts, "Busy")
	}
	if s.Redirect() {
		parts = append(parts, "Redirect")
	}
	switch c := s.Code(); c {
	case 0:
	case StatusBadVersion:
		parts = append(parts, "BadVersion")
	case StatusMethodUnsupported:
		parts = append(parts, "MethodUnsupported")
	case StatusMethodAttrUnsupported:
		parts = append(parts, "MethodAttrUnsupported")
	case StatusInvalidField:
		parts = append(parts, "InvalidField")
	default:
		parts = append(parts, fmt.Sprintf("Code(%d)", c>>statusCodeShift))
	}
	if rest := s &^ (StatusBusy | StatusRedirect | StatusCodeMask); rest != 0 {
		parts = append(parts, fmt.Sprintf("%#04x", uint16(rest)))
	}
	return strings.Join(parts, "|")
}
