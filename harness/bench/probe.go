package bench

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"ibfab/hca"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// Probe parameters. Every probed pair hears from its sender every
// interval (each sender cycles through its destinations; ProbeInterval
// by default, QuickProbeInterval with --quick); a pair that hears nothing
// for outageIntervals of them has lost its route. probeAllPairs hosts or
// fewer are probed pair by pair, every ordered pair; more are sampled
// down to that many, evenly spaced, and their pairs probed.
const (
	ProbeInterval = 10 * time.Millisecond
	// QuickProbeInterval halves the probes' packet rate for --quick: on a
	// 2-core machine running slow, 100 probes a second per pair of
	// irregular8 were more than its switches forwarded once a link cut
	// sent most routes through the root, and every queue kept growing.
	QuickProbeInterval = 20 * time.Millisecond
	outageIntervals    = 5
	probeAllPairs      = 8
	probePayload       = 64
)

// pair is a probed sender and receiver.
type pair struct{ src, dst string }

func (p pair) String() string { return p.src + "→" + p.dst }

// probePairs returns every ordered pair of hosts, or of a sample of them.
func probePairs(hosts []string) []pair { return pairsOf(sample(hosts, nil)) }

// faultPairs returns the pairs probed against fault d: as probePairs, but
// the sample starts with the hosts beside the fault (faultHosts), so that
// some probed routes cross it. Sampled evenly alone, the hosts of a larger
// network often had no route over the cut link or the killed switch, and
// both SMs then measured 0.
func faultPairs(t *topologies.Topology, hosts []string, d *topologies.Damage) []pair {
	return pairsOf(sample(hosts, faultHosts(t, hosts, d)))
}

