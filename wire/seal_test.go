package wire_test

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire"
)

// dataGoldens returns the goldens that are data packets.
func dataGoldens() []golden {
	var out []golden
	for _, g := range goldens {
		if !g.link {
			out = append(out, g)
		}
	}
	return out
}

func TestVerifyGoldens(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			if g.link {
				assert.NoError(t, wire.VerifyFlowControl(g.pkt))
				return
			}
			assert.NoError(t, wire.Verify(g.pkt))
			// Ethernet padding after the packet is not part of it.
			assert.NoError(t, wire.Verify(append(clone(g.pkt), make([]byte, 17)...)))
			n, err := wire.PacketLen(append(clone(g.pkt), 0, 0, 0))
			require.NoError(t, err)
			assert.Equal(t, len(g.pkt), n)
		})
	}
}

// TestSealGoldens reseals each golden with its lengths and CRCs zeroed: Seal
// must restore the bytes exactly.
func TestSealGoldens(t *testing.T) {
	for _, g := range dataGoldens() {
		t.Run(g.name, func(t *testing.T) {
			pkt := clone(g.pkt)
			wire.LRH(pkt).SetPktLen(0)
			if g.grh != nil {
				wire.GRH(pkt[wire.LRHSize:]).SetPayLen(0)
			}
			clear(pkt[len(pkt)-6:])
			require.NoError(t, wire.Seal(pkt))
			assert.Equal(t, g.pkt, pkt)
		})
	}
}

func TestSealErrors(t *testing.T) {
	tests := []struct {
		name string
		pkt  []byte
		want error
	}{
		{"empty", nil, wire.ErrShort},
		{"LRH without VCRC", goldenRaw[:8], wire.ErrShort},
		{"local without room for BTH", goldenUD[:8+12+4+1], wire.ErrShort},
		{"global without room for GRH", goldenGlobal[:8+12+6], wire.ErrShort},
		{"unaligned", goldenUD[:len(goldenUD)-1], wire.ErrPktLen},
		{"too long", append(clone(goldenRaw[:8]), make([]byte, 4*2048+2-8)...), wire.ErrPktLen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wire.Seal(clone(tt.pkt))
			if !errors.Is(err, tt.want) {
				t.Errorf("Seal(%d bytes) = %v, want %v", len(tt.pkt), err, tt.want)
			}
		})
	}
}

// pktLenBit reports whether bit i of a data packet lies in the LRH PktLen.
func pktLenBit(i int) bool {
	return i/8 == 5 || (i/8 == 4 && i%8 < 3) // byte 4 bits 2-0 (LSB numbering), byte 5
}

// TestVerifyFlippedBit flips every bit of every data golden, one at a
// time: Verify must reject each. A flip inside PktLen moves the packet's
// end, which Verify reports as a length or CRC error; anywhere else it is
// a CRC error.
func TestVerifyFlippedBit(t *testing.T) {
	for _, g := range dataGoldens() {
		t.Run(g.name, func(t *testing.T) {
			pkt := clone(g.pkt)
			for i := range len(pkt) * 8 {
				pkt[i/8] ^= 1 << (i % 8)
				err := wire.Verify(pkt)
				pkt[i/8] ^= 1 << (i % 8)
				switch {
				case err == nil:
					t.Fatalf("Verify(%s with bit %d flipped) = nil, want an error", g.name, i)
				case pktLenBit(i):
				case !errors.Is(err, wire.ErrVCRC) && !errors.Is(err, wire.ErrICRC):
					t.Fatalf("Verify(%s with bit %d flipped) = %v, want ErrVCRC or ErrICRC", g.name, i, err)
				}
			}
		})
	}
}

