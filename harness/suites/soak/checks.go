package soak

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"ibfab/harness"
	"ibfab/nodeproc"
	"ibfab/port"
	"ibfab/topologies"
)

// lossCauses are the causes of a link that was down while data was
// queued for it, or of the routes around it before the SM has moved
// them: the only drops a disturbance that takes a link down may cause.
var lossCauses = map[port.DropCause]bool{
	port.DropLinkDown: true, port.DropNotActive: true, port.DropInputDown: true,
	port.DropUnroutable: true, port.DropLoopback: true,
}

// atLink are the causes that name the port of the link itself (its queue
// lost, or the port not yet Active again): such a drop must be at a port
// of a link the disturbance took down.
var atLink = map[port.DropCause]bool{port.DropLinkDown: true, port.DropNotActive: true}

// DropRec is one drop record of a node, with the node.
type DropRec struct {
	Node string `json:"node"`
	nodeproc.DropRecord
}

// port is the port of the link a record blames: the output a switch
// routed the packet to when it names one (the record's Port is then the
// input), else the port that dropped it.
func (r DropRec) port() string {
	if r.Out != 0 {
		return fmt.Sprintf("%s[%d]", r.Node, r.Out)
	}
	return fmt.Sprintf("%s[%d]", r.Node, r.Port)
}

// downPorts are the ports of the links d takes down, by "node[port]": a
// link's two ends, or every cabled port of a switch and its peer's.
func downPorts(topo *topologies.Topology, d Disturbance) map[string]bool {
	out := map[string]bool{}
	add := func(ref topologies.PortRef) {
		for k := range downPortsOf(topo, ref) {
			out[k] = true
		}
	}
	if d.Link != nil {
		if i, ok := topo.Lookup(d.Link.Node); ok {
			add(topologies.PortRef{Node: i, Port: d.Link.Port})
		}
	}
	if i, ok := topo.Lookup(d.Switch); ok && d.Switch != "" {
		for p := 1; p <= topo.Node(i).NumPorts; p++ {
			ref := topologies.PortRef{Node: i, Port: p}
			if _, cabled := topo.Peer(ref); cabled {
				add(ref)
			}
		}
	}
	return out
}

// linkDowns reads every port's LinkDownedCounter, by "node[port]"; a
// node that does not answer (killed) has none.
func linkDowns(ctx context.Context, fabric string) map[string]uint8 {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out := map[string]uint8{}
	st, err := harness.Status(cctx, fabric)
	if err != nil {
		return out
	}
	for _, n := range st.Nodes {
		if !n.Alive {
			continue
		}
		for _, p := range n.Ports {
			out[fmt.Sprintf("%s[%d]", n.Name, p.Port)] = p.Counters.LinkDownedCounter
		}
	}
	return out
}

