package topologies

import (
	"math"
	"math/rand/v2"
	"slices"
)

// hotSpotStream is the second PCG word of HotSpotSources, so that a seed
// means the same sources here and nowhere else.
const hotSpotStream = 0x407_5b07

// HotSpotSources returns the sources of a hot spot among hosts hosts (by
// host index): ⌈fraction·hosts⌉ of them, never the hot destination hot,
// drawn at random from the others and returned sorted. The same arguments
// always give the same sources. Seed 003's HS10 and HS25 are fractions
// 0.1 and 0.25: 2 and 4 of 16 hosts, 6 and 14 of 54. It fails, wrapping
// ErrInvalid, when hot is no host, fraction is outside [0, 1], or more
// sources are asked for than there are hosts besides hot.
func HotSpotSources(hosts int, fraction float64, hot int, seed uint64) ([]int, error) {
	switch {
	case hosts < 1:
		return nil, invalid("hot spot among %d hosts", hosts)
	case hot < 0 || hot >= hosts:
		return nil, invalid("hot spot at host %d of %d", hot, hosts)
	case !(fraction >= 0 && fraction <= 1):
		return nil, invalid("hot spot with a fraction of %v of the hosts, want 0 to 1", fraction)
	}
	// The epsilon keeps products such as 0.1·30 = 3.0000000000000004
	// from rounding up to one more source than the fraction names.
	m := int(math.Ceil(fraction*float64(hosts) - 1e-9))
	if m > hosts-1 {
		return nil, invalid("hot spot with %d sources among %d hosts: the hot destination is no source", m, hosts)
	}
	r := rand.New(rand.NewPCG(seed, hotSpotStream))
	src := make([]int, 0, m)
	for _, i := range r.Perm(hosts - 1)[:m] {
		if i >= hot {
			i++ // skip the destination
		}
		src = append(src, i)
	}
	slices.Sort(src)
	return src, nil
}

// MaxExchangeHosts bounds PairwiseExchange, whose schedule holds
// hosts·(hosts−1) pairs: 4096 hosts make 16 million.
const MaxExchangeHosts = 4096

// PairwiseExchange returns an all-to-all among hosts hosts as hosts−1
// phases of pairwise exchanges: in phase p (1..hosts−1, at index p−1)
// every host sends to one partner and receives from one, and over the
// phases every host sends to every other exactly once. With a power of
// two of hosts host i exchanges with i XOR p (each phase is pairs that
// send to each other); otherwise host i sends to (i+p) mod hosts and
// receives from (i−p) mod hosts. Within a phase pairs are in source
// order.
//
// It is a synthetic stand-in for the trace of HPCC's PTRANS (parallel
// matrix transpose, whose processes swap blocks of the matrix pairwise)
// that seed 003 replays on 432 nodes: that trace is not available here.
// The stand-in keeps the shape the paper explains its results by,
// uniform traffic in short synchronized bursts, and none of the trace's
// timing.
func PairwiseExchange(hosts int) ([][]Pair, error) {
	if hosts < 2 || hosts > MaxExchangeHosts {
		return nil, invalid("pairwise exchange among %d hosts, want 2 to %d", hosts, MaxExchangeHosts)
	}
	pow2 := hosts&(hosts-1) == 0
	phases := make([][]Pair, hosts-1)
	for p := 1; p < hosts; p++ {
		phase := make([]Pair, hosts)
		for i := range phase {
			dst := (i + p) % hosts
			if pow2 {
				dst = i ^ p
			}
			phase[i] = Pair{Src: i, Dst: dst}
		}
		phases[p-1] = phase
	}
	return phases, nil
}
