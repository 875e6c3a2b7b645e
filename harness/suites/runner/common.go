package runner

import (
	"math"
	"regexp"
	"slices"

	"ibfab/hca"
)

// What the experiments' reports share beyond experiment.go and rate.go:
// latency percentiles, the fabric name flag's rule and a check's mark.

// P99Between is the 99th percentile of the samples added between two
// cumulative histograms, as the upper bound of its bucket.
func P99Between(a, b []hca.Bucket) int64 {
	before := map[int64]uint64{}
	for _, x := range a {
		before[x.LeNs] = x.Count
	}
	var diff []hca.Bucket
	var n uint64
	for _, x := range b {
		if c := x.Count - before[x.LeNs]; c > 0 {
			diff = append(diff, hca.Bucket{LeNs: x.LeNs, Count: c})
			n += c
		}
	}
	slices.SortFunc(diff, func(x, y hca.Bucket) int { return int(x.LeNs - y.LeNs) })
	need := uint64(math.Ceil(0.99 * float64(n)))
	var seen uint64
	for _, x := range diff {
		if seen += x.Count; seen >= need {
			return x.LeNs
		}
	}
	return 0
}

// Micros converts nanoseconds into microseconds, the reports' unit of
// latency.
func Micros(ns int64) float64 { return float64(ns) / 1e3 }

// FabricNameRE is a fabric name prefix an experiment accepts: ibfab's
// rule, short enough that the names an experiment derives from it (qos's
// modes, the prefix and "_" and a letter) stay readable.
var FabricNameRE = regexp.MustCompile(`^[a-z0-9_]{1,20}$`)

// Mark is a check's mark in the reports and the command's output: ok,
// skip or FAIL.
func Mark(c Check) string {
	switch {
	case c.Skipped:
		return "skip"
	case c.OK:
		return "ok"
	}
	return "FAIL"
}
