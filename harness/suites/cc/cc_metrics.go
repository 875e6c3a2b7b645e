package cc

import (
	"math"
	"slices"
	"time"

	"ibfab/harness/suites/runner"
	"ibfab/hca"
	"ibfab/nodeproc"
	"ibfab/sm"
	"ibfab/topologies"
)

// CCReport is the congestion-control experiments' report.
type CCReport struct {
	Started     time.Time            `json:"started"`
	Quick       bool                 `json:"quick"`
	LinkRate    topologies.Rate      `json:"link_rate"` // every link's
	Config      CCConfig             `json:"cc_config"`
	Windows     ccWindows            `json:"windows_emulated"`
	Experiments []CCExperimentReport `json:"experiments"`
	Comparisons []CCComparison       `json:"comparisons"`
	Checks      []runner.Check       `json:"checks"`
	Passed      bool                 `json:"passed"`
	ElapsedS    float64              `json:"elapsed_s"`
	Files       []string             `json:"files,omitempty"`
}

// CCExperimentReport is one experiment: its load points or its hot-spot
// runs.
type CCExperimentReport struct {
	ID         string            `json:"id"`
	Title      string            `json:"title"`
	Fabric     CCFabric          `json:"fabric"`
	FabricName string            `json:"fabric_name"`
	TimeScale  float64           `json:"time_scale"`
	Patterns   []CCPattern       `json:"patterns,omitempty"`
	Points     []CCPoint         `json:"points,omitempty"`
	Hot        []*CCHotRun       `json:"hot_spot,omitempty"`
	SMArgs     []string          `json:"sm_args"`
	SM         []runner.SMResult `json:"sm,omitempty"`
	// CCLogs are the CongestionLog entries ibsm read on the fabric and
	// printed as cc_log events (the first maxCCLogs).
	CCLogs []sm.CCLogEvent `json:"cc_log,omitempty"`
	Events []string        `json:"events,omitempty"`
	Error  string          `json:"error,omitempty"`
	Burst  *CCBurstNames   `json:"burst,omitempty"`
}

// CCPattern is a permutation on the experiment's fabric.
type CCPattern struct {
	Name    string `json:"name"`
	Sources int    `json:"sources"`
	Fixed   int    `json:"fixed_points"` // nodes mapped to themselves: they send nothing
}

// CCBurstNames is the hot spot by host names.
type CCBurstNames struct {
	Pairs []string `json:"pairs"` // "src→dst"
	Load  float64  `json:"load"`  // of each source's link rate
}

// CCPoint is one load point of a sweep: per source averages in emulated
// time.
type CCPoint struct {
	Pattern     string   `json:"pattern"`
	Scheme      CCScheme `json:"scheme"`
	OfferedMbps float64  `json:"offered_mbps"` // each source's flow rate
	// InjectedMbps is what the sources put on the wire, AcceptedMbps what
	// their destinations received, per source.
	InjectedMbps  float64 `json:"injected_mbps"`
	AcceptedMbps  float64 `json:"accepted_mbps"`
	MeanLatencyUs float64 `json:"mean_latency_us"` // from generation, source queue included
	P99LatencyUs  float64 `json:"p99_latency_us"`
	Packets       uint64  `json:"packets"`
	SourceDropped uint64  `json:"source_dropped"` // arrivals a full source backlog refused
	Backlog       int     `json:"backlog"`        // packets waiting at the sources at the end
	Sources       int     `json:"sources"`
	// Inter-switch links' load (fraction of the rate): the highest and
	// the mean.
	PeakLinkLoad float64 `json:"peak_link_load"`
	MeanLinkLoad float64 `json:"mean_link_load"`
	FECNMarks    uint64  `json:"fecn_marks"`
	// The CCAs at the end of the window: CCTI and active paths per
	// source, mean and highest.
	MeanCCTI   float64 `json:"mean_ccti"`
	MaxCCTI    int     `json:"max_ccti"`
	MeanActive float64 `json:"mean_active"`
	MaxActive  int     `json:"max_active"`
	BECNs      uint64  `json:"becns"` // received by the sources (since the scheme was set)
	WindowMs   float64 `json:"window_ms"`
	Error      string  `json:"error,omitempty"`
}

