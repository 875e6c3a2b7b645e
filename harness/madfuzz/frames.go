package madfuzz

import (
	"math/rand/v2"

	"ibfab/link"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// FrameWriter puts raw data frames on a link, as a second socket on an
// HCA's veth end does (link/veth's Endpoint): what the far switch's port
// receives, bypassing every check of the HCA that sends.
type FrameWriter interface {
	WritePacket(k link.Kind, pkt []byte) error
}

// FrameShape is how a frame around a fuzz MAD was broken.
type FrameShape uint8

//go:generate go tool stringer -type=FrameShape -linecomment

// The frame shapes. Those that change a header seal the frame again (its
// lengths and CRCs right), so the check of that header is what fails,
// not the CRC before it.
const (
	FrameGood   FrameShape = iota + 1 // good
	FrameICRC                         // icrc
	FrameVCRC                         // vcrc
	FrameLRH                          // lrh
	FrameVL15                         // vl15-data
	FramePktLen                       // pktlen
	FrameBTH                          // bth
	FrameDETH                         // deth
	FrameRunt                         // runt
	FrameJumbo                        // jumbo
	FrameJunk                         // junk
)

// frameGen wraps MADs in frames from the fuzzer's LID and breaks them.
type frameGen struct {
	rng  *rand.Rand
	slid uint16
}

func newFrameGen(seed uint64, slid uint16) *frameGen {
	return &frameGen{rng: rand.New(rand.NewPCG(seed^0xf4a3e5, seed)), slid: slid}
}

// frame is m, bound for lid, as a UD packet on QP0 (VL15) for the SMP
// classes and on QP1 (VL0) for the others, broken one way.
func (g *frameGen) frame(m []byte, lid uint16) ([]byte, FrameShape) {
	f := wire.UDFields{VL: 0, DLID: lid, SLID: g.slid, PKey: 0xffff, DestQP: 1, QKey: wire.QP1QKey, SrcQP: 1, Payload: m}
	if mad.MAD(m).MgmtClass().IsSubn() {
		f.VL, f.DestQP, f.QKey, f.SrcQP = 15, 0, 0, 0
	}
	p := wire.AppendUD(nil, &f)
	shape := FrameShape(1 + g.rng.IntN(int(FrameJunk)))
	switch shape {
	case FrameICRC:
		p[len(p)-wire.VCRCSize-1-g.rng.IntN(wire.ICRCSize)] ^= byte(1 + g.rng.IntN(255))
	case FrameVCRC:
		p[len(p)-1-g.rng.IntN(wire.VCRCSize)] ^= byte(1 + g.rng.IntN(255))
	case FrameLRH:
		g.lrh(wire.LRH(p))
		g.seal(p)
	case FrameVL15:
		// VL15 carries subnet management alone: a GMP on it, to a data
		// QP, must be dropped, not taken for an SMP.
		wire.LRH(p).SetVL(15)
		wire.BTH(p[wire.LRHSize:]).SetDestQP(1 + uint32(g.rng.IntN(0xffffff)))
		g.seal(p)
	case FramePktLen:
		wire.LRH(p).SetPktLen(uint16(g.rng.IntN(wire.MaxPktLen + 1)))
	case FrameBTH:
		g.bth(wire.BTH(p[wire.LRHSize:]))
		g.seal(p)
	case FrameDETH:
		d := wire.DETH(p[wire.LRHSize+wire.BTHSize:])
		d.SetQKey(g.rng.Uint32())
		d.SetSrcQP(g.rng.Uint32())
		g.seal(p)
	case FrameRunt:
		p = p[:1+g.rng.IntN(len(p)-1)]
	case FrameJumbo:
		p = g.jumbo(p)
	case FrameJunk:
		p = make([]byte, 1+g.rng.IntN(4500))
		g.fill(p)
	}
	return p, shape
}

func (g *frameGen) lrh(l wire.LRH) {
	switch g.rng.IntN(6) {
	case 0:
		l.SetLVer(uint8(1 + g.rng.IntN(15)))
	case 1:
		l.SetLNH(wire.LNH(g.rng.IntN(4)))
	case 2:
		l.SetVL(uint8(g.rng.IntN(16)))
	case 3:
		l.SetSL(uint8(g.rng.IntN(16)))
	case 4:
		l.SetDLID(uint16(g.rng.Uint32()))
	default:
		l.SetSLID(uint16(g.rng.Uint32()))
	}
}

func (g *frameGen) bth(b wire.BTH) {
	switch g.rng.IntN(5) {
	case 0:
		b.SetOpCode(wire.OpCode(g.rng.Uint32()))
	case 1:
		b.SetTVer(uint8(1 + g.rng.IntN(15)))
	case 2:
		b.SetPKey(uint16(g.rng.Uint32()))
	case 3:
		b.SetDestQP(g.rng.Uint32())
	default:
		b.SetPadCnt(uint8(1 + g.rng.IntN(3)))
	}
}

// jumbo grows p past every IBA MTU (4,096 bytes of payload, 4,170 with
// every header) with random bytes, up to the largest frame a link
// carries, sealed half the time.
func (g *frameGen) jumbo(p []byte) []byte {
	const least = 4200
	q := make([]byte, least+4*g.rng.IntN((link.MaxPacketSize-least)/4))
	copy(q, p[:len(p)-wire.ICRCSize-wire.VCRCSize])
	g.fill(q[len(p)-wire.ICRCSize-wire.VCRCSize : len(q)-wire.ICRCSize-wire.VCRCSize])
	if g.rng.IntN(2) == 0 {
		g.seal(q)
	}
	return q
}

func (g *frameGen) fill(b []byte) {
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
}

// seal sets the frame's lengths and CRCs again after a header changed;
// a header that makes it unsealable (an LNH without an ICRC, say) leaves
// it as it is, which is a bad frame too.
func (g *frameGen) seal(p []byte) { _ = wire.Seal(p) }
