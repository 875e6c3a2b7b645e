package wire

import (
	"errors"
	"fmt"
)

// Congestion notification packet (IBA 1.2.1 Annex A10, BTH opcode CNP,
// 0x80): a CA's answer to a FECN-marked packet of an unreliable service,
// sent back to the marked packet's source. It carries nothing but its
// headers:
//
//	LRH (8) | [GRH (40)] | BTH (12) | ICRC (4) | VCRC (2)
//
// No DETH follows the BTH (the opcode's service bits are 100, not UD's
// 011) and there is no payload: PktLen is 6 words for a local CNP. In the
// BTH, BECN is set, DestQP is the marked packet's source QP, PSN and
// PadCnt are 0. This is the layout of the Linux hfi1 driver's CNP (LRH
// and BTH only, BECN set, PSN 0) and what Wireshark's dissector expects
// after opcode 0x80 (nothing but the CRCs).
const (
	// CNPSize is the size of a local CNP, LRH through VCRC.
	CNPSize = LRHSize + BTHSize + ICRCSize + VCRCSize
)

// ErrNotCNP is wrapped by ParseCNP's error for a well-formed packet that is
// not a congestion notification.
var ErrNotCNP = errors.New("wire: not a CNP")

// CNPFields describes a CNP for AppendCNP.
type CNPFields struct {
	VL, SL     uint8
	DLID, SLID uint16
	GRH        *GRHFields // nil: no GRH; PayLen and NxtHdr are filled in, IPVer 0 becomes GRHIPVer
	PKey       uint16
	DestQP     uint32 // the source QP of the packet that met congestion
}

// CNPPacketSize returns the size of the sealed CNP AppendCNP builds.
func CNPPacketSize(global bool) int {
	if global {
		return CNPSize + GRHSize
	}
	return CNPSize
}

// AppendCNP appends the sealed CNP (BECN set, PktLen, ICRC and VCRC
// computed) to dst and returns the extended slice. It does not allocate
// when cap(dst) suffices.
func AppendCNP(dst []byte, f *CNPFields) []byte {
	dst, pkt, off := appendNetworkHeaders(dst, CNPPacketSize(f.GRH != nil),
		&LRHFields{VL: f.VL, SL: f.SL, DLID: f.DLID, SLID: f.SLID}, f.GRH)
	BTH(pkt[off:]).Encode(&BTHFields{OpCode: CNP, PKey: f.PKey, DestQP: f.DestQP, BECN: true})
	_ = Seal(pkt) // cannot fail: the layout above is what Seal requires
	return dst
}

// CNPPacket is what a CA needs of a received CNP: its addressing (the
// SLID is the LID the marked packet was sent to) and the BTH bits.
type CNPPacket struct {
	VL, SL     uint8
	DLID, SLID uint16
	Global     bool
	PKey       uint16
	DestQP     uint32
	BECN       bool
}

// ParseCNP reads the CNP at the start of b (LRH through VCRC; bytes after
// PktLen's end are ignored, as are any bytes between the BTH and the ICRC,
// which the CNP does not define). It checks every bound but no CRC: call
// Verify first for packets off a link. It never panics and does not
// allocate.
func ParseCNP(b []byte) (CNPPacket, error) {
	var c CNPPacket
	lrh := LRH(b)
	if !lrh.IsValid() {
		return c, fmt.Errorf("%w: %d bytes, an LRH needs %d", ErrShort, len(b), LRHSize)
	}
	end := int(lrh.PktLen()) * 4 // LRH through ICRC
	if end > len(b) || end < LRHSize {
		return c, fmt.Errorf("%w: %d words in %d bytes", ErrPktLen, lrh.PktLen(), len(b))
	}
	off := LRHSize
	switch lrh.LNH() {
	case LNHLocal:
	case LNHGlobal:
		off += GRHSize
		c.Global = true
	default:
		return c, fmt.Errorf("%w: LNH %v", ErrNotCNP, lrh.LNH())
	}
	if off+BTHSize+ICRCSize > end {
		return c, fmt.Errorf("%w: %d bytes cannot hold the headers", ErrPktLen, end)
	}
	bth := BTH(b[off:])
	if bth.OpCode() != CNP {
		return c, fmt.Errorf("%w: opcode %v", ErrNotCNP, bth.OpCode())
	}
	c = CNPPacket{VL: lrh.VL(), SL: lrh.SL(), DLID: lrh.DLID(), SLID: lrh.SLID(), Global: c.Global,
		PKey: bth.PKey(), DestQP: bth.DestQP(), BECN: bth.BECN()}
	return c, nil
}
