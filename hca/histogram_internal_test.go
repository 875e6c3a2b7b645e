package hca

import (
	"testing"
	"time"
)

// TestHistogramResolution: every duration falls in a bucket that holds it,
// the buckets tile the line without gaps, and below 100 µs none is wider
// than a microsecond (what a hop of a few microseconds needs), above it
// none wider than 1/128 of its value.
func TestHistogramResolution(t *testing.T) {
	prevUpper := time.Duration(-1)
	for i := range histBuckets - 1 {
		up := bucketUpper(i)
		lo := prevUpper + 1
		if up < lo {
			t.Fatalf("bucket %d: upper %v below its lower bound %v", i, up, lo)
		}
		for _, d := range []time.Duration{lo, up, lo + (up-lo)/2} {
			if got := bucket(d); got != i {
				t.Fatalf("bucket(%v) = %d, want %d (bucket %d holds %v..%v)", d, got, i, i, lo, up)
			}
		}
		w := up - lo + 1
		switch {
		case lo < 100*time.Microsecond && w > time.Microsecond:
			t.Fatalf("bucket %d (%v..%v) is %v wide, want ≤ 1 µs below 100 µs", i, lo, up, w)
		case float64(w) > float64(lo)/histSub+1:
			t.Fatalf("bucket %d (%v..%v) is %v wide, more than 1/%d of its value", i, lo, up, w, histSub)
		}
		prevUpper = up
	}
	if got := bucket(time.Duration(1) << 62); got != histBuckets-1 {
		t.Errorf("bucket(2^62 ns) = %d, want the last, %d", got, histBuckets-1)
	}
	if got := bucket(-3); got != 0 {
		t.Errorf("bucket(-3) = %d, want 0", got)
	}
}

// TestHistogramQuantileExact: a hop's samples a few hundred nanoseconds
// apart keep their order and spacing in the quantiles.
func TestHistogramQuantileExact(t *testing.T) {
	var h Histogram
	for i := range 100 {
		h.Add(20*time.Microsecond + time.Duration(i)*500*time.Nanosecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 44500 * time.Nanosecond}, {0.99, 69 * time.Microsecond}, {0.01, 20 * time.Microsecond}} {
		got := h.Quantile(c.q)
		if got < c.want || got > c.want+c.want/histSub {
			t.Errorf("Quantile(%g) = %v, want %v within 1/%d above", c.q, got, c.want, histSub)
		}
	}
}
