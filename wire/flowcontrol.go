package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Flow control link packet (IBA 1.2.1 §7.9.4, 6 bytes; the only link
// packet IBA 1.x defines):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|   Op  |         FCTBS         |   VL  |          FCCL         |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|             LPCRC             |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// FCTBS (flow control total blocks sent) and FCCL (flow control credit
// limit) count 64-byte blocks modulo 4096 (§7.9.3). LPCRC is the CRC16 of
// the first four bytes, sent least significant byte first.
const (
	fcOpFCTBS    = 0
	fcVLFCCL     = 2
	fcLPCRC      = 4
	fcHighShift  = 12
	fcCountMask  = 0x0fff
	fcNibbleMask = 0xf

	// FlowControlSize is the size of a flow control link packet.
	FlowControlSize = 6
)

//go:generate go tool stringer -type=FlowControlOp -linecomment

// FlowControlOp is the Op field of a link packet.
type FlowControlOp uint8

// Link packet operands (§7.9.4).
const (
	// FlowControlNormal: flow control packet
	FlowControlNormal FlowControlOp = 0 // Normal
	// FlowControlInit: flow control init packet, sent during link initialisation
	FlowControlInit FlowControlOp = 1 // Init
)

// ErrLinkOp says a link packet carries an Op that IBA does not define.
var ErrLinkOp = errors.New("wire: unknown link packet Op")

// FlowControl is a view of a flow control link packet at the start of a
// byte slice. Callers must check IsValid before using any accessor.
type FlowControl []byte

// FlowControlFields holds the fields of a link packet for Encode.
type FlowControlFields struct {
	Op    FlowControlOp // 4 bits
	FCTBS uint16        // 12 bits
	VL    uint8         // 4 bits
	FCCL  uint16        // 12 bits
	LPCRC uint16        // link packet CRC; SealFlowControl computes it
}

// IsValid reports whether b is long enough to hold a link packet.
func (b FlowControl) IsValid() bool { return len(b) >= FlowControlSize }

func (b FlowControl) half(off int) uint16 { return binary.BigEndian.Uint16(b[off:]) }

func (b FlowControl) setHalf(off int, hi uint8, count uint16) {
	binary.BigEndian.PutUint16(b[off:], uint16(hi&fcNibbleMask)<<fcHighShift|count&fcCountMask)
}

// Op returns the "Op" (operand) field.
func (b FlowControl) Op() FlowControlOp { return FlowControlOp(b.half(fcOpFCTBS) >> fcHighShift) }

// SetOp sets the "Op" field; only the low 4 bits of v are used.
func (b FlowControl) SetOp(v FlowControlOp) { b.setHalf(fcOpFCTBS, uint8(v), b.FCTBS()) }

// FCTBS returns the 12-bit "FCTBS" (flow control total blocks sent) field.
func (b FlowControl) FCTBS() uint16 { return b.half(fcOpFCTBS) & fcCountMask }

// SetFCTBS sets the "FCTBS" field; only the low 12 bits of v are used.
func (b FlowControl) SetFCTBS(v uint16) { b.setHalf(fcOpFCTBS, uint8(b.Op()), v) }

// VL returns the "VL" (virtual lane) field.
func (b FlowControl) VL() uint8 { return uint8(b.half(fcVLFCCL) >> fcHighShift) }

// SetVL sets the "VL" field; only the low 4 bits of v are used.
func (b FlowControl) SetVL(v uint8) { b.setHalf(fcVLFCCL, v, b.FCCL()) }

// FCCL returns the 12-bit "FCCL" (flow control credit limit) field.
func (b FlowControl) FCCL() uint16 { return b.half(fcVLFCCL) & fcCountMask }

// SetFCCL sets the "FCCL" field; only the low 12 bits of v are used.
func (b FlowControl) SetFCCL(v uint16) { b.setHalf(fcVLFCCL, b.VL(), v) }

// LPCRC returns the "LPCRC" (link packet CRC) field.
func (b FlowControl) LPCRC() uint16 { return binary.LittleEndian.Uint16(b[fcLPCRC:]) }

// SetLPCRC sets the "LPCRC" field.
func (b FlowControl) SetLPCRC(v uint16) { binary.LittleEndian.PutUint16(b[fcLPCRC:], v) }

// ComputeLPCRC returns the CRC the LPCRC field should hold.
func (b FlowControl) ComputeLPCRC() uint16 { return CRC16(b[:fcLPCRC]) }

// Encode writes every field of f into b, LPCRC included as given.
func (b FlowControl) Encode(f *FlowControlFields) {
	b.setHalf(fcOpFCTBS, uint8(f.Op), f.FCTBS)
	b.setHalf(fcVLFCCL, f.VL, f.FCCL)
	b.SetLPCRC(f.LPCRC)
}

// Fields returns the decoded fields of b.
func (b FlowControl) Fields() FlowControlFields {
	return FlowControlFields{Op: b.Op(), FCTBS: b.FCTBS(), VL: b.VL(), FCCL: b.FCCL(), LPCRC: b.LPCRC()}
}

// AppendFlowControl appends the sealed link packet described by f (its
// LPCRC field ignored and computed) to dst and returns the extended slice.
// It does not allocate when cap(dst) suffices.
func AppendFlowControl(dst []byte, f *FlowControlFields) []byte {
	start := len(dst)
	dst = slices.Grow(dst, FlowControlSize)[:start+FlowControlSize]
	b := FlowControl(dst[start:])
	b.Encode(f)
	b.SetLPCRC(b.ComputeLPCRC())
	return dst
}

// SealFlowControl computes the LPCRC of the link packet at the start of b
// in place.
func SealFlowControl(b []byte) error {
	fc := FlowControl(b)
	if !fc.IsValid() {
		return fmt.Errorf("%w: link packet of %d bytes, want %d", ErrShort, len(b), FlowControlSize)
	}
	fc.SetLPCRC(fc.ComputeLPCRC())
	return nil
}

// VerifyFlowControl checks the link packet at the start of b (bytes past
// FlowControlSize, such as Ethernet padding, are ignored): its length, its
// LPCRC and its Op. The error wraps ErrShort, ErrLPCRC or ErrLinkOp.
func VerifyFlowControl(b []byte) error {
	fc := FlowControl(b)
	if !fc.IsValid() {
		return fmt.Errorf("%w: link packet of %d bytes, want %d", ErrShort, len(b), FlowControlSize)
	}
	if got, want := fc.LPCRC(), fc.ComputeLPCRC(); got != want {
		return fmt.Errorf("%w: packet carries %#04x, computed %#04x", ErrLPCRC, got, want)
	}
	if op := fc.Op(); op != FlowControlNormal && op != FlowControlInit {
		return fmt.Errorf("%w: %d", ErrLinkOp, op)
	}
	return nil
}
