package goal

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRatio(t *testing.T) {
	tests := []struct {
		name string
		a, b float64
		want float64
		ok   bool
	}{
		{"plain", 1, 4, 0.25, true},
		{"rounded", 1, 3, 0.3333, true},
		{"zero numerator", 0, 5, 0, true},
		{"zero baseline", 3, 0, 0, false},
		{"both zero", 0, 0, 0, false},
		{"missing side", math.NaN(), 2, 0, false},
		{"missing baseline", 2, math.NaN(), 0, false},
		{"negative", -1, 2, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Ratio(tt.a, tt.b)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestJudge: a goal is met only when every case was measured and met, and
// there was at least one.
func TestJudge(t *testing.T) {
	met := AtMost("thesis8", "ms", 1, 4, 0.5)
	tests := []struct {
		name    string
		cases   []Case
		met     bool
		reasons int
	}{
		{"no cases", nil, false, 1},
		{"one failed case", []Case{met, Failed("fattree432", errors.New("opensm: no SUBNET UP"))}, false, 1},
		{"a zero baseline", []Case{AtMost("irregular8", "ms", 3, 0, 0.5)}, false, 1},
		{"one not met", []Case{met, AtMost("irregular16", "ms", 3, 4, 0.5)}, false, 1},
		{"all met", []Case{met, AtMost("irregular16", "ms", 1, 8, 0.5)}, true, 0},
		{"part not measured", []Case{All("both", met, AtMost("smps", "smps", 1, 0, 1))}, false, 1},
		{"empty composite", []Case{All("none")}, false, 1},
		{"at least met", []Case{AtLeast("unpaced", "wire ratio", 0.6, 1, 0.5)}, true, 0},
		{"at least not met", []Case{AtLeast("unpaced", "wire ratio", 0.4, 1, 0.5)}, false, 1},
		{"at least of no baseline", []Case{AtLeast("unpaced", "wire ratio", 0.6, 0, 0.5)}, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.cases)
			assert.Equal(t, tt.met, v.Met, "%v", v.Reasons)
			assert.Len(t, v.Reasons, tt.reasons, "%v", v.Reasons)
		})
	}
}
