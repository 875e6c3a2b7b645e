package mad

import "encoding/binary"

// SMInfoSize is the length of the SMInfo fields; the rest of the 64-byte
// SMP data is reserved.
const SMInfoSize = 21

//go:generate go tool stringer -type=SMState -linecomment

// SMState is the state of a subnet manager (IBA 14.4.1).
type SMState uint8

// SM states.
const (
	SMStateNotActive   SMState = 0 // NotActive
	SMStateDiscovering SMState = 1 // Discovering
	SMStateStandby     SMState = 2 // Standby
	SMStateMaster      SMState = 3 // Master
)

// Attribute modifiers of an SMInfo Set: what one SM asks of another
// (IBA 14.4).
const (
	SMInfoHandover    uint32 = 1
	SMInfoAcknowledge uint32 = 2
	SMInfoDisable     uint32 = 3
	SMInfoStandby     uint32 = 4
	SMInfoDiscover    uint32 = 5
)

// The SMInfo attribute, IBA 14.2.5.13:
//
//	    0               8               16              24            31
//	   +---------------------------------------------------------------+
//	 0 |                           GUID (64)                           |
//	 4 |                                                               |
//	   +---------------------------------------------------------------+
//	 8 |                          SM_Key (64)                          |
//	12 |                                                               |
//	   +---------------------------------------------------------------+
//	16 |                           ActCount                            |
//	   +-------+-------+-----------------------------------------------+
//	20 |Priorit|SMState|
//	   +-------+-------+
const (
	smiGUID          = 0
	smiSMKey         = 8
	smiActCount      = 16
	smiPriorityState = 20

	smiPriorityShift = 4
	smiNibbleMask    = 0x0f
)

// SMInfo is a view of the SMInfo attribute, usually SMP.Data(). Its
// methods do not check lengths: callers must check IsValid first, or they
// may panic.
type SMInfo []byte

// SMInfoFields holds the SMInfo fields, for building one.
type SMInfoFields struct {
	GUID     uint64
	SMKey    uint64
	ActCount uint32
	Priority uint8 // 4 bits
	SMState  SMState
}

// IsValid reports whether b is long enough for an SMInfo.
func (b SMInfo) IsValid() bool { return len(b) >= SMInfoSize }

// GUID returns the "GUID" field: the port GUID of the SM.
func (b SMInfo) GUID() uint64 { return binary.BigEndian.Uint64(b[smiGUID:]) }

// SetGUID sets the "GUID" field.
func (b SMInfo) SetGUID(g uint64) { binary.BigEndian.PutUint64(b[smiGUID:], g) }

// SMKey returns the "SM_Key" field; an SM returns it only to a requester
// that knows it (IBA 14.4.3).
func (b SMInfo) SMKey() uint64 { return binary.BigEndian.Uint64(b[smiSMKey:]) }

// SetSMKey sets the "SM_Key" field.
func (b SMInfo) SetSMKey(k uint64) { binary.BigEndian.PutUint64(b[smiSMKey:], k) }

// ActCount returns the "ActCount" field, which a master SM keeps
// incrementing to show it is alive.
func (b SMInfo) ActCount() uint32 { return binary.BigEndian.Uint32(b[smiActCount:]) }

// SetActCount sets the "ActCount" field.
func (b SMInfo) SetActCount(n uint32) { binary.BigEndian.PutUint32(b[smiActCount:], n) }

// Priority returns the 4-bit "Priority" field; higher wins the election.
func (b SMInfo) Priority() uint8 { return b[smiPriorityState] >> smiPriorityShift }

// SetPriority sets the 4-bit "Priority" field.
func (b SMInfo) SetPriority(p uint8) {
	b[smiPriorityState] = b[smiPriorityState]&smiNibbleMask | (p&smiNibbleMask)<<smiPriorityShift
}

// SMState returns the 4-bit "SMState" field.
func (b SMInfo) SMState() SMState { return SMState(b[smiPriorityState] & smiNibbleMask) }

// SetSMState sets the 4-bit "SMState" field.
func (b SMInfo) SetSMState(s SMState) {
	b[smiPriorityState] = b[smiPriorityState]&^smiNibbleMask | uint8(s)&smiNibbleMask
}

// Encode writes f into b.
func (b SMInfo) Encode(f *SMInfoFields) {
	b.SetGUID(f.GUID)
	b.SetSMKey(f.SMKey)
	b.SetActCount(f.ActCount)
	b.SetPriority(f.Priority)
	b.SetSMState(f.SMState)
}

// Fields returns the fields of b.
func (b SMInfo) Fields() SMInfoFields {
	return SMInfoFields{
		GUID:     b.GUID(),
		SMKey:    b.SMKey(),
		ActCount: b.ActCount(),
		Priority: b.Priority(),
		SMState:  b.SMState(),
	}
}

// AppendSMInfo appends an SMInfo built from f to dst.
func AppendSMInfo(dst []byte, f *SMInfoFields) []byte {
	dst, b := grow(dst, SMInfoSize)
	SMInfo(b).Encode(f)
	return dst
}

// DecodeSMInfo returns the SMInfo fields in b, or an error if b is too
// short.
func DecodeSMInfo(b []byte) (SMInfoFields, error) {
	if !SMInfo(b).IsValid() {
		return SMInfoFields{}, truncated("SMInfo", len(b), SMInfoSize)
	}
	return SMInfo(b).Fields(), nil
}
