package mad_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"ibfab/wire/mad"
)

// TestSpeedSplitJoin: the one mask splits into PortInfo's three fields as
// libibmad numbers them (FDR 1, EDR 2, HDR 4, NDR 8; XDR 1 of Ext2) and
// joins back.
func TestSpeedSplitJoin(t *testing.T) {
	tests := []struct {
		s    mad.LinkSpeed
		l    mad.LinkSpeed
		e    mad.LinkSpeedExt
		e2   mad.LinkSpeedExt2
		name string
	}{
		{mad.LinkSpeedSDR | mad.LinkSpeedQDR, mad.LinkSpeedSDR | mad.LinkSpeedQDR, 0, 0, "legacy"},
		{mad.LinkSpeedFDR, 0, 1, 0, "FDR"},
		{mad.LinkSpeedEDR, 0, 2, 0, "EDR"},
		{mad.LinkSpeedHDR, 0, 4, 0, "HDR"},
		{mad.LinkSpeedNDR, 0, 8, 0, "NDR"},
		{mad.LinkSpeedXDR, 0, 0, 1, "XDR"},
		{mad.LinkSpeedNDR.UpTo(), 7, 15, 0, "up to NDR"},
		{mad.LinkSpeedXDR.UpTo(), 7, 15, 1, "up to XDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.l, tt.s.Legacy())
			assert.Equal(t, tt.e, tt.s.Ext())
			assert.Equal(t, tt.e2, tt.s.Ext2())
			assert.Equal(t, tt.s, mad.JoinSpeeds(tt.l, tt.e, tt.e2))
		})
	}
	assert.Equal(t, mad.LinkSpeedNDR, (mad.LinkSpeedSDR | mad.LinkSpeedNDR | mad.LinkSpeedEDR).Fastest())
	assert.Zero(t, mad.LinkSpeed(0).Fastest())
}

// TestSpeedActive: readers take the extended-2 speed over the extended one
// over LinkSpeedActive, which stays legacy (QDR) on an extended link.
func TestSpeedActive(t *testing.T) {
	tests := []struct {
		name string
		f    mad.PortInfoFields
		want mad.LinkSpeed
	}{
		{"SDR", mad.PortInfoFields{LinkSpeedActive: mad.LinkSpeedSDR}, mad.LinkSpeedSDR},
		{"HDR", mad.PortInfoFields{LinkSpeedActive: mad.LinkSpeedQDR, LinkSpeedExtActive: mad.LinkSpeedExtHDR}, mad.LinkSpeedHDR},
		{"XDR", mad.PortInfoFields{LinkSpeedActive: mad.LinkSpeedQDR, LinkSpeedExtActive: mad.LinkSpeedExtNDR,
			LinkSpeedExtActive2: mad.LinkSpeedExt2XDR}, mad.LinkSpeedXDR},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mad.PortInfo(mad.AppendPortInfo(nil, &tt.f))
			assert.Equal(t, tt.want, p.SpeedActive())
		})
	}
	f := mad.PortInfoFields{LinkSpeedSupported: 7, LinkSpeedExtSupported: 15, LinkSpeedExtSupported2: 1}
	assert.Equal(t, mad.LinkSpeedXDR.UpTo(), mad.PortInfo(mad.AppendPortInfo(nil, &f)).SpeedsSupported())
}

