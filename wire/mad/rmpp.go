package mad

import (
	"encoding/binary"
	"fmt"
)

// The RMPP header (IBA 13.6.2.1) follows the common MAD header in every
// MAD of a class that uses the reliable multi-packet transaction protocol
// (RMPPClass), whether or not the MAD is part of a multi-segment transfer:
//
//	    0               8               16           21  24            31
//	   +---------------+---------------+-------------+---+---------------+
//	24 |  RMPPVersion  |   RMPPType    |  RRespTime  |Flg|  RMPPStatus   |
//	   +---------------+---------------+-------------+---+---------------+
//	28 |       Data1: SegmentNumber (DATA, ACK), else reserved (32)      |
//	   +-----------------------------------------------------------------+
//	32 | Data2: PayloadLength (DATA), NewWindowLast (ACK), else reserved |
//	   +-----------------------------------------------------------------+
//	36 |                 RMPP payload (220 bytes)                        |
//
// Flg is RMPPFlags: bit 0 Active, bit 1 First, bit 2 Last.
const (
	rmppVersion  = 24
	rmppType     = 25
	rmppTimeFlag = 26
	rmppStatus   = 27
	rmppData1    = 28
	rmppData2    = 32

	// RMPPHeaderEnd is the offset of the RMPP payload: the common header
	// and the RMPP header.
	RMPPHeaderEnd = 36
	// RMPPSegmentSize is the RMPP payload one MAD carries.
	RMPPSegmentSize = MADSize - RMPPHeaderEnd
)

// RMPPVersion1 is the only RMPP version (IBA 13.6.2.1); 0 means the MAD
// does not use RMPP.
const RMPPVersion1 = 1

// RMPPNoRespTime is the RRespTime value that gives no response time.
const RMPPNoRespTime = 0x1f

//go:generate go tool stringer -type=RMPPType,RMPPStatus -linecomment

// RMPPType is the kind of an RMPP packet.
type RMPPType uint8

// RMPP packet types (IBA 13.6.2.1).
const (
	// RMPPTypeNone: the MAD is not an RMPP packet
	RMPPTypeNone  RMPPType = 0 // None
	RMPPTypeData  RMPPType = 1 // DATA
	RMPPTypeAck   RMPPType = 2 // ACK
	RMPPTypeStop  RMPPType = 3 // STOP
	RMPPTypeAbort RMPPType = 4 // ABORT
)

// RMPPFlags are the three flag bits of the RMPP header.
type RMPPFlags uint8

// RMPP flags.
const (
	RMPPFlagActive RMPPFlags = 1 << 0 // the MAD is part of an RMPP transfer
	RMPPFlagFirst  RMPPFlags = 1 << 1 // first DATA segment
	RMPPFlagLast   RMPPFlags = 1 << 2 // last DATA segment
	rmppFlagMask   RMPPFlags = 7
)

// RMPPStatus is the status of an RMPP packet: 0 in DATA and ACK, the
// reason in STOP and ABORT.
type RMPPStatus uint8

