package wire_test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire"
)

// crc16MSBFirst is a reference CRC-16 written the other way round from
// wire.CRC16: polynomial 0x100B shifted most significant bit first over
// bit-reversed bytes, the result reversed back. The two agree only if the
// table, the reflection and the presets are right.
func crc16MSBFirst(b []byte) uint16 {
	c := uint16(0xffff)
	for _, x := range b {
		c ^= uint16(bits.Reverse8(x)) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x100b
			} else {
				c <<= 1
			}
		}
	}
	return ^bits.Reverse16(c)
}

func TestCRC16(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"one byte", []byte{0x01}},
		{"ascii", []byte("123456789")},
		{"ones", []byte{0xff, 0xff, 0xff, 0xff}},
		{"golden UD", goldenUD[:len(goldenUD)-2]},
		{"golden DR SMP", goldenDRSMP[:len(goldenDRSMP)-2]},
	}
	// Every length up to a few blocks of eight, and a large packet.
	long := make([]byte, 2100)
	for i := range long {
		long[i] = byte(i*7 + i>>8)
	}
	for n := range 40 {
		tests = append(tests, struct {
			name string
			in   []byte
		}{fmt.Sprintf("%d bytes", n), long[100 : 100+n]})
	}
	// Around the lengths where the carry-less fold takes over (256) and
	// where it leaves its last round to the tables, and a packet of the
	// largest MTU: random bytes, so that every bit of the fold counts.
	rnd := make([]byte, 4200)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rnd {
		rnd[i] = byte(r.Uint32())
	}
	for _, n := range []int{255, 256, 257, 300, 319, 320, 321, 383, 384, 511, 512, 1000, 2048, 2100, 4095, 4200} {
		tests = append(tests, struct {
			name string
			in   []byte
		}{fmt.Sprintf("%d random bytes", n), rnd[:n]})
	}
	tests = append(tests, struct {
		name string
		in   []byte
	}{"2100 bytes", long})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, want := wire.CRC16(tt.in), crc16MSBFirst(tt.in); got != want {
				t.Errorf("CRC16(%x) = %#04x, want %#04x", tt.in, got, want)
			}
		})
	}
}

// TestCRC16Residue checks the property any complemented reflected CRC has:
// the CRC over data followed by its CRC (least significant byte first) is
// a constant independent of the data.
func TestCRC16Residue(t *testing.T) {
	var residue uint16
	for i, g := range [][]byte{goldenUD, goldenRC, goldenRaw, goldenFCNormal, goldenFCInit} {
		r := wire.CRC16(g) // g ends in its own VCRC or LPCRC
		if i > 0 {
			assert.Equal(t, residue, r, "residue of golden %d", i)
		}
		residue = r
	}
}

// TestICRCLocal checks the local-packet rule (IBA §7.8.1): the LRH VL and
// the BTH resv8a count as ones, every other byte as it is.
func TestICRCLocal(t *testing.T) {
	for _, g := range []struct {
		name string
		pkt  []byte
	}{{"UD", goldenUD}, {"DR SMP", goldenDRSMP}, {"RC", goldenRC}} {
		t.Run(g.name, func(t *testing.T) {
			body := clone(g.pkt[:len(g.pkt)-6])
			body[0] |= 0xf0 // VL
			body[8+4] = 0xff
			want := crc32.ChecksumIEEE(body)
			assert.Equal(t, want, wire.ICRC(g.pkt[:len(g.pkt)-6]))
			assert.Equal(t, want, binary.LittleEndian.Uint32(g.pkt[len(g.pkt)-6:]), "ICRC bytes in the packet")
		})
	}
}

// TestICRCGlobalRxe recomputes the ICRC of a global packet the way Linux's
// soft-RoCE driver (rxe_icrc.c) does for RoCE, whose ICRC rule is IBA's:
// start from the CRC register after eight bytes of ones (the LRH, all
// variant in a global packet), then mask the GRH like an IPv6 header
// (traffic class, flow label, hop limit) and the BTH resv8a, and store the
// complement in memory order on a little-endian host.
func TestICRCGlobalRxe(t *testing.T) {
	const rxeSeed = 0xdebb20e3 // rxe's register value after 8 bytes of 0xff
	require.Equal(t, ^uint32(rxeSeed), crc32.ChecksumIEEE([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
		"rxe's seed is the CRC register after 8 bytes of ones")

	pkt := goldenGlobal
	rest := clone(pkt[wire.LRHSize : len(pkt)-6])
	rest[0] |= 0x0f                              // traffic class, high nibble (IPv6 "priority")
	rest[1], rest[2], rest[3] = 0xff, 0xff, 0xff // traffic class low nibble, flow label
	rest[7] = 0xff                               // hop limit
	rest[wire.GRHSize+4] = 0xff                  // BTH resv8a
	want := crc32.Update(^uint32(rxeSeed), crc32.IEEETable, rest)

	assert.Equal(t, want, wire.ICRC(pkt[:len(pkt)-6]))
	assert.Equal(t, want, binary.LittleEndian.Uint32(pkt[len(pkt)-6:]), "ICRC bytes in the packet")
}

// TestICRCShort feeds ICRC every prefix of the global golden: headers cut
// short must not panic.
func TestICRCShort(t *testing.T) {
	for n := range len(goldenGlobal) {
		_ = wire.ICRC(goldenGlobal[:n])
	}
}