// TestRateCode: PathRecord rate codes of OpenSM's ib_types.h table, from a
// link's nominal rate.
func TestRateCode(t *testing.T) {
	tests := []struct {
		w    mad.LinkWidth
		s    mad.LinkSpeed
		code uint8
		gbps float64
	}{
		{mad.LinkWidth1X, mad.LinkSpeedSDR, 2, 2.5},
		{mad.LinkWidth4X, mad.LinkSpeedSDR, 3, 10},
		{mad.LinkWidth4X, mad.LinkSpeedQDR, 7, 40},
		{mad.LinkWidth4X, mad.LinkSpeedFDR, 12, 56},
		{mad.LinkWidth4X, mad.LinkSpeedEDR, 16, 100},
		{mad.LinkWidth2X, mad.LinkSpeedHDR, 16, 100},
		{mad.LinkWidth4X, mad.LinkSpeedHDR, 17, 200},
		{mad.LinkWidth1X, mad.LinkSpeedHDR, 20, 50},
		{mad.LinkWidth2X, mad.LinkSpeedNDR, 17, 200},
		{mad.LinkWidth4X, mad.LinkSpeedNDR, 21, 400},
		{mad.LinkWidth12X, mad.LinkSpeedHDR, 22, 600},
		{mad.LinkWidth4X, mad.LinkSpeedXDR, 23, 800},
		{mad.LinkWidth8X, mad.LinkSpeedNDR, 23, 800},
		{mad.LinkWidth12X, mad.LinkSpeedNDR, 24, 1200},
		{mad.LinkWidth12X, mad.LinkSpeedXDR, 24, 1200}, // 2.4 Tb/s has no code: the fastest below
		{0, mad.LinkSpeedNDR, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.w.String()+" "+tt.s.String(), func(t *testing.T) {
			c := mad.RateCode(tt.w, tt.s)
			assert.Equal(t, tt.code, c)
			if c != 0 {
				h, ok := mad.RateHalfGbps(c)
				assert.True(t, ok)
				assert.InDelta(t, tt.gbps, float64(h)/2, 0.01)
			}
		})
	}
	_, ok := mad.RateHalfGbps(25)
	assert.False(t, ok, "code 25 is past IBA 1.5's table")
}

// TestRateCapabilities: the CapabilityMask and CapabilityMask2 bits of a
// port's widths and speeds, only for what it supports.
func TestRateCapabilities(t *testing.T) {
	const (
		ext  = mad.PortCapIsExtendedSpeedsSupported
		cm2  = mad.PortCapIsCapabilityMask2Supported
		hdr  = mad.PortCap2IsLinkSpeedHDRSupported
		ndr  = mad.PortCap2IsLinkSpeedNDRSupported
		xdr  = mad.PortCap2IsLinkSpeedXDRSupported | mad.PortCap2IsExtendedSpeeds2Supported
		w2x  = mad.PortCap2IsLinkWidth2xSupported
		w14  = mad.LinkWidth1X | mad.LinkWidth4X
		w124 = w14 | mad.LinkWidth2X
	)
	tests := []struct {
		name string
		w    mad.LinkWidth
		s    mad.LinkSpeed
		c    uint32
		c2   uint16
	}{
		{"QDR", w14, mad.LinkSpeedQDR.UpTo(), 0, 0},
		{"FDR", w14, mad.LinkSpeedFDR.UpTo(), ext, 0},
		{"EDR", w14, mad.LinkSpeedEDR.UpTo(), ext, 0},
		{"HDR", w14, mad.LinkSpeedHDR.UpTo(), ext | cm2, hdr},
		{"NDR 2X", w124, mad.LinkSpeedNDR.UpTo(), ext | cm2, hdr | ndr | w2x},
		{"XDR", w14, mad.LinkSpeedXDR.UpTo(), ext | cm2, hdr | ndr | xdr},
		{"NDR only", w14, mad.LinkSpeedNDR, ext | cm2, ndr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, c2 := mad.RateCapabilities(tt.w, tt.s)
			assert.Equal(t, tt.c, c, "CapabilityMask")
			assert.Equal(t, tt.c2, c2, "CapabilityMask2")
		})
	}
	// Other bits survive, and CapabilityMask2Supported stays for them.
	c, c2 := mad.WithRateCapabilities(mad.PortCapIsSM|ext|cm2, 1|hdr, w14, mad.LinkSpeedQDR)
	assert.Equal(t, mad.PortCapIsSM|cm2, c)
	assert.Equal(t, uint16(1), c2)
}
