package mad

import (
	"encoding/binary"
	"fmt"
)

// Sizes and limits of subnet management packets (IBA 14.2.1).
const (
	SMPDataSize   = 64     // the attribute data of an SMP
	DRPathSize    = 64     // each of the initial and return paths
	MaxHopCount   = 63     // paths hold 64 bytes and byte 0 is unused
	PermissiveLID = 0xffff // DrSLID/DrDLID of a purely directed route; also a DLID every port accepts
)

// A LID-routed SMP, IBA 14.2.1.1:
//
//	    0               8               16              24            31
//	   +---------------------------------------------------------------+
//	 0 |              common MAD header (MgmtClass 0x01)               |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
//	24 |                           M_Key (64)                          |
//	28 |                                                               |
//	   +---------------------------------------------------------------+
//	32 |                       Reserved (32 bytes)                     |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
//	64 |                       SMP data (64 bytes)                     |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
//	128|                       Reserved (128 bytes)                    |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
const (
	smpMKey      = 24
	smpReserved1 = 32
	smpData      = 64
	smpReserved2 = 128
)

// SMP is a view of a LID-routed subnet management packet. Its methods do
// not check lengths: callers must check IsValid first, or they may panic.
// The common header is read through MAD().
type SMP []byte

// SMPFields holds the fields of a LID-routed SMP, for building one. The
// versions and the class are fixed by the type.
type SMPFields struct {
	Method        Method
	Status        Status
	TransactionID uint64
	AttrID        AttrID
	AttrModifier  uint32
	MKey          uint64
	Data          [SMPDataSize]byte
}

// IsValid reports whether b holds a whole SMP.
func (b SMP) IsValid() bool { return len(b) >= MADSize }

// Validate checks the length and that the header says LID-routed SMP.
func (b SMP) Validate() error {
	if !b.IsValid() {
		return truncated("SMP", len(b), MADSize)
	}
	if c := b.MAD().MgmtClass(); c != ClassSubnLID {
		return fmt.Errorf("mad: SMP with class %v, want %v", c, ClassSubnLID)
	}
	return nil
}

// MAD returns the SMP as a MAD, for the common header.
func (b SMP) MAD() MAD { return MAD(b) }

// MKey returns the "M_Key" field.
func (b SMP) MKey() uint64 { return binary.BigEndian.Uint64(b[smpMKey:]) }

// SetMKey sets the "M_Key" field.
func (b SMP) SetMKey(k uint64) { binary.BigEndian.PutUint64(b[smpMKey:], k) }

// Data returns the 64 bytes of attribute data.
func (b SMP) Data() []byte { return b[smpData : smpData+SMPDataSize] }

// Encode writes the whole SMP: header with base and class version 1 and
// class 0x01, f's fields, and zeroed reserved areas.
func (b SMP) Encode(f *SMPFields) {
	b.MAD().Encode(&MADFields{
		BaseVersion:   BaseVersion,
		MgmtClass:     ClassSubnLID,
		ClassVersion:  SubnVersion,
		Method:        f.Method,
		Status:        f.Status,
		TransactionID: f.TransactionID,
		AttrID:        f.AttrID,
		AttrModifier:  f.AttrModifier,
	})
	b.SetMKey(f.MKey)
	clear(b[smpReserved1:smpData])
	copy(b.Data(), f.Data[:])
	clear(b[smpReserved2:MADSize])
}

// Fields returns the SMP's fields.
func (b SMP) Fields() SMPFields {
	m := b.MAD()
	f := SMPFields{
		Method:        m.Method(),
		Status:        m.Status(),
		TransactionID: m.TransactionID(),
		AttrID:        m.AttrID(),
		AttrModifier:  m.AttrModifier(),
		MKey:          b.MKey(),
	}
	copy(f.Data[:], b.Data())
	return f
}

// AppendSMP appends a LID-routed SMP built from f to dst.
func AppendSMP(dst []byte, f *SMPFields) []byte {
	dst, b := grow(dst, MADSize)
	SMP(b).Encode(f)
	return dst
}

