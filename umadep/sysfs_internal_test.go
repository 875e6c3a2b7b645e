package umadep

import (
	"testing"

	"ibfab/wire/mad"
)

// TestRateText: the sysfs rate file as the kernel writes it, which
// libibumad reads the number of (ibstat's "Rate:").
func TestRateText(t *testing.T) {
	tests := []struct {
		w    mad.LinkWidth
		s    mad.LinkSpeed
		want string
	}{
		{mad.LinkWidth1X, mad.LinkSpeedSDR, "2.5 Gb/sec (1X)"},
		{mad.LinkWidth4X, mad.LinkSpeedSDR, "10 Gb/sec (4X)"},
		{mad.LinkWidth4X, mad.LinkSpeedQDR, "40 Gb/sec (4X QDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedFDR, "56 Gb/sec (4X FDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedEDR, "100 Gb/sec (4X EDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedHDR, "200 Gb/sec (4X HDR)"},
		{mad.LinkWidth2X, mad.LinkSpeedNDR, "200 Gb/sec (2X NDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedNDR, "400 Gb/sec (4X NDR)"},
		{mad.LinkWidth4X, mad.LinkSpeedXDR, "800 Gb/sec (4X XDR)"},
		{0, mad.LinkSpeedNDR, "0 Gb/sec"},
	}
	for _, tt := range tests {
		if got := rateText(tt.w, tt.s); got != tt.want {
			t.Errorf("rateText(%v, %v) = %q, want %q", tt.w, tt.s, got, tt.want)
		}
	}
}
