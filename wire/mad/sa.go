package mad

import (
	"encoding/binary"
	"fmt"
)

// The SubnAdm (class 0x03) MAD, IBA 15.2.1: the common MAD header, the
// RMPP header (13.6.2.1, every SA MAD carries one) and the SA header.
//
//	    0               8               16              24            31
//	   +---------------------------------------------------------------+
//	 0 |                  common MAD header (24 bytes)                 |
//	   +---------------+---------------+---------------+---------------+
//	24 |  RMPPVersion  |   RMPPType    |RRespTime|Flags|  RMPPStatus   |
//	28 |                         SegmentNumber                         |
//	32 |                   PayloadLength / NewWindowLast               |
//	   +---------------------------------------------------------------+
//	36 |                          SM_Key (64)                          |
//	40 |                                                               |
//	   +-------------------------------+-------------------------------+
//	44 |        AttributeOffset        |           reserved            |
//	   +-------------------------------+-------------------------------+
//	48 |                      ComponentMask (64)                       |
//	52 |                                                               |
//	   +---------------------------------------------------------------+
//	56 |                     SA data (200 bytes)                       |
const (
	saRMPPVersion = 24
	saRMPPType    = 25
	saRMPPFlags   = 26
	saRMPPStatus  = 27
	saSegment     = 28
	saPayLen      = 32
	saSMKey       = 36
	saAttrOffset  = 44
	saCompMask    = 48
	saData        = 56

	// SADataSize is the SA data one MAD carries.
	SADataSize = MADSize - saData
	// SAHeaderSize is the SA header (SM_Key to ComponentMask), the part
	// of an RMPP payload before the records.
	SAHeaderSize = saData - saSMKey
	// SARMPPSegmentSize is the payload one RMPP segment of class 0x03
	// carries: the SA header and SA data.
	SARMPPSegmentSize = MADSize - saSMKey
)

// SA class methods beyond the common ones (IBA 15.2.2).
const (
	MethodGetTableResp  Method = 0x92
	MethodGetTraceTable Method = 0x13
	MethodGetMulti      Method = 0x14
	MethodGetMultiResp  Method = 0x94
	MethodDeleteResp    Method = 0x95
)

// SA MAD status values, in the class-specific bits of the status word
// (IBA 15.2.1.1, table 173 of 1.2.1).
const (
	StatusSANoResources     Status = 0x0100 // ERR_NO_RESOURCES
	StatusSAReqInvalid      Status = 0x0200 // ERR_REQ_INVALID
	StatusSANoRecords       Status = 0x0300 // ERR_NO_RECORDS
	StatusSATooManyRecords  Status = 0x0400 // ERR_TOO_MANY_RECORDS
	StatusSAReqInvalidGID   Status = 0x0500 // ERR_REQ_INVALID_GID
	StatusSAReqInsufficient Status = 0x0600 // ERR_REQ_INSUFFICIENT_COMPONENTS
	StatusSAReqDenied       Status = 0x0700 // ERR_REQ_DENIED
)

// SAStatusName names the SA class-specific status in s, "" if none.
func SAStatusName(s Status) string {
	switch s & StatusClassMask {
	case 0:
		return ""
	case StatusSANoResources:
		return "NoResources"
	case StatusSAReqInvalid:
		return "ReqInvalid"
	case StatusSANoRecords:
		return "NoRecords"
	case StatusSATooManyRecords:
		return "TooManyRecords"
	case StatusSAReqInvalidGID:
		return "ReqInvalidGID"
	case StatusSAReqInsufficient:
		return "ReqInsufficientComponents"
	case StatusSAReqDenied:
		return "ReqDenied"
	}
	return fmt.Sprintf("SAStatus(%#04x)", uint16(s&StatusClassMask))
}

// SAMAD is a view of a SubnAdm MAD. Its methods do not check lengths:
// callers must check IsValid first, or they may panic.
type SAMAD []byte

// SAMADFields holds an SA MAD, for building one.
type SAMADFields struct {
	MAD             MADFields
	RMPPVersion     uint8
	RMPPType        uint8
	RMPPFlags       uint8 // the low 3 bits: Active, First, Last
	RMPPRespTime    uint8 // 5 bits
	RMPPStatus      uint8
	SegmentNumber   uint32
	PayloadLength   uint32
	SMKey           uint64
	AttributeOffset uint16 // in 8-byte words
	ComponentMask   uint64
	Data            [SADataSize]byte
}

// IsValid reports whether b is long enough for an SA MAD.
func (b SAMAD) IsValid() bool { return len(b) >= MADSize }

// MAD returns the common header view.
func (b SAMAD) MAD() MAD { return MAD(b) }

// RMPPVersion returns the "RMPPVersion" field (0: no RMPP).
func (b SAMAD) RMPPVersion() uint8 { return b[saRMPPVersion] }

// RMPPType returns the "RMPPType" field.
func (b SAMAD) RMPPType() uint8 { return b[saRMPPType] }

