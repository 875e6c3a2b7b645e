package arbtable

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// labelsInSlotOrder lists E(i,j)'s labels in physical order, as the
// report's tables print them.
func labelsInSlotOrder(t *testing.T, size, i, j int) []int {
	t.Helper()
	slots, err := SetSlots(size, i, j)
	require.NoError(t, err)
	out := make([]int, len(slots))
	for k, p := range slots {
		out[k], err = Label(size, p)
		require.NoError(t, err)
	}
	return out
}

func TestSetListings(t *testing.T) {
	tests := []struct {
		name       string
		size, i, j int
		want       []int
	}{
		// Cuadro 1, 64 entries.
		{"E(2,16)", 64, 2, 16, []int{16, 24, 20, 28, 18, 26, 22, 30, 17, 25, 21, 29, 19, 27, 23, 31}},
		{"E(6,12)", 64, 6, 12, []int{12}},
		{"E(4,60)", 64, 4, 60, []int{60, 62, 61, 63}},
		{"E(3,40)", 64, 3, 40, []int{40, 44, 42, 46, 41, 45, 43, 47}},
		// The 8-entry example: distance 1, 2, 4 and 8.
		{"8 E(0,0)", 8, 0, 0, []int{0, 4, 2, 6, 1, 5, 3, 7}},
		{"8 E(1,0)", 8, 1, 0, []int{0, 2, 1, 3}},
		{"8 E(1,4)", 8, 1, 4, []int{4, 6, 5, 7}},
		{"8 E(2,0)", 8, 2, 0, []int{0, 1}},
		{"8 E(2,4)", 8, 2, 4, []int{4, 5}},
		{"8 E(2,2)", 8, 2, 2, []int{2, 3}},
		{"8 E(2,6)", 8, 2, 6, []int{6, 7}},
		{"8 E(3,5)", 8, 3, 5, []int{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, labelsInSlotOrder(t, tt.size, tt.i, tt.j))
		})
	}
}

// TestSetSpacing: a level-i set's slots are 2^i apart, for every size.
func TestSetSpacing(t *testing.T) {
	for size := 2; size <= MaxSize; size *= 2 {
		tb, err := New(size, Model1)
		require.NoError(t, err)
		for i := 0; i <= tb.Emax(); i++ {
			for j := 0; j < size; j += tb.SetSize(i) {
				slots, err := tb.SetSlots(i, j)
				require.NoError(t, err)
				require.Len(t, slots, size>>i)
				for k := 1; k < len(slots); k++ {
					require.Equal(t, 1<<i, slots[k]-slots[k-1], "size %d E(%d,%d)", size, i, j)
				}
			}
		}
	}
}

func TestTreeHelpers(t *testing.T) {
	tb, err := New(64, Model1)
	require.NoError(t, err)
	s, err := tb.Sibling(3, 16)
	require.NoError(t, err)
	assert.Equal(t, 24, s)
	p, err := tb.Parent(3, 24)
	require.NoError(t, err)
	assert.Equal(t, 16, p)
	a, err := tb.Ancestor(6, 29, 2)
	require.NoError(t, err)
	assert.Equal(t, 16, a)
	assert.Equal(t, 16, tb.SetSize(2))
	assert.Zero(t, tb.SetSize(7))

	bad := []struct {
		name string
		f    func() error
	}{
		{"sibling of E00", func() error { _, err := tb.Sibling(0, 0); return err }},
		{"unaligned", func() error { _, err := tb.Parent(2, 3); return err }},
		{"ancestor below", func() error { _, err := tb.Ancestor(2, 0, 3); return err }},
		{"slots of no set", func() error { _, err := tb.SetSlots(7, 0); return err }},
		{"label of no slot", func() error { _, err := Label(64, 64); return err }},
		{"size 48", func() error { _, err := New(48, Model1); return err }},
		{"size 128", func() error { _, err := New(128, Model1); return err }},
		{"size 1", func() error { _, err := New(1, Model1); return err }},
		{"model 0", func() error { _, err := New(64, 0); return err }},
		{"model 5", func() error { _, err := New(64, 5); return err }},
	}
	for _, b := range bad {
		assert.Error(t, b.f(), b.name)
	}
}

func TestBadArguments(t *testing.T) {
	tb, err := New(16, Model1)
	require.NoError(t, err)
	_, err = tb.Insert(-1)
	assert.Error(t, err)
	_, err = tb.Insert(5)
	assert.Error(t, err)
	assert.Zero(t, tb.Stats().Made, "a bad level is no request")
	assert.Error(t, tb.Release(1))
	assert.Error(t, tb.Release(0))
	assert.Error(t, tb.Defragment(5))
	assert.Error(t, tb.Exchange(2, 0, 3))
	_, err = tb.Place(2, 2)
	assert.Error(t, err)
	id, err := tb.Insert(1)
	require.NoError(t, err)
	_, err = tb.Place(2, 0)
	assert.Error(t, err, "taken")
	assert.Error(t, tb.Exchange(2, 0, 4), "E(2,0) is inside a level-1 request")
	assert.Nil(t, tb.Slots(id+1))
	_, ok := tb.Owner(16)
	assert.False(t, ok)
	_, ok = tb.Owner(-1)
	assert.False(t, ok)
}

func TestAPI(t *testing.T) {
	tb, err := New(64, Model1)
	require.NoError(t, err)
	assert.Equal(t, 64, tb.Free())
	a, err := tb.Insert(1)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
		32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62}, tb.Slots(a))
	assert.Equal(t, tb.Slots(a), tb.LastChanged())
	b, err := tb.Insert(6)
	require.NoError(t, err)
	assert.Equal(t, []int{1}, tb.Slots(b), "label 32, the leftmost single entry of the free half")
	assert.Equal(t, []ID{a, b}, tb.Requests())
	owner, ok := tb.Owner(1)
	assert.True(t, ok)
	assert.Equal(t, b, owner)

	c := tb.Clone()
	require.NoError(t, c.Release(a))
	assert.Equal(t, 31, tb.Free()-0, "the original keeps its requests")
	assert.Equal(t, 63, c.Free())
	d, err := c.Insert(6)
	require.NoError(t, err)
	assert.NotEqual(t, b, d)
	_, _, ok = tb.Set(d)
	assert.False(t, ok, "clones do not share requests")

	_, err = tb.Insert(0)
	require.ErrorIs(t, err, ErrFull)
	assert.Empty(t, tb.LastChanged())
	s := tb.Stats()
	assert.Equal(t, uint64(1), s.Rejected[0])
	assert.Equal(t, uint64(1), s.Served[1])
	assert.Equal(t, uint64(1), s.Served[6])
}