// CCHotRun is one scheme's run of a hot spot.
type CCHotRun struct {
	Scheme  CCScheme      `json:"scheme"`
	Fabric  string        `json:"fabric"`
	Samples []CCHotSample `json:"samples"`
	// Over the burst's samples: each inter-switch port's mean load, the
	// highest of those (PeakLoad, at HotLink), the sources' injection.
	BurstLoads    map[string]float64 `json:"burst_loads"`
	HotLink       string             `json:"hot_link"`
	PeakLoad      float64            `json:"peak_load"`
	OfferedMbps   float64            `json:"offered_mbps"`  // each burst source's rate
	InjectedMbps  float64            `json:"injected_mbps"` // per source, burst mean
	FECNBefore    uint64             `json:"fecn_before"`   // marks before the burst
	FECNBurst     uint64             `json:"fecn_burst"`    // and during it
	BECNs         uint64             `json:"becns"`
	MaxCCTI       int                `json:"max_ccti"`
	FinalCCTI     int                `json:"final_ccti"` // highest at the last sample
	MaxActive     int                `json:"max_active"`
	FinalActive   int                `json:"final_active"` // highest at the last sample
	Opens         uint64             `json:"opens"`
	Closes        uint64             `json:"closes"`
	MaxBacklog    int                `json:"max_backlog"` // packets at the burst sources, highest sample
	AcceptedMbps  float64            `json:"accepted_mbps"`
	MeanLatencyUs float64            `json:"mean_latency_us"`
	P99LatencyUs  float64            `json:"p99_latency_us"`
	Error         string             `json:"error,omitempty"`
}

// CCHotSample is the fabric between two reads during a hot spot.
type CCHotSample struct {
	T     float64 `json:"t_ms"` // end of the interval, emulated ms since the run began
	Phase string  `json:"phase"`
	// Loads of the inter-switch ports ("sw1-0[2]": sw1-0's port 2 as an
	// output), fraction of the link rate.
	Loads map[string]float64 `json:"loads"`
	// HotMarks are the FECN marks of each port over the interval (ports
	// that marked).
	Marks  map[string]uint64 `json:"marks,omitempty"`
	FECN   uint64            `json:"fecn"`
	CCTI   map[string]int    `json:"ccti"`   // per burst source, highest over its destinations
	IPDNs  map[string]int64  `json:"ipd_ns"` // per burst source
	Active map[string]int    `json:"active"` // per burst pair "src→dst": paths in use
	BECNs  uint64            `json:"becns"`
	Opens  uint64            `json:"opens"`
	Closes uint64            `json:"closes"`
	// InjectedMbps is the burst sources' mean injection over the
	// interval; Backlog the packets waiting at them.
	InjectedMbps float64 `json:"injected_mbps"`
	Backlog      int     `json:"backlog"`
}

// ccPortSnap is one switch port's counters at a moment.
type ccPortSnap struct {
	At        time.Time
	XmitWords uint64 // PortXmitData: 4-byte words
	Rate      uint64 // data rate, bits/s
	Marked    uint64
}

// ccSnap is what the runner read of the fabric at one moment (each node
// at its own moment).
type ccSnap struct {
	at    map[string]time.Time // per HCA: when its flows were read
	flows map[string]nodeproc.FlowsReport
	ports map[string]ccPortSnap // per switch port "sw[p]"
	cca   map[string]nodeproc.CCAStatus
}

func newCCSnap() ccSnap {
	return ccSnap{at: map[string]time.Time{}, flows: map[string]nodeproc.FlowsReport{},
		ports: map[string]ccPortSnap{}, cca: map[string]nodeproc.CCAStatus{}}
}

