package mad

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Sizes of a MAD and its parts (IBA 13.4.2).
const (
	MADSize       = 256 // every MAD on QP0/QP1, whatever its class
	MADHeaderSize = 24  // the common header
	MADDataSize   = MADSize - MADHeaderSize
)

// Versions this package speaks (IBA 13.4.2, 14.2.1, 16.1.1).
const (
	BaseVersion    = 1 // the only MAD base version of IBA 1.x
	SubnVersion    = 1 // class version of both subnet management classes
	PerfMgtVersion = 1 // class version of the performance management class
)

// ErrTruncated is wrapped by every decoding error caused by input too short
// for what it claims to hold.
var ErrTruncated = errors.New("truncated")

// truncated returns the error for a what of n bytes that needs want.
func truncated(what string, n, want int) error {
	return fmt.Errorf("mad: %s of %d bytes, need %d: %w", what, n, want, ErrTruncated)
}

// The common MAD header, IBA 13.4.2, byte offsets on the left:
//
//	    0               8               16              24            31
//	   +---------------+---------------+---------------+-+-------------+
//	 0 |  BaseVersion  |   MgmtClass   | ClassVersion  |R|   Method    |
//	   +---------------+---------------+---------------+-+-------------+
//	 4 |            Status             |         ClassSpecific         |
//	   +-------------------------------+-------------------------------+
//	 8 |                      TransactionID (64)                       |
//	12 |                                                               |
//	   +-------------------------------+-------------------------------+
//	16 |          AttributeID          |           Reserved            |
//	   +-------------------------------+-------------------------------+
//	20 |                      AttributeModifier                        |
//	   +---------------------------------------------------------------+
//	24 |                 class-specific data (232 bytes)               |
//	   ~                                                               ~
const (
	madBaseVersion   = 0
	madMgmtClass     = 1
	madClassVersion  = 2
	madMethod        = 3
	madStatus        = 4
	madClassSpecific = 6
	madTransactionID = 8
	madAttrID        = 16
	madReserved      = 18
	madAttrModifier  = 20
	madData          = 24
)

// MAD is a view of a management datagram: the common header and the
// class-specific data behind it. Its methods do not check lengths: callers
// must check IsValid first, or they may panic.
type MAD []byte

// MADFields holds the common header fields, for building a MAD.
type MADFields struct {
	BaseVersion   uint8
	MgmtClass     MgmtClass
	ClassVersion  uint8
	Method        Method // with the R bit for responses
	Status        Status
	ClassSpecific uint16
	TransactionID uint64
	AttrID        AttrID
	AttrModifier  uint32
}

// IsValid reports whether b holds a whole MAD.
func (b MAD) IsValid() bool { return len(b) >= MADSize }

// BaseVersion returns the "BaseVersion" field.
func (b MAD) BaseVersion() uint8 { return b[madBaseVersion] }

// SetBaseVersion sets the "BaseVersion" field.
func (b MAD) SetBaseVersion(v uint8) { b[madBaseVersion] = v }

// MgmtClass returns the "MgmtClass" field.
func (b MAD) MgmtClass() MgmtClass { return MgmtClass(b[madMgmtClass]) }

// SetMgmtClass sets the "MgmtClass" field.
func (b MAD) SetMgmtClass(c MgmtClass) { b[madMgmtClass] = uint8(c) }

// ClassVersion returns the "ClassVersion" field.
func (b MAD) ClassVersion() uint8 { return b[madClassVersion] }

// SetClassVersion sets the "ClassVersion" field.
func (b MAD) SetClassVersion(v uint8) { b[madClassVersion] = v }

// Method returns the method byte, R bit included.
func (b MAD) Method() Method { return Method(b[madMethod]) }

// SetMethod sets the method byte, R bit included.
func (b MAD) SetMethod(m Method) { b[madMethod] = uint8(m) }

// IsResponse reports whether the R bit of the method byte is set.
func (b MAD) IsResponse() bool { return b.Method().IsResponse() }