// RMPP status codes (IBA 13.6.2.1, table "RMPP Status Field").
const (
	// RMPPStatusNormal: no error
	RMPPStatusNormal RMPPStatus = 0 // Normal
	// RMPPStatusResources: STOP: resources exhausted
	RMPPStatusResources RMPPStatus = 1 // ResourcesExhausted
	// RMPPStatusTotalTime: ABORT: total time too long
	RMPPStatusTotalTime RMPPStatus = 118 // TotalTimeTooLong
	// RMPPStatusBadLength: ABORT: inconsistent Last and PayloadLength
	RMPPStatusBadLength RMPPStatus = 119 // InconsistentLastAndPayloadLength
	// RMPPStatusBadSegment: ABORT: inconsistent First and SegmentNumber
	RMPPStatusBadSegment RMPPStatus = 120 // InconsistentFirstAndSegmentNumber
	// RMPPStatusBadType: ABORT: bad RMPPType
	RMPPStatusBadType RMPPStatus = 121 // BadRMPPType
	// RMPPStatusWindowSmall: ABORT: NewWindowLast too small
	RMPPStatusWindowSmall RMPPStatus = 122 // NewWindowLastTooSmall
	// RMPPStatusSegmentBig: ABORT: SegmentNumber too big
	RMPPStatusSegmentBig RMPPStatus = 123 // SegmentNumberTooBig
	// RMPPStatusIllegal: ABORT: illegal status
	RMPPStatusIllegal RMPPStatus = 124 // IllegalStatus
	// RMPPStatusUnsupported: ABORT: unsupported version
	RMPPStatusUnsupported RMPPStatus = 125 // UnsupportedVersion
	// RMPPStatusRetries: ABORT: too many retries
	RMPPStatusRetries RMPPStatus = 126 // TooManyRetries
	// RMPPStatusUnspecified: ABORT: unspecified
	RMPPStatusUnspecified RMPPStatus = 127 // Unspecified
	rmppStatusAbortFirst  RMPPStatus = RMPPStatusTotalTime
	rmppStatusAbortLast   RMPPStatus = RMPPStatusUnspecified
)

// IsAbort reports whether s is a status an ABORT may carry.
func (s RMPPStatus) IsAbort() bool { return s >= rmppStatusAbortFirst && s <= rmppStatusAbortLast }

// IsStop reports whether s is a status a STOP may carry.
func (s RMPPStatus) IsStop() bool { return s == RMPPStatusResources }

// RMPPClass reports whether MADs of class c carry an RMPP header: the
// subnet administration, device management, device administration and
// baseboard classes and the second vendor range (0x30-0x4F), as the
// kernel's MAD layer decides it.
func RMPPClass(c MgmtClass) bool {
	switch c {
	case ClassSubnAdm, ClassDevMgt, 0x10, 0x12:
		return true
	}
	return c >= 0x30 && c <= 0x4f
}

// RMPPClassHeaderSize is the size of everything before the data of a MAD
// of class c: the common header, the RMPP header and the class's own
// header. Each segment of a multi-segment transfer repeats it; only what
// follows it is split across segments (the kernel's segmentation: SA 56
// bytes, device management 64, vendor range 2 40, others 36).
func RMPPClassHeaderSize(c MgmtClass) int {
	switch {
	case c == ClassSubnAdm:
		return 56
	case c == ClassDevMgt || c == 0x12:
		return 64
	case c >= 0x30 && c <= 0x4f:
		return 40
	}
	return RMPPHeaderEnd
}

// RMPP is a view of a MAD of an RMPP class. Its methods do not check
// lengths: callers must check IsValid first, or they may panic.
type RMPP []byte

// RMPPFields holds the RMPP header, for building one.
type RMPPFields struct {
	Version  uint8
	Type     RMPPType
	RespTime uint8 // RRespTime, 5 bits
	Flags    RMPPFlags
	Status   RMPPStatus
	Data1    uint32 // SegmentNumber
	Data2    uint32 // PayloadLength or NewWindowLast
}

// IsValid reports whether b holds a whole MAD (and so a whole RMPP header).
func (b RMPP) IsValid() bool { return len(b) >= MADSize }

// MAD returns the common header view of b.
func (b RMPP) MAD() MAD { return MAD(b) }

// Version returns "RMPPVersion".
func (b RMPP) Version() uint8 { return b[rmppVersion] }

// SetVersion sets "RMPPVersion".
func (b RMPP) SetVersion(v uint8) { b[rmppVersion] = v }

// Type returns "RMPPType".
func (b RMPP) Type() RMPPType { return RMPPType(b[rmppType]) }

// SetType sets "RMPPType".
func (b RMPP) SetType(t RMPPType) { b[rmppType] = uint8(t) }

// RespTime returns "RRespTime" (5 bits).
func (b RMPP) RespTime() uint8 { return b[rmppTimeFlag] >> 3 }