// linkLoads is each port's load between two snapshots, as a fraction of
// its rate, for the ports keep selects.
func linkLoads(a, b map[string]ccPortSnap, scale float64, keep func(string) bool) map[string]float64 {
	out := map[string]float64{}
	for k, pb := range b {
		pa, ok := a[k]
		if !ok || !keep(k) || pb.Rate == 0 || pb.XmitWords < pa.XmitWords {
			continue
		}
		emu := runner.EmuSeconds(pb.At.Sub(pa.At), scale)
		if emu <= 0 {
			continue
		}
		out[k] = float64(pb.XmitWords-pa.XmitWords) * 32 / emu / float64(pb.Rate)
	}
	return out
}

// marksBetween is each port's FECN marks between two snapshots (ports
// that marked) and their sum.
func marksBetween(a, b map[string]ccPortSnap) (map[string]uint64, uint64) {
	out := map[string]uint64{}
	var sum uint64
	for k, pb := range b {
		if pa, ok := a[k]; ok && pb.Marked > pa.Marked {
			out[k] = pb.Marked - pa.Marked
			sum += out[k]
		}
	}
	return out, sum
}

// peakMean is the highest and the mean of loads.
func peakMean(loads map[string]float64) (peak, mean float64) {
	for _, v := range loads {
		peak = max(peak, v)
		mean += v
	}
	if len(loads) > 0 {
		mean /= float64(len(loads))
	}
	return peak, mean
}

// mergeBuckets adds histograms bucket by bucket.
func mergeBuckets(hs ...[]hca.Bucket) []hca.Bucket {
	sum := map[int64]uint64{}
	for _, h := range hs {
		for _, b := range h {
			sum[b.LeNs] += b.Count
		}
	}
	out := make([]hca.Bucket, 0, len(sum))
	for le, c := range sum {
		out = append(out, hca.Bucket{LeNs: le, Count: c})
	}
	slices.SortFunc(out, func(x, y hca.Bucket) int { return int(x.LeNs - y.LeNs) })
	return out
}

// ccRx is what receivers got of one flow ID over a window.
type ccRx struct {
	bits    float64 // per emulated second, summed over receivers
	packets uint64
	meanNs  float64
	buckets []hca.Bucket
}

// received sums, over receivers, what they got of flow id between the
// reset at a and the read at b.
func received(a, b ccSnap, receivers []string, id uint32, scale float64) ccRx {
	var rx ccRx
	var hs [][]hca.Bucket
	var latSum float64
	for _, n := range receivers {
		emu := runner.EmuSeconds(b.at[n].Sub(a.at[n]), scale)
		if emu <= 0 {
			continue
		}
		for _, f := range b.flows[n].Received {
			if f.ID != id {
				continue
			}
			rx.bits += float64(f.WireBytes) * 8 / emu
			rx.packets += f.Latency.Count
			latSum += float64(f.Latency.MeanNs) * float64(f.Latency.Count)
			hs = append(hs, f.Latency.Buckets)
		}
	}
	if rx.packets > 0 {
		rx.meanNs = latSum / float64(rx.packets)
	}
	rx.buckets = mergeBuckets(hs...)
	return rx
}

// ccTx is what the sources did with flow id since their counters were
// reset: mean injection per source, drops and backlog.
type ccTx struct {
	injectedMbps float64
	dropped      uint64
	backlog      int
}

func sent(b ccSnap, sources []string, id uint32) ccTx {
	var tx ccTx
	n := 0
	for _, s := range sources {
		for _, f := range b.flows[s].Sent {
			if f.ID != id {
				continue
			}
			tx.dropped += f.Dropped
			tx.backlog += f.Backlog
			if f.Elapsed > 0 {
				tx.injectedMbps += float64(f.SentBytes) * 8 / f.Elapsed.Seconds() / 1e6
				n++
			}
		}
	}
	if n > 0 {
		tx.injectedMbps /= float64(n)
	}
	return tx
}

// ccaSummary is the sources' CCAs: each source's highest CCTI and most
// active paths over its entries, their mean and highest, and the BECNs
// the sources received.
type ccaSummary struct {
	meanCCTI, meanActive float64
	maxCCTI, maxActive   int
	becns                uint64
}

