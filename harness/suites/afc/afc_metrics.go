package afc

import (
	"math"
	"slices"
	"time"

	"ibfab/harness/suites/runner"
	"ibfab/nodeproc"
)

// AFCPoint is one measurement of a load sweep.
type AFCPoint struct {
	K       int        `json:"k"`
	Traffic AFCTraffic `json:"traffic"`
	afcSetup
	Load float64 `json:"load_pct"` // the uniform sources' offered load
	// Accepted is what every destination received, and Offered what
	// every source generated, normalized to the hosts' links (1 = every
	// host receiving at its link's rate); HotAccepted is the hot-spot
	// flows' share of Accepted.
	Accepted    float64 `json:"accepted"`
	Offered     float64 `json:"offered"`
	HotAccepted float64 `json:"hot_accepted"`
	// Adapted counts the packets the switches sent away from their LFT
	// port during the window; SourceDrops the arrivals the sources'
	// backlogs had no room for.
	Adapted     uint64 `json:"adapted"`
	SourceDrops uint64 `json:"source_drops"`
	Error       string `json:"error,omitempty"`
}

// afcFlows is every host's flow report at one moment.
type afcFlows struct {
	flows map[string]nodeproc.FlowsReport
	at    map[string]time.Time
}

func newAFCFlows() afcFlows {
	return afcFlows{flows: map[string]nodeproc.FlowsReport{}, at: map[string]time.Time{}}
}

// afcAccepted returns the normalized throughput b shows for hosts since a
// reset them: each host's received wire bits over its own window (real
// time between its two reads, over the time scale), summed, over hosts ×
// rate; and the part of it that came in flows with ID hot.
func afcAccepted(a, b afcFlows, hosts []string, scale float64, rate uint64, hot uint32) (all, hotShare float64) {
	if len(hosts) == 0 || rate == 0 {
		return 0, 0
	}
	var sum, hotSum float64
	for _, h := range hosts {
		w := runner.EmuSeconds(b.at[h].Sub(a.at[h]), scale)
		if w <= 0 {
			continue
		}
		for _, r := range b.flows[h].Received {
			bps := float64(r.WireBytes) * 8 / w
			sum += bps
			if r.ID == hot {
				hotSum += bps
			}
		}
	}
	n := float64(len(hosts)) * float64(rate)
	return sum / n, hotSum / n
}

// afcOffered returns what the sources of b generated since their reset,
// normalized like afcAccepted, and the arrivals their backlogs dropped.
func afcOffered(b afcFlows, hosts []string, rate uint64) (float64, uint64) {
	if len(hosts) == 0 || rate == 0 {
		return 0, 0
	}
	var sum float64
	var drops uint64
	for _, h := range hosts {
		for _, f := range b.flows[h].Sent {
			drops += f.Dropped
			if f.Elapsed > 0 {
				sum += float64(f.Offered) * float64(f.WireBytes) * 8 / f.Elapsed.Seconds()
			}
		}
	}
	return sum / (float64(len(hosts)) * float64(rate)), drops
}

// afcCell finds the point of a sweep with every field of key but Load,
// Accepted and the counts equal, at load; false when it was not
// measured or failed.
func afcCell(ps []AFCPoint, k int, t AFCTraffic, r AFCRouting, q AFCQueuing, voq bool, load float64) (AFCPoint, bool) {
	i := slices.IndexFunc(ps, func(p AFCPoint) bool {
		return p.K == k && p.Traffic == t && p.Routing == r && p.Queuing == q && p.VOQ == voq && p.Load == load && p.Error == ""
	})
	if i < 0 {
		return AFCPoint{}, false
	}
	return ps[i], true
}

// afcTopLoad is the highest load measured for (k, t, voq), or false.
func afcTopLoad(ps []AFCPoint, k int, t AFCTraffic, voq bool) (float64, bool) {
	top, ok := math.Inf(-1), false
	for _, p := range ps {
		if p.K == k && p.Traffic == t && p.VOQ == voq && p.Error == "" && p.Load > top {
			top, ok = p.Load, true
		}
	}
	return top, ok
}

// afcMean is the mean Accepted over the points of (k, t, r, q, voq) at
// loads of at least from (the congested end of the sweep), or false.
func afcMean(ps []AFCPoint, k int, t AFCTraffic, r AFCRouting, q AFCQueuing, voq bool, from float64) (float64, bool) {
	var sum float64
	n := 0
	for _, p := range ps {
		if p.K == k && p.Traffic == t && p.Routing == r && p.Queuing == q && p.VOQ == voq && p.Load >= from && p.Error == "" {
			sum += p.Accepted
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// AFCExchange is one run of E5's all-to-all exchange.
type AFCExchange struct {
	K int `json:"k"`
	afcSetup
	// ExecUs is the exchange's execution time in emulated µs: from the
	// flows' start to the last packet received anywhere.
	ExecUs float64 `json:"exec_us"`
	// Received and Expected count packets: the exchange ends when every
	// destination has them all (or the run gave up waiting).
	Received uint64 `json:"received"`
	Expected uint64 `json:"expected"`
	Error    string `json:"error,omitempty"`
}

// AFCMechanism is E6 under one routing: the fabric sampled before, during
// and after a hot spot.
type AFCMechanism struct {
	Routing AFCRouting      `json:"routing"`
	Queuing AFCQueuing      `json:"queuing"`
	Samples []AFCMechSample `json:"samples"`
	// HotSQS and HotAFC are the switch input queues ("switch/port/VLn")
	// that received packets for the hot spot during it, on an SQS VL and
	// on the AFC.
	HotSQS []string `json:"hot_sqs"`
	HotAFC []string `json:"hot_afc"`
	// AdaptedHot counts the packets the switches adapted during the hot
	// spot, AdaptedTail those in the last Tail of the run after it.
	AdaptedHot  uint64  `json:"adapted_hot"`
	AdaptedTail uint64  `json:"adapted_tail"`
	TailMs      float64 `json:"tail_ms"` // emulated
	// EndOccupancy is the fullest switch input VL at the end, against
	// the adaptive threshold.
	EndOccupancy float64 `json:"end_occupancy"`
	EndFullest   string  `json:"end_fullest"` // "switch/port/VLn
	Threshold    float64 `json:"threshold"`
	Error        string  `json:"error,omitempty"`
}

// AFCMechSample is one interval of E6.
type AFCMechSample struct {
	TMs   float64 `json:"t_ms"` // emulated, from the start
	Phase string  `json:"phase"`
	// Adapted counts the packets adapted in the interval; Occupancy is
	// the fullest switch input buffer per VL ("VL0", …) at its end;
	// HotSQS and HotAFC the queues that received hot-spot packets in it.
	Adapted   uint64             `json:"adapted"`
	Occupancy map[string]float64 `json:"occupancy"`
	HotSQS    int                `json:"hot_sqs"`
	HotAFC    int                `json:"hot_afc"`
}
