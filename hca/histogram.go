package hca

import (
	"math/bits"
	"time"
)

// Histogram buckets are log scale: four per power of two of nanoseconds, so
// a quantile is known to within 19 % from 1 ns to centuries, in a fixed
// array that costs nothing to update.
const (
	histSub     = 4 // buckets per octave
	histBuckets = 64 * histSub
)

// Histogram is a latency histogram with log-scale buckets. It is not safe
// for concurrent use; portStats guards it.
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

func newHistogram() *Histogram { return &Histogram{} }

// bucket returns the bucket of d: octave = position of the top bit, and the
// next two bits pick one of four sub-buckets.
func bucket(d time.Duration) int {
	if d < 1 {
		return 0
	}
	v := uint64(d)
	top := bits.Len64(v) - 1
	if top < 2 {
		return int(v) - 1 // 1, 2, 3 ns: buckets 0..2
	}
	sub := int(v>>(top-2)) & (histSub - 1)
	return top*histSub + sub
}

// bucketUpper returns the largest duration bucket i holds.
func bucketUpper(i int) time.Duration {
	if i < histSub {
		return time.Duration(i + 1)
	}
	top := i / histSub
	sub := uint64(i % histSub)
	lo := (uint64(histSub) + sub) << (top - 2)
	return time.Duration(lo + (uint64(1) << (top - 2)) - 1)
}

// Add records one sample; negative samples (clocks of two processes that
// disagree) count as zero.
func (h *Histogram) Add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucket(d)]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += d
}

// Count returns the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the upper bound of the bucket holding the q-quantile
// (0 < q ≤ 1), capped at the largest sample; 0 without samples.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(bucketUpper(i), h.max)
		}
	}
	return h.max
}

// P50 returns the median latency.
func (h *Histogram) P50() time.Duration { return h.Quantile(0.5) }

// P99 returns the 99th percentile latency.
func (h *Histogram) P99() time.Duration { return h.Quantile(0.99) }

// P999 returns the 99.9th percentile latency.
func (h *Histogram) P999() time.Duration { return h.Quantile(0.999) }

// Max returns the largest sample.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean returns the mean latency.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Snapshot returns the histogram as a JSON-friendly value.
func (h *Histogram) Snapshot() LatencySnapshot {
	s := LatencySnapshot{
		Count: h.n, MinNs: int64(h.min), MaxNs: int64(h.max), MeanNs: int64(h.Mean()),
		P50Ns: int64(h.P50()), P99Ns: int64(h.P99()), P999Ns: int64(h.P999()),
	}
	for i, c := range h.counts {
		if c != 0 {
			s.Buckets = append(s.Buckets, Bucket{LeNs: int64(bucketUpper(i)), Count: c})
		}
	}
	return s
}

// LatencySnapshot is a latency histogram as status output shows it.
type LatencySnapshot struct {
	Count   uint64   `json:"count"`
	MinNs   int64    `json:"min_ns"`
	MaxNs   int64    `json:"max_ns"`
	MeanNs  int64    `json:"mean_ns"`
	P50Ns   int64    `json:"p50_ns"`
	P99Ns   int64    `json:"p99_ns"`
	P999Ns  int64    `json:"p999_ns"`
	Buckets []Bucket `json:"buckets,omitempty"`
}

// Bucket is one non-empty histogram bucket: Count samples of at most LeNs.
type Bucket struct {
	LeNs  int64  `json:"le_ns"`
	Count uint64 `json:"count"`
}