func summarizeCCA(states map[string]nodeproc.CCAStatus, sources []string) ccaSummary {
	var s ccaSummary
	n := 0
	for _, src := range sources {
		st, ok := states[src]
		if !ok {
			continue
		}
		n++
		ccti, active := 0, 1
		for _, e := range st.Dests {
			ccti, active = max(ccti, int(e.CCTI)), max(active, len(e.Active))
		}
		s.meanCCTI += float64(ccti)
		s.meanActive += float64(active)
		s.maxCCTI, s.maxActive = max(s.maxCCTI, ccti), max(s.maxActive, active)
		s.becns += st.BECNReceived
	}
	if n > 0 {
		s.meanCCTI /= float64(n)
		s.meanActive /= float64(n)
	}
	return s
}

// ccWindow is one load point's measurement: the snapshot after warm-up
// (flows reset) and after the window.
type ccWindow struct {
	pattern   string
	scheme    CCScheme
	offered   float64 // Mb/s per source
	id        uint32
	sources   []string
	receivers []string
	scale     float64
	inter     func(port string) bool
	a, b      ccSnap
}

// point computes the load point from its window.
func (w ccWindow) point() CCPoint {
	p := CCPoint{Pattern: w.pattern, Scheme: w.scheme, OfferedMbps: w.offered, Sources: len(w.sources)}
	rx := received(w.a, w.b, w.receivers, w.id, w.scale)
	if len(w.sources) > 0 {
		p.AcceptedMbps = rx.bits / 1e6 / float64(len(w.sources))
	}
	p.Packets = rx.packets
	p.MeanLatencyUs = rx.meanNs / 1e3
	p.P99LatencyUs = runner.Micros(runner.P99Between(nil, rx.buckets))
	tx := sent(w.b, w.sources, w.id)
	p.InjectedMbps, p.SourceDropped, p.Backlog = tx.injectedMbps, tx.dropped, tx.backlog
	p.PeakLinkLoad, p.MeanLinkLoad = peakMean(linkLoads(w.a.ports, w.b.ports, w.scale, w.inter))
	_, p.FECNMarks = marksBetween(w.a.ports, w.b.ports)
	s := summarizeCCA(w.b.cca, w.sources)
	p.MeanCCTI, p.MaxCCTI, p.MeanActive, p.MaxActive, p.BECNs = s.meanCCTI, s.maxCCTI, s.meanActive, s.maxActive, s.becns
	var span time.Duration
	for _, n := range w.receivers {
		span = max(span, w.b.at[n].Sub(w.a.at[n]))
	}
	p.WindowMs = runner.EmuSeconds(span, w.scale) * 1e3
	return p
}

// pairName is "src→dst".
func pairName(src, dst string) string { return src + "→" + dst }

// burstNames is the burst's pairs by host names on a grid of dims.
func burstNames(b topologies.Burst, dims []int) (sources, dests []string) {
	for _, p := range b.Pairs {
		sources = append(sources, topologies.GridHost(dims, p.Src))
		dests = append(dests, topologies.GridHost(dims, p.Dst))
	}
	return sources, dests
}