// TestVerifyVariantFields changes fields the ICRC leaves out (and, as a
// check, one it covers) and recomputes only the VCRC, as a switch or router
// would: only the covered change must fail the ICRC.
func TestVerifyVariantFields(t *testing.T) {
	tests := []struct {
		name   string
		pkt    []byte
		change func([]byte)
		want   error
	}{
		{"local VL", goldenUD, func(p []byte) { wire.LRH(p).SetVL(0) }, nil},
		{"local resv8a", goldenUD, func(p []byte) { p[8+4] = 0x5a }, nil},
		{"local SL", goldenUD, func(p []byte) { wire.LRH(p).SetSL(0) }, wire.ErrICRC},
		{"local DLID", goldenUD, func(p []byte) { wire.LRH(p).SetDLID(9) }, wire.ErrICRC},
		{"local payload", goldenUD, func(p []byte) { p[30] ^= 1 }, wire.ErrICRC},
		{"global DLID and SLID", goldenGlobal, func(p []byte) { wire.LRH(p).SetDLID(9); wire.LRH(p).SetSLID(8) }, nil},
		{"global SL", goldenGlobal, func(p []byte) { wire.LRH(p).SetSL(1) }, nil},
		{"global TClass", goldenGlobal, func(p []byte) { wire.GRH(p[8:]).SetTClass(0) }, nil},
		{"global FlowLabel", goldenGlobal, func(p []byte) { wire.GRH(p[8:]).SetFlowLabel(1) }, nil},
		{"global HopLmt", goldenGlobal, func(p []byte) { wire.GRH(p[8:]).SetHopLmt(0) }, nil},
		{"global resv8a", goldenGlobal, func(p []byte) { p[48+4] = 1 }, nil},
		{"global DGID", goldenGlobal, func(p []byte) { p[8+39] ^= 1 }, wire.ErrICRC},
		{"global IPVer", goldenGlobal, func(p []byte) { wire.GRH(p[8:]).SetIPVer(4) }, wire.ErrICRC},
		{"global P_Key", goldenGlobal, func(p []byte) { wire.BTH(p[48:]).SetPKey(1) }, wire.ErrICRC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkt := clone(tt.pkt)
			tt.change(pkt)
			require.NoError(t, wire.SealVCRC(pkt))
			err := wire.Verify(pkt)
			if !errors.Is(err, tt.want) || (tt.want == nil && err != nil) {
				t.Errorf("Verify(%x) = %v, want %v", pkt, err, tt.want)
			}
		})
	}
}

// reseal recomputes the ICRC and VCRC of pkt without touching its lengths,
// so that a deliberately wrong length survives.
func reseal(pkt []byte) {
	n := len(pkt)
	binary.LittleEndian.PutUint32(pkt[n-6:], wire.ICRC(pkt[:n-6]))
	binary.LittleEndian.PutUint16(pkt[n-2:], wire.CRC16(pkt[:n-2]))
}

// shortSealed returns the first words 4-byte words of pkt, with PktLen set
// to words and a VCRC that matches, so only the length is wrong.
func shortSealed(pkt []byte, words int) []byte {
	p := clone(pkt[:words*4+2])
	wire.LRH(p).SetPktLen(uint16(words))
	binary.LittleEndian.PutUint16(p[words*4:], wire.CRC16(p[:words*4]))
	return p
}

