package bench

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"ibfab/hca"
	"ibfab/nodeproc"
	"ibfab/port"
)

// Outage is one probed pair's dark spell after a fault (a gap of more than
// five probe intervals between two of its probes), and where its packets
// went: the evidence found in the fabric over the spell, grouped, and a
// summary of it in Cause. Times are ms from the fault.
type Outage struct {
	Pair    string  `json:"pair"` // "src→dst"
	SLID    uint16  `json:"slid"`
	DLID    uint16  `json:"dlid"`
	StartMs float64 `json:"start_ms"` // the last probe before the gap
	EndMs   float64 `json:"end_ms"`   // the first after it
	DarkMs  float64 `json:"dark_ms"`
	// Causes are the evidence, by first time: each a kind (dropped,
	// not_sent, cpu, held, unknown), where and why, how many, when.
	Causes []OutageCause `json:"causes"`
	// Cause is the summary: "dropped at sw5[3]: unroutable ×12 until
	// 23 ms, then …", "unknown" when nothing was found.
	Cause string `json:"cause"`
	// UnexplainedMs is the part of the spell no evidence covers (each
	// piece of evidence covers its time ± a probe interval, a stall its
	// length): a tail dark without a drop is the sign of a cause the
	// fabric does not record (a route to nowhere that drops nothing, a
	// receiver that did not run).
	UnexplainedMs float64 `json:"unexplained_ms"`
	// Source is what the sender's generator did over the whole run (its
	// counters are cumulative, not per spell).
	Source *SourceCounts `json:"source,omitempty"`
}

// OutageCause is one group of evidence for an outage.
type OutageCause struct {
	// Kind: "dropped" (a node dropped the pair's packets: Node, Port,
	// Cause, Dir), "not_sent" (the sender's port refused them), "cpu"
	// (the sender's generator did not run: a stall), "held" (a port of
	// the fabric held data packets without credits while the spell was
	// open, sampled by the bench; not resolved to the pair's path),
	// "delayed" (the packet that ended the spell was on its way for
	// much of it: the pair's packets were late, held in a queue or a
	// socket of a process that did not run, not lost), "unknown" (a part
	// of the spell without evidence).
	Kind  string `json:"kind"`
	Node  string `json:"node,omitempty"`
	Port  int    `json:"port,omitempty"`
	Out   int    `json:"out,omitempty"` // a switch's output port it was routed to, when the drop names one
	Cause string `json:"cause,omitempty"`
	Dir   string `json:"dir,omitempty"` // rx or tx, for drops
	VL    *int   `json:"vl,omitempty"`
	Count int    `json:"count"`
	// StalledMs is, for kind cpu, how long the stalls lasted in all
	// (within the spell).
	StalledMs float64 `json:"stalled_ms,omitempty"`
	FirstMs   float64 `json:"first_ms"`
	LastMs    float64 `json:"last_ms"`
}

// SourceCounts are a sender's generator counters over a run: what it sent,
// what its port refused (failed), what waited for room (backlogged), what
// a stall skipped, and its stalls.
type SourceCounts struct {
	Sent       uint64 `json:"sent"`
	Failed     uint64 `json:"failed"`
	Backlogged uint64 `json:"backlogged"`
	Skipped    uint64 `json:"skipped"`
	Stalls     int    `json:"stalls"`
}

// TimelineEvent is one line of a run's timeline: the fault, the SM's
// events (ibsm's passes and their phases, OpenSM's SUBNET UP), and each
// outage with its cause. Ms from the fault.
type TimelineEvent struct {
	Ms   float64 `json:"ms"`
	What string  `json:"what"`
}

// outageSpan is a pair's dark spell as the probe saw it, Unix ns.
type outageSpan struct {
	pair       pair
	slid, dlid uint16
	start, end int64
	// endLatency is how long the packet that ended the spell was on its
	// way (the receiver's record).
	endLatency int64
}

// heldSample is a port seen holding data packets it had no credit for.
type heldSample struct {
	at        int64
	node      string
	port, vl  int
	queued    int
	available int
}

// evidence is what the bench gathered over a run for the attribution.
type evidence struct {
	t0       int64         // the fault, Unix ns
	interval time.Duration // the probes'
	// drops are every node's drop records since the fault.
	drops map[string][]nodeproc.DropRecord
	// stalls are each sender's generator stalls, source its counters over
	// the run; both by node name.
	stalls map[string][]hca.Stall
	source map[string]SourceCounts
	held   []heldSample
}

// attribute explains each outage from the evidence: a pure function.
func attribute(spans []outageSpan, ev evidence) []Outage {
	out := make([]Outage, 0, len(spans))
	for _, s := range spans {
		out = append(out, attributeOne(s, ev))
	}
	slices.SortStableFunc(out, func(a, b Outage) int {
		return cmp.Or(cmp.Compare(a.StartMs, b.StartMs), strings.Compare(a.Pair, b.Pair))
	})
	return out
}

// notSentCauses are drops at the sender's own port that mean the packet
// was never sent: the port refused it.
var notSentCauses = map[port.DropCause]bool{port.DropNotActive: true, port.DropVLMapping: true}

