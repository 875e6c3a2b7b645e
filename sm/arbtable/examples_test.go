package arbtable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The worked examples of the report (E2-1), on its 16-entry table
// (levels 0..4). The shading of the printed tables was lost; the states
// are the ones the prose and the printed structures pin down.

func TestExample1InsertType2(t *testing.T) {
	tb := withFree(t, 16, Model2, E{3, 4}, E{1, 8})
	insertLeftmost(t, tb, E{1, 8}, E{2, 8})
	requireSingulars(t, tb, E{2, 12}, E{3, 4})
	assert.True(t, tb.Normalized())
	assert.True(t, tb.Ordered())
}

// example2 is the state after Example 2: E(2,0) released from Fig. 9.
func example2(t *testing.T, m Model) *Table {
	tb := withFree(t, 16, m, E{3, 4}, E{2, 12})
	id := ownerOf(t, tb, 2, 0)
	r := tb.reqs[id]
	tb.release(id, r)
	return tb
}

func TestExample2Release(t *testing.T) {
	tb := example2(t, Model1)
	requireSingulars(t, tb, E{2, 0}, E{2, 12}, E{3, 4})
	assert.False(t, tb.Normalized())
	assert.False(t, tb.Ordered())
	assert.Equal(t, 10, tb.Free())
}

func TestExample3Defragmentation(t *testing.T) {
	tb := example2(t, Model1)
	_, err := tb.allocate(1)
	require.ErrorIs(t, err, ErrFull, "8 entries are free but in no level-1 set")
	before := tb.Requests()
	tb.changed = 0
	log := &exchangeLog{tb: tb}
	tb.SetTracer(log)
	require.NoError(t, tb.Defragment(2))
	assert.Equal(t, []int{2}, log.levels, "one exchange, E(2,0) with E(2,8)")
	requireSingulars(t, tb, E{1, 8}, E{3, 4})
	assert.Equal(t, before, tb.Requests())
	// E(2,8)'s request moved to E(2,0): slots 0,4,8,12 and 1,5,9,13.
	assert.Equal(t, []int{0, 1, 4, 5, 8, 9, 12, 13}, tb.LastChanged())
	_, err = tb.allocate(1)
	require.NoError(t, err)
	assert.Equal(t, 0, tb.Free()-2)
}

func TestExample4LeftmostWithoutDefragmentation(t *testing.T) {
	tb := example2(t, Model1)
	insertLeftmost(t, tb, E{2, 0}, E{3, 0}) // needs the >= 1 erratum
	requireSingulars(t, tb, E{2, 12}, E{3, 2}, E{3, 4})
	assert.False(t, tb.Normalized())
}

func TestExample5Reordering(t *testing.T) {
	tb := withFree(t, 16, Model2, E{2, 8}, E{3, 14})
	requireSingulars(t, tb, E{2, 8}, E{3, 14})
	require.False(t, tb.Ordered())
	log := &exchangeLog{tb: tb}
	tb.SetTracer(log)
	tb.Reorder()
	assert.Equal(t, []int{2}, log.levels, "E(2,8) with E(2,12)")
	requireSingulars(t, tb, E{2, 12}, E{3, 10})
	assert.True(t, tb.Ordered())
}

func TestExample7Structure(t *testing.T) {
	tb, err := New(16, Model1)
	require.NoError(t, err)
	for _, s := range []E{{3, 2}, {3, 8}, {4, 10}} {
		_, err := tb.Place(s.Level, s.J)
		require.NoError(t, err)
	}
	assert.Equal(t, uint64(1<<2|1<<3|1<<8|1<<9|1<<10), tb.UsedBitmap())
	// counts [0,0,2,1,1]; row 1 [x,x,4,0,11]; row 2 [x,x,12,x,x]
	requireSingulars(t, tb, E{2, 4}, E{2, 12}, E{3, 0}, E{4, 11})
	assert.Equal(t, tb.Derived(), tb.Singulars())
	// Cuadro 2: the free sets inside each singular set.
	free := []E{{2, 4}, {3, 4}, {3, 6}, {4, 4}, {4, 5}, {4, 6}, {4, 7},
		{2, 12}, {3, 12}, {3, 14}, {4, 12}, {4, 13}, {4, 14}, {4, 15},
		{3, 0}, {4, 0}, {4, 1}, {4, 11}}
	want := map[E]bool{}
	for _, f := range free {
		want[f] = true
	}
	for i := 0; i <= 4; i++ {
		for j := 0; j < 16; j += tb.setSize(i) {
			assert.Equal(t, want[E{i, j}], tb.IsFree(i, j), "IsFree(%d,%d)", i, j)
		}
	}
}

