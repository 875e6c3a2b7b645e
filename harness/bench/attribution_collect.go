package bench

import (
	"fmt"
	"time"

	"ibfab/harness"
	"ibfab/hca"
	"ibfab/nodeproc"
	"ibfab/sm"
	"ibfab/wire"
)

// What the probe gathers for the attribution of its outages (attribution.go):
// the spells themselves (read), every node's drop records over the run
// (the "drops" op, read once at the fault and once at the end), the
// senders' generator counters and stalls (their status, at the fault and
// at the end), and the ports holding packets without credit, from the
// fabric statuses the run takes anyway while a spell is open.

// maxHeldSamples bounds what a run keeps of the held ports.
const maxHeldSamples = 10000

// probeBlocks is a probe's size in credits: a port with less available
// holds one.
var probeBlocks = (wire.UDPacketSize(probePayload, false) + 63) / 64

// armEvidence notes, before the fault, how far each node's drop log has
// got and what each sender's generator has counted.
func (pr *probe) armEvidence() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.written, pr.gen0 = map[string]uint64{}, map[string]hca.GeneratorStats{}
	pr.spans, pr.held = nil, nil
	now := time.Now().UnixNano()
	for _, n := range pr.f.Topo.Nodes() {
		var r nodeproc.DropsReply
		if err := pr.f.call(n.Name, "drops", nodeproc.DropsArgs{SinceNs: now}, &r); err == nil {
			pr.written[n.Name] = r.Written
		}
	}
	for _, src := range pr.senders() {
		if g, ok := pr.generator(src); ok {
			pr.gen0[src] = g
		}
	}
}

// senders returns the probe's sending hosts.
func (pr *probe) senders() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range pr.pairs {
		if !seen[p.src] {
			seen[p.src] = true
			out = append(out, p.src)
		}
	}
	return out
}

// generator reads host's port-1 generator counters.
func (pr *probe) generator(host string) (hca.GeneratorStats, bool) {
	s, err := pr.f.node(host)
	if err != nil || len(s.Ports) == 0 || s.Ports[0].Traffic == nil || s.Ports[0].Traffic.Generator == nil {
		return hca.GeneratorStats{}, false
	}
	return *s.Ports[0].Traffic.Generator, true
}

// sampleHeld notes, while some pair is dark, the ports of st holding data
// packets without the credit for one.
func (pr *probe) sampleHeld(st *harness.FabricStatus) {
	now := time.Now().UnixNano()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for _, n := range st.Nodes {
		for _, p := range n.Ports {
			for _, c := range p.Credits {
				if c.Queued > 0 && c.Available < probeBlocks && len(pr.held) < maxHeldSamples {
					pr.held = append(pr.held, heldSample{at: now, node: n.Name, port: p.Port, vl: c.VL, queued: c.Queued, available: c.Available})
				}
			}
		}
	}
}

