package runner

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

// TestRateScale: a time scale tuned at 4x SDR grows with the rate's data
// rate over 4x SDR's (4x HDR: 25 times, qos's 250 to 6250, a 4x4 mesh's
// 1000 to 25000), windows shrink by it, and no --rate is 4x SDR.
func TestRateScale(t *testing.T) {
	hdr := topologies.Rate{Width: topologies.Width4x, Speed: topologies.SpeedHDR}
	for _, c := range []struct {
		rate   topologies.Rate
		bps    uint64
		factor float64
	}{
		{topologies.Rate{}, 8e9, 1},
		{TunedRate, 8e9, 1},
		{hdr, 200e9, 25},
		{topologies.Rate{Width: topologies.Width4x, Speed: topologies.SpeedNDR}, 400e9, 50},
		{topologies.Rate{Width: topologies.Width1x, Speed: topologies.SpeedSDR}, 2e9, 0.25},
	} {
		assert.Equal(t, c.bps, RateBps(c.rate), "%v", c.rate)
		assert.InDelta(t, c.factor, RateFactor(c.rate), 1e-12, "%v", c.rate)
	}
	assert.InDelta(t, 6250, ScaleAt(250, hdr), 1e-9)
	assert.InDelta(t, 25000, ScaleAt(62.5*16, hdr), 1e-9)
	assert.InDelta(t, 250, ScaleAt(250, topologies.Rate{}), 1e-9)
	assert.Equal(t, 40*time.Microsecond, DurationAt(time.Millisecond, 25))
	w := PointWindows{Warmup: 500 * time.Microsecond, Measure: time.Millisecond, Drain: time.Millisecond}
	assert.Equal(t, PointWindows{Warmup: 20 * time.Microsecond, Measure: 40 * time.Microsecond, Drain: 40 * time.Microsecond}, w.At(25))
	assert.Nil(t, RateNodeArgs(topologies.Rate{}), "4x SDR: the nodes' own pace slack and catch-up")
	assert.Equal(t, []string{"--pace-slack", "2µs", "--catch-up", "80µs"}, RateNodeArgs(hdr))
}

// TestRateVar: --rate defaults to 4x SDR, takes a rate as ibfab up does,
// and refuses an unknown one with the valid rates; CheckRate refuses a
// rate the nodes do not emulate.
func TestRateVar(t *testing.T) {
	parse := func(args ...string) (topologies.Rate, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var r topologies.Rate
		RateVar(fs, &r)
		err := fs.Parse(args)
		return r, err
	}
	r, err := parse()
	require.NoError(t, err)
	assert.Equal(t, TunedRate, r)
	r, err = parse("--rate", "4xHDR")
	require.NoError(t, err)
	assert.Equal(t, "4xHDR", r.String())
	assert.NoError(t, CheckRate(r))
	_, err = parse("--rate", "4xFOO")
	assert.ErrorContains(t, err, `unknown link rate "4xFOO" (valid: {1,2,4,8,12}x{SDR,DDR,QDR,FDR10,FDR,EDR,HDR,NDR,XDR})`)
	r, err = parse("--rate", "4xFDR10")
	require.NoError(t, err)
	assert.ErrorContains(t, CheckRate(r), "not emulated")
	assert.NoError(t, CheckRate(topologies.Rate{}), "no rate: 4x SDR")
}
