package wire

import "slices"

// UDFields describes an unreliable-datagram SEND_ONLY packet: LRH (LNH = IBA
// local, or IBA global when GRH != nil), BTH (opcode UD SEND_ONLY 0x64),
// DETH, payload.
type UDFields struct {
	VL, SL     uint8
	DLID, SLID uint16
	GRH        *GRHFields // nil: no GRH; PayLen and NxtHdr are filled in, IPVer 0 becomes GRHIPVer
	PKey       uint16
	DestQP     uint32
	PSN        uint32
	QKey       uint32
	SrcQP      uint32
	Payload    []byte // e.g. a 256-byte MAD
}

// UDHeaderSize returns the size of the headers AppendUD writes before the
// payload: LRH, the GRH when global, BTH and DETH.
func UDHeaderSize(global bool) int {
	if global {
		return LRHSize + GRHSize + BTHSize + DETHSize
	}
	return LRHSize + BTHSize + DETHSize
}

// UDPacketSize returns the size of the sealed UD packet AppendUD builds for
// a payload of n bytes: headers, payload, pad to 4 bytes, ICRC and VCRC.
func UDPacketSize(n int, global bool) int {
	return UDHeaderSize(global) + n + padLen(n) + ICRCSize + VCRCSize
}

// padLen returns the pad bytes that align a payload of n bytes to 4.
func padLen(n int) int { return -n & 3 }

// AppendUD appends the sealed packet (PktLen filled, pad count set, ICRC and
// VCRC computed) to dst and returns the extended slice. It does not allocate
// when cap(dst) suffices. A payload too large for the 11-bit PktLen (over
// 8 KiB) yields a packet that Verify rejects.
func AppendUD(dst []byte, f *UDFields) []byte {
	dst, pkt, off := appendNetworkHeaders(dst, UDPacketSize(len(f.Payload), f.GRH != nil),
		&LRHFields{VL: f.VL, SL: f.SL, DLID: f.DLID, SLID: f.SLID}, f.GRH)
	pad := padLen(len(f.Payload))
	BTH(pkt[off:]).Encode(&BTHFields{OpCode: UDSendOnly, PadCnt: uint8(pad), PKey: f.PKey,
		DestQP: f.DestQP, PSN: f.PSN})
	off += BTHSize
	DETH(pkt[off:]).Encode(&DETHFields{QKey: f.QKey, SrcQP: f.SrcQP})
	off += DETHSize
	off += copy(pkt[off:], f.Payload)
	clear(pkt[off : off+pad])
	_ = Seal(pkt) // cannot fail: the layout above is what Seal requires, sizes aside
	return dst
}

// appendNetworkHeaders grows dst by a packet of size bytes and writes its
// LRH (LNH local, or global with g) and, with g, its GRH (IPVer 0 becomes
// GRHIPVer, NxtHdr BTH; PayLen is Seal's). It returns dst, the packet and
// the offset of the BTH.
func appendNetworkHeaders(dst []byte, size int, l *LRHFields, g *GRHFields) ([]byte, []byte, int) {
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	pkt := dst[start:]
	lrh := *l
	lrh.LNH = LNHLocal
	if g != nil {
		lrh.LNH = LNHGlobal
	}
	LRH(pkt).Encode(&lrh)
	if g == nil {
		return dst, pkt, LRHSize
	}
	gf := *g
	if gf.IPVer == 0 {
		gf.IPVer = GRHIPVer
	}
	gf.NxtHdr = NxtHdrBTH
	GRH(pkt[LRHSize:]).Encode(&gf)
	return dst, pkt, LRHSize + GRHSize
}
