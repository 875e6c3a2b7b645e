package bench

import (
	"flag"
	"fmt"
	"io"
	"time"

	"ibfab/harness"
	"ibfab/internal/cli"
	"ibfab/internal/goal"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// hotSpotScale is the hot spot's time scale: a 4x SDR link (8 Gb/s) then
// carries 32 Mb/s of real time, which a 2-core machine moves across four
// hops for five senders with pacing holding.
const hotSpotScale = 250

// hotSpotGoal: the hot spot's link is kept busy (within 5 % of its paced
// rate) and credit flow control loses nothing.
const hotSpotGoal = 0.95

// HotSpotReport is what ibfab bench hotspot writes.
type HotSpotReport struct {
	Benchmark   string            `json:"benchmark"` // "hotspot"
	Date        string            `json:"date"`
	Quick       bool              `json:"quick"`
	TimeScale   float64           `json:"time_scale"`
	RealSeconds float64           `json:"real_s"`
	Senders     int               `json:"senders"`
	RateVsPaced float64           `json:"rate_vs_paced"`
	Sent        uint64            `json:"sent"`
	Drops       map[string]uint64 `json:"drops"`
	Error       string            `json:"error,omitempty"`
	Notes       []string          `json:"notes"`
	goal.Verdict
}

var hotspotBench = benchmark{
	name:     "hotspot",
	synopsis: "bench hotspot [--seconds S] [--quick] [--out FILE] [--name PREFIX]",
	desc: `The rate a hot spot's link reaches under credit flow control. A two-leaf
fat tree with three HCAs per leaf at time scale 250; every HCA but the SM's
and the hot spot's sends to the hot spot at 100 % of its link rate for S
seconds of real time; the hot spot's received data rate over the second half
of the run, in emulated time, over its paced 4x SDR rate. Goal: at least
0.95 of the paced rate with no packet dropped anywhere. --quick: 10 s.`,
	flags: func(fs *flag.FlagSet, c *common) func() (any, bool, error) {
		secs := fs.Float64("seconds", 30, "real seconds of traffic")
		return func() (any, bool, error) {
			d := time.Duration(*secs * float64(time.Second))
			if c.quick {
				d = 10 * time.Second
			}
			if d < 2*time.Second {
				return nil, false, &cli.UsageError{Cmd: "bench hotspot", Usage: "bench hotspot -h", Err: fmt.Errorf("--seconds %v: want at least 2", *secs)}
			}
			if err := requireRoot(); err != nil {
				return nil, false, err
			}
			rep := HotSpot(c.name+"h", d, c.quick, c.log)
			return rep, rep.Error != "", nil
		}
	},
}

// HotSpot runs the hot-spot measurement for d of real time.
func HotSpot(name string, d time.Duration, quick bool, log io.Writer) *HotSpotReport {
	rep := &HotSpotReport{Benchmark: "hotspot", Date: time.Now().UTC().Format(time.RFC3339), Quick: quick,
		TimeScale: hotSpotScale, RealSeconds: d.Seconds(),
		Notes: []string{"rate_vs_paced: the hot-spot link's received data rate (PortRcvData) over the second half of the run, in emulated time, over its paced 4x SDR rate; below 1 the senders could not keep it busy (the machine's CPU, or credits lost). drops: every port's drops by \"node[port] cause\" over the whole run."}}
	if err := hotSpot(rep, name, d, log); err != nil {
		rep.Error = err.Error()
		fmt.Fprintf(log, "hotspot: %v\n", err)
	}
	rep.Verdict = goal.Judge([]goal.Case{hotSpotCase(rep)})
	return rep
}

// hotSpotCase judges the run: measured when it ran and sent something.
func hotSpotCase(rep *HotSpotReport) goal.Case {
	c := goal.Case{Name: "hotspot"}
	switch {
	case rep.Error != "":
		c.Why = rep.Error
	case rep.Sent == 0:
		c.Why = "the generators sent nothing"
	default:
		c.Measured = true
		c.Met = rep.RateVsPaced >= hotSpotGoal && len(rep.Drops) == 0
		c.Why = fmt.Sprintf("rate %.3f of paced (goal ≥ %g), drops %v", rep.RateVsPaced, hotSpotGoal, rep.Drops)
	}
	return c
}

func hotSpot(rep *HotSpotReport, name string, d time.Duration, log io.Writer) error {
	topo, err := topologies.FatTree(2, 1, 3)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "hotspot: bringing up %d nodes at time scale %d\n", topo.NumNodes(), hotSpotScale)
	f, err := up(name, topo, harness.UpOptions{TimeScale: hotSpotScale})
	if err != nil {
		return err
	}
	defer f.down()
	smNode, hot := "ca1-1", "ca2-3"
	if err := f.configure(smNode); err != nil {
		return err
	}
	lid, err := f.lids([]string{hot})
	if err != nil {
		return err
	}
	var senders []string
	for _, h := range f.hosts() {
		if h != hot && h != smNode {
			senders = append(senders, h)
		}
	}
	rep.Senders = len(senders)
	for i, h := range senders {
		if err := f.call(h, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 100, Payload: 2048,
			Dests: []uint16{lid[hot]}, Seed: uint64(i + 1)}, nil); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "hotspot: %d senders for %v\n", len(senders), d)
	time.Sleep(d / 2)
	s0, err := f.node(hot)
	if err != nil {
		return err
	}
	t0 := time.Now()
	time.Sleep(d / 2)
	s1, err := f.node(hot)
	if err != nil {
		return err
	}
	t1 := time.Now()
	for _, h := range senders {
		var gs struct {
			Sent uint64 `json:"sent"`
		}
		if err := f.call(h, "traffic-stop", map[string]int{"port": 1}, &gs); err != nil {
			return err
		}
		rep.Sent += gs.Sent
	}
	// PortRcvData counts 4-byte words of whole packets, as the link rate
	// does (8b/10b already taken out).
	bits := float64(s1.Ports[0].Counters.PortRcvData-s0.Ports[0].Counters.PortRcvData) * 32
	rate, err := mad.DataRate(mad.LinkWidth4X, mad.LinkSpeedSDR)
	if err != nil {
		return err
	}
	rep.RateVsPaced = bits / (t1.Sub(t0).Seconds() / hotSpotScale) / float64(rate)
	st, err := f.status()
	if err != nil {
		return err
	}
	rep.Drops = map[string]uint64{}
	for _, n := range st.Nodes {
		for _, p := range n.Ports {
			for cause, v := range p.Drops {
				rep.Drops[fmt.Sprintf("%s[%d] %s", n.Name, p.Port, cause)] += v
			}
		}
	}
	fmt.Fprintf(log, "hotspot: %.3f of the paced rate; %d packets sent; drops %v\n", rep.RateVsPaced, rep.Sent, rep.Drops)
	return nil
}