func TestVerifyErrors(t *testing.T) {
	tests := []struct {
		name string
		pkt  func() []byte
		want error
	}{
		{"empty", func() []byte { return nil }, wire.ErrShort},
		{"9 bytes", func() []byte { return clone(goldenUD[:9]) }, wire.ErrShort},
		{"truncated", func() []byte { return clone(goldenUD[:len(goldenUD)-1]) }, wire.ErrPktLen},
		{"truncated to the headers", func() []byte { return clone(goldenDRSMP[:28]) }, wire.ErrPktLen},
		{"PktLen one word too long", func() []byte {
			p := clone(goldenUD)
			wire.LRH(p).SetPktLen(wire.LRH(p).PktLen() + 1)
			return p
		}, wire.ErrPktLen},
		{"PktLen below a local packet", func() []byte {
			return shortSealed(goldenUD, 5) // LRH+BTH+ICRC is 6 words
		}, wire.ErrPktLen},
		{"PktLen below a global packet", func() []byte {
			return shortSealed(goldenGlobal, 15) // LRH+GRH+BTH+ICRC is 16 words
		}, wire.ErrPktLen},
		{"PktLen zero", func() []byte {
			p := clone(goldenRaw)
			wire.LRH(p).SetPktLen(0)
			return p
		}, wire.ErrPktLen},
		{"PayLen", func() []byte {
			p := clone(goldenGlobal)
			wire.GRH(p[8:]).SetPayLen(wire.GRH(p[8:]).PayLen() + 4)
			reseal(p)
			return p
		}, wire.ErrPayLen},
		{"PadCnt beyond payload", func() []byte {
			p := clone(goldenRC[:8+12+4+2])
			wire.BTH(p[8:]).SetPadCnt(1)
			if err := wire.Seal(p); err != nil {
				panic(err)
			}
			return p
		}, wire.ErrPadCnt},
		{"VCRC", func() []byte {
			p := clone(goldenRaw)
			p[len(p)-1] ^= 0x80
			return p
		}, wire.ErrVCRC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pkt := tt.pkt()
			err := wire.Verify(pkt)
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify(%x) = %v, want %v", pkt, err, tt.want)
			}
		})
	}
}

func TestVerifyFlowControl(t *testing.T) {
	for _, g := range []golden{goldens[len(goldens)-2], goldens[len(goldens)-1]} {
		t.Run(g.name, func(t *testing.T) {
			require.True(t, g.link)
			pkt := clone(g.pkt)
			for i := range len(pkt) * 8 {
				pkt[i/8] ^= 1 << (i % 8)
				err := wire.VerifyFlowControl(pkt)
				pkt[i/8] ^= 1 << (i % 8)
				if !errors.Is(err, wire.ErrLPCRC) {
					t.Fatalf("VerifyFlowControl(%s with bit %d flipped) = %v, want ErrLPCRC", g.name, i, err)
				}
			}
			for n := range wire.FlowControlSize {
				if err := wire.VerifyFlowControl(pkt[:n]); !errors.Is(err, wire.ErrShort) {
					t.Errorf("VerifyFlowControl(%x) = %v, want ErrShort", pkt[:n], err)
				}
			}
			assert.True(t, errors.Is(wire.SealFlowControl(pkt[:5]), wire.ErrShort))
		})
	}
	p := wire.AppendFlowControl(nil, &wire.FlowControlFields{Op: 2})
	if err := wire.VerifyFlowControl(p); !errors.Is(err, wire.ErrLinkOp) {
		t.Errorf("VerifyFlowControl(%x) = %v, want ErrLinkOp", p, err)
	}
	p = clone(goldenFCNormal)
	wire.FlowControl(p).SetFCCL(0x7ff)
	require.NoError(t, wire.SealFlowControl(p))
	assert.NoError(t, wire.VerifyFlowControl(p))
}

// TestAppendUD checks what AppendUD promises beyond the golden bytes: it
// appends after existing bytes and does not allocate when it has room.
func TestAppendUD(t *testing.T) {
	f := wire.UDFields{VL: 15, DLID: 0xffff, SLID: 0xffff, PKey: 0xffff, PSN: 1, Payload: nodeInfoSMP(0x81, 0x123456789abc)}
	got := wire.AppendUD([]byte{1, 2, 3}, &f)
	assert.Equal(t, []byte{1, 2, 3}, got[:3])
	assert.Equal(t, goldenDRSMP, got[3:])
	assert.Equal(t, len(goldenDRSMP), wire.UDPacketSize(256, false))

	buf := make([]byte, 0, 512)
	allocs := testing.AllocsPerRun(100, func() { buf = wire.AppendUD(buf[:0], &f) })
	assert.Zero(t, allocs, "AppendUD allocations with room in dst")

	big := f
	big.Payload = make([]byte, 8192)
	assert.Error(t, wire.Verify(wire.AppendUD(nil, &big)), "a payload PktLen cannot describe")
}
