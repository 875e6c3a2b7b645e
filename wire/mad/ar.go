package mad

import "fmt"

// ARMode is how a switch chooses among a destination's alternative output
// ports (ibfab's adaptive routing vendor class; seed 003).
type ARMode uint8

// Adaptive routing modes.
const (
	// AROff forwards every packet by the LFT.
	AROff ARMode = iota
	// ARAdaptive sends each packet out of the alternative whose
	// downstream VL is least occupied.
	ARAdaptive
	// ARAdaptiveTh follows the LFT until the deterministic port's
	// downstream VL reaches the threshold, then adapts as ARAdaptive.
	ARAdaptiveTh
	// ARAFI is ARAdaptiveTh whose adapted packets are marked, move to the
	// Adapted Flow Channel VL and are never adapted again.
	ARAFI
)

// String returns the mode's name as ibsm's flags spell it.
func (m ARMode) String() string {
	switch m {
	case AROff:
		return "off"
	case ARAdaptive:
		return "adaptive"
	case ARAdaptiveTh:
		return "adaptive-th"
	case ARAFI:
		return "afi"
	}
	return fmt.Sprintf("ARMode(%d)", uint8(m))
}

// ParseARMode returns the mode String names.
func ParseARMode(s string) (ARMode, error) {
	for m := AROff; m <= ARAFI; m++ {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown adaptive routing mode %q (want off, adaptive, adaptive-th or afi)", s)
}
