package hca

import (
	"math/rand/v2"
	"time"
)

// schedule is the arrival process a Generator or a flow runs on: the next
// arrival's time and gaps of mean ns, fixed or exponential, drawn from a
// seeded RNG so that runs repeat.
type schedule struct {
	next  time.Time
	mean  float64 // ns
	fixed bool
	rng   *rand.Rand
}

func newSchedule(mean float64, fixed bool, seed uint64) schedule {
	return schedule{mean: mean, fixed: fixed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// gap returns the time to the next arrival: the mean, or an exponential
// draw of that mean; at least 1 ns, so time always moves.
func (s *schedule) gap() time.Duration {
	if s.fixed {
		return max(time.Duration(s.mean), 1)
	}
	return max(time.Duration(s.rng.ExpFloat64()*s.mean), 1)
}

// skipDue moves next past now without emitting the arrivals due, for a
// sender further behind than maxBurst (a stalled process), and returns how
// many it skipped.
func (s *schedule) skipDue(now time.Time) uint64 {
	var n uint64
	for !s.next.After(now) {
		n++
		s.next = s.next.Add(s.gap())
	}
	return n
}