// maxRefuseWait: a refused packet is recorded once per try, and the
// generator tries again only after a hold of up to this: each record
// covers the wait before it.
const maxRefuseWait = int64(100 * time.Millisecond)

// causeKey groups an outage's evidence.
type causeKey struct {
	kind, node, cause, dir string
	port, out              int
}

// spellEvidence is the evidence gathered for one spell: the causes by
// group, and the time each piece covers.
type spellEvidence struct {
	s      outageSpan
	ev     evidence
	iv     int64
	groups map[causeKey]*OutageCause
	cover  [][2]int64
}

func (e *spellEvidence) msOf(ns int64) float64 { return ms(time.Duration(ns - e.ev.t0)) }

// add counts one piece of evidence of group k at time at.
func (e *spellEvidence) add(k causeKey, at int64, vl *int) *OutageCause {
	g := e.groups[k]
	if g == nil {
		g = &OutageCause{Kind: k.kind, Node: k.node, Port: k.port, Out: k.out, Cause: k.cause, Dir: k.dir, VL: vl, FirstMs: e.msOf(at)}
		e.groups[k] = g
	}
	g.Count++
	g.FirstMs, g.LastMs = min(g.FirstMs, e.msOf(at)), max(g.LastMs, e.msOf(at))
	return g
}

// drops adds the drop records of the spell: the sender's port refusing
// whatever it is given (to any destination, the pair's packets too), or
// the pair's own packets dropped anywhere.
func (e *spellEvidence) drops() {
	s := e.s
	for node, recs := range e.ev.drops {
		for _, r := range recs {
			if r.AtNs < s.start || r.AtNs > s.end {
				continue
			}
			switch {
			case node == s.pair.src && r.SLID == s.slid && r.Dir == nodeproc.DropTx && notSentCauses[r.Cause]:
				e.add(causeKey{kind: "not_sent", node: node, port: int(r.Port), cause: r.Cause.String(), dir: r.Dir.String()}, r.AtNs, nil)
				e.cover = append(e.cover, [2]int64{r.AtNs - maxRefuseWait, r.AtNs + e.iv})
			case r.SLID == s.slid && r.DLID == s.dlid:
				e.add(causeKey{kind: "dropped", node: node, port: int(r.Port), out: int(r.Out), cause: r.Cause.String(), dir: r.Dir.String()}, r.AtNs, nil)
				e.cover = append(e.cover, [2]int64{r.AtNs - e.iv, r.AtNs + e.iv})
			}
		}
	}
}

// stalls adds the sender's generator stalls within the spell.
func (e *spellEvidence) stalls() {
	s := e.s
	for _, st := range e.ev.stalls[s.pair.src] {
		from := st.EndNs - st.LateNs
		if st.EndNs < s.start || from > s.end {
			continue
		}
		g := e.add(causeKey{kind: "cpu", node: s.pair.src, cause: "generator stalled"}, max(from, s.start), nil)
		g.LastMs = max(g.LastMs, e.msOf(min(st.EndNs, s.end)))
		g.StalledMs += ms(time.Duration(min(st.EndNs, s.end) - max(from, s.start)))
		e.cover = append(e.cover, [2]int64{from, st.EndNs})
	}
}

// delayed adds the spell's tail when the packet that ended it was on its
// way for more than half the outage threshold: that packet's time in
// transit.
func (e *spellEvidence) delayed() {
	s := e.s
	if s.endLatency <= outageIntervals*e.iv/2 {
		return
	}
	from := s.end - s.endLatency
	g := e.add(causeKey{kind: "delayed", node: s.pair.dst, cause: "in transit"}, max(from, s.start), nil)
	g.LastMs = e.msOf(s.end)
	e.cover = append(e.cover, [2]int64{from, s.end})
}

// held adds the ports seen holding packets without credit, only where
// the other evidence left the spell open: they are the fabric's, not
// resolved to the pair.
func (e *spellEvidence) held() {
	s := e.s
	explained := coverage(e.cover, s.start+e.iv, s.end-e.iv)
	for _, h := range e.ev.held {
		if h.at < s.start || h.at > s.end || covered(explained, h.at) {
			continue
		}
		vl := h.vl
		e.add(causeKey{kind: "held", node: h.node, port: h.port, cause: "waiting for credits", dir: "tx"}, h.at, &vl)
		e.cover = append(e.cover, [2]int64{h.at - heldSampleEvery, h.at + e.iv})
	}
}

// gaps returns the parts of the spell no evidence covers; the spell's
// ends are a probe interval from evidence by nature.
func (e *spellEvidence) gaps() [][2]int64 {
	s := e.s
	var gaps [][2]int64
	at := s.start + e.iv
	for _, c := range coverage(e.cover, s.start+e.iv, s.end-e.iv) {
		if c[0] > at {
			gaps = append(gaps, [2]int64{at, c[0]})
		}
		at = max(at, c[1])
	}
	if end := s.end - e.iv; end > at {
		gaps = append(gaps, [2]int64{at, end})
	}
	return gaps
}

