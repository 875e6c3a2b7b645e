package afc

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"ibfab/harness/suites/runner"
	"ibfab/internal/enum"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// The adaptive-routing experiments (`ibfab run afc`, issue 20, seed 003):
// D-mod-K, Adaptive, Adaptive-th and AFI (Adaptive-th whose adapted
// packets go to the Adapted Flow Channel, adapted at most once) under
// four static queuing schemes (1VC, and DBBM, Flow2SL and vFtree with
// three VLs), in input-queued switches with and without VOQs, on real-life
// fat trees RLFT(K, 3) brought up by the harness, ibsm as SM with
// --routing dmodk and the adaptive routing programmed by its vendor class.
// As the digest numbers them:
//
//   - E1, E2, E3: uniform traffic (UT), and 10 % / 25 % of the hosts
//     sending to one destination for the whole run (HS10, HS25), every
//     routing × queuing at a load sweep, switches without VOQs;
//   - E4: the same with VOQs;
//   - E5: an all-to-all exchange standing in for the PTRANS trace:
//     execution time;
//   - E6: the mechanism on K=2: per-VL and AFC occupancy over time,
//     adapted packets, the SQS VLs holding hot-spot packets.
//
// Traffic is flows of 4 KB packets (the MTU) with the queuing scheme's SL
// per destination: a uniform source runs one Poisson flow per SL over
// the destinations of that SL, at the swept share of its link; a hot-spot
// source sends to the hot destination at its full link rate, the load of
// the paper's thousands of hot sources at any load. Accepted throughput is
// what every destination received, normalized to the hosts' links.

//go:generate go tool stringer -type=AFCRouting,AFCQueuing,AFCTraffic -linecomment

// AFCRouting is a routing of the experiments: the LFTs alone (D-mod-K) or
// with one of the switches' adaptive modes.
type AFCRouting uint8

// The routings.
const (
	AFCDModK      AFCRouting = iota // D-mod-K
	AFCAdaptive                     // Adaptive
	AFCAdaptiveTh                   // Adaptive-th
	AFCAFI                          // AFI
)

var afcRoutingSet = enum.New("AFC routing", AFCDModK, AFCAdaptive, AFCAdaptiveTh, AFCAFI)

