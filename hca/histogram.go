package hca

import (
	"math"
	"math/bits"
	"time"
)

// Histogram buckets are log-linear: below 128 ns one per nanosecond, above
// 128 per power of two, so a bucket is at most 1/128 (0.8 %) of its value
// wide: 512 ns at 64-131 µs, under a microsecond below that. A quantile is
// therefore within 0.8 % above the true one, fine enough to tell a hop of
// a few microseconds from the next, in a fixed array that costs one index
// computation to update. Samples of 2^42 ns (73 minutes) or more share
// the last bucket.
const (
	histSubBits = 7
	histSub     = 1 << histSubBits                       // buckets per octave
	histTopMax  = 41                                     // highest octave with its own buckets
	histBuckets = (histTopMax-histSubBits+2)*histSub + 1 // and one open above
)

// Histogram is a latency histogram with log-linear buckets. It is not safe
// for concurrent use; portStats guards it.
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

func newHistogram() *Histogram { return &Histogram{} }

// bucket returns the bucket of d: below histSub nanoseconds d itself, else
// the octave (position of the top bit) and the next histSubBits bits.
func bucket(d time.Duration) int {
	if d < histSub {
		return int(max(d, 0))
	}
	v := uint64(d)
	top := bits.Len64(v) - 1
	if top > histTopMax {
		return histBuckets - 1
	}
	sub := int(v>>(top-histSubBits)) & (histSub - 1)
	return (top-histSubBits+1)*histSub + sub
}

// bucketUpper returns the largest duration bucket i holds (the last one
// is open above).
func bucketUpper(i int) time.Duration {
	if i < histSub {
		return time.Duration(i)
	}
	if i == histBuckets-1 {
		return time.Duration(math.MaxInt64)
	}
	top := i/histSub + histSubBits - 1
	sub := uint64(i % histSub)
	w := uint64(1) << (top - histSubBits)
	return time.Duration((uint64(histSub)+sub)*w + w - 1)
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
