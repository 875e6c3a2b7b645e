package port_test

import (
	"errors"
	"testing"

	"ibfab/port"
	"ibfab/wire/mad"
)

// TestLinkNegotiation trains pairs whose ends support or enable different
// widths and speeds: both ends come up at the widest width and fastest
// speed both enabled, report it, and pace at its rate; with nothing in
// common the link does not come up.
func TestLinkNegotiation(t *testing.T) {
	const (
		w1, w4, w12   = mad.LinkWidth1X, mad.LinkWidth4X, mad.LinkWidth12X
		w2            = mad.LinkWidth2X
		sdr, ddr, qdr = mad.LinkSpeedSDR, mad.LinkSpeedDDR, mad.LinkSpeedQDR
		edr, hdr, ndr = mad.LinkSpeedEDR, mad.LinkSpeedHDR, mad.LinkSpeedNDR
		xdr           = mad.LinkSpeedXDR
	)
	tests := []struct {
		name string
		a, b port.Config   // cable rates
		enA  [2]uint16     // width, speed SetLinkEnabled on a before training (0: none)
		w    mad.LinkWidth // active on both ends
		s    mad.LinkSpeed
		up   bool
	}{
		{name: "4X SDR both", w: w4, s: sdr},
		{name: "12X QDR both", a: port.Config{Width: w12, Speed: qdr}, b: port.Config{Width: w12, Speed: qdr}, w: w12, s: qdr},
		{name: "4X QDR to 12X DDR", a: port.Config{Width: w4, Speed: qdr}, b: port.Config{Width: w12, Speed: ddr}, w: w4, s: ddr},
		{name: "a enables 1X", enA: [2]uint16{uint16(w1), 0}, w: w1, s: sdr},
		{name: "a enables SDR only", a: port.Config{Width: w4, Speed: qdr}, b: port.Config{Width: w4, Speed: qdr}, enA: [2]uint16{0, uint16(sdr)}, w: w4, s: sdr},
		{name: "1X cable end to a 4X one", a: port.Config{Width: w1}, w: w1, s: sdr},
		{name: "4X NDR both", a: port.Config{Width: w4, Speed: ndr}, b: port.Config{Width: w4, Speed: ndr}, w: w4, s: ndr},
		{name: "NDR to HDR trains HDR", a: port.Config{Width: w4, Speed: ndr}, b: port.Config{Width: w4, Speed: hdr}, w: w4, s: hdr},
		{name: "HDR to EDR trains EDR", a: port.Config{Width: w4, Speed: hdr}, b: port.Config{Width: w4, Speed: edr}, w: w4, s: edr},
		{name: "2X NDR to 4X NDR", a: port.Config{Width: w2, Speed: ndr}, b: port.Config{Width: w4, Speed: ndr}, w: w2, s: ndr},
		{name: "4X XDR both", a: port.Config{Width: w4, Speed: xdr}, b: port.Config{Width: w4, Speed: xdr}, w: w4, s: xdr},
		{name: "espeed HDR only on NDR", a: port.Config{Width: w4, Speed: ndr}, b: port.Config{Width: w4, Speed: ndr},
			enA: [2]uint16{0, uint16(sdr | ddr | qdr | hdr)}, w: w4, s: hdr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			e := newEnv(t, tt.a, func(c *port.Config) { c.Width, c.Speed = b.Width, b.Speed })
			up := func() bool { return e.a.State().Phys == mad.PhysStateLinkUp && e.b.State().Phys == mad.PhysStateLinkUp }
			e.run(t, up)
			if tt.enA != [2]uint16{} {
				if err := e.a.SetLinkEnabled(mad.LinkWidth(tt.enA[0]), mad.LinkSpeed(tt.enA[1])); err != nil {
					t.Fatal(err)
				}
				// The new sets count from the next training: a reset.
				if err := e.a.SetPhysState(mad.PhysStatePolling); err != nil {
					t.Fatal(err)
				}
				e.run(t, up)
			}
			want, _ := mad.DataRate(tt.w, tt.s)
			for _, p := range []*port.Port{e.a, e.b} {
				r := p.LinkRate()
				if r.WidthActive != tt.w || r.SpeedActive != tt.s {
					t.Errorf("%s: active %v %v, want %v %v", p.Name(), r.WidthActive, r.SpeedActive, tt.w, tt.s)
				}
				if got := p.Rate(); got != want {
					t.Errorf("%s: Rate() = %d, want %d", p.Name(), got, want)
				}
			}
		})
	}
}

// TestNoCommonWidth: ends that share no width stay in training.
func TestNoCommonWidth(t *testing.T) {
	e := newEnv(t, port.Config{Width: mad.LinkWidth12X}, func(c *port.Config) { c.Width = mad.LinkWidth4X })
	e.settle()
	if err := e.a.SetLinkEnabled(mad.LinkWidth12X, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.b.SetLinkEnabled(mad.LinkWidth4X, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.a.SetPhysState(mad.PhysStatePolling); err != nil { // retrain
		t.Fatal(err)
	}
	for range 20 {
		e.clk.AdvanceToNext()
		e.settle()
	}
	for _, p := range []*port.Port{e.a, e.b} {
		if got := p.State(); got != pollingDown {
			t.Errorf("%s: State() = %v, want %v: no width in common", p.Name(), got, pollingDown)
		}
	}
}

// TestSetLinkEnabled refuses what the port does not support.
func TestSetLinkEnabled(t *testing.T) {
	e := newEnv(t, port.Config{}, nil) // 4X SDR: 1X and 4X, SDR
	r := e.a.LinkRate()
	if r.WidthSupported != mad.LinkWidth1X|mad.LinkWidth4X || r.SpeedSupported != mad.LinkSpeedSDR ||
		r.WidthEnabled != r.WidthSupported || r.SpeedEnabled != r.SpeedSupported {
		t.Errorf("LinkRate() = %+v after reset, want 1X|4X SDR supported and enabled", r)
	}
	if err := e.a.SetLinkEnabled(mad.LinkWidth12X, 0); !errors.Is(err, port.ErrLinkEnabled) {
		t.Errorf("SetLinkEnabled(12X) = %v, want ErrLinkEnabled", err)
	}
	if err := e.a.SetLinkEnabled(0, mad.LinkSpeedDDR); !errors.Is(err, port.ErrLinkEnabled) {
		t.Errorf("SetLinkEnabled(DDR) = %v, want ErrLinkEnabled", err)
	}
	if got := e.a.LinkRate(); got != r {
		t.Errorf("LinkRate() = %+v after refused Sets, want %+v", got, r)
	}
}
