package mad_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func TestSwitchInfoRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		f    mad.SwitchInfoFields
	}{
		{"zero", mad.SwitchInfoFields{}},
		{"typical", mad.SwitchInfoFields{LinearFDBCap: 49152, MulticastFDBCap: 4096, LinearFDBTop: 12,
			DefaultPort: 0, DefaultMulticastPrimaryPort: 0xff, DefaultMulticastNotPrimaryPort: 0xff,
			LifeTimeValue: 18, PortStateChange: true, LIDsPerPort: 1, PartitionEnforcementCap: 32,
			InboundEnforcementCap: true, OutboundEnforcementCap: true, EnhancedPort0: true, MulticastFDBTop: 0xc000}},
		{"only the bits", mad.SwitchInfoFields{PortStateChange: true, FilterRawInboundCap: true, OptimizedSLtoVLMappingProgramming: 2}},
		{"all ones", mad.SwitchInfoFields{LinearFDBCap: 0xffff, RandomFDBCap: 0xffff, MulticastFDBCap: 0xffff,
			LinearFDBTop: 0xffff, DefaultPort: 0xff, DefaultMulticastPrimaryPort: 0xff,
			DefaultMulticastNotPrimaryPort: 0xff, LifeTimeValue: 0x1f, PortStateChange: true,
			OptimizedSLtoVLMappingProgramming: 3, LIDsPerPort: 0xffff, PartitionEnforcementCap: 0xffff,
			InboundEnforcementCap: true, OutboundEnforcementCap: true, FilterRawInboundCap: true,
			FilterRawOutboundCap: true, EnhancedPort0: true, MulticastFDBTop: 0xffff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mad.AppendSwitchInfo(nil, &tt.f)
			require.Len(t, b, mad.SwitchInfoSize)
			got, err := mad.DecodeSwitchInfo(b)
			require.NoError(t, err)
			if got != tt.f {
				t.Errorf("DecodeSwitchInfo(%x) = %+v, want %+v", b, got, tt.f)
			}
		})
	}
}

// TestSwitchInfoLayout checks the offsets and bits of IBA 14.2.5.4, one
// field at a time, with the value masked to the field's width.
func TestSwitchInfoLayout(t *testing.T) {
	tests := []struct {
		name string
		set  func(mad.SwitchInfo)
		off  int
		want []byte
	}{
		{"LinearFDBCap", func(s mad.SwitchInfo) { s.SetLinearFDBCap(0x0102) }, 0, []byte{1, 2}},
		{"RandomFDBCap", func(s mad.SwitchInfo) { s.SetRandomFDBCap(0x0304) }, 2, []byte{3, 4}},
		{"MulticastFDBCap", func(s mad.SwitchInfo) { s.SetMulticastFDBCap(0x0506) }, 4, []byte{5, 6}},
		{"LinearFDBTop", func(s mad.SwitchInfo) { s.SetLinearFDBTop(0x0708) }, 6, []byte{7, 8}},
		{"DefaultPort", func(s mad.SwitchInfo) { s.SetDefaultPort(9) }, 8, []byte{9}},
		{"DefaultMulticastPrimaryPort", func(s mad.SwitchInfo) { s.SetDefaultMulticastPrimaryPort(10) }, 9, []byte{10}},
		{"DefaultMulticastNotPrimaryPort", func(s mad.SwitchInfo) { s.SetDefaultMulticastNotPrimaryPort(11) }, 10, []byte{11}},
		{"LifeTimeValue", func(s mad.SwitchInfo) { s.SetLifeTimeValue(0xff) }, 11, []byte{0xf8}},
		{"PortStateChange", func(s mad.SwitchInfo) { s.SetPortStateChange(true) }, 11, []byte{0x04}},
		{"OptimizedSLtoVLMappingProgramming", func(s mad.SwitchInfo) { s.SetOptimizedSLtoVLMappingProgramming(0xff) }, 11, []byte{0x03}},
		{"LIDsPerPort", func(s mad.SwitchInfo) { s.SetLIDsPerPort(0x0c0d) }, 12, []byte{0x0c, 0x0d}},
		{"PartitionEnforcementCap", func(s mad.SwitchInfo) { s.SetPartitionEnforcementCap(0x0e0f) }, 14, []byte{0x0e, 0x0f}},
		{"InboundEnforcementCap", func(s mad.SwitchInfo) { s.SetInboundEnforcementCap(true) }, 16, []byte{0x80}},
		{"OutboundEnforcementCap", func(s mad.SwitchInfo) { s.SetOutboundEnforcementCap(true) }, 16, []byte{0x40}},
		{"FilterRawInboundCap", func(s mad.SwitchInfo) { s.SetFilterRawInboundCap(true) }, 16, []byte{0x20}},
		{"FilterRawOutboundCap", func(s mad.SwitchInfo) { s.SetFilterRawOutboundCap(true) }, 16, []byte{0x10}},
		{"EnhancedPort0", func(s mad.SwitchInfo) { s.SetEnhancedPort0(true) }, 16, []byte{0x08}},
		{"MulticastFDBTop", func(s mad.SwitchInfo) { s.SetMulticastFDBTop(0xc001) }, 18, []byte{0xc0, 0x01}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := make(mad.SwitchInfo, mad.SMPDataSize)
			tt.set(b)
			want := make([]byte, mad.SMPDataSize)
			copy(want[tt.off:], tt.want)
			if !bytes.Equal(b, want) {
				t.Errorf("after Set%s: %x, want %x at %d and zeros elsewhere", tt.name, []byte(b), tt.want, tt.off)
			}
		})
	}
}

// TestSwitchInfoBitsIndependent: clearing one bit of a shared byte leaves
// its neighbours set.
func TestSwitchInfoBitsIndependent(t *testing.T) {
	all := mad.SwitchInfoFields{LifeTimeValue: 0x1f, PortStateChange: true, OptimizedSLtoVLMappingProgramming: 3,
		InboundEnforcementCap: true, OutboundEnforcementCap: true, FilterRawInboundCap: true,
		FilterRawOutboundCap: true, EnhancedPort0: true}
	b := mad.SwitchInfo(mad.AppendSwitchInfo(nil, &all))
	b.SetPortStateChange(false)
	b.SetFilterRawInboundCap(false)
	want := all
	want.PortStateChange, want.FilterRawInboundCap = false, false
	assert.Equal(t, want, b.Fields())
	assert.Equal(t, []byte{0xfb, 0, 0, 0, 0, 0xd8}, []byte(b[11:17]))
}

func TestDecodeSwitchInfoShort(t *testing.T) {
	_, err := mad.DecodeSwitchInfo(make([]byte, mad.SwitchInfoSize-1))
	assert.ErrorIs(t, err, mad.ErrTruncated)
}
