package mad

import "encoding/binary"

// Notice sizes (IBA 13.4.8.2).
const (
	NoticeSize         = 64 // a Notice in SMP data, without IssuerGID
	NoticeWithGIDSize  = 80 // a Notice in a GMP, with IssuerGID
	NoticeDetailsSize  = 54 // the DataDetails field
	NoticeIssuerGIDLen = 16
)

//go:generate go tool stringer -type=NoticeType -linecomment

// NoticeType is the type of a generic notice (IBA 13.4.8.2).
type NoticeType uint8

// Notice types.
const (
	NoticeFatal            NoticeType = 0 // Fatal
	NoticeUrgent           NoticeType = 1 // Urgent
	NoticeSecurity         NoticeType = 2 // Security
	NoticeSubnetManagement NoticeType = 3 // SubnetManagement
	NoticeInfo             NoticeType = 4 // Info
	// NoticeEmpty: "no notice queued"
	NoticeEmpty NoticeType = 0x7f // Empty
)

// Producer types of generic notices (IBA 13.4.8.2): the 24-bit
// ProducerType field holds one of these (the node types, plus the class
// manager).
const (
	ProducerCA           uint32 = 1
	ProducerSwitch       uint32 = 2
	ProducerRouter       uint32 = 3
	ProducerClassManager uint32 = 4
)

// Trap numbers of the subnet management traps (IBA 14.2.5.1) this fabric
// raises or handles.
const (
	TrapLinkStateChange       uint16 = 128 // a switch port changed state
	TrapLinkIntegrity         uint16 = 129 // local link integrity threshold reached
	TrapBufferOverrun         uint16 = 130 // excessive buffer overrun threshold reached
	TrapFlowControlWatchdog   uint16 = 131 // flow control update watchdog fired
	TrapCapabilityMaskChange  uint16 = 144 // capability mask or other local change
	TrapSystemImageGUIDChange uint16 = 145
	TrapBadMKey               uint16 = 256
	TrapBadPKey               uint16 = 257
	TrapBadQKey               uint16 = 258
	TrapSwitchBadPKey         uint16 = 259 // P_Key violation at a switch external port
)

// The Notice attribute, IBA 13.4.8.2, as an SMP carries it in Trap and
// TrapRepress (IssuerGID follows only in GMPs, whose data is longer):
//
//	    0 1             8               16              24            31
//	   +-+-------------+-----------------------------------------------+
//	 0 |G|   Type      |        ProducerType / VendorID (24)           |
//	   +-+-------------+---------------+-------------------------------+
//	 4 |    TrapNumber / DeviceID      |           IssuerLID           |
//	   +-+-----------------------------+-------------------------------+
//	 8 |T|     NoticeCount (15)        |  DataDetails (54 bytes) ...   |
//	   +-+-----------------------------+                               |
//	12 |                                                               |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
//	64 |                    IssuerGID (128, GMP only)                  |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
//
// G is IsGeneric and T NoticeToggle. The DataDetails of the port traps:
//
//	trap 128:          bytes 0-1 LIDADDR (the switch)
//	traps 129-131:     bytes 2-3 LIDADDR, byte 4 PORTNO
const (
	ntGenericType  = 0
	ntProducer     = 1
	ntTrapNumber   = 4
	ntIssuerLID    = 6
	ntToggleCount  = 8
	ntDataDetails  = 10
	ntIssuerGID    = 64
	ntGenericBit   = 0x80
	ntTypeMask     = 0x7f
	ntToggleBit    = 0x8000
	ntCountMask    = 0x7fff
	nt128LID       = ntDataDetails + 0
	ntPortTrapLID  = ntDataDetails + 2
	ntPortTrapPort = ntDataDetails + 4
)

// Notice is a view of the Notice attribute, usually SMP.Data(). Its
// methods do not check lengths: callers must check IsValid first, or they
// may panic; IssuerGID needs HasIssuerGID.
type Notice []byte