func attributeOne(s outageSpan, ev evidence) Outage {
	e := &spellEvidence{s: s, ev: ev, iv: int64(ev.interval), groups: map[causeKey]*OutageCause{}}
	o := Outage{Pair: s.pair.String(), SLID: s.slid, DLID: s.dlid, StartMs: e.msOf(s.start), EndMs: e.msOf(s.end),
		DarkMs: ms(time.Duration(s.end - s.start))}
	if c, ok := ev.source[s.pair.src]; ok {
		o.Source = &c
	}
	e.drops()
	e.stalls()
	e.delayed()
	e.held()
	gaps := e.gaps()
	var unexplained int64
	for _, g := range gaps {
		unexplained += g[1] - g[0]
	}
	o.UnexplainedMs = ms(time.Duration(unexplained))
	for _, g := range e.groups {
		o.Causes = append(o.Causes, *g)
	}
	if len(o.Causes) == 0 {
		o.Causes = []OutageCause{{Kind: "unknown", Count: 1, FirstMs: o.StartMs, LastMs: o.EndMs}}
		o.Cause = "unknown"
		return o
	}
	// Only a part longer than half the outage threshold left dark is
	// listed as unknown.
	for _, g := range gaps {
		if g[1]-g[0] >= outageIntervals*e.iv/2 {
			o.Causes = append(o.Causes, OutageCause{Kind: "unknown", Count: 1, FirstMs: e.msOf(g[0]), LastMs: e.msOf(g[1])})
		}
	}
	slices.SortFunc(o.Causes, func(a, b OutageCause) int {
		return cmp.Or(cmp.Compare(a.FirstMs, b.FirstMs), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Node, b.Node),
			cmp.Compare(a.Port, b.Port), strings.Compare(a.Cause, b.Cause))
	})
	o.Cause = summarize(o.Causes)
	return o
}

// heldSampleEvery is how far back a held sample covers a spell: the
// bench samples about this often while a spell is open.
const heldSampleEvery = int64(100 * time.Millisecond)

// coverage merges the intervals in cs, clipped to [lo, hi].
func coverage(cs [][2]int64, lo, hi int64) [][2]int64 {
	var in [][2]int64
	for _, c := range cs {
		a, b := max(c[0], lo), min(c[1], hi)
		if a < b {
			in = append(in, [2]int64{a, b})
		}
	}
	slices.SortFunc(in, func(x, y [2]int64) int { return cmp.Compare(x[0], y[0]) })
	var out [][2]int64
	for _, c := range in {
		if n := len(out); n > 0 && c[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], c[1])
			continue
		}
		out = append(out, c)
	}
	return out
}

func covered(cs [][2]int64, at int64) bool {
	for _, c := range cs {
		if at >= c[0] && at <= c[1] {
			return true
		}
	}
	return false
}

// summarize writes the causes as one line, in time order.
func summarize(cs []OutageCause) string {
	if len(cs) == 0 {
		return "unknown"
	}
	var parts []string
	for _, c := range cs {
		where := c.Node
		switch {
		case c.Out != 0:
			where = fmt.Sprintf("%s[%d→%d]", c.Node, c.Port, c.Out) // in → the output it was routed to
		case c.Port != 0:
			where = fmt.Sprintf("%s[%d]", c.Node, c.Port)
		}
		var s string
		switch c.Kind {
		case "dropped":
			s = fmt.Sprintf("dropped at %s: %s ×%d", where, c.Cause, c.Count)
		case "not_sent":
			s = fmt.Sprintf("not sent: port refused at %s (%s) ×%d", where, c.Cause, c.Count)
		case "cpu":
			s = fmt.Sprintf("emulator short of CPU: %s's generator stalled ×%d, %.0f ms in all,", c.Node, c.Count, c.StalledMs)
		case "held":
			s = fmt.Sprintf("held: waiting for credits at %s", where)
			if c.VL != nil {
				s += fmt.Sprintf(" VL%d", *c.VL)
			}
		case "delayed":
			s = fmt.Sprintf("delayed: the packet that ended it reached %s after %.0f ms on its way,", c.Node, c.LastMs-c.FirstMs)
		case "unknown":
			s = "unknown"
		}
		if c.FirstMs == c.LastMs {
			s += fmt.Sprintf(" at %.0f ms", c.FirstMs)
		} else {
			s += fmt.Sprintf(" %.0f-%.0f ms", c.FirstMs, c.LastMs)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", then ")
}

// outageTimeline is the outages as timeline lines.
func outageTimeline(os []Outage) []TimelineEvent {
	var out []TimelineEvent
	for _, o := range os {
		out = append(out, TimelineEvent{Ms: o.StartMs, What: fmt.Sprintf("%s dark until %.0f ms: %s", o.Pair, o.EndMs, o.Cause)})
	}
	return out
}

// sortTimeline orders a timeline by time, stably.
func sortTimeline(t []TimelineEvent) {
	slices.SortStableFunc(t, func(a, b TimelineEvent) int { return cmp.Compare(a.Ms, b.Ms) })
}