// MarshalText implements encoding.TextMarshaler.
func (x AFCRouting) MarshalText() ([]byte, error) { return afcRoutingSet.Marshal(x) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (x *AFCRouting) UnmarshalText(b []byte) error { return afcRoutingSet.Unmarshal(x, b) }

// afcRoutings are the routings in the paper's column order.
var afcRoutings = []AFCRouting{AFCDModK, AFCAdaptive, AFCAdaptiveTh, AFCAFI}

// mode is the switches' adaptive routing mode.
func (r AFCRouting) mode() mad.ARMode {
	switch r {
	case AFCAdaptive:
		return mad.ARAdaptive
	case AFCAdaptiveTh:
		return mad.ARAdaptiveTh
	case AFCAFI:
		return mad.ARAFI
	}
	return mad.AROff
}

// AFCQueuing is a static queuing scheme with its number of VLs.
type AFCQueuing uint8

// The queuing schemes of the evaluation.
const (
	AFC1VC     AFCQueuing = iota // 1VC
	AFCDBBM                      // DBBM-3VC
	AFCFlow2SL                   // Flow2SL-3VC
	AFCVFtree                    // vFtree-3VC
)

var afcQueuingSet = enum.New("AFC queuing", AFC1VC, AFCDBBM, AFCFlow2SL, AFCVFtree)

// MarshalText implements encoding.TextMarshaler.
func (x AFCQueuing) MarshalText() ([]byte, error) { return afcQueuingSet.Marshal(x) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (x *AFCQueuing) UnmarshalText(b []byte) error { return afcQueuingSet.Unmarshal(x, b) }

// afcQueuings are the schemes in the paper's legend order.
var afcQueuings = []AFCQueuing{AFC1VC, AFCDBBM, AFCFlow2SL, AFCVFtree}

// vls is the number of SQS VLs.
func (q AFCQueuing) vls() int {
	if q == AFC1VC {
		return 1
	}
	return 3
}

// sqs is the scheme's SL assignment.
func (q AFCQueuing) sqs() topologies.SQS {
	switch q {
	case AFCDBBM:
		return topologies.SQSDBBM
	case AFCFlow2SL:
		return topologies.SQSFlow2SL
	case AFCVFtree:
		return topologies.SQSVFtree
	}
	return topologies.SQS1VC
}

// AFCTraffic is a traffic pattern.
type AFCTraffic uint8

// The patterns.
const (
	AFCUniform AFCTraffic = iota // UT
	AFCHS10                      // HS10
	AFCHS25                      // HS25
)

var afcTraffics = enum.New("AFC traffic", AFCUniform, AFCHS10, AFCHS25)

// MarshalText implements encoding.TextMarshaler.
func (x AFCTraffic) MarshalText() ([]byte, error) { return afcTraffics.Marshal(x) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (x *AFCTraffic) UnmarshalText(b []byte) error { return afcTraffics.Unmarshal(x, b) }

// hotFraction is the share of hosts sending to the hot spot.
func (t AFCTraffic) hotFraction() float64 {
	switch t {
	case AFCHS10:
		return 0.10
	case AFCHS25:
		return 0.25
	}
	return 0
}

// afcBufferBlocks is an input port's buffer, 128 KB in 64-byte blocks,
// which the VLs in use share equally (the SQS VLs and, with AFI, the AFC).
const afcBufferBlocks = 128 * 1024 / 64

// afcVLBlocks returns the switch ports' buffer per VL for a queuing
// scheme, with the AFC when afc: 2048 blocks over the VLs in use, the
// others none.
func afcVLBlocks(q AFCQueuing, afc bool) []int {
	n := q.vls()
	if afc {
		n++
	}
	out := make([]int, n)
	for i := range out {
		out[i] = afcBufferBlocks / n
	}
	return out
}

// afcSetup is one configuration of the fabric: what the switches and the
// SM are set to before a measurement.
type afcSetup struct {
	Routing AFCRouting `json:"routing"`
	Queuing AFCQueuing `json:"queuing"`
	VOQ     bool       `json:"voq"`
}

// afcVL is the AFC's VL: the one after the SQS VLs.
func (s afcSetup) afcVL() uint8 { return uint8(s.Queuing.vls()) }

// String is "AFI/Flow2SL-3VC/VOQ" and the like.
func (s afcSetup) String() string {
	arch := "IQ"
	if s.VOQ {
		arch = "VOQ"
	}
	return fmt.Sprintf("%s/%s/%s", s.Routing, s.Queuing, arch)
}

// afcKind is what an experiment measures.
type afcKind int

const (
	afcSweep     afcKind = iota // normalized throughput against load
	afcAllToAll                 // execution time of the exchange
	afcMechanism                // E6's time series
)

// afcExperiment is one experiment of the plan.
type afcExperiment struct {
	ID       string
	Title    string
	K        int // the RLFT's arity (3 stages)
	Kind     afcKind
	Traffics []AFCTraffic
	Routings []AFCRouting
	Queuings []AFCQueuing
	VOQ      []bool
	Loads    []float64 // percent of the link rate, ascending
}

// afcIDs are the experiments in the order they run.
var afcIDs = []string{"E6", "E1", "E2", "E3", "E4", "E5"}

// afcPlan is a run's experiments: E1-E4 on K=2 at two loads, HS10 (E2) on
// K=3 and on K=4 (RLFT(4,3): 128 hosts, 80 switches) at full load, E5 and
// E6 on K=2; quick keeps K=2, UT and HS10, two
// queuings, two loads, and E5 with two routings. Sized to an hour on a
// two-core machine, where a K=3 point takes several times a K=2 one and
// a K=3 exchange minutes: E5 stays on K=2, as its 32 setups on K=3 alone
// would take the hour (docs/results.md has the measured times).
func afcPlan(quick bool) []afcExperiment {
	loads := []float64{50, 100}
	loads3 := []float64{100}
	all := afcRoutings
	qs := afcQueuings
	e := func(id, title string, k int, t AFCTraffic, voq bool, l []float64) afcExperiment {
		return afcExperiment{ID: id, Title: title, K: k, Kind: afcSweep, Traffics: []AFCTraffic{t},
			Routings: all, Queuings: qs, VOQ: []bool{voq}, Loads: l}
	}
	if quick {
		qs = []AFCQueuing{AFC1VC, AFCFlow2SL}
		return []afcExperiment{
			{ID: "E6", Title: "mechanism: occupancy, adapted packets, SQS VLs holding hot-spot packets", K: 2, Kind: afcMechanism,
				Traffics: []AFCTraffic{AFCHS25}, Routings: []AFCRouting{AFCDModK, AFCAdaptive, AFCAFI}, Queuings: []AFCQueuing{AFCFlow2SL}},
			{ID: "E1", Title: "uniform traffic, switches without VOQs", K: 2, Kind: afcSweep, Traffics: []AFCTraffic{AFCUniform},
				Routings: all, Queuings: qs, VOQ: []bool{false}, Loads: []float64{100}},
			{ID: "E2", Title: "HS10, switches without VOQs", K: 2, Kind: afcSweep, Traffics: []AFCTraffic{AFCHS10},
				Routings: all, Queuings: qs, VOQ: []bool{false}, Loads: []float64{50, 100}},
			{ID: "E5", Title: "all-to-all exchange (PTRANS stand-in): execution time", K: 2, Kind: afcAllToAll,
				Routings: []AFCRouting{AFCDModK, AFCAFI}, Queuings: qs, VOQ: []bool{false, true}},
		}
	}
	return []afcExperiment{
		{ID: "E6", Title: "mechanism: occupancy, adapted packets, SQS VLs holding hot-spot packets", K: 2, Kind: afcMechanism,
			Traffics: []AFCTraffic{AFCHS25}, Routings: all, Queuings: []AFCQueuing{AFCFlow2SL}},
		e("E1", "uniform traffic, switches without VOQs", 2, AFCUniform, false, loads),
		e("E2", "HS10, switches without VOQs", 2, AFCHS10, false, loads),
		e("E3", "HS25, switches without VOQs", 2, AFCHS25, false, loads),
		{ID: "E4", Title: "UT, HS10 and HS25 in switches with VOQs", K: 2, Kind: afcSweep,
			Traffics: []AFCTraffic{AFCUniform, AFCHS10, AFCHS25}, Routings: all, Queuings: qs, VOQ: []bool{true}, Loads: loads},
		e("E2", "HS10, switches without VOQs", 3, AFCHS10, false, loads3),
		e("E2", "HS10, switches without VOQs", 4, AFCHS10, false, loads3),
		{ID: "E5", Title: "all-to-all exchange (PTRANS stand-in): execution time", K: 2, Kind: afcAllToAll,
			Routings: all, Queuings: qs, VOQ: []bool{false, true}},
	}
}

// selectAFC keeps the experiments named in only (every K of each), all
// when empty; an unknown name is an error.
func selectAFC(plan []afcExperiment, only []string) ([]afcExperiment, error) {
	if len(only) == 0 {
		return plan, nil
	}
	for _, id := range only {
		if !slices.ContainsFunc(afcIDs, func(x string) bool { return strings.EqualFold(x, id) }) {
			return nil, fmt.Errorf("no experiment %q: want some of %s", id, strings.Join(afcIDs, ","))
		}
	}
	var out []afcExperiment
	for _, e := range plan {
		if slices.ContainsFunc(only, func(x string) bool { return strings.EqualFold(x, e.ID) }) {
			out = append(out, e)
		}
	}
	return out, nil
}

// afcTimeScale is a fabric's time scale at rate: at 4x SDR 62.5 per
// host (1000 for K=2's 16 hosts, 3375 for K=3's 54), times rate's data
// rate over 4x SDR's (runner.ScaleAt). Half of it would do for the data packets
// alone (4 KB cost the machine what the CC experiments' 2 KB do), but the
// switches advertise every release (afcCreditSlack), a flow-control
// packet per data packet and hop: at 32 per host K=2 fell behind its
// links at 30 % of uniform load, its VLs full with no hot spot at all.
//
// K=3 needs twice that per host, 125 (6750): at 62.5 its 99 processes
// kept the machine's load average above 50 under a hot spot, and control
// calls to the nodes timed out; more processes cost more than their links.
// K=4's 208 processes get twice that again, 250 per host (32000).
func afcTimeScale(hosts int, override float64, rate topologies.Rate) float64 {
	switch {
	case override > 0:
		return override
	case hosts > 54:
		return runner.ScaleAt(250*float64(hosts), rate)
	case hosts > 16:
		return runner.ScaleAt(125*float64(hosts), rate)
	}
	return runner.ScaleAt(62.5*float64(hosts), rate)
}

// afcWindows are the experiments' durations in emulated time, tuned at
// 4x SDR (afcWindowsFor, then at).
type afcWindows struct {
	runner.PointWindows
	// E6: uniform traffic alone, with the hot spot, and after it, sampled
	// every Sample; then Tail, the window in which adaptation must have
	// stopped.
	Before time.Duration `json:"before_ns"`
	Hot    time.Duration `json:"hot_ns"`
	After  time.Duration `json:"after_ns"`
	Sample time.Duration `json:"sample_ns"`
	Tail   time.Duration `json:"tail_ns"`
}

func afcWindowsFor() afcWindows {
	// The switches' buffers (128 KB a port, 10 MB on K=2) take some
	// 0.6 ms to fill at full load: the warm-up is three times that, or
	// a window measures the filling; 2 ms carry 480 packets on a
	// saturated link.
	return afcWindows{PointWindows: runner.PointWindows{Warmup: 2 * time.Millisecond, Measure: 2 * time.Millisecond, Drain: 500 * time.Microsecond},
		Before: time.Millisecond, Hot: 4 * time.Millisecond, After: 4 * time.Millisecond, Sample: 500 * time.Microsecond,
		Tail: 2 * time.Millisecond}
}

// at is w at k times 4x SDR's rate: as many packet times.
func (w afcWindows) at(k float64) afcWindows {
	w.PointWindows = w.PointWindows.At(k)
	for _, d := range []*time.Duration{&w.Before, &w.Hot, &w.After, &w.Sample, &w.Tail} {
		*d = runner.DurationAt(*d, k)
	}
	return w
}

// Traffic constants.
const (
	afcPayload    = 4096 // the MTU, as in the paper
	afcMaxBacklog = 64   // packets waiting at a source
	// afcE6Load is E6's uniform load, under which no downstream VL
	// reaches the threshold by itself.
	afcE6Load = 30
	// afcExchangeMessages is E5's packets from each host to each other
	// host, sent in turn (a phase per partner): 16 make a K=2 exchange
	// last some 2 ms, long enough that one late process does not decide
	// its time.
	afcExchangeMessages = 16
)

// Experiment is `ibfab run afc`, for the command's table.
var Experiment = runner.Experiment{Name: "afc", Synopsis: afcSynopsis, Run: runAFCCmd}