// NoticeFields holds the Notice fields, for building one.
type NoticeFields struct {
	IsGeneric bool
	Type      NoticeType // 7 bits
	// ProducerType is the 24-bit producer type of a generic notice, the
	// VendorID (an OUI) of a vendor notice.
	ProducerType uint32
	// TrapNumber is the trap number of a generic notice, the DeviceID of
	// a vendor notice.
	TrapNumber   uint16
	IssuerLID    uint16
	NoticeToggle bool
	NoticeCount  uint16 // 15 bits
	DataDetails  [NoticeDetailsSize]byte
	// IssuerGID is only read and written where the bytes hold it (GMPs).
	IssuerGID [NoticeIssuerGIDLen]byte
}

// IsValid reports whether b is long enough for a Notice without
// IssuerGID.
func (b Notice) IsValid() bool { return len(b) >= NoticeSize }

// HasIssuerGID reports whether b is long enough to hold IssuerGID.
func (b Notice) HasIssuerGID() bool { return len(b) >= NoticeWithGIDSize }

// IsGeneric returns the "IsGeneric" bit.
func (b Notice) IsGeneric() bool { return b[ntGenericType]&ntGenericBit != 0 }

// SetIsGeneric sets the "IsGeneric" bit.
func (b Notice) SetIsGeneric(v bool) { setFlag(&b[ntGenericType], ntGenericBit, v) }

// Type returns the 7-bit "Type" field.
func (b Notice) Type() NoticeType { return NoticeType(b[ntGenericType] & ntTypeMask) }

// SetType sets the 7-bit "Type" field.
func (b Notice) SetType(t NoticeType) {
	b[ntGenericType] = b[ntGenericType]&^ntTypeMask | uint8(t)&ntTypeMask
}

// ProducerType returns the 24-bit "ProducerType" field (VendorID in a
// vendor notice).
func (b Notice) ProducerType() uint32 { return uint24At(b[ntProducer:]) }

// SetProducerType sets the 24-bit "ProducerType" field.
func (b Notice) SetProducerType(v uint32) { putUint24At(b[ntProducer:], v) }

// TrapNumber returns the "TrapNumber" field (DeviceID in a vendor notice).
func (b Notice) TrapNumber() uint16 { return binary.BigEndian.Uint16(b[ntTrapNumber:]) }

// SetTrapNumber sets the "TrapNumber" field.
func (b Notice) SetTrapNumber(n uint16) { binary.BigEndian.PutUint16(b[ntTrapNumber:], n) }

// IssuerLID returns the "IssuerLID" field: the LID of the port that
// raised the notice.
func (b Notice) IssuerLID() uint16 { return binary.BigEndian.Uint16(b[ntIssuerLID:]) }

// SetIssuerLID sets the "IssuerLID" field.
func (b Notice) SetIssuerLID(lid uint16) { binary.BigEndian.PutUint16(b[ntIssuerLID:], lid) }

// NoticeToggle returns the "NoticeToggle" bit, which alternates between
// successive notices read from a port's queue.
func (b Notice) NoticeToggle() bool {
	return binary.BigEndian.Uint16(b[ntToggleCount:])&ntToggleBit != 0
}

// SetNoticeToggle sets the "NoticeToggle" bit.
func (b Notice) SetNoticeToggle(v bool) {
	x := binary.BigEndian.Uint16(b[ntToggleCount:]) &^ ntToggleBit
	if v {
		x |= ntToggleBit
	}
	binary.BigEndian.PutUint16(b[ntToggleCount:], x)
}

// NoticeCount returns the 15-bit "NoticeCount" field.
func (b Notice) NoticeCount() uint16 {
	return binary.BigEndian.Uint16(b[ntToggleCount:]) & ntCountMask
}

// SetNoticeCount sets the 15-bit "NoticeCount" field.
func (b Notice) SetNoticeCount(n uint16) {
	x := binary.BigEndian.Uint16(b[ntToggleCount:])&ntToggleBit | n&ntCountMask
	binary.BigEndian.PutUint16(b[ntToggleCount:], x)
}

// DataDetails returns the 54-byte "DataDetails" field.
func (b Notice) DataDetails() []byte { return b[ntDataDetails : ntDataDetails+NoticeDetailsSize] }