// DecodeSMP validates b as a LID-routed SMP and returns its fields.
func DecodeSMP(b []byte) (SMPFields, error) {
	if err := SMP(b).Validate(); err != nil {
		return SMPFields{}, err
	}
	return SMP(b).Fields(), nil
}

// A directed-route SMP, IBA 14.2.1.2. The D bit, the 15-bit
// status, the hop pointer and the hop count take the places of the common
// header's Status and ClassSpecific fields:
//
//	    0               8               16              24            31
//	   +---------------+---------------+---------------+-+-------------+
//	 0 |  BaseVersion  |MgmtClass 0x81 | ClassVersion  |R|   Method    |
//	   +-+-------------+---------------+---------------+---------------+
//	 4 |D|          Status (15)        |  HopPointer   |   HopCount    |
//	   +-+-----------------------------+---------------+---------------+
//	 8 |           TransactionID, AttributeID, AttributeModifier       |
//	   ~                    (as in the common header)                  ~
//	   +---------------------------------------------------------------+
//	24 |                           M_Key (64)                          |
//	28 |                                                               |
//	   +-------------------------------+-------------------------------+
//	32 |            DrSLID             |            DrDLID             |
//	   +-------------------------------+-------------------------------+
//	36 |                       Reserved (28 bytes)                     |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
//	64 |                       SMP data (64 bytes)                     |
//	   +---------------------------------------------------------------+
//	128|            InitialPath (64 bytes, one port per hop)           |
//	   +---------------------------------------------------------------+
//	192|            ReturnPath (64 bytes, one port per hop)            |
//	   +---------------------------------------------------------------+
const (
	drStatus     = 4
	drHopPointer = 6
	drHopCount   = 7
	drMKey       = 24
	drSLID       = 32
	drDLID       = 34
	drReserved   = 36
	drData       = 64
	drInitial    = 128
	drReturn     = 192

	drDirectionMask = 0x8000
	drStatusMask    = 0x7fff
)

// DRSMP is a view of a directed-route subnet management packet. Its
// methods do not check lengths: callers must check IsValid first, or they
// may panic.
//
// Paths follow the spec's numbering: byte i of a path is the port of hop i,
// for i in 1..HopCount, and byte 0 is unused.
type DRSMP []byte

// DRSMPFields holds the fields of a directed-route SMP, for building one.
type DRSMPFields struct {
	Method        Method
	Status        Status // 15 bits; the top bit is ignored
	Direction     bool   // the D bit: false on the way out, true on the way back
	HopPointer    uint8
	HopCount      uint8
	TransactionID uint64
	AttrID        AttrID
	AttrModifier  uint32
	MKey          uint64
	DrSLID        uint16
	DrDLID        uint16
	Data          [SMPDataSize]byte
	InitialPath   [DRPathSize]byte
	ReturnPath    [DRPathSize]byte
}

// IsValid reports whether b holds a whole directed-route SMP.
func (b DRSMP) IsValid() bool { return len(b) >= MADSize }

// Validate checks the length, the class, and that the hop count fits the
// path and the hop pointer is at most one past it (where the SMP is at its
// destination). Agents still apply the spec's per-hop checks.
func (b DRSMP) Validate() error {
	if !b.IsValid() {
		return truncated("directed-route SMP", len(b), MADSize)
	}
	if c := b.MAD().MgmtClass(); c != ClassSubnDirected {
		return fmt.Errorf("mad: directed-route SMP with class %v, want %v", c, ClassSubnDirected)
	}
	if n := b.HopCount(); n > MaxHopCount {
		return fmt.Errorf("mad: directed-route SMP with hop count %d, max %d", n, MaxHopCount)
	}
	if p, n := b.HopPointer(), b.HopCount(); int(p) > int(n)+1 {
		return fmt.Errorf("mad: directed-route SMP with hop pointer %d past hop count %d", p, n)
	}
	return nil
}

// MAD returns the SMP as a MAD, for the common header.
func (b DRSMP) MAD() MAD { return MAD(b) }