// wentDown returns the ports, with their links' far ends, whose
// LinkDownedCounter grew from before to after, less those in known; a
// port read only once (its node restarted or killed) is not one of them.
func wentDown(topo *topologies.Topology, before, after map[string]uint8, known map[string]bool) []string {
	set := map[string]bool{}
	for k, a := range after {
		b, ok := before[k]
		if !ok || a <= b { // kept, or cleared (a PMA Set of PortCounters)
			continue
		}
		var node string
		var num int
		if _, err := fmt.Sscanf(strings.Replace(k, "[", " ", 1), "%s %d]", &node, &num); err != nil {
			continue
		}
		i, ok := topo.Lookup(node)
		if !ok {
			continue
		}
		for name := range downPortsOf(topo, topologies.PortRef{Node: i, Port: num}) {
			if !known[name] {
				set[name] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// downPortsOf is a port and its link's far end, by "node[port]".
func downPortsOf(topo *topologies.Topology, ref topologies.PortRef) map[string]bool {
	out := map[string]bool{fmt.Sprintf("%s[%d]", topo.Node(ref.Node).Name, ref.Port): true}
	if peer, ok := topo.Peer(ref); ok {
		out[fmt.Sprintf("%s[%d]", topo.Node(peer.Node).Name, peer.Port)] = true
	}
	return out
}

// blockedTurn reports whether r is a switch's drop of a packet whose turn
// (input to output port) the SM had mapped to VL15: the cut-node blocks
// ibsm's distribution (cut-deps) sets while it moves routes around a link
// that went down, so that no packet takes a turn the new up*/down* graph
// forbids before the new tables are in. They are the reroute's price,
// by design, and counted apart (BlockedTurnDrops).
func blockedTurn(r DropRec) bool { return r.Cause == port.DropVLMapping && r.Out != 0 }

// badDrops returns, in words, the records that no link taken down
// explains: with takesDown false (a quiet window, or a disturbance that
// downs no link) every record; else one of a cause other than a dead
// link's or a blocked turn's, or of a link's own cause at a port not in
// down.
func badDrops(recs []DropRec, takesDown bool, down map[string]bool) []string {
	var out []string
	for _, r := range recs {
		switch {
		case !takesDown:
		case blockedTurn(r):
			continue
		case !lossCauses[r.Cause]:
		case atLink[r.Cause] && !down[r.port()]:
		default:
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %s (SLID %d DLID %d SL %d VL %d)", r.port(), r.Dir, r.Cause, r.SLID, r.DLID, r.SL, r.VL))
	}
	return out
}

// countDrops counts records by "node[port] cause".
func countDrops(recs []DropRec) map[string]uint64 {
	out := map[string]uint64{}
	for _, r := range recs {
		out[r.port()+" "+r.Cause.String()]++
	}
	return out
}

// MemSample is one reading of a process's proportional set size.
type MemSample struct {
	T      float64 `json:"t"` // seconds since the soak's traffic started
	PssKiB uint64  `json:"pss_kib"`
}

// slope fits a line (least squares) to the samples at or after from
// seconds and returns its slope in KiB per minute, the span of those
// samples in minutes and how many there were. Fewer than two samples, or
// all at one time: slope 0.
func slope(ss []MemSample, from float64) (kibPerMin, spanMin float64, n int) {
	var xs, ys []float64
	for _, s := range ss {
		if s.T >= from {
			xs, ys = append(xs, s.T/60), append(ys, float64(s.PssKiB))
		}
	}
	n = len(xs)
	if n < 2 {
		return 0, 0, n
	}
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/float64(n), my/float64(n)
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	spanMin = slices.Max(xs) - slices.Min(xs)
	if sxx == 0 {
		return 0, spanMin, n
	}
	return sxy / sxx, spanMin, n
}

// The memory check: a process's Pss, fitted after the warm-up, may grow
// at most growthFloorKiB over the window fitted or slopeFloorKiB a
// minute, whichever allows more. A short window tolerates the sawtooth of
// a garbage-collected heap; over an hour the slope must be near zero (64
// KiB a minute is under 4 MiB an hour). minMemSamples is the fewest
// samples a judged series has.
const (
	growthFloorKiB = 2048
	slopeFloorKiB  = 64
	minMemSamples  = 4
)

// slopeBound is the slope allowed over a window of spanMin minutes (0
// for none: such a series is not judged).
func slopeBound(spanMin float64) float64 {
	if spanMin <= 0 {
		return 0
	}
	return max(slopeFloorKiB, growthFloorKiB/spanMin)
}

// MemSeries is one process's memory over the soak.
type MemSeries struct {
	Proc    string      `json:"proc"` // "node/command"
	PID     int         `json:"pid"`
	Samples []MemSample `json:"samples"`
	// The fit after the warm-up: slope, its bound, the samples and span
	// fitted; Judged is false for a series too short to fit (a process
	// restarted late, or one that lived briefly).
	SlopeKiBPerMin float64 `json:"slope_kib_per_min"`
	// WholeKiBPerMin is the slope over every sample, the warm-up's
	// included: what a run too short to judge shows.
	WholeKiBPerMin float64 `json:"whole_kib_per_min"`
	BoundKiBPerMin float64 `json:"bound_kib_per_min"`
	Fitted         int     `json:"fitted"`
	SpanMin        float64 `json:"span_min"`
	Judged         bool    `json:"judged"`
	Flat           bool    `json:"flat"`
}

// lateSlack is how much later than the first sample of the run a
// process's first sample may come and still count as there from the
// start (the sampler reads the processes one after another).
const lateSlack = 5.0 // seconds

// judgeMemory fits every series after warmup seconds and says whether
// its memory is flat. A process that started later than the run's first
// sample (a switch restarted, ibsm started again) has a warm-up of its
// own, warmup seconds from its first sample: a fresh process grows to
// its working size whenever it starts (the 10-minute soak's restarted
// switches grew from 3-4 to 7-8 MiB over their first 3-6 minutes, as
// every switch did at the start, and were judged rising while those
// started with the fabric were flat).
func judgeMemory(series []MemSeries, warmup float64) {
	first := math.Inf(1)
	for _, s := range series {
		if len(s.Samples) > 0 {
			first = min(first, s.Samples[0].T)
		}
	}
	for i := range series {
		s := &series[i]
		from := warmup
		if len(s.Samples) > 0 && s.Samples[0].T > first+lateSlack {
			from = s.Samples[0].T + warmup
		}
		s.SlopeKiBPerMin, s.SpanMin, s.Fitted = slope(s.Samples, from)
		s.WholeKiBPerMin, _, _ = slope(s.Samples, 0)
		s.Judged = s.Fitted >= minMemSamples && s.SpanMin > 0
		s.BoundKiBPerMin = slopeBound(s.SpanMin)
		s.Flat = !s.Judged || s.SlopeKiBPerMin <= s.BoundKiBPerMin
	}
}

// ProcSnap is what runs in a fabric's namespaces at one moment: the
// processes per "node/command" and the file descriptors they hold.
type ProcSnap struct {
	Procs map[string]int `json:"procs"`
	FDs   map[string]int `json:"fds"`
}

// fdSlack is how many descriptors more than at the start a process may
// hold at the end: a socket accepted or a file read at that moment.
const fdSlack = 2

// procLeaks compares the end with the start: a process more (or fewer)
// of a kind, or more descriptors than the start's plus fdSlack.
func procLeaks(before, after ProcSnap) (procs, fds []string) {
	for _, k := range keys(before.Procs, after.Procs) {
		if b, a := before.Procs[k], after.Procs[k]; a != b {
			procs = append(procs, fmt.Sprintf("%s: %d processes, %d at the start", k, a, b))
		}
	}
	for _, k := range keys(before.FDs, after.FDs) {
		if b, a := before.FDs[k], after.FDs[k]; a > b+fdSlack {
			fds = append(fds, fmt.Sprintf("%s: %d descriptors, %d at the start", k, a, b))
		}
	}
	return procs, fds
}

// keys are the keys of a and b, sorted.
func keys(a, b map[string]int) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]int{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