// hotSample is the interval between two hot-spot snapshots: link loads
// and marks at the switches, the burst sources' CCAs and injection.
func hotSample(a, b ccSnap, t float64, phase string, sources, dests []string, lids map[string]int, id uint32, scale float64, inter func(string) bool) CCHotSample {
	s := CCHotSample{T: t, Phase: phase, Loads: linkLoads(a.ports, b.ports, scale, inter),
		CCTI: map[string]int{}, IPDNs: map[string]int64{}, Active: map[string]int{}}
	s.Marks, s.FECN = marksBetween(a.ports, b.ports)
	var ca, cb hca.CCACounters
	for i, src := range sources {
		st := b.cca[src]
		for _, e := range st.Dests {
			s.CCTI[src] = max(s.CCTI[src], int(e.CCTI))
			s.IPDNs[src] = max(s.IPDNs[src], e.IPDNs)
			if int(e.DLID) == lids[dests[i]] {
				s.Active[pairName(src, dests[i])] = max(1, len(e.Active)) // IBA_CC lists none: the base path
			}
		}
		if _, ok := s.Active[pairName(src, dests[i])]; !ok {
			s.Active[pairName(src, dests[i])] = 1 // no entry: the base path alone
		}
		ca, cb = addCounters(ca, a.cca[src].CCACounters), addCounters(cb, st.CCACounters)
	}
	s.BECNs, s.Opens, s.Closes = sub(cb.BECNReceived, ca.BECNReceived), sub(cb.Opens, ca.Opens), sub(cb.Closes, ca.Closes)
	n := 0
	for _, src := range sources {
		fa, oka := flowSent(a.flows[src], id)
		fb, okb := flowSent(b.flows[src], id)
		if okb {
			s.Backlog += fb.Backlog
		}
		if !oka || !okb || fb.Elapsed <= fa.Elapsed || fb.SentBytes < fa.SentBytes {
			continue
		}
		s.InjectedMbps += float64(fb.SentBytes-fa.SentBytes) * 8 / (fb.Elapsed - fa.Elapsed).Seconds() / 1e6
		n++
	}
	if n > 0 {
		s.InjectedMbps /= float64(n)
	}
	return s
}

// addCounters adds the counters a hot-spot sample reads.
func addCounters(x, y hca.CCACounters) hca.CCACounters {
	return hca.CCACounters{BECNReceived: x.BECNReceived + y.BECNReceived, Opens: x.Opens + y.Opens, Closes: x.Closes + y.Closes}
}

// sub is b - a, 0 when the counter went back (reset).
func sub(b, a uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

func flowSent(r nodeproc.FlowsReport, id uint32) (hca.FlowStats, bool) {
	for _, f := range r.Sent {
		if f.ID == id {
			return f, true
		}
	}
	return hca.FlowStats{}, false
}

// summarizeHot fills a hot-spot run's aggregates from its samples: each
// inter-switch port's mean load over the burst, the highest (the hot
// link), the marks before and during the burst, the CCAs' highest and
// last states, the sources' mean injection during the burst.
func summarizeHot(h *CCHotRun) {
	h.BurstLoads = map[string]float64{}
	n := 0
	var inj float64
	injN := 0
	for _, s := range h.Samples {
		switch s.Phase {
		case runner.PhaseBefore:
			h.FECNBefore += s.FECN
		case runner.PhaseBurst:
			h.FECNBurst += s.FECN
			n++
			for k, v := range s.Loads {
				h.BurstLoads[k] += v
			}
			if s.InjectedMbps > 0 {
				inj += s.InjectedMbps
				injN++
			}
		}
		h.BECNs += s.BECNs
		h.Opens += s.Opens
		h.Closes += s.Closes
		h.MaxBacklog = max(h.MaxBacklog, s.Backlog)
		for _, c := range s.CCTI {
			h.MaxCCTI = max(h.MaxCCTI, c)
		}
		for _, a := range s.Active {
			h.MaxActive = max(h.MaxActive, a)
		}
	}
	for k := range h.BurstLoads {
		h.BurstLoads[k] /= float64(n)
	}
	h.PeakLoad, h.HotLink = 0, ""
	for _, k := range runner.Keys(h.BurstLoads) {
		if v := h.BurstLoads[k]; v > h.PeakLoad {
			h.PeakLoad, h.HotLink = v, k
		}
	}
	if injN > 0 {
		h.InjectedMbps = inj / float64(injN)
	}
	if len(h.Samples) > 0 {
		last := h.Samples[len(h.Samples)-1]
		h.FinalCCTI, h.FinalActive = 0, 0
		for _, c := range last.CCTI {
			h.FinalCCTI = max(h.FinalCCTI, c)
		}
		for _, a := range last.Active {
			h.FinalActive = max(h.FinalActive, a)
		}
	}
}

// isFinite guards values computed from empty data.
func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
