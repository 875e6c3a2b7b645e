package topologies_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

// TestPermutationWorkedExamples: each permutation on hand-worked
// addresses, with even and odd bit counts.
func TestPermutationWorkedExamples(t *testing.T) {
	for _, tc := range []struct {
		p       topologies.Permutation
		n, a, d int
		why     string
	}{
		{topologies.Butterfly, 16, 0b0001, 0b1000, "LSB goes to the MSB"},
		{topologies.Butterfly, 16, 0b1000, 0b0001, "and back"},
		{topologies.Butterfly, 16, 0b0110, 0b0110, "MSB = LSB: fixed"},
		{topologies.Butterfly, 32, 0b10010, 0b00011, "5 bits"},
		{topologies.PerfectShuffle, 16, 0b0001, 0b0010, "rotate left"},
		{topologies.PerfectShuffle, 16, 0b1001, 0b0011, "the MSB wraps to the LSB"},
		{topologies.PerfectShuffle, 16, 0b1111, 0b1111, "all ones: fixed"},
		{topologies.PerfectShuffle, 8, 0b100, 0b001, "3 bits"},
		{topologies.MatrixTranspose, 16, 0b0111, 0b1101, "a3a2 a1a0 → a1a0 a3a2"},
		{topologies.MatrixTranspose, 16, 1*4 + 2, 2*4 + 1, "(x=1,y=2) → (x=2,y=1) on a 4x4 grid"},
		{topologies.MatrixTranspose, 64, 0b101011, 0b011101, "6 bits: halves of three"},
		{topologies.MatrixTranspose, 32, 0b11001, 0b01011, "5 bits: a4a3 a2 a1a0 → a1a0 a2 a4a3"},
		{topologies.MatrixTranspose, 32, 0b00100, 0b00100, "5 bits: the middle bit stays"},
		{topologies.MatrixTranspose, 8, 0b110, 0b011, "3 bits: a2 and a0 swap"},
		{topologies.MatrixTranspose, 2, 1, 1, "1 bit: nothing to swap"},
	} {
		m, err := tc.p.Map(tc.n)
		require.NoError(t, err)
		assert.Equal(t, tc.d, m[tc.a], "%v on %d nodes: %d (%s)", tc.p, tc.n, tc.a, tc.why)
	}
}

// TestPermutationBijection: every permutation of every power of two up to
// 1024 nodes is a bijection, and Pairs gives every non-fixed node once as
// a source and once as a destination.
func TestPermutationBijection(t *testing.T) {
	for _, p := range topologies.Permutations() {
		for n := 2; n <= 1024; n *= 2 {
			m, err := p.Map(n)
			require.NoError(t, err)
			seen := make([]bool, n)
			for _, d := range m {
				require.False(t, seen[d], "%v on %d: %d hit twice", p, n, d)
				seen[d] = true
			}
			pairs, fixed, err := p.Pairs(n)
			require.NoError(t, err)
			assert.Equal(t, n, len(pairs)+fixed, "%v on %d", p, n)
			var src, dst []int
			for _, pr := range pairs {
				assert.NotEqual(t, pr.Src, pr.Dst)
				src, dst = append(src, pr.Src), append(dst, pr.Dst)
			}
			slices.Sort(dst)
			assert.Equal(t, src, dst, "%v on %d: the senders are the receivers", p, n)
		}
	}
}

// TestPermutationFixedPoints: how many nodes send nothing. Butterfly:
// the addresses whose MSB equals their LSB, half; shuffle: all zeros and
// all ones; transpose: upper half = lower half, times the middle bit's
// two values when b is odd.
func TestPermutationFixedPoints(t *testing.T) {
	for _, tc := range []struct {
		p     topologies.Permutation
		n     int
		fixed int
	}{
		{topologies.Butterfly, 16, 8},
		{topologies.Butterfly, 32, 16},
		{topologies.Butterfly, 64, 32},
		{topologies.PerfectShuffle, 16, 2},
		{topologies.PerfectShuffle, 32, 2},
		{topologies.PerfectShuffle, 64, 2},
		{topologies.MatrixTranspose, 16, 4},
		{topologies.MatrixTranspose, 32, 8},
		{topologies.MatrixTranspose, 64, 8},
		{topologies.MatrixTranspose, 2, 2},
	} {
		_, fixed, err := tc.p.Pairs(tc.n)
		require.NoError(t, err)
		assert.Equal(t, tc.fixed, fixed, "%v on %d nodes", tc.p, tc.n)
	}
}

