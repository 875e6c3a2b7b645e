package runner

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"ibfab/harness"
)

// Sample is the fabric's counters at one moment, summed over the fabric.
// A restarted node starts its counters from zero again; the sums only grow.
type Sample struct {
	T  float64 `json:"t"`  // seconds since the traffic started
	Tx uint64  `json:"tx"` // data packets the hosts sent (cumulative)
	Rx uint64  `json:"rx"` // data packets the hosts received (cumulative)
	// Drops counts every port's dropped packets by cause (cumulative).
	Drops map[string]uint64 `json:"drops"`
	// NotActive lists the cabled ports of live nodes that were not Active.
	NotActive []string `json:"not_active,omitempty"`
	// Resets lists the counters that went back since the last sample
	// (their node restarted, or a port was reset): counted from zero.
	Resets []string `json:"resets,omitempty"`
	// HostRx is each host's received count (cumulative).
	HostRx map[string]uint64 `json:"-"`
}

// Bin is the traffic of one time bin.
type Bin struct {
	T0       float64           `json:"t0"`
	T1       float64           `json:"t1"`
	Sent     uint64            `json:"sent"`
	Received uint64            `json:"received"`
	Dropped  map[string]uint64 `json:"dropped,omitempty"`
}

// sampler polls a fabric's status every interval.
type sampler struct {
	fabric string
	start  time.Time

	one     sync.Mutex // one sample at a time: a slow status read must not land after a newer one
	mu      sync.Mutex
	samples []Sample
	last    map[counterKey]uint64 // the value last read
	total   map[counterKey]uint64 // the sum of its increases
	errs    int
}

func newSampler(fabric string, start time.Time) *sampler {
	return &sampler{fabric: fabric, start: start, last: map[counterKey]uint64{}, total: map[counterKey]uint64{}}
}

// counterKey names one counter of one port: kind "tx", "rx" (a host's data
// packets) or "drop" with a cause.
type counterKey struct{ port, kind, cause string }

// run samples until ctx ends.
func (s *sampler) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// add accounts counter key at value v: a counter that went back (its node
// restarted) counts from zero.
func (s *sampler) add(key counterKey, v uint64, smp *Sample) uint64 {
	prev := s.last[key]
	if v >= prev {
		s.total[key] += v - prev
	} else {
		s.total[key] += v
		smp.Resets = append(smp.Resets, fmt.Sprintf("%s %s%s %d→%d", key.port, key.kind, key.cause, prev, v))
	}
	s.last[key] = v
	return s.total[key]
}

func (s *sampler) sample(ctx context.Context) {
	s.one.Lock()
	defer s.one.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := harness.Status(cctx, s.fabric)
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs++
		return
	}
	smp := Sample{T: now.Sub(s.start).Seconds(), Drops: map[string]uint64{}, HostRx: map[string]uint64{}}
	for _, n := range st.Nodes {
		for _, p := range n.Ports {
			key := fmt.Sprintf("%s[%d]", n.Name, p.Port)
			if n.Alive && p.Peer != "" && p.State != "Active" {
				smp.NotActive = append(smp.NotActive, key)
			}
			for cause, v := range p.Drops {
				s.add(counterKey{key, "drop", cause}, v, &smp)
			}
			if p.Traffic != nil {
				s.add(counterKey{key, "tx", ""}, p.Traffic.TxPackets, &smp)
				smp.HostRx[n.Name] += s.add(counterKey{key, "rx", ""}, p.Traffic.RxPackets, &smp)
			}
		}
	}
	for k, v := range s.total {
		switch k.kind {
		case "tx":
			smp.Tx += v
		case "rx":
			smp.Rx += v
		case "drop":
			smp.Drops[k.cause] += v
		}
	}
	sort.Strings(smp.NotActive)
	s.samples = append(s.samples, smp)
}

// Samples returns the samples so far.
func (s *sampler) Samples() []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.samples...)
}

// BinWidth is the width of the report's time bins.
const BinWidth = 0.5 // seconds

// bins turns cumulative samples into traffic per time bin of width
// seconds. The samples come at uneven times (a status read of every node
// takes a while on a loaded machine), so the cumulative counts are
// interpolated linearly at the bin edges.
func bins(ss []Sample, width float64) []Bin {
	if len(ss) < 2 || width <= 0 {
		return nil
	}
	at := func(t float64) Sample {
		i := sort.Search(len(ss), func(i int) bool { return ss[i].T >= t })
		switch {
		case i == 0:
			return ss[0]
		case i == len(ss):
			return ss[len(ss)-1]
		}
		a, b := ss[i-1], ss[i]
		f := (t - a.T) / (b.T - a.T)
		lerp := func(x, y uint64) uint64 { return x + uint64(f*float64(y-x)+0.5) }
		out := Sample{T: t, Tx: lerp(a.Tx, b.Tx), Rx: lerp(a.Rx, b.Rx), Drops: map[string]uint64{}}
		for c, v := range b.Drops {
			out.Drops[c] = lerp(a.Drops[c], v)
		}
		return out
	}
	var out []Bin
	for t0 := ss[0].T; t0 < ss[len(ss)-1].T; t0 += width {
		t1 := min(t0+width, ss[len(ss)-1].T)
		a, b := at(t0), at(t1)
		bn := Bin{T0: t0, T1: t1, Sent: b.Tx - a.Tx, Received: b.Rx - a.Rx}
		if d := DropsBetween(a, b); len(d) > 0 {
			bn.Dropped = d
		}
		out = append(out, bn)
	}
	return out
}

// DropsBetween returns the drops by cause between two samples.
func DropsBetween(a, b Sample) map[string]uint64 {
	out := map[string]uint64{}
	for c, v := range b.Drops {
		if d := v - a.Drops[c]; d > 0 {
			out[c] = d
		}
	}
	return out
}
