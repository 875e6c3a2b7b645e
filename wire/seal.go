package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Errors of Verify and VerifyFlowControl; the errors they return wrap one of
// these, so errors.Is tells the cause (a switch counts each as a
// PortRcvErrors event).
var (
	ErrShort  = errors.New("wire: packet too short")
	ErrPktLen = errors.New("wire: bad LRH PktLen")
	ErrPayLen = errors.New("wire: bad GRH PayLen")
	ErrPadCnt = errors.New("wire: bad BTH PadCnt")
	ErrICRC   = errors.New("wire: bad ICRC")
	ErrVCRC   = errors.New("wire: bad VCRC")
	ErrLPCRC  = errors.New("wire: bad link packet CRC")
)

// minPacket returns the smallest packet (LRH through VCRC) with link next
// header lnh: the headers it implies plus the CRCs.
func minPacket(lnh LNH) int {
	switch lnh {
	case LNHLocal:
		return LRHSize + BTHSize + ICRCSize + VCRCSize
	case LNHGlobal:
		return LRHSize + GRHSize + BTHSize + ICRCSize + VCRCSize
	}
	return LRHSize + VCRCSize
}

// PacketLen returns the length of the data packet at the start of b as its
// LRH PktLen gives it, VCRC included, after checking that b holds that many
// bytes and that they are enough for the headers the LNH implies. Bytes of
// b past that length (such as Ethernet padding) are not part of the packet.
func PacketLen(b []byte) (int, error) {
	n, err := packetEnd(b)
	if err != nil {
		return 0, err
	}
	if err := checkMinimum(b, n); err != nil {
		return 0, err
	}
	return n, nil
}

// packetEnd returns the packet length PktLen gives, checked only against
// b and the smallest packet of all (an LRH and a VCRC).
func packetEnd(b []byte) (int, error) {
	if len(b) < LRHSize+VCRCSize {
		return 0, fmt.Errorf("%w: %d bytes, an LRH and VCRC need %d", ErrShort, len(b), LRHSize+VCRCSize)
	}
	words := LRH(b).PktLen()
	n := int(words)*4 + VCRCSize
	if n < LRHSize+VCRCSize {
		return 0, fmt.Errorf("%w: %d words, an LRH needs at least %d", ErrPktLen, words, LRHSize/4)
	}
	if n > len(b) {
		return 0, fmt.Errorf("%w: %d words (%d bytes with VCRC) but only %d bytes", ErrPktLen, words, n, len(b))
	}
	return n, nil
}

// checkMinimum checks that a packet of n bytes holds the headers its LNH
// implies.
func checkMinimum(b []byte, n int) error {
	lrh := LRH(b)
	if least := minPacket(lrh.LNH()); n < least {
		return fmt.Errorf("%w: %d words, LNH %v needs at least %d", ErrPktLen, lrh.PktLen(), lrh.LNH(), (least-VCRCSize)/4)
	}
	return nil
}

// Seal fills in, in place, the lengths and CRCs of the data packet pkt,
// which runs from the LRH to the VCRC with every other byte already set:
// the headers, the payload and its pad (the BTH PadCnt set by the builder,
// the pad bytes zero or whatever they should carry), and room for the ICRC
// (IBA packets) and VCRC. Seal sets LRH PktLen, GRH PayLen of global
// packets, the ICRC and the VCRC. The payload and pad together must align the
// packet to 4 bytes.
func Seal(pkt []byte) error {
	if len(pkt) < LRHSize+VCRCSize {
		return fmt.Errorf("%w: %d bytes", ErrShort, len(pkt))
	}
	lrh := LRH(pkt)
	lnh := lrh.LNH()
	if len(pkt) < minPacket(lnh) {
		return fmt.Errorf("%w: %d bytes, LNH %v needs %d", ErrShort, len(pkt), lnh, minPacket(lnh))
	}
	words := (len(pkt) - VCRCSize) / 4
	if (len(pkt)-VCRCSize)%4 != 0 || words > MaxPktLen {
		return fmt.Errorf("%w: %d bytes before the VCRC is not a whole number of words up to %d", ErrPktLen, len(pkt)-VCRCSize, MaxPktLen)
	}
	lrh.SetPktLen(uint16(words))
	end := len(pkt) - VCRCSize
	if lnh.HasICRC() {
		if lnh == LNHGlobal {
			GRH(pkt[LRHSize:]).SetPayLen(uint16(end - LRHSize - GRHSize))
		}
		icrc := end - ICRCSize
		binary.LittleEndian.PutUint32(pkt[icrc:], ICRC(pkt[:icrc]))
	}
	binary.LittleEndian.PutUint16(pkt[end:], CRC16(pkt[:end]))
	return nil
}

// SealVCRC recomputes only the VCRC of the data packet at the start of pkt,
// as a switch must after changing a variant field such as the VL.
func SealVCRC(pkt []byte) error {
	n, err := PacketLen(pkt)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint16(pkt[n-VCRCSize:], CRC16(pkt[:n-VCRCSize]))
	return nil
}

// Verify checks the data packet at the start of b: its length against the
// LRH PktLen (bytes past the packet, such as Ethernet padding, are ignored),
// the VCRC, and for IBA packets the ICRC, the GRH PayLen and that the BTH
// PadCnt fits in the packet. The error wraps ErrShort, ErrPktLen, ErrVCRC,
// ErrICRC, ErrPayLen or ErrPadCnt. Verify does not allocate.
func Verify(b []byte) error {
	n, err := packetEnd(b)
	if err != nil {
		return err
	}
	pkt := b[:n]
	end := n - VCRCSize
	// The VCRC first, as a link layer does: a corrupt LNH is then a CRC
	// error rather than a length error.
	if got, want := binary.LittleEndian.Uint16(pkt[end:]), CRC16(pkt[:end]); got != want {
		return fmt.Errorf("%w: packet carries %#04x, computed %#04x", ErrVCRC, got, want)
	}
	if err := checkMinimum(pkt, n); err != nil {
		return err
	}
	lnh := LRH(pkt).LNH()
	if !lnh.HasICRC() {
		return nil
	}
	icrc := end - ICRCSize
	if got, want := binary.LittleEndian.Uint32(pkt[icrc:]), ICRC(pkt[:icrc]); got != want {
		return fmt.Errorf("%w: packet carries %#08x, computed %#08x", ErrICRC, got, want)
	}
	bth := LRHSize
	if lnh == LNHGlobal {
		grh := GRH(pkt[LRHSize:])
		if want := end - LRHSize - GRHSize; int(grh.PayLen()) != want {
			return fmt.Errorf("%w: %d, packet has %d bytes after the GRH", ErrPayLen, grh.PayLen(), want)
		}
		if grh.NxtHdr() != NxtHdrBTH {
			return nil // not IBA transport: no BTH to check
		}
		bth += GRHSize
	}
	if pad := int(BTH(pkt[bth:]).PadCnt()); pad > icrc-bth-BTHSize {
		return fmt.Errorf("%w: %d pad bytes but %d bytes after the BTH", ErrPadCnt, pad, icrc-bth-BTHSize)
	}
	return nil
}
