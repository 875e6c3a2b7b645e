package arbtable

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// E names the set E(Level,J) in tests.
type E struct{ Level, J int }

// withFree is a table of size entries whose free entries are exactly the
// given sets; the rest is held by requests placed on the biggest aligned
// blocks, so that the given sets are the singular ones when they are
// maximal.
func withFree(t *testing.T, size int, m Model, free ...E) *Table {
	t.Helper()
	tb, err := New(size, m)
	require.NoError(t, err)
	var keep uint64
	for _, f := range free {
		require.NoError(t, tb.checkSet(f.Level, f.J))
		keep |= tb.mask(f.Level, f.J)
	}
	for i := 0; i <= tb.emax; i++ {
		for j := 0; j < size; j += tb.setSize(i) {
			if tb.mask(i, j)&keep == 0 && tb.freeBits(i, j) {
				_, err := tb.Place(i, j)
				require.NoError(t, err)
			}
		}
	}
	require.NoError(t, tb.Check())
	return tb
}

// singulars is the structure the given singular sets make in a table of
// emax levels.
func singulars(emax int, sets ...E) [][]int {
	out := make([][]int, emax+1)
	for i := range out {
		out[i] = []int{}
	}
	for _, s := range sets {
		out[s.Level] = append(out[s.Level], s.J)
	}
	return out
}

// requireSingulars checks the structure, and that the bitmap agrees.
func requireSingulars(t *testing.T, tb *Table, sets ...E) {
	t.Helper()
	want := singulars(tb.emax, sets...)
	require.Equal(t, want, tb.Singulars(), "structure")
	require.NoError(t, tb.Check())
}

// ownerOf is the request holding E(i,j) exactly.
func ownerOf(t *testing.T, tb *Table, i, j int) ID {
	t.Helper()
	id := tb.owner[j]
	require.NotZero(t, id, "E(%d,%d) is free", i, j)
	l, jj, ok := tb.Set(id)
	require.True(t, ok)
	require.Equal(t, E{i, j}, E{l, jj})
	return id
}

// insertLeftmost checks that the leftmost search for a request of
// at.Level picks the singular set from, and that the allocation without
// maintenance lands on at.
func insertLeftmost(t *testing.T, tb *Table, from, at E) {
	t.Helper()
	l, j, ok := tb.searchLeftmost(at.Level)
	require.True(t, ok)
	require.Equal(t, from, E{l, j})
	id, err := tb.allocate(at.Level)
	require.NoError(t, err)
	require.Equal(t, id, ownerOf(t, tb, at.Level, at.J))
}

// exchangeLog records each exchange's level and the structure right
// after it.
type exchangeLog struct {
	tb     *Table
	levels []int
	after  [][][]int
}

func (x *exchangeLog) Begin(Task) {}

func (x *exchangeLog) End(k Task, level int) {
	if k == Exchange {
		x.levels = append(x.levels, level)
		x.after = append(x.after, x.tb.Singulars())
	}
}
