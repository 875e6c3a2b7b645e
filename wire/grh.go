package wire

import "encoding/binary"

// Global Route Header (IBA 1.2.1 §8.3, 40 bytes, present when LRH LNH is
// IBA global); laid out like an IPv6 header:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	| IPVer |    TClass     |              FlowLabel                |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|            PayLen             |    NxtHdr     |    HopLmt     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+                        SGID (16 bytes)                        +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                                                               |
//	+                        DGID (16 bytes)                        +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// PayLen counts the bytes after the GRH through the last byte of the ICRC
// (§8.3.3); the VCRC is not counted.
const (
	grhVerClassFlow = 0
	grhPayLen       = 4
	grhNxtHdr       = 6
	grhHopLmt       = 7
	grhSGID         = 8
	grhDGID         = 24
	grhIPVerShift   = 28
	grhTClassShift  = 20
	grhTClassMask   = 0xff
	grhFlowMask     = 0x000fffff

	// GRHSize is the size of the Global Route Header.
	GRHSize = 40
	// GIDSize is the size of a GID.
	GIDSize = 16
)

// GRH field values.
const (
	// GRHIPVer is the IPVer of a GRH (IBA 1.x uses the IPv6 value).
	GRHIPVer = 6
	// NxtHdrBTH is the NxtHdr value saying a BTH follows the GRH (§8.3.3).
	NxtHdrBTH = 0x1b
)

// GRH is a view of a Global Route Header at the start of a byte slice.
// Callers must check IsValid before using any accessor.
type GRH []byte

// GRHFields holds the fields of a GRH for Encode.
type GRHFields struct {
	IPVer     uint8         // 4 bits; GRHIPVer
	TClass    uint8         // traffic class
	FlowLabel uint32        // 20 bits
	PayLen    uint16        // bytes after the GRH through the ICRC
	NxtHdr    uint8         // NxtHdrBTH for IBA transport
	HopLmt    uint8         // hop limit
	SGID      [GIDSize]byte // source GID
	DGID      [GIDSize]byte // destination GID
}

// IsValid reports whether b is long enough to hold a GRH.
func (b GRH) IsValid() bool { return len(b) >= GRHSize }

func (b GRH) word0() uint32 { return binary.BigEndian.Uint32(b[grhVerClassFlow:]) }

func (b GRH) setWord0(v uint32) { binary.BigEndian.PutUint32(b[grhVerClassFlow:], v) }

// IPVer returns the "IPVer" field.
func (b GRH) IPVer() uint8 { return uint8(b.word0() >> grhIPVerShift) }

// SetIPVer sets the "IPVer" field; only the low 4 bits of v are used.
func (b GRH) SetIPVer(v uint8) {
	b.setWord0(b.word0()&^(0xf<<grhIPVerShift) | uint32(v&0xf)<<grhIPVerShift)
}

// TClass returns the "TClass" (traffic class) field.
func (b GRH) TClass() uint8 { return uint8(b.word0() >> grhTClassShift & grhTClassMask) }

// SetTClass sets the "TClass" field.
func (b GRH) SetTClass(v uint8) {
	b.setWord0(b.word0()&^(grhTClassMask<<grhTClassShift) | uint32(v)<<grhTClassShift)
}

// FlowLabel returns the 20-bit "FlowLabel" field.
func (b GRH) FlowLabel() uint32 { return b.word0() & grhFlowMask }

// SetFlowLabel sets the "FlowLabel" field; only the low 20 bits of v are used.
func (b GRH) SetFlowLabel(v uint32) { b.setWord0(b.word0()&^grhFlowMask | v&grhFlowMask) }

// PayLen returns the "PayLen" field.
func (b GRH) PayLen() uint16 { return binary.BigEndian.Uint16(b[grhPayLen:]) }

// SetPayLen sets the "PayLen" field.
func (b GRH) SetPayLen(v uint16) { binary.BigEndian.PutUint16(b[grhPayLen:], v) }

// NxtHdr returns the "NxtHdr" (next header) field.
func (b GRH) NxtHdr() uint8 { return b[grhNxtHdr] }

// SetNxtHdr sets the "NxtHdr" field.
func (b GRH) SetNxtHdr(v uint8) { b[grhNxtHdr] = v }

// HopLmt returns the "HopLmt" (hop limit) field.
func (b GRH) HopLmt() uint8 { return b[grhHopLmt] }

// SetHopLmt sets the "HopLmt" field.
func (b GRH) SetHopLmt(v uint8) { b[grhHopLmt] = v }

// SGID returns the "SGID" (source GID) field.
func (b GRH) SGID() (g [GIDSize]byte) { copy(g[:], b[grhSGID:]); return g }

// SetSGID sets the "SGID" field.
func (b GRH) SetSGID(g [GIDSize]byte) { copy(b[grhSGID:], g[:]) }

// DGID returns the "DGID" (destination GID) field.
func (b GRH) DGID() (g [GIDSize]byte) { copy(g[:], b[grhDGID:]); return g }

// SetDGID sets the "DGID" field.
func (b GRH) SetDGID(g [GIDSize]byte) { copy(b[grhDGID:], g[:]) }

// Encode writes every field of f into b.
func (b GRH) Encode(f *GRHFields) {
	b.setWord0(uint32(f.IPVer&0xf)<<grhIPVerShift | uint32(f.TClass)<<grhTClassShift |
		f.FlowLabel&grhFlowMask)
	b.SetPayLen(f.PayLen)
	b.SetNxtHdr(f.NxtHdr)
	b.SetHopLmt(f.HopLmt)
	b.SetSGID(f.SGID)
	b.SetDGID(f.DGID)
}

// Fields returns the decoded fields of b.
func (b GRH) Fields() GRHFields {
	return GRHFields{IPVer: b.IPVer(), TClass: b.TClass(), FlowLabel: b.FlowLabel(),
		PayLen: b.PayLen(), NxtHdr: b.NxtHdr(), HopLmt: b.HopLmt(), SGID: b.SGID(), DGID: b.DGID()}
}
