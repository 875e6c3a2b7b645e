package topologies_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

func TestHotSpotSources(t *testing.T) {
	tests := []struct {
		hosts    int
		fraction float64
		want     int
	}{
		{16, 0.10, 2}, // HS10 on RLFT(2,3): ⌈1.6⌉
		{16, 0.25, 4}, // HS25
		{54, 0.10, 6}, // ⌈5.4⌉
		{54, 0.25, 14},
		{128, 0.10, 13},
		{128, 0.25, 32},
		{30, 0.10, 3}, // 0.1·30 is 3.0000000000000004 in floating point
		{10, 0.7, 7},
		{16, 0, 0},
		{16, 15.0 / 16, 15},
		{1, 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d hosts %v", tt.hosts, tt.fraction), func(t *testing.T) {
			for _, hot := range []int{0, tt.hosts / 2, tt.hosts - 1} {
				for seed := range uint64(8) {
					src, err := topologies.HotSpotSources(tt.hosts, tt.fraction, hot, seed)
					require.NoError(t, err)
					require.Len(t, src, tt.want)
					assert.True(t, slices.IsSorted(src))
					assert.Len(t, slices.Compact(slices.Clone(src)), tt.want, "distinct")
					assert.NotContains(t, src, hot)
					for _, s := range src {
						assert.True(t, s >= 0 && s < tt.hosts)
					}
					again, err := topologies.HotSpotSources(tt.hosts, tt.fraction, hot, seed)
					require.NoError(t, err)
					assert.Equal(t, src, again, "a seed gives the same sources")
				}
			}
		})
	}
	// Seeds draw different sources.
	seen := map[string]bool{}
	for seed := range uint64(16) {
		src, err := topologies.HotSpotSources(54, 0.1, 0, seed)
		require.NoError(t, err)
		seen[fmt.Sprint(src)] = true
	}
	assert.Greater(t, len(seen), 8)

	for _, bad := range []struct {
		hosts, hot int
		f          float64
	}{
		{0, 0, 0.1}, {16, 16, 0.1}, {16, -1, 0.1}, {16, 0, -0.1}, {16, 0, 1.1}, {16, 0, math.NaN()}, {16, 0, 1}, {1, 0, 1},
	} {
		_, err := topologies.HotSpotSources(bad.hosts, bad.f, bad.hot, 1)
		assert.ErrorIs(t, err, topologies.ErrInvalid, "%+v", bad)
	}
}

func TestPairwiseExchange(t *testing.T) {
	for _, n := range []int{2, 3, 8, 16, 54, 128} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			phases, err := topologies.PairwiseExchange(n)
			require.NoError(t, err)
			require.Len(t, phases, n-1)
			pow2 := n&(n-1) == 0
			all := map[topologies.Pair]bool{}
			for p, phase := range phases {
				require.Len(t, phase, n)
				recv := make([]int, n)
				for i, pr := range phase {
					assert.Equal(t, i, pr.Src, "source order")
					assert.NotEqual(t, pr.Src, pr.Dst, "phase %d: no host sends to itself", p+1)
					recv[pr.Dst]++
					assert.False(t, all[pr], "pair %v twice", pr)
					all[pr] = true
					if pow2 {
						assert.Equal(t, pr.Src^(p+1), pr.Dst)
						assert.Equal(t, pr.Src, phase[pr.Dst].Dst, "XOR partners exchange")
					} else {
						assert.Equal(t, (pr.Src+p+1)%n, pr.Dst)
					}
				}
				for h, r := range recv {
					assert.Equal(t, 1, r, "phase %d: host %d receives once", p+1, h)
				}
			}
			assert.Len(t, all, n*(n-1), "every ordered pair once")
		})
	}
	for _, bad := range []int{-1, 0, 1, topologies.MaxExchangeHosts + 1} {
		_, err := topologies.PairwiseExchange(bad)
		assert.ErrorIs(t, err, topologies.ErrInvalid, "%d", bad)
	}
}