// Direction returns the D bit: true when the SMP travels back towards the
// requester (a response), false on the way out.
func (b DRSMP) Direction() bool {
	return binary.BigEndian.Uint16(b[drStatus:])&drDirectionMask != 0
}

// SetDirection sets the D bit.
func (b DRSMP) SetDirection(d bool) {
	v := binary.BigEndian.Uint16(b[drStatus:]) &^ drDirectionMask
	if d {
		v |= drDirectionMask
	}
	binary.BigEndian.PutUint16(b[drStatus:], v)
}

// Status returns the 15-bit "Status" field, without the D bit.
func (b DRSMP) Status() Status {
	return Status(binary.BigEndian.Uint16(b[drStatus:]) & drStatusMask)
}

// SetStatus sets the 15-bit "Status" field; the top bit of s is ignored.
func (b DRSMP) SetStatus(s Status) {
	v := binary.BigEndian.Uint16(b[drStatus:])&drDirectionMask | uint16(s)&drStatusMask
	binary.BigEndian.PutUint16(b[drStatus:], v)
}

// HopPointer returns the "HopPointer" field.
func (b DRSMP) HopPointer() uint8 { return b[drHopPointer] }

// SetHopPointer sets the "HopPointer" field.
func (b DRSMP) SetHopPointer(p uint8) { b[drHopPointer] = p }

// HopCount returns the "HopCount" field.
func (b DRSMP) HopCount() uint8 { return b[drHopCount] }

// SetHopCount sets the "HopCount" field.
func (b DRSMP) SetHopCount(n uint8) { b[drHopCount] = n }

// MKey returns the "M_Key" field.
func (b DRSMP) MKey() uint64 { return binary.BigEndian.Uint64(b[drMKey:]) }

// SetMKey sets the "M_Key" field.
func (b DRSMP) SetMKey(k uint64) { binary.BigEndian.PutUint64(b[drMKey:], k) }

// DrSLID returns the "DrSLID" field.
func (b DRSMP) DrSLID() uint16 { return binary.BigEndian.Uint16(b[drSLID:]) }

// SetDrSLID sets the "DrSLID" field.
func (b DRSMP) SetDrSLID(lid uint16) { binary.BigEndian.PutUint16(b[drSLID:], lid) }

// DrDLID returns the "DrDLID" field.
func (b DRSMP) DrDLID() uint16 { return binary.BigEndian.Uint16(b[drDLID:]) }

// SetDrDLID sets the "DrDLID" field.
func (b DRSMP) SetDrDLID(lid uint16) { binary.BigEndian.PutUint16(b[drDLID:], lid) }

// Data returns the 64 bytes of attribute data.
func (b DRSMP) Data() []byte { return b[drData : drData+SMPDataSize] }

// InitialPath returns the 64-byte "InitialPath" field; byte i is the
// output port of hop i.
func (b DRSMP) InitialPath() []byte { return b[drInitial : drInitial+DRPathSize] }

// ReturnPath returns the 64-byte "ReturnPath" field; byte i is the input
// port at hop i, which is the output port on the way back.
func (b DRSMP) ReturnPath() []byte { return b[drReturn : drReturn+DRPathSize] }

// Path returns a copy of the used part of the initial path,
// InitialPath[0..HopCount], in the form DRRequest.Path takes. A hop count
// past MaxHopCount is clipped to it.
func (b DRSMP) Path() []uint8 {
	n := min(int(b.HopCount()), MaxHopCount)
	return append([]uint8(nil), b.InitialPath()[:n+1]...)
}

