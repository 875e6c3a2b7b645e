package wire

import "hash/crc32"

// CRCs of IBA packets (IBA 1.2.1 §7.8).
//
// ICRC, the invariant CRC, is the CRC-32 of IEEE 802.3 (polynomial
// 0x04C11DB7, bits taken least significant first, register preset to ones,
// result complemented) over the packet from the first byte of the LRH to the
// last pad byte, with the fields a switch or router may change replaced by
// ones:
//
//	local packet (LNH IBA local):   LRH VL; BTH resv8a
//	global packet (LNH IBA global): the whole LRH; GRH TClass, FlowLabel and
//	                                HopLmt; BTH resv8a
//
// It is sent least significant byte first, as the Ethernet FCS is. This is
// the rule RoCE inherits unchanged (there the missing LRH counts as eight
// bytes of ones), which is why a Linux rxe ICRC and ours agree.
//
// VCRC, the variant CRC, is a CRC-16 with polynomial 0x100B
// (x^16+x^12+x^3+x+1), bits least significant first, register preset to
// ones, result complemented, over every byte from the LRH through the ICRC
// (through the payload for raw packets); it is recomputed at every hop. The
// link packet CRC (LPCRC, §7.9.4) is the same CRC-16 over the first four
// bytes of a link packet. Both are sent least significant byte first, like
// the ICRC.
const (
	// ICRCSize is the size of the invariant CRC.
	ICRCSize = 4
	// VCRCSize is the size of the variant CRC.
	VCRCSize = 2

	crc16Poly = 0xd008 // 0x100B with its bits reversed, for LSB-first shifting
)

// crc16Tables are the slicing-by-16 tables of the CRC-16, built once at
// init so that computing a CRC never allocates: crc16Tables[k][i] is the
// CRC remainder of byte i followed by k zero bytes. Sixteen bytes a step
// (independent lookups in 8 KiB of tables, in L1) make the VCRC of a 2 KiB
// packet, computed on every send and checked on every receive, several
// times cheaper than a byte a step (BenchmarkCRC16_2K: the table loads are
// the bound, so sixteen gain some 15 % on eight).
var crc16Tables = func() (t [16][256]uint16) {
	for i := range t[0] {
		c := uint16(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ crc16Poly
			} else {
				c >>= 1
			}
		}
		t[0][i] = c
	}
	for k := 1; k < len(t); k++ {
		for i := range t[k] {
			c := t[k-1][i]
			t[k][i] = c>>8 ^ t[0][byte(c)]
		}
	}
	return t
}()

// CRC16 returns the IBA CRC-16 of b: the VCRC when b runs from the LRH
// through the ICRC, the LPCRC when b is the first four bytes of a link
// packet.
func CRC16(b []byte) uint16 { return ^crc16Update(0xffff, b) }

// crc16FoldMin is the shortest input worth folding (crc16_amd64.go): below
// it the tables' sixteen bytes a step are as fast.
const crc16FoldMin = 256

// crc16Update runs the CRC-16 register c over b: folded as far as the CPU
// can (crc16FoldInto), the rest through the tables.
func crc16Update(c uint16, b []byte) uint16 {
	var acc [64]byte
	if n := crc16FoldInto(c, b, &acc); n > 0 {
		c, b = crc16Table(0, acc[:]), b[n:]
	}
	return crc16Table(c, b)
}

// crc16Table runs the register c over b through the slicing-by-16 tables.
func crc16Table(c uint16, b []byte) uint16 {
	t := &crc16Tables
	for ; len(b) >= 16; b = b[16:] {
		_ = b[15] // one bounds check for the sixteen
		c ^= uint16(b[0]) | uint16(b[1])<<8
		c = t[15][byte(c)] ^ t[14][c>>8] ^ t[13][b[2]] ^ t[12][b[3]] ^
			t[11][b[4]] ^ t[10][b[5]] ^ t[9][b[6]] ^ t[8][b[7]] ^
			t[7][b[8]] ^ t[6][b[9]] ^ t[5][b[10]] ^ t[4][b[11]] ^
			t[3][b[12]] ^ t[2][b[13]] ^ t[1][b[14]] ^ t[0][b[15]]
	}
	for _, x := range b {
		c = t[0][byte(c)^x] ^ c>>8
	}
	return c
}

// xPowMod16 returns x^e mod x^16+x^12+x^3+x+1, coefficient of x^d in bit d.
func xPowMod16(e int) uint16 {
	const p = 0x100b // P without its x^16
	r := uint16(1)
	for range e {
		top := r & 0x8000
		r <<= 1
		if top != 0 {
			r ^= p
		}
	}
	return r
}

// reflect64 places a polynomial of degree < 16 (coefficient of x^d in bit
// d) in a 64-bit lane of the bit-reflected fold: the coefficient of x^d in
// bit 63-d.
func reflect64(v uint16) uint64 {
	var r uint64
	for d := range 16 {
		if v&(1<<d) != 0 {
			r |= 1 << (63 - d)
		}
	}
	return r
}

// ICRC returns the invariant CRC of pkt, which runs from the first byte of
// the LRH to the last pad byte (the ICRC and VCRC excluded). Variant fields
// are masked per the LRH's LNH. Headers cut short by the end of pkt are
// masked as far as they go, so ICRC never panics.
func ICRC(pkt []byte) uint32 {
	// Masked copy of the headers that hold variant fields: LRH, GRH, BTH.
	var hdr [LRHSize + GRHSize + BTHSize]byte
	n := copy(hdr[:], pkt)
	h := hdr[:n]
	bth := LRHSize // offset of the BTH in h, or -1 when there is none
	switch {
	case n == 0:
		bth = -1
	case n < LRHSize || LRH(h).LNH() != LNHGlobal:
		h[lrhVLLVer] |= 0xf0 // VL
	default:
		for i := range LRHSize {
			h[i] = 0xff
		}
		bth = LRHSize + GRHSize
		if n >= LRHSize+GRHSize {
			g := h[LRHSize:]
			g[grhVerClassFlow] |= 0x0f // TClass high nibble; IPVer kept
			g[grhVerClassFlow+1] = 0xff
			g[grhVerClassFlow+2] = 0xff
			g[grhVerClassFlow+3] = 0xff
			g[grhHopLmt] = 0xff
			if g[grhNxtHdr] != NxtHdrBTH {
				bth = -1
			}
		}
	}
	if bth >= 0 && n > bth+bthResv8a {
		h[bth+bthResv8a] = 0xff
	}
	// The masked headers go through the table by hand: handing the stack
	// buffer to crc32.Update would move it to the heap.
	c := ^uint32(0)
	for _, x := range h {
		c = crc32.IEEETable[byte(c)^x] ^ c>>8
	}
	c = ^c
	if len(pkt) > n {
		c = crc32.Update(c, crc32.IEEETable, pkt[n:])
	}
	return c
}
