package link_test

import (
	"errors"
	"testing"

	"ibfab/link"
	"ibfab/wire/mad"
)

func TestTrainingRoundTrip(t *testing.T) {
	in := link.Training{Width: mad.LinkWidth1X | mad.LinkWidth4X, Speed: mad.LinkSpeedSDR | mad.LinkSpeedDDR, Reply: true}
	b := link.AppendTraining(nil, in)
	if len(b) != link.TrainingSize {
		t.Fatalf("%d bytes, want %d", len(b), link.TrainingSize)
	}
	got, err := link.ParseTraining(append(b, 0, 0)) // padding is ignored
	if err != nil || got != in {
		t.Errorf("ParseTraining = %+v, %v; want %+v", got, err, in)
	}
}

func TestParseTrainingErrors(t *testing.T) {
	good := link.AppendTraining(nil, link.Training{Width: mad.LinkWidth4X, Speed: mad.LinkSpeedSDR})
	mut := func(i int, v byte) []byte { b := append([]byte(nil), good...); b[i] = v; return b }
	noSpeed := mut(8, 0) // SDR is the low byte of the two-byte speed
	for name, b := range map[string][]byte{
		"short":    good[:7],
		"empty":    nil,
		"OUI":      mut(0, 1),
		"protocol": mut(4, 0),
		"version":  mut(5, 1),
		"no width": mut(6, 0),
		"no speed": noSpeed,
		"flags":    mut(9, 2),
	} {
		if _, err := link.ParseTraining(b); !errors.Is(err, link.ErrTraining) {
			t.Errorf("%s: ParseTraining = %v, want ErrTraining", name, err)
		}
	}
}

func TestNegotiate(t *testing.T) {
	const (
		w1, w4, w8, w12 = mad.LinkWidth1X, mad.LinkWidth4X, mad.LinkWidth8X, mad.LinkWidth12X
		sdr, ddr, qdr   = mad.LinkSpeedSDR, mad.LinkSpeedDDR, mad.LinkSpeedQDR
		w2              = mad.LinkWidth2X
		edr, hdr, ndr   = mad.LinkSpeedEDR, mad.LinkSpeedHDR, mad.LinkSpeedNDR
		xdr             = mad.LinkSpeedXDR
	)
	tests := []struct {
		name   string
		a, b   link.Training
		w      mad.LinkWidth
		s      mad.LinkSpeed
		trains bool
	}{
		{"both all", link.Training{Width: w1 | w4 | w12, Speed: sdr | ddr | qdr}, link.Training{Width: w1 | w4 | w12, Speed: sdr | ddr | qdr}, w12, qdr, true},
		{"4X SDR ports", link.Training{Width: w1 | w4, Speed: sdr}, link.Training{Width: w1 | w4, Speed: sdr}, w4, sdr, true},
		{"one end 1X", link.Training{Width: w1, Speed: sdr}, link.Training{Width: w1 | w4, Speed: sdr}, w1, sdr, true},
		{"speeds meet at DDR", link.Training{Width: w4, Speed: sdr | ddr}, link.Training{Width: w4, Speed: ddr | qdr}, w4, ddr, true},
		{"8X and 12X meet at 4X", link.Training{Width: w1 | w4 | w8, Speed: sdr}, link.Training{Width: w1 | w4 | w12, Speed: sdr}, w4, sdr, true},
		{"no common width", link.Training{Width: w1, Speed: sdr}, link.Training{Width: w4, Speed: sdr}, 0, sdr, false},
		{"no common speed", link.Training{Width: w4, Speed: sdr}, link.Training{Width: w4, Speed: qdr}, w4, 0, false},
		{"NDR meets HDR at HDR", link.Training{Width: w1 | w2 | w4, Speed: ndr.UpTo()}, link.Training{Width: w1 | w2 | w4, Speed: hdr.UpTo()}, w4, hdr, true},
		{"XDR ends", link.Training{Width: w4, Speed: xdr.UpTo()}, link.Training{Width: w4, Speed: xdr.UpTo()}, w4, xdr, true},
		{"espeed 4: HDR only", link.Training{Width: w4, Speed: sdr | ddr | qdr | hdr}, link.Training{Width: w4, Speed: ndr.UpTo()}, w4, hdr, true},
		{"2X NDR", link.Training{Width: w1 | w2, Speed: ndr.UpTo()}, link.Training{Width: w1 | w2 | w4, Speed: ndr.UpTo()}, w2, ndr, true},
		{"EDR and legacy", link.Training{Width: w4, Speed: edr}, link.Training{Width: w4, Speed: qdr}, w4, 0, false},
	}
	for _, tt := range tests {
		w, s, ok := link.Negotiate(tt.a, tt.b)
		if w != tt.w || s != tt.s || ok != tt.trains {
			t.Errorf("%s: Negotiate = %v %v %v, want %v %v %v", tt.name, w, s, ok, tt.w, tt.s, tt.trains)
		}
	}
}

func TestSupported(t *testing.T) {
	tests := []struct {
		w  mad.LinkWidth
		s  mad.LinkSpeed
		ws mad.LinkWidth
		ss mad.LinkSpeed
	}{
		{mad.LinkWidth1X, mad.LinkSpeedSDR, mad.LinkWidth1X, mad.LinkSpeedSDR},
		{mad.LinkWidth4X, mad.LinkSpeedSDR, mad.LinkWidth1X | mad.LinkWidth4X, mad.LinkSpeedSDR},
		{mad.LinkWidth4X, mad.LinkSpeedQDR, mad.LinkWidth1X | mad.LinkWidth4X, mad.LinkSpeedSDR | mad.LinkSpeedDDR | mad.LinkSpeedQDR},
		{mad.LinkWidth12X, mad.LinkSpeedDDR, mad.LinkWidth1X | mad.LinkWidth4X | mad.LinkWidth12X, mad.LinkSpeedSDR | mad.LinkSpeedDDR},
		{mad.LinkWidth4X, mad.LinkSpeedEDR, mad.LinkWidth1X | mad.LinkWidth4X, 0x37},
		{mad.LinkWidth4X, mad.LinkSpeedNDR, mad.LinkWidth1X | mad.LinkWidth2X | mad.LinkWidth4X, 0xf7},
		{mad.LinkWidth2X, mad.LinkSpeedNDR, mad.LinkWidth1X | mad.LinkWidth2X, 0xf7},
		{mad.LinkWidth4X, mad.LinkSpeedXDR, mad.LinkWidth1X | mad.LinkWidth2X | mad.LinkWidth4X, 0x1f7},
	}
	for _, tt := range tests {
		if ws, ss := link.Supported(tt.w, tt.s); ws != tt.ws || ss != tt.ss {
			t.Errorf("Supported(%v, %v) = %v, %v; want %v, %v", tt.w, tt.s, ws, ss, tt.ws, tt.ss)
		}
	}
}

func FuzzParseTraining(f *testing.F) {
	f.Add(link.AppendTraining(nil, link.Training{Width: mad.LinkWidth4X, Speed: mad.LinkSpeedSDR}))
	f.Add(link.AppendTraining(nil, link.Training{Width: mad.LinkWidth4X | mad.LinkWidth2X, Speed: mad.LinkSpeedXDR.UpTo(), Reply: true}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := link.ParseTraining(b)
		if err != nil {
			return
		}
		// What parses encodes back to the same first TrainingSize bytes.
		if got := link.AppendTraining(nil, tr); string(got) != string(b[:link.TrainingSize]) {
			t.Errorf("round trip % x -> %+v -> % x", b[:link.TrainingSize], tr, got)
		}
	})
}
