package wire

import "encoding/binary"

// Local Route Header (IBA 1.2.1 §7.7, 8 bytes, present in every data packet):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   VL  |  LVer |   SL  |rsv|LNH|              DLID             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   rsv5  |        PktLen       |              SLID             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// PktLen counts 4-byte words from the first byte of the LRH through the
// last byte of the ICRC (through the payload for raw packets, which have no
// ICRC); the VCRC is never counted (§7.7.8).
const (
	lrhVLLVer  = 0
	lrhSLLNH   = 1
	lrhDLID    = 2
	lrhPktLen  = 4
	lrhSLID    = 6
	lrhVLShift = 4
	lrhLVMask  = 0x0f
	lrhSLShift = 4
	lrhLNHMask = 0x03
	lrhLenMask = 0x07ff

	// LRHSize is the size of the Local Route Header.
	LRHSize = 8
	// MaxPktLen is the largest value the 11-bit PktLen field holds.
	MaxPktLen = lrhLenMask
)

//go:generate go tool stringer -type=LNH -linecomment

// LNH is the Link Next Header field: what follows the LRH (§7.7.3).
type LNH uint8

// Link Next Header values.
const (
	// LNHRaw: raw packet: LRH, payload, VCRC; no transport headers, no ICRC
	LNHRaw LNH = 0 // Raw
	// LNHIPv6: IP non-IBA transport: an IPv6 header follows; no ICRC
	LNHIPv6 LNH = 1 // IPv6
	// LNHLocal: IBA local: BTH follows
	LNHLocal LNH = 2 // IBALocal
	// LNHGlobal: IBA global: GRH then BTH follow
	LNHGlobal LNH = 3 // IBAGlobal
)

// HasICRC reports whether packets with this LNH carry an ICRC: only IBA
// transport packets do.
func (n LNH) HasICRC() bool { return n == LNHLocal || n == LNHGlobal }

// LRH is a view of a Local Route Header at the start of a byte slice.
// Callers must check IsValid before using any accessor.
type LRH []byte

// LRHFields holds the fields of an LRH for Encode.
type LRHFields struct {
	VL     uint8  // virtual lane, 4 bits
	LVer   uint8  // link version, 4 bits; 0 for IBA 1.x
	SL     uint8  // service level, 4 bits
	LNH    LNH    // link next header, 2 bits
	DLID   uint16 // destination LID
	PktLen uint16 // packet length in 4-byte words, 11 bits
	SLID   uint16 // source LID
}

// IsValid reports whether b is long enough to hold an LRH.
func (b LRH) IsValid() bool { return len(b) >= LRHSize }

// VL returns the "VL" (virtual lane) field.
func (b LRH) VL() uint8 { return b[lrhVLLVer] >> lrhVLShift }

// SetVL sets the "VL" field; only the low 4 bits of v are used.
func (b LRH) SetVL(v uint8) { b[lrhVLLVer] = b[lrhVLLVer]&lrhLVMask | v<<lrhVLShift }

// LVer returns the "LVer" (link version) field.
func (b LRH) LVer() uint8 { return b[lrhVLLVer] & lrhLVMask }

// SetLVer sets the "LVer" field; only the low 4 bits of v are used.
func (b LRH) SetLVer(v uint8) { b[lrhVLLVer] = b[lrhVLLVer]&^lrhLVMask | v&lrhLVMask }

// SL returns the "SL" (service level) field.
func (b LRH) SL() uint8 { return b[lrhSLLNH] >> lrhSLShift }

// SetSL sets the "SL" field; only the low 4 bits of v are used. The
// reserved bits are cleared.
func (b LRH) SetSL(v uint8) { b[lrhSLLNH] = b[lrhSLLNH]&lrhLNHMask | v<<lrhSLShift }

// LNH returns the "LNH" (link next header) field.
func (b LRH) LNH() LNH { return LNH(b[lrhSLLNH] & lrhLNHMask) }

// SetLNH sets the "LNH" field; only the low 2 bits of v are used.
func (b LRH) SetLNH(v LNH) { b[lrhSLLNH] = b[lrhSLLNH]&^lrhLNHMask | uint8(v)&lrhLNHMask }

// DLID returns the "DLID" (destination local identifier) field.
func (b LRH) DLID() uint16 { return binary.BigEndian.Uint16(b[lrhDLID:]) }

// SetDLID sets the "DLID" field.
func (b LRH) SetDLID(v uint16) { binary.BigEndian.PutUint16(b[lrhDLID:], v) }

// PktLen returns the "PktLen" field, in 4-byte words.
func (b LRH) PktLen() uint16 { return binary.BigEndian.Uint16(b[lrhPktLen:]) & lrhLenMask }

// SetPktLen sets the "PktLen" field; only the low 11 bits of v are used and
// the reserved bits are cleared.
func (b LRH) SetPktLen(v uint16) { binary.BigEndian.PutUint16(b[lrhPktLen:], v&lrhLenMask) }

// SLID returns the "SLID" (source local identifier) field.
func (b LRH) SLID() uint16 { return binary.BigEndian.Uint16(b[lrhSLID:]) }

// SetSLID sets the "SLID" field.
func (b LRH) SetSLID(v uint16) { binary.BigEndian.PutUint16(b[lrhSLID:], v) }

// Encode writes every field of f into b, clearing the reserved bits.
func (b LRH) Encode(f *LRHFields) {
	b[lrhVLLVer] = f.VL<<lrhVLShift | f.LVer&lrhLVMask
	b[lrhSLLNH] = f.SL<<lrhSLShift | uint8(f.LNH)&lrhLNHMask
	b.SetDLID(f.DLID)
	b.SetPktLen(f.PktLen)
	b.SetSLID(f.SLID)
}

// Fields returns the decoded fields of b.
func (b LRH) Fields() LRHFields {
	return LRHFields{VL: b.VL(), LVer: b.LVer(), SL: b.SL(), LNH: b.LNH(),
		DLID: b.DLID(), PktLen: b.PktLen(), SLID: b.SLID()}
}
