package mad_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestMulticastForwardingTableRoundTrip(t *testing.T) {
	var walk mad.MulticastForwardingTableFields
	walkBytes := make([]byte, 64)
	for i := range walk.PortMasks {
		m := uint16(1) << (i % 16)
		walk.PortMasks[i] = m
		walkBytes[2*i], walkBytes[2*i+1] = byte(m>>8), byte(m) // IBA 14.2.5.12: big-endian 16-bit masks
	}
	tests := []struct {
		name string
		f    mad.MulticastForwardingTableFields
		want []byte
	}{
		{name: "empty", want: make([]byte, 64)},
		{name: "walking bit", f: walk, want: walkBytes},
		{name: "entry 1 ports 1 and 15", f: mad.MulticastForwardingTableFields{PortMasks: [32]uint16{1: 0x8002}},
			want: attrBytes(64, map[int]byte{2: 0x80, 3: 0x02})},
		{name: "all ports", f: mad.MulticastForwardingTableFields{PortMasks: [32]uint16{
			0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff,
			0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff,
			0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff,
			0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff}},
			want: bytes.Repeat([]byte{0xff}, 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mad.AppendMulticastForwardingTable(nil, &tt.f)
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("AppendMulticastForwardingTable(%x) = %x, want %x", tt.f.PortMasks, got, tt.want)
			}
			dec, err := mad.DecodeMulticastForwardingTable(tt.want)
			require.NoError(t, err)
			if dec != tt.f {
				t.Errorf("DecodeMulticastForwardingTable(%x) = %x, want %x", tt.want, dec.PortMasks, tt.f.PortMasks)
			}
		})
	}
}

func TestDecodeMulticastForwardingTableShort(t *testing.T) {
	for _, n := range []int{0, 1, 63} {
		if _, err := mad.DecodeMulticastForwardingTable(make([]byte, n)); err == nil {
			t.Errorf("DecodeMulticastForwardingTable(%d bytes) = nil error, want one", n)
		}
	}
}

func TestMFTModifier(t *testing.T) {
	// OpenSM: block | position<<28 (IB_MCAST_POSITION_SHIFT), block in 9 bits.
	tests := []struct {
		name     string
		block    uint16
		position uint8
		mod      uint32
	}{
		{name: "first", block: 0, position: 0, mod: 0},
		{name: "block 5 position 2", block: 5, position: 2, mod: 0x20000005},
		{name: "last", block: 511, position: 15, mod: 0xf00001ff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mad.MFTModifier(tt.block, tt.position); got != tt.mod {
				t.Errorf("MFTModifier(%d, %d) = %#x, want %#x", tt.block, tt.position, got, tt.mod)
			}
			b, p, err := mad.ParseMFTModifier(tt.mod)
			require.NoError(t, err)
			if b != tt.block || p != tt.position {
				t.Errorf("ParseMFTModifier(%#x) = %d, %d, want %d, %d", tt.mod, b, p, tt.block, tt.position)
			}
		})
	}
	for _, mod := range []uint32{0x200, 0x08000000, 0x0ffffe00} {
		if _, _, err := mad.ParseMFTModifier(mod); err == nil {
			t.Errorf("ParseMFTModifier(%#x) = nil error, want reserved-bits error", mod)
		}
	}
}

func TestMFTBlockAndPortBit(t *testing.T) {
	tests := []struct {
		name  string
		mlid  uint16
		block uint16
		index int
	}{
		{name: "first MLID", mlid: 0xc000, block: 0, index: 0},
		{name: "0xC01F", mlid: 0xc01f, block: 0, index: 31},
		{name: "0xC021", mlid: 0xc021, block: 1, index: 1},
		{name: "0xFFFE", mlid: 0xfffe, block: 511, index: 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, i, err := mad.MFTBlock(tt.mlid)
			require.NoError(t, err)
			if b != tt.block || i != tt.index {
				t.Errorf("MFTBlock(%#x) = %d, %d, want %d, %d", tt.mlid, b, i, tt.block, tt.index)
			}
		})
	}
	for _, lid := range []uint16{0, 1, 0xbfff} {
		if _, _, err := mad.MFTBlock(lid); err == nil {
			t.Errorf("MFTBlock(%#x) = nil error, want one", lid)
		}
	}
	ports := []struct {
		port     uint8
		position uint8
		bit      uint16
	}{{0, 0, 0x0001}, {15, 0, 0x8000}, {16, 1, 0x0001}, {17, 1, 0x0002}, {254, 15, 0x4000}}
	for _, p := range ports {
		pos, bit := mad.MFTPortBit(p.port)
		assert.Equal(t, p.position, pos, "MFTPortBit(%d) position", p.port)
		assert.Equal(t, p.bit, bit, "MFTPortBit(%d) bit", p.port)
	}
}