// Status returns the whole 16-bit "Status" field. In a directed-route SMP
// its top bit is the D bit: use DRSMP.Status there.
func (b MAD) Status() Status { return Status(binary.BigEndian.Uint16(b[madStatus:])) }

// SetStatus sets the whole 16-bit "Status" field.
func (b MAD) SetStatus(s Status) { binary.BigEndian.PutUint16(b[madStatus:], uint16(s)) }

// ClassSpecific returns the "ClassSpecific" field (hop pointer and hop
// count in a directed-route SMP).
func (b MAD) ClassSpecific() uint16 { return binary.BigEndian.Uint16(b[madClassSpecific:]) }

// SetClassSpecific sets the "ClassSpecific" field.
func (b MAD) SetClassSpecific(v uint16) { binary.BigEndian.PutUint16(b[madClassSpecific:], v) }

// TransactionID returns the "TransactionID" field.
func (b MAD) TransactionID() uint64 { return binary.BigEndian.Uint64(b[madTransactionID:]) }

// SetTransactionID sets the "TransactionID" field.
func (b MAD) SetTransactionID(v uint64) { binary.BigEndian.PutUint64(b[madTransactionID:], v) }

// AttrID returns the "AttributeID" field.
func (b MAD) AttrID() AttrID { return AttrID(binary.BigEndian.Uint16(b[madAttrID:])) }

// SetAttrID sets the "AttributeID" field.
func (b MAD) SetAttrID(a AttrID) { binary.BigEndian.PutUint16(b[madAttrID:], uint16(a)) }

// AttrModifier returns the "AttributeModifier" field.
func (b MAD) AttrModifier() uint32 { return binary.BigEndian.Uint32(b[madAttrModifier:]) }

// SetAttrModifier sets the "AttributeModifier" field.
func (b MAD) SetAttrModifier(v uint32) { binary.BigEndian.PutUint32(b[madAttrModifier:], v) }

// Data returns the 232 bytes behind the common header.
func (b MAD) Data() []byte { return b[madData:MADSize] }

// Encode writes f into the common header and zeroes its reserved field; it
// leaves the data alone.
func (b MAD) Encode(f *MADFields) {
	b.SetBaseVersion(f.BaseVersion)
	b.SetMgmtClass(f.MgmtClass)
	b.SetClassVersion(f.ClassVersion)
	b.SetMethod(f.Method)
	b.SetStatus(f.Status)
	b.SetClassSpecific(f.ClassSpecific)
	b.SetTransactionID(f.TransactionID)
	b.SetAttrID(f.AttrID)
	binary.BigEndian.PutUint16(b[madReserved:], 0)
	b.SetAttrModifier(f.AttrModifier)
}

// Fields returns the common header fields.
func (b MAD) Fields() MADFields {
	return MADFields{
		BaseVersion:   b.BaseVersion(),
		MgmtClass:     b.MgmtClass(),
		ClassVersion:  b.ClassVersion(),
		Method:        b.Method(),
		Status:        b.Status(),
		ClassSpecific: b.ClassSpecific(),
		TransactionID: b.TransactionID(),
		AttrID:        b.AttrID(),
		AttrModifier:  b.AttrModifier(),
	}
}

// AppendMAD appends a MAD with header f and data (at most MADDataSize
// bytes, zero-padded) to dst.
func AppendMAD(dst []byte, f *MADFields, data []byte) []byte {
	dst, b := grow(dst, MADSize)
	MAD(b).Encode(f)
	copy(b[madData:], data)
	return dst
}

// DecodeMAD checks that b holds a whole MAD and returns its header.
func DecodeMAD(b []byte) (MADFields, error) {
	if !MAD(b).IsValid() {
		return MADFields{}, truncated("MAD", len(b), MADSize)
	}
	return MAD(b).Fields(), nil
}

// grow extends dst by n zero bytes and returns it and the new tail.
func grow(dst []byte, n int) ([]byte, []byte) {
	l := len(dst)
	dst = append(dst, make([]byte, n)...)
	return dst, dst[l:]
}
