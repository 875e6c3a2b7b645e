package mad_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestLinearForwardingTableRoundTrip(t *testing.T) {
	var ramp mad.LinearForwardingTableFields
	rampBytes := make([]byte, 64)
	for i := range ramp.Ports {
		ramp.Ports[i] = uint8(i + 1)
		rampBytes[i] = byte(i + 1) // IBA 14.2.5.10: one port byte per LID, in LID order
	}
	var unrouted mad.LinearForwardingTableFields
	for i := range unrouted.Ports {
		unrouted.Ports[i] = mad.LFTNoPort
	}
	tests := []struct {
		name string
		f    mad.LinearForwardingTableFields
		want []byte
	}{
		{name: "ramp", f: ramp, want: rampBytes},
		{name: "unrouted", f: unrouted, want: bytes.Repeat([]byte{0xff}, 64)},
		{name: "LID 0 to port 0", want: make([]byte, 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mad.AppendLinearForwardingTable([]byte{0xaa}, &tt.f)
			if !bytes.Equal(got[1:], tt.want) || got[0] != 0xaa {
				t.Fatalf("AppendLinearForwardingTable(aa, %v) = %x, want aa%x", tt.f.Ports, got, tt.want)
			}
			dec, err := mad.DecodeLinearForwardingTable(tt.want)
			require.NoError(t, err)
			if dec != tt.f {
				t.Errorf("DecodeLinearForwardingTable(%x) = %v, want %v", tt.want, dec.Ports, tt.f.Ports)
			}
		})
	}
	v := mad.LinearForwardingTable(make([]byte, 64))
	v.SetPort(63, 9)
	assert.Equal(t, uint8(9), v.Port(63))
	assert.Equal(t, byte(9), v[63])
}

func TestDecodeLinearForwardingTableShort(t *testing.T) {
	for _, n := range []int{0, 63} {
		if _, err := mad.DecodeLinearForwardingTable(make([]byte, n)); err == nil {
			t.Errorf("DecodeLinearForwardingTable(%d bytes) = nil error, want one", n)
		}
	}
}

func TestLFTBlock(t *testing.T) {
	tests := []struct {
		name  string
		lid   uint16
		block uint16
		index int
	}{
		{name: "LID 0", lid: 0, block: 0, index: 0},
		{name: "LID 63", lid: 63, block: 0, index: 63},
		{name: "LID 64", lid: 64, block: 1, index: 0},
		{name: "LID 0x1234", lid: 0x1234, block: 0x48, index: 0x34},
		{name: "last unicast", lid: 0xbfff, block: 767, index: 63},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, i := mad.LFTBlock(tt.lid)
			if b != tt.block || i != tt.index {
				t.Errorf("LFTBlock(%#x) = %d, %d, want %d, %d", tt.lid, b, i, tt.block, tt.index)
			}
			got, err := mad.ParseLFTModifier(uint32(tt.block))
			require.NoError(t, err)
			assert.Equal(t, tt.block, got)
		})
	}
	for _, mod := range []uint32{768, 0x10000, 0xffffffff} {
		if _, err := mad.ParseLFTModifier(mod); err == nil {
			t.Errorf("ParseLFTModifier(%#x) = nil error, want one", mod)
		}
	}
}