// SetRespTime sets "RRespTime"; bits above the fifth are ignored.
func (b RMPP) SetRespTime(t uint8) {
	b[rmppTimeFlag] = b[rmppTimeFlag]&uint8(rmppFlagMask) | (t&0x1f)<<3
}

// Flags returns "RMPPFlags".
func (b RMPP) Flags() RMPPFlags { return RMPPFlags(b[rmppTimeFlag]) & rmppFlagMask }

// SetFlags sets "RMPPFlags"; bits above the third are ignored.
func (b RMPP) SetFlags(f RMPPFlags) {
	b[rmppTimeFlag] = b[rmppTimeFlag]&^uint8(rmppFlagMask) | uint8(f&rmppFlagMask)
}

// Active reports whether the Active flag is set.
func (b RMPP) Active() bool { return b.Flags()&RMPPFlagActive != 0 }

// Status returns "RMPPStatus".
func (b RMPP) Status() RMPPStatus { return RMPPStatus(b[rmppStatus]) }

// SetStatus sets "RMPPStatus".
func (b RMPP) SetStatus(s RMPPStatus) { b[rmppStatus] = uint8(s) }

// SegmentNumber returns Data1, the "SegmentNumber" of a DATA or ACK.
func (b RMPP) SegmentNumber() uint32 { return binary.BigEndian.Uint32(b[rmppData1:]) }

// SetSegmentNumber sets Data1.
func (b RMPP) SetSegmentNumber(n uint32) { binary.BigEndian.PutUint32(b[rmppData1:], n) }

// PayloadLength returns Data2, the "PayloadLength" of a DATA: in the first
// segment the length of the whole transfer's RMPP payload, in the last
// the bytes of its payload that are used, else 0.
func (b RMPP) PayloadLength() uint32 { return binary.BigEndian.Uint32(b[rmppData2:]) }

// SetPayloadLength sets Data2.
func (b RMPP) SetPayloadLength(n uint32) { binary.BigEndian.PutUint32(b[rmppData2:], n) }

// NewWindowLast returns Data2, the "NewWindowLast" of an ACK: the last
// segment the receiver lets the sender send.
func (b RMPP) NewWindowLast() uint32 { return binary.BigEndian.Uint32(b[rmppData2:]) }

// SetNewWindowLast sets Data2.
func (b RMPP) SetNewWindowLast(n uint32) { binary.BigEndian.PutUint32(b[rmppData2:], n) }

// Payload returns the RMPP payload of the segment.
func (b RMPP) Payload() []byte { return b[RMPPHeaderEnd:MADSize] }

// Encode writes f into the RMPP header of b.
func (b RMPP) Encode(f *RMPPFields) {
	b.SetVersion(f.Version)
	b.SetType(f.Type)
	b[rmppTimeFlag] = 0
	b.SetRespTime(f.RespTime)
	b.SetFlags(f.Flags)
	b.SetStatus(f.Status)
	b.SetSegmentNumber(f.Data1)
	b.SetPayloadLength(f.Data2)
}

// Fields returns the RMPP header of b.
func (b RMPP) Fields() RMPPFields {
	return RMPPFields{
		Version:  b.Version(),
		Type:     b.Type(),
		RespTime: b.RespTime(),
		Flags:    b.Flags(),
		Status:   b.Status(),
		Data1:    b.SegmentNumber(),
		Data2:    b.PayloadLength(),
	}
}

// DecodeRMPP returns the RMPP header of the MAD in data, which must hold a
// whole MAD.
func DecodeRMPP(data []byte) (RMPPFields, error) {
	if len(data) < MADSize {
		return RMPPFields{}, truncated("RMPP MAD", len(data), MADSize)
	}
	return RMPP(data).Fields(), nil
}

func (f RMPPFields) String() string {
	return fmt.Sprintf("RMPP v%d %v flags %#x status %v seg %d data2 %d", f.Version, f.Type, uint8(f.Flags), f.Status, f.Data1, f.Data2)
}
