package mad

import "encoding/binary"

// attrGrow extends dst by n zero bytes and returns it with the new part.
func attrGrow(dst []byte, n int) (all, added []byte) {
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	return dst, dst[start:]
}

// attrHiNibble returns the top 4 bits of v.
func attrHiNibble(v byte) uint8 { return v >> piHighNibbleShift }

// attrSetHiNibble stores v's low 4 bits in the top half of b[off].
func attrSetHiNibble(b []byte, off int, v uint8) {
	attrSetBits(b, off, piHighNibbleShift, piNibbleMask, v)
}

// attrSetLoNibble stores v's low 4 bits in the bottom half of b[off].
func attrSetLoNibble(b []byte, off int, v uint8) { attrSetBits(b, off, 0, piNibbleMask, v) }

// attrSetBits stores v&mask at shift in b[off], keeping the other bits.
func attrSetBits(b []byte, off int, shift, mask, v uint8) {
	b[off] = b[off]&^(mask<<shift) | (v&mask)<<shift
}

// attrSetFlag sets or clears bit in b[off].
func attrSetFlag(b []byte, off int, bit uint8, v bool) {
	if v {
		b[off] |= bit
	} else {
		b[off] &^= bit
	}
}

// Big-endian accessors shared by the counter attributes.
func attrBE16(b []byte, off int) uint16     { return binary.BigEndian.Uint16(b[off:]) }
func attrBE32(b []byte, off int) uint32     { return binary.BigEndian.Uint32(b[off:]) }
func attrBE64(b []byte, off int) uint64     { return binary.BigEndian.Uint64(b[off:]) }
func attrPut16(b []byte, off int, v uint16) { binary.BigEndian.PutUint16(b[off:], v) }
func attrPut32(b []byte, off int, v uint32) { binary.BigEndian.PutUint32(b[off:], v) }
func attrPut64(b []byte, off int, v uint64) { binary.BigEndian.PutUint64(b[off:], v) }
