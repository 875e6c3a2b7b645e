// Package goal judges a benchmark's goal honestly: it is met only when
// there was something to measure, every case was measured, and every case
// met it. A ratio against a baseline of zero, or with a side missing, is
// not a measurement.
package goal

import (
	"fmt"
	"math"
)

// Ratio returns a/b to four decimals, and whether it is a measurement:
// false when either side is missing (NaN, negative) or the baseline b is
// zero, where a/b says nothing about a against b.
func Ratio(a, b float64) (float64, bool) {
	if math.IsNaN(a) || math.IsNaN(b) || a < 0 || b <= 0 || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return 0, false
	}
	return math.Round(a/b*1e4) / 1e4, true
}

// Case is one case a goal is judged on.
type Case struct {
	Name string
	// Measured is false when the case has no figure to judge: a run
	// failed, a side is missing, a baseline was zero. Why says which.
	Measured bool
	Met      bool
	Why      string // why not measured, or why not met
}

// Verdict is a goal's outcome: Met, or the reasons it is not.
type Verdict struct {
	Met     bool     `json:"goal_met"`
	Reasons []string `json:"reasons,omitempty"`
}

// Judge returns Met only when cases is not empty and every case was
// measured and met; otherwise a reason for each case that falls short, or
// that nothing was measured.
func Judge(cases []Case) Verdict {
	if len(cases) == 0 {
		return Verdict{Reasons: []string{"nothing measured"}}
	}
	var v Verdict
	for _, c := range cases {
		switch {
		case !c.Measured:
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s: not measured: %s", c.Name, c.Why))
		case !c.Met:
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s: not met: %s", c.Name, c.Why))
		}
	}
	v.Met = len(v.Reasons) == 0
	return v
}

// AtMost is a case that meets its goal when ratio a/b is at most limit;
// what names the figure in the reasons.
func AtMost(name, what string, a, b, limit float64) Case {
	r, ok := Ratio(a, b)
	if !ok {
		return Case{Name: name, Why: fmt.Sprintf("%s: %v against a baseline of %v", what, a, b)}
	}
	return Case{Name: name, Measured: true, Met: r <= limit, Why: fmt.Sprintf("%s ratio %.4g > %g", what, r, limit)}
}

// AtLeast is a case that meets its goal when ratio a/b is at least limit.
func AtLeast(name, what string, a, b, limit float64) Case {
	r, ok := Ratio(a, b)
	if !ok {
		return Case{Name: name, Why: fmt.Sprintf("%s: %v against a baseline of %v", what, a, b)}
	}
	return Case{Name: name, Measured: true, Met: r >= limit, Why: fmt.Sprintf("%s ratio %.4g < %g", what, r, limit)}
}

// Failed is a case that could not be measured because err happened.
func Failed(name string, err error) Case {
	return Case{Name: name, Why: err.Error()}
}

// All is a case made of several: measured when each is, met when each is;
// its Why joins theirs.
func All(name string, parts ...Case) Case {
	c := Case{Name: name, Measured: len(parts) > 0, Met: len(parts) > 0}
	if len(parts) == 0 {
		c.Why = "nothing measured"
	}
	for _, p := range parts {
		if !p.Measured || !p.Met {
			if c.Why != "" {
				c.Why += "; "
			}
			c.Why += p.Why
		}
		c.Measured = c.Measured && p.Measured
		c.Met = c.Met && p.Met
	}
	return c
}