// attribution gathers the evidence at the end of a run and attributes
// every outage after the fault at t0. unread names the nodes whose drop
// log could not be read (a killed switch: its records went with it);
// overflowed those whose ring wrapped over the run, losing records.
func (pr *probe) attribution(t0 time.Time) (outs []Outage, dropped int, unread, overflowed []string) {
	ev := evidence{t0: t0.UnixNano(), interval: pr.interval, drops: map[string][]nodeproc.DropRecord{},
		stalls: map[string][]hca.Stall{}, source: map[string]SourceCounts{}}
	pr.mu.Lock()
	written := pr.written
	pr.mu.Unlock()
	for _, n := range pr.f.Topo.Nodes() {
		var r nodeproc.DropsReply
		if err := pr.f.call(n.Name, "drops", nodeproc.DropsArgs{SinceNs: ev.t0}, &r); err != nil {
			unread = append(unread, n.Name)
			continue
		}
		ev.drops[n.Name] = r.Records
		if w0, ok := written[n.Name]; ok && r.Written-w0 > uint64(r.Size) {
			overflowed = append(overflowed, fmt.Sprintf("%s (%d of %d records kept)", n.Name, r.Size, r.Written-w0))
		}
	}
	for _, src := range pr.senders() {
		g, ok := pr.generator(src)
		if !ok {
			continue
		}
		g0 := pr.gen0[src]
		var stalls []hca.Stall
		for _, s := range g.Stalls {
			if s.EndNs >= ev.t0 {
				stalls = append(stalls, s)
			}
		}
		ev.stalls[src] = stalls
		ev.source[src] = SourceCounts{Sent: g.Sent - g0.Sent, Failed: g.Failed - g0.Failed,
			Backlogged: g.Backlogged - g0.Backlogged, Skipped: g.Skipped - g0.Skipped, Stalls: len(stalls)}
	}
	pr.mu.Lock()
	spans, held := append([]outageSpan(nil), pr.spans...), append([]heldSample(nil), pr.held...)
	pr.mu.Unlock()
	ev.held = held
	return attribute(spans, ev), pr.probesDropped(ev.drops), unread, overflowed
}

// probesDropped counts the drop records of probed pairs' packets.
func (pr *probe) probesDropped(drops map[string][]nodeproc.DropRecord) int {
	probed := map[[2]uint16]bool{}
	for _, p := range pr.pairs {
		probed[[2]uint16{pr.lid[p.src], pr.lid[p.dst]}] = true
	}
	n := 0
	for _, recs := range drops {
		for _, r := range recs {
			if probed[[2]uint16{r.SLID, r.DLID}] {
				n++
			}
		}
	}
	return n
}

// attribute fills the run's outages, their attribution and the timeline
// of the fault and the outages (the SM's events are added by its side).
func (run *FaultRun) attribute(pr *probe, t0 time.Time, fault string) {
	run.Outages, run.ProbesDropped, run.UnreadNodes, run.DropLogOverflow = pr.attribution(t0)
	for _, o := range run.Outages {
		if o.Cause == "unknown" {
			run.OutagesUnknown++
		}
	}
	run.Timeline = append([]TimelineEvent{{Ms: 0, What: "fault: " + fault}}, outageTimeline(run.Outages)...)
	sortTimeline(run.Timeline)
}

// ibsmTimeline is ibsm's passes after the fault at t0 as timeline lines:
// each pass's start, the end of each phase, its own time to connectivity
// and its end (the result reaching the bench).
func ibsmTimeline(rs []*sm.Result, at []time.Time, t0 time.Time) []TimelineEvent {
	var out []TimelineEvent
	for i, r := range rs {
		end := ms(at[i].Sub(t0))
		start := end - r.MsTotal
		out = append(out, TimelineEvent{Ms: start, What: fmt.Sprintf("ibsm %s %d starts", r.Event, r.Sweep)})
		t := start
		for _, p := range r.Phases {
			t += p.Ms
			out = append(out, TimelineEvent{Ms: t, What: fmt.Sprintf("ibsm %s %d: %s done (%d SMPs)", r.Event, r.Sweep, p.Name, p.SMPs)})
		}
		if r.MsToConnectivity != nil {
			out = append(out, TimelineEvent{Ms: start + *r.MsToConnectivity, What: fmt.Sprintf("ibsm %s %d: connectivity by its own account", r.Event, r.Sweep)})
		}
		out = append(out, TimelineEvent{Ms: end, What: fmt.Sprintf("ibsm %s %d ends, subnet up %v", r.Event, r.Sweep, r.SubnetUp)})
	}
	return out
}

// opensmTimeline is OpenSM's SUBNET UP lines after the fault at t0.
func opensmTimeline(ups []time.Time, t0 time.Time) []TimelineEvent {
	var out []TimelineEvent
	for _, u := range ups {
		out = append(out, TimelineEvent{Ms: ms(u.Sub(t0)), What: "OpenSM: SUBNET UP"})
	}
	return out
}
