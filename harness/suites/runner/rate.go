package runner

import (
	"flag"
	"fmt"
	"time"

	"ibfab/nodeproc"
	"ibfab/port"
	"ibfab/topologies"
)

// The experiments' link rate (--rate): every link of an experiment's
// fabric is cabled at one rate, 4x SDR unless --rate names another. The
// experiments' time scales, loads, latency bounds and windows were tuned
// at 4x SDR; at another rate they scale by RateFactor, so that the
// machine moves as many packets per real second as at 4x SDR and each
// experiment is the same in packet times.

// TunedRate is the rate the experiments were tuned at, and run at when
// --rate names none.
var TunedRate = topologies.Rate{Width: topologies.Width4x, Speed: topologies.SpeedSDR}

// OrTuned is r, or TunedRate for the zero Rate (no --rate).
func OrTuned(r topologies.Rate) topologies.Rate {
	if r == (topologies.Rate{}) {
		return TunedRate
	}
	return r
}

// CheckRate reports whether the nodes emulate links of rate r.
func CheckRate(r topologies.Rate) error {
	r = OrTuned(r)
	if err := nodeproc.CheckLinkRate(r.Width, r.Speed); err != nil {
		return fmt.Errorf("--rate %s: %w", r, err)
	}
	return nil
}

// RateBps is r's data rate in bits/s as the nodes pace it; the zero
// Rate is TunedRate's, and a rate the nodes do not emulate (CheckRate)
// is 0.
func RateBps(r topologies.Rate) uint64 {
	r = OrTuned(r)
	bps, _ := nodeproc.LinkDataRate(topologies.Link{Width: r.Width, Speed: r.Speed})
	return bps
}

// RateFactor is r's data rate over TunedRate's: 25 for 4x HDR.
func RateFactor(r topologies.Rate) float64 {
	return float64(RateBps(r)) / float64(RateBps(TunedRate))
}

// ScaleAt is scale, a time scale tuned at TunedRate, for links of rate
// r: a link k times faster in emulated time runs k times slower, so that
// its packets per real second stay those the scale was tuned for.
func ScaleAt(scale float64, r topologies.Rate) float64 { return scale * RateFactor(r) }

// RateVar defines --rate on fs, into r: the experiment's every link,
// 4x SDR by default.
func RateVar(fs *flag.FlagSet, r *topologies.Rate) {
	*r = TunedRate
	fs.TextVar(r, "rate", TunedRate, "cable every link at `RATE` (e.g. 4xHDR, 4xNDR, 2xNDR); the time scale and the traffic scale with it")
}

// DurationAt is d, a duration of emulated time tuned at TunedRate, at k
// times that rate: as many packet times, k times shorter.
func DurationAt(d time.Duration, k float64) time.Duration { return time.Duration(float64(d) / k) }

// At is w at k times TunedRate (DurationAt).
func (w PointWindows) At(k float64) PointWindows {
	return PointWindows{Warmup: DurationAt(w.Warmup, k), Measure: DurationAt(w.Measure, k), Drain: DurationAt(w.Drain, k)}
}

// RateNodeArgs are the node flags of an experiment at rate r: the
// transmitters' pace slack and catch-up, emulated durations the port
// package sets for 4x SDR, k times shorter at k times its rate (none at
// 4x SDR), so that a link runs as many packets ahead of or behind its
// schedule, for as long in real time, as at 4x SDR. Left at 50 µs, the
// slack is 600 packets at 4x HDR: a hot spot's whole excess went out
// ahead of schedule, no queue built and no switch marked.
func RateNodeArgs(r topologies.Rate) []string {
	k := RateFactor(r)
	if k == 1 {
		return nil
	}
	return []string{"--pace-slack", DurationAt(port.DefaultPaceSlack, k).String(),
		"--catch-up", DurationAt(port.DefaultCatchUp, k).String()}
}