// sample returns hosts, or, when they are more than probeAllPairs, up to
// half that many of first (those among hosts) and the rest evenly spaced.
func sample(hosts, first []string) []string {
	if len(hosts) <= probeAllPairs {
		return hosts
	}
	var out []string
	for _, h := range first {
		if len(out) < probeAllPairs/2 && slices.Contains(hosts, h) && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	rest := slices.DeleteFunc(slices.Clone(hosts), func(h string) bool { return slices.Contains(out, h) })
	need := probeAllPairs - len(out)
	stride := (len(rest) + need - 1) / need
	for i := 0; i < len(rest) && len(out) < probeAllPairs; i += stride {
		out = append(out, rest[i])
	}
	return out
}

// faultHosts are the hosts beside fault d, alternating between its sides:
// those of the switches at the ends of a cut link, those of a dead
// switch's neighbours.
func faultHosts(t *topologies.Topology, hosts []string, d *topologies.Damage) []string {
	if d == nil {
		return nil
	}
	var sides [][]string
	for _, l := range d.Cut {
		sides = append(sides, t.HostsOf(t.Node(l.A.Node).Name), t.HostsOf(t.Node(l.B.Node).Name))
	}
	for _, dead := range slices.Sorted(maps.Keys(d.Dead)) {
		if i, ok := t.Lookup(dead); ok {
			for _, n := range t.Neighbors(i) {
				sides = append(sides, t.HostsOf(t.Node(n).Name))
			}
		}
	}
	var out []string
	for k := 0; ; k++ {
		more := false
		for _, side := range sides {
			if k < len(side) {
				more = true
				if slices.Contains(hosts, side[k]) {
					out = append(out, side[k])
				}
			}
		}
		if !more {
			return out
		}
	}
}

// pairsOf returns every ordered pair of hosts.
func pairsOf(hosts []string) []pair {
	var out []pair
	for _, s := range hosts {
		for _, d := range hosts {
			if s != d {
				out = append(out, pair{s, d})
			}
		}
	}
	return out
}

// probe is periodic UD traffic between pairs of hosts, and the receivers'
// per-sender records read while a fault is taken in: when each pair's
// last outage ended.
type probe struct {
	f        *fabric
	pairs    []pair
	lid      map[string]uint16
	interval time.Duration

	mu       sync.Mutex
	restored map[pair]int64 // end of the pair's last outage after the fault, Unix ns
	last     map[pair]int64 // its last packet

	// The attribution's (attribution_collect.go): every outage after the
	// fault, the held ports sampled while one was open, and at the fault
	// each node's drop-log count and each sender's generator counters.
	spans   []outageSpan
	held    []heldSample
	written map[string]uint64
	gen0    map[string]hca.GeneratorStats
}

// startProbe starts the senders of pairs, each pair probed every
// interval.
func startProbe(f *fabric, pairs []pair, interval time.Duration) (*probe, error) {
	var hosts []string
	dests := map[string][]string{}
	for _, p := range pairs {
		if _, ok := dests[p.src]; !ok {
			hosts = append(hosts, p.src)
		}
		dests[p.src] = append(dests[p.src], p.dst)
		if _, ok := dests[p.dst]; !ok {
			dests[p.dst] = nil
			hosts = append(hosts, p.dst)
		}
	}
	lid, err := f.lids(hosts)
	if err != nil {
		return nil, err
	}
	pr := &probe{f: f, pairs: pairs, lid: lid, interval: interval}
	for i, h := range hosts {
		if len(dests[h]) == 0 {
			continue
		}
		var dl []uint16
		for _, d := range dests[h] {
			dl = append(dl, lid[d])
		}
		a := nodeproc.TrafficArgs{Port: 1, Load: probeLoad(len(dl), interval), Payload: probePayload, Dests: dl,
			Seed: uint64(i + 1), Periodic: true}
		if err := f.call(h, "traffic-start", a, nil); err != nil {
			pr.stop()
			return nil, err
		}
	}
	return pr, nil
}

// probeLoad is the load (% of a 4x SDR link) that sends to each of n
// destinations every interval.
func probeLoad(n int, interval time.Duration) float64 {
	rate, _ := mad.DataRate(mad.LinkWidth4X, mad.LinkSpeedSDR)
	bits := float64(wire.UDPacketSize(probePayload, false) * 8)
	perSec := float64(n) / interval.Seconds()
	return perSec * bits / float64(rate) * 100
}

// stop stops every sender.
func (pr *probe) stop() error {
	var hosts []string
	seen := map[string]bool{}
	for _, p := range pr.pairs {
		if !seen[p.src] {
			seen[p.src] = true
			hosts = append(hosts, p.src)
		}
	}
	return pr.f.stopTraffic(hosts)
}

// arm forgets what the receivers recorded so far: the fault comes next.
func (pr *probe) arm() error {
	pr.mu.Lock()
	pr.restored, pr.last = map[pair]int64{}, map[pair]int64{}
	pr.mu.Unlock()
	_, err := pr.read(0)
	return err
}

// read reads (and resets) every receiver's record; an outage that ended
// after t0 (Unix ns) moves its pair's restoration. It returns the pairs
// that have not heard from their sender for an outage.
func (pr *probe) read(t0 int64) ([]pair, error) {
	recs := map[string]map[uint16]hca.SourceStats{}
	for _, p := range pr.pairs {
		if _, ok := recs[p.dst]; ok {
			continue
		}
		var m map[uint16]hca.SourceStats
		if err := pr.f.call(p.dst, "rx-from", nodeproc.RxFromArgs{Port: 1, Reset: true}, &m); err != nil {
			return nil, err
		}
		recs[p.dst] = m
	}
	now := time.Now().UnixNano()
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var dark []pair
	for _, p := range pr.pairs {
		s := recs[p.dst][pr.lid[p.src]]
		if t0 > 0 && s.Gap > int64(pr.outage()) && s.GapEnd > t0 {
			pr.restored[p] = max(pr.restored[p], s.GapEnd)
			pr.spans = append(pr.spans, outageSpan{pair: p, slid: pr.lid[p.src], dlid: pr.lid[p.dst], start: s.GapEnd - s.Gap, end: s.GapEnd, endLatency: s.GapEndLatency})
		}
		pr.last[p] = s.Last
		if now-s.Last > int64(pr.outage()) {
			dark = append(dark, p)
		}
	}
	return dark, nil
}

// outcome is when, after the fault at t0, every probed pair delivered
// again, and how many pairs had an outage.
func (pr *probe) outcome(t0 time.Time) (msRestored float64, interrupted int) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var end int64
	for _, r := range pr.restored {
		end = max(end, r)
		interrupted++
	}
	if end == 0 {
		return 0, 0
	}
	return ms(time.Duration(end - t0.UnixNano())), interrupted
}

// describe names up to 5 pairs for an error.
func describePairs(ps []pair) string {
	s := fmt.Sprint(ps[:min(len(ps), 5)])
	if len(ps) > 5 {
		s += fmt.Sprintf(" and %d more", len(ps)-5)
	}
	return s
}

// outage is the silence that means a pair lost its route.
func (pr *probe) outage() time.Duration { return outageIntervals * pr.interval }
