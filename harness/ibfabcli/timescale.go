package ibfabcli

import (
	"errors"
	"fmt"
	"strconv"

	"ibfab/harness"
	"ibfab/harness/bench"
	"ibfab/topologies"
)

// timeScaleFlag is --time-scale: a positive number, or auto.
type timeScaleFlag struct {
	scale float64
	auto  bool
}

func (f *timeScaleFlag) String() string {
	if f.auto {
		return "auto"
	}
	return strconv.FormatFloat(f.scale, 'g', -1, 64)
}

func (f *timeScaleFlag) Set(v string) error {
	if v == "auto" {
		f.auto = true
		return nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || !(x > 0) || x > 1e6 {
		return fmt.Errorf("want a positive number up to 1e6, or auto")
	}
	f.scale, f.auto = x, false
	return nil
}

// adviseTimeScale resolves auto and returns the line up prints about the
// time scale t's fastest link needs on this machine: with a warning when
// the scale given is below it.
func adviseTimeScale(env *Env, name string, t *topologies.Topology, f *timeScaleFlag) (string, error) {
	rate, rname, err := harness.FastestLink(t)
	if err != nil || rate == 0 {
		return "", err
	}
	lim, err := harness.LoadMachineLimit()
	if errors.Is(err, harness.ErrNoMachineLimit) && f.auto {
		fmt.Fprintf(env.Stderr, "ibfab up: measuring this machine's unpaced limit (recorded for next time)\n")
		lim, err = bench.MeasureMachineLimit(name)
	}
	if errors.Is(err, harness.ErrNoMachineLimit) {
		return fmt.Sprintf("time scale: the scale %s needs on this machine is not known: %v", rname, err), nil
	}
	if err != nil {
		return "", err
	}
	need := harness.TimeScaleFor(rate, lim)
	if f.auto {
		f.scale = need
	}
	line := fmt.Sprintf("time scale: %s (%g Gb/s) needs %g on this machine at full load (one unpaced link carried %.3g Gb/s here, measured %s)",
		rname, float64(rate)/1e9, need, lim.WireBps/1e9, lim.Measured.Format("2006-01-02"))
	if f.scale < need {
		fmt.Fprintf(env.Stderr, "ibfab up: warning: time scale %g is below the %g that %s needs on this machine: a link at full load will carry less than its rate (--time-scale auto takes %g)\n",
			f.scale, need, rname, need)
	}
	return line, nil
}
