package runner

import "ibfab/internal/enum"

//go:generate go tool stringer -type=Verdict -linecomment

// Verdict is how one of our figures or one of our claims stands beside
// the paper's: the verdict column of every experiment's claims table (cc's
// comparisons, afc's claims). Its text is its name in the reports and in
// report.json.
type Verdict uint8

// The verdicts. Not every experiment gives every one: cc's comparisons
// are VerdictAgrees, VerdictSameSign, VerdictDisagrees or
// VerdictNotMeasured; afc's claims all but VerdictSameSign.
const (
	// VerdictNotMeasured: the run gave nothing to compare. The zero value.
	VerdictNotMeasured Verdict = iota // not measured
	// VerdictAgrees: ours is the paper's (within its range, widened by
	// ccTolerance; or every case of a claim holds beyond afcNoise).
	VerdictAgrees // agrees
	// VerdictSameSign: the paper's direction, not its size.
	VerdictSameSign // same direction
	// VerdictPartly: some cases of a claim hold, or the rest tie.
	VerdictPartly // partly
	// VerdictWithinNoise: every case of a claim ties, within the
	// run-to-run spread of a point: no evidence either way.
	VerdictWithinNoise // within noise
	// VerdictDisagrees: the opposite of the paper, or no effect.
	VerdictDisagrees // disagrees
)

var verdicts = enum.New("verdict", VerdictNotMeasured, VerdictAgrees, VerdictSameSign,
	VerdictPartly, VerdictWithinNoise, VerdictDisagrees)

// MarshalText implements encoding.TextMarshaler.
func (v Verdict) MarshalText() ([]byte, error) { return verdicts.Marshal(v) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (v *Verdict) UnmarshalText(b []byte) error { return verdicts.Unmarshal(v, b) }