// IssuerGID returns the 16-byte "IssuerGID" field; b must satisfy
// HasIssuerGID.
func (b Notice) IssuerGID() []byte { return b[ntIssuerGID : ntIssuerGID+NoticeIssuerGIDLen] }

// Trap128LID returns LIDADDR of a trap 128: the LID of the switch one of
// whose ports changed state.
func (b Notice) Trap128LID() uint16 { return binary.BigEndian.Uint16(b[nt128LID:]) }

// SetTrap128LID sets LIDADDR of a trap 128.
func (b Notice) SetTrap128LID(lid uint16) { binary.BigEndian.PutUint16(b[nt128LID:], lid) }

// PortTrapLID returns LIDADDR of a trap 129, 130 or 131: the LID of the
// node whose port crossed the threshold.
func (b Notice) PortTrapLID() uint16 { return binary.BigEndian.Uint16(b[ntPortTrapLID:]) }

// SetPortTrapLID sets LIDADDR of a trap 129, 130 or 131.
func (b Notice) SetPortTrapLID(lid uint16) { binary.BigEndian.PutUint16(b[ntPortTrapLID:], lid) }

// PortTrapPort returns PORTNO of a trap 129, 130 or 131.
func (b Notice) PortTrapPort() uint8 { return b[ntPortTrapPort] }

// SetPortTrapPort sets PORTNO of a trap 129, 130 or 131.
func (b Notice) SetPortTrapPort(p uint8) { b[ntPortTrapPort] = p }

// Encode writes f into b; IssuerGID only if b has room for it.
func (b Notice) Encode(f *NoticeFields) {
	b[ntGenericType] = 0
	b.SetIsGeneric(f.IsGeneric)
	b.SetType(f.Type)
	b.SetProducerType(f.ProducerType)
	b.SetTrapNumber(f.TrapNumber)
	b.SetIssuerLID(f.IssuerLID)
	b.SetNoticeCount(f.NoticeCount)
	b.SetNoticeToggle(f.NoticeToggle)
	copy(b.DataDetails(), f.DataDetails[:])
	if b.HasIssuerGID() {
		copy(b.IssuerGID(), f.IssuerGID[:])
	}
}

// Fields returns the fields of b; IssuerGID stays zero if b does not hold
// it.
func (b Notice) Fields() NoticeFields {
	f := NoticeFields{
		IsGeneric:    b.IsGeneric(),
		Type:         b.Type(),
		ProducerType: b.ProducerType(),
		TrapNumber:   b.TrapNumber(),
		IssuerLID:    b.IssuerLID(),
		NoticeToggle: b.NoticeToggle(),
		NoticeCount:  b.NoticeCount(),
	}
	copy(f.DataDetails[:], b.DataDetails())
	if b.HasIssuerGID() {
		copy(f.IssuerGID[:], b.IssuerGID())
	}
	return f
}

// AppendNotice appends a Notice of NoticeSize bytes (no IssuerGID) built
// from f to dst.
func AppendNotice(dst []byte, f *NoticeFields) []byte {
	dst, b := grow(dst, NoticeSize)
	Notice(b).Encode(f)
	return dst
}

// DecodeNotice returns the Notice fields in b, or an error if b is too
// short.
func DecodeNotice(b []byte) (NoticeFields, error) {
	if !Notice(b).IsValid() {
		return NoticeFields{}, truncated("Notice", len(b), NoticeSize)
	}
	return Notice(b).Fields(), nil
}

// Trap128 returns the Notice a switch's SMA sends when the state of one of
// its ports changes: generic, urgent, produced by a switch, trap 128, with
// the switch's LID as issuer and as LIDADDR.
func Trap128(switchLID uint16) NoticeFields {
	f := genericTrap(NoticeUrgent, ProducerSwitch, TrapLinkStateChange, switchLID)
	binary.BigEndian.PutUint16(f.DataDetails[nt128LID-ntDataDetails:], switchLID)
	return f
}