// Encode writes the whole SMP: header with base and class version 1 and
// class 0x81, f's fields, and a zeroed reserved area.
func (b DRSMP) Encode(f *DRSMPFields) {
	b.MAD().Encode(&MADFields{
		BaseVersion:   BaseVersion,
		MgmtClass:     ClassSubnDirected,
		ClassVersion:  SubnVersion,
		Method:        f.Method,
		TransactionID: f.TransactionID,
		AttrID:        f.AttrID,
		AttrModifier:  f.AttrModifier,
	})
	b.SetStatus(f.Status)
	b.SetDirection(f.Direction)
	b.SetHopPointer(f.HopPointer)
	b.SetHopCount(f.HopCount)
	b.SetMKey(f.MKey)
	b.SetDrSLID(f.DrSLID)
	b.SetDrDLID(f.DrDLID)
	clear(b[drReserved:drData])
	copy(b.Data(), f.Data[:])
	copy(b.InitialPath(), f.InitialPath[:])
	copy(b.ReturnPath(), f.ReturnPath[:])
}

// Fields returns the SMP's fields.
func (b DRSMP) Fields() DRSMPFields {
	m := b.MAD()
	f := DRSMPFields{
		Method:        m.Method(),
		Status:        b.Status(),
		Direction:     b.Direction(),
		HopPointer:    b.HopPointer(),
		HopCount:      b.HopCount(),
		TransactionID: m.TransactionID(),
		AttrID:        m.AttrID(),
		AttrModifier:  m.AttrModifier(),
		MKey:          b.MKey(),
		DrSLID:        b.DrSLID(),
		DrDLID:        b.DrDLID(),
	}
	copy(f.Data[:], b.Data())
	copy(f.InitialPath[:], b.InitialPath())
	copy(f.ReturnPath[:], b.ReturnPath())
	return f
}

// AppendDRSMP appends a directed-route SMP built from f to dst.
func AppendDRSMP(dst []byte, f *DRSMPFields) []byte {
	dst, b := grow(dst, MADSize)
	DRSMP(b).Encode(f)
	return dst
}

// DecodeDRSMP validates b as a directed-route SMP and returns its fields.
func DecodeDRSMP(b []byte) (DRSMPFields, error) {
	if err := DRSMP(b).Validate(); err != nil {
		return DRSMPFields{}, err
	}
	return DRSMP(b).Fields(), nil
}

// DRRequest is what an SM says to send a directed-route Get or Set.
type DRRequest struct {
	Method        Method // MethodGet or MethodSet
	TransactionID uint64
	AttrID        AttrID
	AttrModifier  uint32
	MKey          uint64
	// Path lists the output port of each hop: Path[i] for hop i in
	// 1..len(Path)-1, and Path[0] is unused, as in the spec's InitialPath.
	// A nil or one-byte path addresses the requester's own node.
	Path []uint8
	// DrSLID and DrDLID are the LIDs of the LID-routed parts of the route;
	// zero (a reserved LID) means PermissiveLID, a purely directed route.
	DrSLID, DrDLID uint16
	Data           []byte // attribute data for a Set, at most SMPDataSize bytes
}

// AppendDRRequest appends to dst the outbound directed-route SMP r asks
// for: D bit clear, hop pointer 0, hop count len(Path)-1, the path copied
// into InitialPath and a zero ReturnPath.
func AppendDRRequest(dst []byte, r *DRRequest) ([]byte, error) {
	hops := 0
	if len(r.Path) > 0 {
		hops = len(r.Path) - 1
	}
	if hops > MaxHopCount {
		return dst, fmt.Errorf("mad: directed route of %d hops, max %d", hops, MaxHopCount)
	}
	if len(r.Data) > SMPDataSize {
		return dst, fmt.Errorf("mad: SMP data of %d bytes, max %d", len(r.Data), SMPDataSize)
	}
	f := DRSMPFields{
		Method:        r.Method,
		HopCount:      uint8(hops),
		TransactionID: r.TransactionID,
		AttrID:        r.AttrID,
		AttrModifier:  r.AttrModifier,
		MKey:          r.MKey,
		DrSLID:        orPermissive(r.DrSLID),
		DrDLID:        orPermissive(r.DrDLID),
	}
	copy(f.Data[:], r.Data)
	copy(f.InitialPath[:], r.Path)
	f.InitialPath[0] = 0
	return AppendDRSMP(dst, &f), nil
}

func orPermissive(lid uint16) uint16 {
	if lid == 0 {
		return PermissiveLID
	}
	return lid
}