// RMPPFlags returns the 3 "RMPPFlags" bits.
func (b SAMAD) RMPPFlags() uint8 { return b[saRMPPFlags] & 7 }

// RMPPRespTime returns the 5-bit "RRespTime" field.
func (b SAMAD) RMPPRespTime() uint8 { return b[saRMPPFlags] >> 3 }

// RMPPStatus returns the "RMPPStatus" field.
func (b SAMAD) RMPPStatus() uint8 { return b[saRMPPStatus] }

// SegmentNumber returns the "SegmentNumber" field.
func (b SAMAD) SegmentNumber() uint32 { return binary.BigEndian.Uint32(b[saSegment:]) }

// PayloadLength returns the "PayloadLength" (NewWindowLast in an ACK)
// field.
func (b SAMAD) PayloadLength() uint32 { return binary.BigEndian.Uint32(b[saPayLen:]) }

// SetRMPP sets the RMPP header.
func (b SAMAD) SetRMPP(version, typ, flags, respTime, status uint8, segment, payLen uint32) {
	b[saRMPPVersion], b[saRMPPType] = version, typ
	b[saRMPPFlags] = respTime<<3 | flags&7
	b[saRMPPStatus] = status
	binary.BigEndian.PutUint32(b[saSegment:], segment)
	binary.BigEndian.PutUint32(b[saPayLen:], payLen)
}

// SMKey returns the "SM_Key" field.
func (b SAMAD) SMKey() uint64 { return binary.BigEndian.Uint64(b[saSMKey:]) }

// SetSMKey sets the "SM_Key" field.
func (b SAMAD) SetSMKey(k uint64) { binary.BigEndian.PutUint64(b[saSMKey:], k) }

// AttributeOffset returns the "AttributeOffset" field: the size of one
// record in a GetTable response, in 8-byte words.
func (b SAMAD) AttributeOffset() uint16 { return binary.BigEndian.Uint16(b[saAttrOffset:]) }

// SetAttributeOffset sets the "AttributeOffset" field.
func (b SAMAD) SetAttributeOffset(n uint16) { binary.BigEndian.PutUint16(b[saAttrOffset:], n) }

// ComponentMask returns the "ComponentMask" field: bit i set means
// component i of the record in Data takes part in the query.
func (b SAMAD) ComponentMask() uint64 { return binary.BigEndian.Uint64(b[saCompMask:]) }

// SetComponentMask sets the "ComponentMask" field.
func (b SAMAD) SetComponentMask(m uint64) { binary.BigEndian.PutUint64(b[saCompMask:], m) }

// Data returns the SA data: one record of a request, the records (or
// their first part) of a response.
func (b SAMAD) Data() []byte { return b[saData:MADSize] }

// Payload returns the RMPP payload of a segment: the SA header and data.
func (b SAMAD) Payload() []byte { return b[saSMKey:MADSize] }

// Encode writes f into b.
func (b SAMAD) Encode(f *SAMADFields) {
	MAD(b).Encode(&f.MAD)
	b.SetRMPP(f.RMPPVersion, f.RMPPType, f.RMPPFlags, f.RMPPRespTime, f.RMPPStatus, f.SegmentNumber, f.PayloadLength)
	b.SetSMKey(f.SMKey)
	b.SetAttributeOffset(f.AttributeOffset)
	b[saAttrOffset+2], b[saAttrOffset+3] = 0, 0
	b.SetComponentMask(f.ComponentMask)
	copy(b.Data(), f.Data[:])
}

// Fields returns the fields of b.
func (b SAMAD) Fields() SAMADFields {
	f := SAMADFields{MAD: MAD(b).Fields(), RMPPVersion: b.RMPPVersion(), RMPPType: b.RMPPType(),
		RMPPFlags: b.RMPPFlags(), RMPPRespTime: b.RMPPRespTime(), RMPPStatus: b.RMPPStatus(),
		SegmentNumber: b.SegmentNumber(), PayloadLength: b.PayloadLength(), SMKey: b.SMKey(),
		AttributeOffset: b.AttributeOffset(), ComponentMask: b.ComponentMask()}
	copy(f.Data[:], b.Data())
	return f
}

// AppendSAMAD appends an SA MAD built from f to dst.
func AppendSAMAD(dst []byte, f *SAMADFields) []byte {
	dst, b := grow(dst, MADSize)
	SAMAD(b).Encode(f)
	return dst
}

// DecodeSAMAD returns the fields of the SA MAD in b, or an error if b is
// too short or not of class SubnAdm.
func DecodeSAMAD(b []byte) (SAMADFields, error) {
	if !SAMAD(b).IsValid() {
		return SAMADFields{}, truncated("SA MAD", len(b), MADSize)
	}
	if c := MAD(b).MgmtClass(); c != ClassSubnAdm {
		return SAMADFields{}, fmt.Errorf("mad: SA MAD of class %v", c)
	}
	return SAMAD(b).Fields(), nil
}