func TestExample9Insert(t *testing.T) {
	tb := withFree(t, 16, Model2, E{1, 8}, E{4, 5})
	insertLeftmost(t, tb, E{1, 8}, E{3, 8})
	requireSingulars(t, tb, E{2, 12}, E{3, 10}, E{4, 5})
}

func TestExample11DefragmentationCascade(t *testing.T) {
	tb := withFree(t, 16, Model1, E{4, 3}, E{4, 5}, E{3, 10})
	requireSingulars(t, tb, E{3, 10}, E{4, 3}, E{4, 5})
	log := &exchangeLog{tb: tb}
	tb.SetTracer(log)
	require.NoError(t, tb.Defragment(4))
	assert.Equal(t, []int{4, 3}, log.levels, "E(4,3)↔E(4,4), then E(3,4)↔E(3,8)")
	assert.Equal(t, singulars(4, E{3, 4}, E{3, 10}), log.after[0], "Fig. 28")
	requireSingulars(t, tb, E{2, 8})
}

func TestExamples12To16Predicates(t *testing.T) {
	tb := withFree(t, 16, Model1, E{2, 12}, E{3, 4}, E{4, 3})
	requireSingulars(t, tb, E{2, 12}, E{3, 4}, E{4, 3})
	assert.True(t, tb.IsFree(3, 12), "ancestor E(2,12) is singular")
	assert.Equal(t, 2, tb.AncestorSingularLevel(3, 12))
	assert.False(t, tb.IsFree(4, 9))
	assert.Equal(t, -1, tb.AncestorSingularLevel(4, 9))
	assert.False(t, tb.IsSingular(4, 13), "level 4 has E(4,3), not E(4,13)")
	assert.True(t, tb.IsSingular(3, 4))
	assert.Equal(t, -1, tb.AncestorSingularLevel(3, 4), "singular itself")

	tb = withFree(t, 16, Model1, E{1, 8})
	assert.Equal(t, 1, tb.AncestorSingularLevel(4, 13), "Example 14")
	assert.False(t, tb.IsSingular(9, 0), "no such level")
	assert.False(t, tb.IsFree(4, 16), "no such set")
}

func TestExample17Searches(t *testing.T) {
	free := []E{{1, 0}, {3, 8}, {4, 15}}

	tb := withFree(t, 16, Model1, free...)
	_, err := tb.allocate(3)
	require.NoError(t, err)
	ownerOf(t, tb, 3, 0)
	requireSingulars(t, tb, E{2, 4}, E{3, 2}, E{3, 8}, E{4, 15})
	require.NoError(t, tb.Defragment(3))
	requireSingulars(t, tb, E{1, 8}, E{4, 7})

	tb = withFree(t, 16, Model4, free...)
	id, err := tb.Insert(3)
	require.NoError(t, err)
	ownerOf(t, tb, 3, 8)
	assert.Equal(t, id, tb.owner[8])
	requireSingulars(t, tb, E{1, 0}, E{4, 15})
	assert.Zero(t, tb.Stats().TotalExchanges())
}

func TestExample18Searches(t *testing.T) {
	tb := withFree(t, 16, Model4, E{2, 0}, E{3, 4})
	_, err := tb.allocate(3)
	require.NoError(t, err)
	ownerOf(t, tb, 3, 4)
	requireSingulars(t, tb, E{2, 0})

	tb = withFree(t, 16, Model1, E{2, 0}, E{3, 4})
	_, err = tb.allocate(3)
	require.NoError(t, err)
	ownerOf(t, tb, 3, 0)
	requireSingulars(t, tb, E{3, 2}, E{3, 4})
	assert.False(t, tb.Normalized())
}

// TestModel1ThreeSingulars is the corner case the report's two-slot
// structure cannot hold: a Model1 cascade leaves three singular sets at
// level 3 for a moment.
func TestModel1ThreeSingulars(t *testing.T) {
	tb := withFree(t, 64, Model1, E{2, 0}, E{3, 56}, E{4, 16}, E{5, 20})
	require.True(t, tb.Normalized())
	log := &exchangeLog{tb: tb}
	tb.SetTracer(log)
	id, err := tb.Insert(4)
	require.NoError(t, err)
	l, j, _ := tb.Set(id)
	assert.Equal(t, E{4, 0}, E{l, j})
	assert.Equal(t, []int{4, 3}, log.levels)
	assert.Equal(t, []int{8, 16, 56}, log.after[0][3], "three at level 3")
	assert.True(t, tb.Normalized())
	require.NoError(t, tb.Check())
	assert.Equal(t, uint64(2), tb.Stats().ExchangesAfterInsertion)
}
