package wire

import (
	"errors"
	"fmt"
)

// ErrNotUD is wrapped by ParseUD's error for a well-formed packet that is
// not an IBA unreliable datagram (raw, or another transport).
var ErrNotUD = errors.New("wire: not a UD packet")

// UDPacket is what a receiving node needs of a UD packet: the addressing in
// its LRH, BTH and DETH, and its payload, which aliases the packet.
type UDPacket struct {
	VL, SL     uint8
	DLID, SLID uint16
	Global     bool // a GRH follows the LRH
	OpCode     OpCode
	PKey       uint16
	DestQP     uint32
	QKey       uint32
	SrcQP      uint32
	Payload    []byte // after the DETH (and ImmDt) up to the pad bytes
	// FECN and BECN are the congestion bits of the BTH (Annex A10): a
	// switch on the way met congestion, or the packet notifies some.
	FECN, BECN bool
}

// ParseUD reads the UD packet at the start of b (LRH through VCRC; bytes
// after PktLen's end, such as Ethernet padding, are ignored). It checks
// every bound but no CRC: call Verify first for packets off a link. It
// never panics and does not allocate.
func ParseUD(b []byte) (UDPacket, error) {
	var u UDPacket
	lrh := LRH(b)
	if !lrh.IsValid() {
		return u, fmt.Errorf("%w: %d bytes, an LRH needs %d", ErrShort, len(b), LRHSize)
	}
	end := int(lrh.PktLen()) * 4 // LRH through ICRC
	if end > len(b) || end < LRHSize {
		return u, fmt.Errorf("%w: %d words in %d bytes", ErrPktLen, lrh.PktLen(), len(b))
	}
	off := LRHSize
	switch lrh.LNH() {
	case LNHLocal:
	case LNHGlobal:
		off += GRHSize
		u.Global = true
	default:
		return u, fmt.Errorf("%w: LNH %v", ErrNotUD, lrh.LNH())
	}
	// The opcode first, once the BTH is known to be there: a packet of
	// another transport (a CNP has no DETH) is then ErrNotUD, not a
	// length error, so a receiver can try it as what it is.
	if off+BTHSize+ICRCSize > end {
		return u, fmt.Errorf("%w: %d bytes cannot hold the transport headers", ErrPktLen, end)
	}
	bth := BTH(b[off:])
	if !bth.OpCode().IsUD() {
		return u, fmt.Errorf("%w: opcode %v", ErrNotUD, bth.OpCode())
	}
	if off+BTHSize+DETHSize+ICRCSize > end {
		return u, fmt.Errorf("%w: %d bytes cannot hold the transport headers", ErrPktLen, end)
	}
	deth := DETH(b[off+BTHSize:])
	start := off + BTHSize + DETHSize
	if bth.OpCode() == UDSendOnlyImm {
		start += 4 // ImmDt
	}
	stop := end - ICRCSize - int(bth.PadCnt())
	if stop < start {
		return u, fmt.Errorf("%w: %d pad bytes leave no room for the headers", ErrPadCnt, bth.PadCnt())
	}
	u = UDPacket{
		VL: lrh.VL(), SL: lrh.SL(), DLID: lrh.DLID(), SLID: lrh.SLID(), Global: u.Global,
		OpCode: bth.OpCode(), PKey: bth.PKey(), DestQP: bth.DestQP(),
		QKey: deth.QKey(), SrcQP: deth.SrcQP(), Payload: b[start:stop], FECN: bth.FECN(), BECN: bth.BECN(),
	}
	return u, nil
}
