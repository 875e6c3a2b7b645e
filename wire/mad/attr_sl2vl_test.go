package mad_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestSLtoVLMappingTableRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		vl   [mad.NumSLs]uint8
		want []byte // IBA 14.2.5.8: SL0 in the top nibble of byte 0
	}{
		{
			name: "identity",
			vl:   [16]uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
			want: []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef},
		},
		{
			name: "OpenSM default QoS",
			vl:   [16]uint8{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7},
			want: []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7},
		},
		{
			name: "all to VL15 (drop)",
			vl:   [16]uint8{15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15},
			want: bytes.Repeat([]byte{0xff}, 8),
		},
		{
			name: "SL15 only",
			vl:   [16]uint8{15: 3},
			want: []byte{0, 0, 0, 0, 0, 0, 0, 0x03},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mad.SLtoVLMappingTableFields{VL: tt.vl}
			got := mad.AppendSLtoVLMappingTable(nil, &f)
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("AppendSLtoVLMappingTable(%v) = %x, want %x", tt.vl, got, tt.want)
			}
			dec, err := mad.DecodeSLtoVLMappingTable(tt.want)
			require.NoError(t, err)
			if dec != f {
				t.Errorf("DecodeSLtoVLMappingTable(%x) = %v, want %v", tt.want, dec.VL, tt.vl)
			}
			for sl, vl := range tt.vl {
				assert.Equal(t, vl, mad.SLtoVLMappingTable(tt.want).VL(sl), "VL(%d)", sl)
			}
		})
	}
}

func TestSLtoVLSetVLKeepsNeighbour(t *testing.T) {
	tbl := mad.SLtoVLMappingTable(bytes.Repeat([]byte{0xff}, 64))
	tbl.SetVL(4, 0x12) // only the low 4 bits fit
	assert.Equal(t, byte(0x2f), tbl[2], "SL4 is byte 2's top nibble; SL5 untouched")
	tbl.SetVL(5, 0)
	assert.Equal(t, byte(0x20), tbl[2])
	assert.Equal(t, byte(0xff), tbl[8], "the table is 8 bytes; the SMP data after it is untouched")
}

func TestDecodeSLtoVLMappingTableShort(t *testing.T) {
	for _, n := range []int{0, 7} {
		if _, err := mad.DecodeSLtoVLMappingTable(make([]byte, n)); err == nil {
			t.Errorf("DecodeSLtoVLMappingTable(%d bytes) = nil error, want one", n)
		}
	}
	_, err := mad.DecodeSLtoVLMappingTable(make([]byte, 64))
	assert.NoError(t, err, "a whole SMP data area decodes")
}

func TestSLtoVLModifier(t *testing.T) {
	tests := []struct {
		name string
		m    mad.SLtoVLModifier
		mod  uint32 // as smpquery and OpenSM build it: in<<8 | out, 0x20000 all inputs, 0x10000 all outputs
	}{
		{name: "CA", m: mad.SLtoVLModifier{}, mod: 0},
		{name: "in 3 out 5", m: mad.SLtoVLModifier{InPort: 3, OutPort: 5}, mod: 0x0305},
		{name: "in 0 out 36", m: mad.SLtoVLModifier{OutPort: 36}, mod: 0x0024},
		{name: "max ports", m: mad.SLtoVLModifier{InPort: 254, OutPort: 254}, mod: 0xfefe},
		{name: "all inputs to out 7", m: mad.SLtoVLModifier{OutPort: 7, AllInPorts: true}, mod: 0x20007},
		{name: "all outputs from in 2", m: mad.SLtoVLModifier{InPort: 2, AllOutPorts: true}, mod: 0x10200},
		{name: "every pair", m: mad.SLtoVLModifier{AllInPorts: true, AllOutPorts: true}, mod: 0x30000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.Modifier(); got != tt.mod {
				t.Errorf("%+v.Modifier() = %#x, want %#x", tt.m, got, tt.mod)
			}
			got, err := mad.ParseSLtoVLModifier(tt.mod)
			require.NoError(t, err)
			if got != tt.m {
				t.Errorf("ParseSLtoVLModifier(%#x) = %+v, want %+v", tt.mod, got, tt.m)
			}
		})
	}
	for _, mod := range []uint32{1 << 18, 0x80000000, 0xffffffff} {
		if _, err := mad.ParseSLtoVLModifier(mod); err == nil {
			t.Errorf("ParseSLtoVLModifier(%#x) = nil error, want reserved-bits error", mod)
		}
	}
}