func TestPermutationErrors(t *testing.T) {
	for _, n := range []int{0, 1, 3, 12, 48, -4} {
		_, err := topologies.PerfectShuffle.Map(n)
		assert.True(t, errors.Is(err, topologies.ErrInvalid), "n=%d: %v", n, err)
	}
	_, err := topologies.Permutation(0).Map(16)
	assert.ErrorIs(t, err, topologies.ErrInvalid)
	_, err = topologies.Permutation(9).Map(16)
	assert.ErrorIs(t, err, topologies.ErrInvalid)
	_, err = topologies.ParsePermutation("bit-reversal")
	assert.ErrorIs(t, err, topologies.ErrInvalid)
}

func TestParsePermutation(t *testing.T) {
	for _, p := range topologies.Permutations() {
		got, err := topologies.ParsePermutation(p.String())
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	for s, want := range map[string]topologies.Permutation{"perfect-shuffle": topologies.PerfectShuffle, "Matrix-Transpose": topologies.MatrixTranspose} {
		got, err := topologies.ParsePermutation(s)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	assert.Equal(t, "Permutation(7)", topologies.Permutation(7).String())
}

// TestGridHost: address i is the grid's switch i, whose CA has the name
// GridHost gives.
func TestGridHost(t *testing.T) {
	for _, dims := range [][]int{{4, 4}, {8, 4}, {8, 8}, {2, 3, 4}} {
		tp, err := topologies.Mesh(dims...)
		require.NoError(t, err)
		count := 1
		for _, d := range dims {
			count *= d
		}
		for i := range count {
			sw, ok := tp.Lookup("sw" + topologies.GridHost(dims, i)[2:])
			require.True(t, ok)
			ca, ok := tp.Lookup(topologies.GridHost(dims, i))
			require.True(t, ok, "%v node %d", dims, i)
			peer, ok := tp.Peer(topologies.PortRef{Node: ca, Port: 1})
			require.True(t, ok)
			assert.Equal(t, sw, peer.Node, "%v: CA %d hangs off switch %d", dims, i, i)
		}
	}
	assert.Equal(t, "ca2-3", topologies.GridHost([]int{8, 4}, 11))
}

// TestGridHotSpot: on a 4x4 grid the left half of row 1 sends along the
// row to its right half; the row's middle link is crossed by both
// sources.
func TestGridHotSpot(t *testing.T) {
	b, err := topologies.GridHotSpot([]int{4, 4}, 0.6)
	require.NoError(t, err)
	want := []topologies.Pair{{Src: 1, Dst: 9}, {Src: 5, Dst: 13}}
	assert.Equal(t, want, b.Pairs)
	assert.Equal(t, []int{1, 5}, b.Sources())
	assert.Equal(t, []int{9, 13}, b.Region())
	assert.InDelta(t, 0.6, b.Load, 1e-9)

	b, err = topologies.GridHotSpot([]int{8, 4}, 0.4)
	require.NoError(t, err)
	assert.Len(t, b.Pairs, 4, "x 0..3 of row 1")
	for _, p := range b.Pairs {
		assert.Equal(t, 1, p.Src%4, "row 1")
		assert.Equal(t, p.Src%4, p.Dst%4, "same row")
		assert.Equal(t, 4, p.Dst/4-p.Src/4, "half the grid away")
	}
	assert.Contains(t, b.String(), "1→17")

	for _, bad := range []struct {
		dims []int
		load float64
	}{{[]int{3, 4}, 0.5}, {[]int{4}, 0.5}, {[]int{4, 4, 4}, 0.5}, {[]int{4, 4}, 0}, {[]int{4, 4}, 1.5}} {
		_, err := topologies.GridHotSpot(bad.dims, bad.load)
		assert.ErrorIs(t, err, topologies.ErrInvalid, "%v %v", bad.dims, bad.load)
	}
}
