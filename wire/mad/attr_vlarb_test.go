package mad_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestVLArbitrationTableRoundTrip(t *testing.T) {
	var ramp mad.VLArbitrationTableFields
	rampBytes := make([]byte, 64)
	for i := range ramp.Entries {
		ramp.Entries[i] = mad.VLArbEntry{VL: uint8(i % 15), Weight: uint8(i*8 + 1)}
		rampBytes[2*i], rampBytes[2*i+1] = byte(i%15), byte(i*8+1) // IBA 14.2.5.9: VL low nibble, then weight
	}
	// OpenSM's default low-priority table (VL0 weight 0, VL1-14 weight 4).
	var osmLow mad.VLArbitrationTableFields
	osmLowBytes := make([]byte, 64)
	for vl := 1; vl <= 14; vl++ {
		osmLow.Entries[vl] = mad.VLArbEntry{VL: uint8(vl), Weight: 4}
		osmLowBytes[2*vl], osmLowBytes[2*vl+1] = byte(vl), 4
	}
	tests := []struct {
		name string
		f    mad.VLArbitrationTableFields
		want []byte
	}{
		{name: "empty", want: make([]byte, 64)},
		{name: "ramp", f: ramp, want: rampBytes},
		{name: "OpenSM default low", f: osmLow, want: osmLowBytes},
		{name: "last entry", f: mad.VLArbitrationTableFields{Entries: [32]mad.VLArbEntry{31: {VL: 15, Weight: 255}}},
			want: attrBytes(64, map[int]byte{62: 0x0f, 63: 0xff})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mad.AppendVLArbitrationTable(nil, &tt.f)
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("AppendVLArbitrationTable(%+v) = %x, want %x", tt.f, got, tt.want)
			}
			dec, err := mad.DecodeVLArbitrationTable(tt.want)
			require.NoError(t, err)
			if dec != tt.f {
				t.Errorf("DecodeVLArbitrationTable(%x) = %+v, want %+v", tt.want, dec, tt.f)
			}
		})
	}
}

func TestVLArbitrationTableReservedNibble(t *testing.T) {
	b := attrBytes(64, map[int]byte{0: 0xf5, 1: 0x20})
	f, err := mad.DecodeVLArbitrationTable(b)
	require.NoError(t, err)
	assert.Equal(t, mad.VLArbEntry{VL: 5, Weight: 0x20}, f.Entries[0], "the top nibble of the VL byte is reserved")
	got := mad.AppendVLArbitrationTable(nil, &f)
	assert.Equal(t, byte(0x05), got[0], "re-encoding clears the reserved nibble")
	v := mad.VLArbitrationTable(b)
	v.SetVL(0, 0x1a)
	assert.Equal(t, uint8(0x0a), v.VL(0))
	v.SetWeight(0, 7)
	assert.Equal(t, uint8(7), v.Weight(0))
	assert.Equal(t, []byte{0x0a, 0x07}, []byte(b[:2]))
}

func TestDecodeVLArbitrationTableShort(t *testing.T) {
	for _, n := range []int{0, 2, 63} {
		if _, err := mad.DecodeVLArbitrationTable(make([]byte, n)); err == nil {
			t.Errorf("DecodeVLArbitrationTable(%d bytes) = nil error, want one", n)
		}
	}
}

func TestVLArbModifier(t *testing.T) {
	// The block numbering of IBA 14.2.5.9 as smpquery (1, 2 low; 3, 4
	// high), OpenSM ((block+1)<<16 | port) and ibsim decode it.
	tests := []struct {
		name  string
		block mad.VLArbBlock
		port  uint8
		mod   uint32
		high  bool
		first int
		str   string
	}{
		{name: "low 0-31 on a CA", block: mad.VLArbLow0, mod: 0x00010000, first: 0, str: "low 0-31"},
		{name: "low 32-63 port 5", block: mad.VLArbLow32, port: 5, mod: 0x00020005, first: 32, str: "low 32-63"},
		{name: "high 0-31 port 36", block: mad.VLArbHigh0, port: 36, mod: 0x00030024, high: true, first: 0, str: "high 0-31"},
		{name: "high 32-63 port 254", block: mad.VLArbHigh32, port: 254, mod: 0x000400fe, high: true, first: 32, str: "high 32-63"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mad.VLArbModifier(tt.block, tt.port); got != tt.mod {
				t.Errorf("VLArbModifier(%v, %d) = %#x, want %#x", tt.block, tt.port, got, tt.mod)
			}
			b, p, err := mad.ParseVLArbModifier(tt.mod)
			require.NoError(t, err)
			if b != tt.block || p != tt.port {
				t.Errorf("ParseVLArbModifier(%#x) = %v, %d, want %v, %d", tt.mod, b, p, tt.block, tt.port)
			}
			assert.True(t, b.IsValid())
			assert.Equal(t, tt.high, b.High(), "High()")
			assert.Equal(t, tt.first, b.FirstEntry(), "FirstEntry()")
			assert.Equal(t, tt.str, b.String())
		})
	}
	for _, mod := range []uint32{0, 0x00000001, 0x00050000, 0xffff0000, 0x00010100} {
		if b, p, err := mad.ParseVLArbModifier(mod); err == nil {
			t.Errorf("ParseVLArbModifier(%#x) = %v, %d, nil; want an error", mod, b, p)
		}
	}
	assert.False(t, mad.VLArbBlock(0).IsValid())
	assert.Equal(t, "VLArbBlock(5)", mad.VLArbBlock(5).String())
}
