package hca_test

import (
	"testing"
	"time"

	"ibfab/hca"
)

func TestHistogram(t *testing.T) {
	tests := []struct {
		name          string
		samples       []time.Duration
		p50, p99, max time.Duration
	}{
		{name: "empty"},
		{name: "one", samples: []time.Duration{time.Microsecond}, p50: time.Microsecond, p99: time.Microsecond, max: time.Microsecond},
		{name: "negative is zero", samples: []time.Duration{-5}, max: 0},
		{name: "spread", samples: func() []time.Duration {
			var s []time.Duration
			for i := 1; i <= 100; i++ {
				s = append(s, time.Duration(i)*time.Microsecond)
			}
			return s
		}(), p50: 50 * time.Microsecond, p99: 99 * time.Microsecond, max: 100 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hca.Histogram
			for _, s := range tt.samples {
				h.Add(s)
			}
			// Buckets are at most 1/128 of their value wide: within 1 % above.
			within := func(got, want time.Duration) bool {
				return got >= want && float64(got) <= float64(want)*1.01+1
			}
			if got := h.P50(); !within(got, tt.p50) {
				t.Errorf("P50() = %v, want %v (+1%%)", got, tt.p50)
			}
			if got := h.P99(); !within(got, tt.p99) {
				t.Errorf("P99() = %v, want %v (+1%%)", got, tt.p99)
			}
			s := h.Snapshot()
			if s.Count != uint64(len(tt.samples)) || time.Duration(s.MaxNs) != tt.max {
				t.Errorf("Snapshot() = %+v", s)
			}
			var n uint64
			for _, b := range s.Buckets {
				n += b.Count
			}
			if n != s.Count {
				t.Errorf("bucket counts sum to %d, want %d", n, s.Count)
			}
		})
	}
}