// genericTrap is the header of a generic Notice: its type, producer type,
// trap number and issuer; the builders below fill in the details.
func genericTrap(typ NoticeType, producer uint32, trap, issuer uint16) NoticeFields {
	return NoticeFields{IsGeneric: true, Type: typ, ProducerType: producer, TrapNumber: trap, IssuerLID: issuer}
}

// PortTrap returns the urgent generic Notice of trap 129, 130 or 131 for
// port of the node at lid, produced by a node of type producer.
func PortTrap(trap uint16, producer NodeType, lid uint16, port uint8) NoticeFields {
	f := genericTrap(NoticeUrgent, uint32(producer), trap, lid)
	binary.BigEndian.PutUint16(f.DataDetails[ntPortTrapLID-ntDataDetails:], lid)
	f.DataDetails[ntPortTrapPort-ntDataDetails] = port
	return f
}

// The DataDetails of a trap 144 (IBA 14.2.5.1, "local changes"): the LID
// of the port whose attributes changed, a flag for changes other than the
// capability mask, the new CapabilityMask, which other attributes
// changed, and the new CapabilityMask2.
const (
	nt144LID          = ntDataDetails + 2
	nt144LocalChanges = ntDataDetails + 5
	nt144CapMask      = ntDataDetails + 6
	nt144ChangeFlags  = ntDataDetails + 10
	nt144CapMask2     = ntDataDetails + 12
	nt144OtherLocal   = 0x01 // in LocalChanges
)

// The ChangeFlags of a trap 144: what changed besides the capability
// mask.
const (
	Trap144NodeDescription  uint16 = 0x0001
	Trap144LinkWidthEnabled uint16 = 0x0002
	Trap144LinkSpeedEnabled uint16 = 0x0004
	Trap144SMPriority       uint16 = 0x0008 // an SM's priority (a standby SM announcing itself)
	Trap144HierarchyInfo    uint16 = 0x0010
	Trap144CapabilityMask2  uint16 = 0x0020
)

// Trap144LID returns LIDADDR of a trap 144: the port whose attributes
// changed.
func (b Notice) Trap144LID() uint16 { return binary.BigEndian.Uint16(b[nt144LID:]) }

// Trap144OtherLocalChanges reports the trap 144 flag that something other
// than the capability mask changed (ChangeFlags says what).
func (b Notice) Trap144OtherLocalChanges() bool { return b[nt144LocalChanges]&nt144OtherLocal != 0 }

// Trap144CapabilityMask returns the port's new CapabilityMask in a trap
// 144.
func (b Notice) Trap144CapabilityMask() uint32 { return binary.BigEndian.Uint32(b[nt144CapMask:]) }

// Trap144ChangeFlags returns the ChangeFlags of a trap 144 (Trap144…).
func (b Notice) Trap144ChangeFlags() uint16 { return binary.BigEndian.Uint16(b[nt144ChangeFlags:]) }

// Trap144CapabilityMask2 returns the port's new CapabilityMask2 in a trap
// 144.
func (b Notice) Trap144CapabilityMask2() uint16 { return binary.BigEndian.Uint16(b[nt144CapMask2:]) }

// Trap144 returns the Notice a port raises when its CapabilityMask or
// another local attribute changes: generic, informational, produced by a
// node of type producer, trap 144, with the port's LID as issuer and as
// LIDADDR. changeFlags (Trap144…) set the "other local changes" bit: an
// SM announcing its priority sends Trap144SMPriority.
func Trap144(producer NodeType, lid uint16, capMask uint32, changeFlags uint16) NoticeFields {
	f := genericTrap(NoticeInfo, uint32(producer), TrapCapabilityMaskChange, lid)
	d := f.DataDetails[:]
	binary.BigEndian.PutUint16(d[nt144LID-ntDataDetails:], lid)
	if changeFlags != 0 {
		d[nt144LocalChanges-ntDataDetails] = nt144OtherLocal
	}
	binary.BigEndian.PutUint32(d[nt144CapMask-ntDataDetails:], capMask)
	binary.BigEndian.PutUint16(d[nt144ChangeFlags-ntDataDetails:], changeFlags)
	return f
}
