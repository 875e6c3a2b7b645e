package wire

import "encoding/binary"

// Datagram Extended Transport Header (IBA 1.2.1 §9.3.3, 8 bytes, follows
// the BTH of unreliable-datagram packets):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                             Q_Key                             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     resv8     |                     SrcQP                     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
const (
	dethQKey   = 0
	dethSrcQP  = 4 // 32-bit word whose low 24 bits are SrcQP
	dethQPMask = 0x00ffffff

	// DETHSize is the size of the Datagram Extended Transport Header.
	DETHSize = 8
)

// Well-known queue pairs and Q_Keys (§13.4.6, §13.5.1).
const (
	QP0 = 0 // subnet management (SMPs), VL15
	QP1 = 1 // general services (GMPs)

	// QP1QKey is the well-known Q_Key of QP1.
	QP1QKey = 0x80010000
)

// DETH is a view of a Datagram Extended Transport Header at the start of a
// byte slice. Callers must check IsValid before using any accessor.
type DETH []byte

// DETHFields holds the fields of a DETH for Encode.
type DETHFields struct {
	QKey  uint32 // queue key
	SrcQP uint32 // source queue pair, 24 bits
}

// IsValid reports whether b is long enough to hold a DETH.
func (b DETH) IsValid() bool { return len(b) >= DETHSize }

// QKey returns the "Q_Key" field.
func (b DETH) QKey() uint32 { return binary.BigEndian.Uint32(b[dethQKey:]) }

// SetQKey sets the "Q_Key" field.
func (b DETH) SetQKey(v uint32) { binary.BigEndian.PutUint32(b[dethQKey:], v) }

// SrcQP returns the 24-bit "SrcQP" (source queue pair) field.
func (b DETH) SrcQP() uint32 { return binary.BigEndian.Uint32(b[dethSrcQP:]) & dethQPMask }

// SetSrcQP sets the "SrcQP" field; only the low 24 bits of v are used and
// the reserved byte is cleared.
func (b DETH) SetSrcQP(v uint32) { binary.BigEndian.PutUint32(b[dethSrcQP:], v&dethQPMask) }

// Encode writes every field of f into b, clearing the reserved byte.
func (b DETH) Encode(f *DETHFields) {
	b.SetQKey(f.QKey)
	b.SetSrcQP(f.SrcQP)
}

// Fields returns the decoded fields of b.
func (b DETH) Fields() DETHFields { return DETHFields{QKey: b.QKey(), SrcQP: b.SrcQP()} }
