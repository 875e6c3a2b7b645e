package arbtable

import (
	"fmt"
	"slices"
)

// Defragment merges singular sets two by two, level by level from level
// up to 1 (the report's desfragmentacion), so that a table with one
// extra singular set per level becomes normalized again. Models run it
// themselves; calling it is for tests and for tables built with Place.
func (t *Table) Defragment(level int) error {
	t.changed = 0
	if !t.validLevel(level) {
		return fmt.Errorf("arbtable: level %d outside 0..%d", level, t.emax)
	}
	t.defragment(level)
	return nil
}

// Reorder exchanges sets until no singular set lies left of a smaller
// one (the report's reordenacion). Models 2 and 3 run it themselves.
func (t *Table) Reorder() {
	t.changed = 0
	t.reorder()
}

// Exchange swaps the contents of E(i,a) and E(i,b): every request inside
// one moves to the same offset in the other and keeps its level, so its
// distance. Neither set may lie inside a request of a lower level, which
// would be cut in two.
func (t *Table) Exchange(i, a, b int) error {
	t.changed = 0
	if err := t.checkSet(i, a); err != nil {
		return err
	}
	if err := t.checkSet(i, b); err != nil {
		return err
	}
	if a == b {
		return nil
	}
	for _, x := range []int{a, b} {
		if id := t.owner[x]; id != 0 && int(t.reqs[id].level) < i {
			return fmt.Errorf("arbtable: E(%d,%d) lies inside request %d of level %d", i, x, id, t.reqs[id].level)
		}
	}
	t.exchange(i, a, b)
	return nil
}

// defragment is Defragment without the checks. For each level it takes
// the two leftmost singular sets i1 < i2 and exchanges i1 with i2's
// sibling: the free i1 lands beside i2 and the two merge one level up,
// where the loop goes on. The report tests "exactly two" per level; a
// Model1 cascade can make three, so it loops while there are two or more.
func (t *Table) defragment(level int) {
	t.begin(Defragmentation)
	t.stats.Defragmentations++
	exchanged := false
	for i := level; ; {
		t.begin(Search)
		var ok bool
		i, ok = t.pairLevel(i)
		t.end(Search, i)
		if !ok {
			break
		}
		t.exchange(i, t.sing[i][0], t.sibling(i, t.sing[i][1]))
		exchanged = true
	}
	if exchanged {
		t.stats.DefragmentationsWithExchange++
	}
	t.end(Defragmentation, level)
}

// pairLevel is the first level from i up to 1 with two singular sets or
// more.
func (t *Table) pairLevel(i int) (int, bool) {
	for ; i >= 1; i-- {
		if len(t.sing[i]) >= 2 {
			return i, true
		}
	}
	return 0, false
}

// reorder is the report's reordenacion with its errata fixed (the inner
// loop bound runs over each level's singular sets, and the level of the
// leftmost bigger set is the one it was found at). For each singular set,
// smallest first, it finds the leftmost bigger singular set to its left
// and exchanges that free set with the small set's ancestor of the same
// level, moving the big free set right. Level 1 cannot be out of order:
// only E(0,0) is bigger.
func (t *Table) reorder() {
	t.begin(Reordering)
	t.stats.Reorderings++
	exchanged := false
	for level := t.emax; level >= 2; level-- {
		for pos := 0; pos < len(t.sing[level]); pos++ {
			exchanged = t.reorderAt(level, pos) || exchanged
		}
	}
	if exchanged {
		t.stats.ReorderingsWithExchange++
	}
	t.end(Reordering, -1)
}

// reorderAt orders the pos-th singular set of level, again while two or
// more bigger sets lay to its left. Each exchange moves free entries
// right, so the loop ends.
func (t *Table) reorderAt(level, pos int) bool {
	exchanged := false
	for pos < len(t.sing[level]) {
		t.begin(Search)
		aux := t.sing[level][pos]
		l, m, found := t.biggerLeftOf(level, aux)
		t.end(Search, level)
		if found == 0 {
			break
		}
		t.exchange(l, m, t.ancestor(aux, l))
		exchanged = true
		if found < 2 {
			break
		}
	}
	return exchanged
}

// biggerLeftOf counts the singular sets of levels 1..level-1 that start
// left of label aux, and returns the leftmost of them.
func (t *Table) biggerLeftOf(level, aux int) (l, m, found int) {
	m = aux
	for i := 1; i < level; i++ {
		for _, s := range t.sing[i] {
			if s >= aux {
				break
			}
			found++
			if s < m {
				l, m = i, s
			}
		}
	}
	return l, m, found
}

// exchange swaps E(i,a) and E(i,b), which are not inside a bigger
// request, and updates the structure.
func (t *Table) exchange(i, a, b int) {
	t.begin(Exchange)
	t.swapEntries(i, a, b)
	t.begin(Update)
	t.swapSingulars(i, a, b)
	t.end(Update, i)
	t.stats.Exchanges[i]++
	switch t.phase {
	case Insertion:
		t.stats.ExchangesAfterInsertion++
	case Deletion:
		t.stats.ExchangesAfterDeletion++
	}
	t.end(Exchange, i)
}

// swapEntries swaps the owners, the bitmaps and the requests' sets.
func (t *Table) swapEntries(i, a, b int) {
	n := t.setSize(i)
	for k := range n {
		x, y := t.owner[a+k], t.owner[b+k]
		if x != y {
			t.owner[a+k], t.owner[b+k] = y, x
			t.changed |= 1<<t.reverse(a+k) | 1<<t.reverse(b+k)
		}
	}
	t.used = t.swapBits(t.used, i, a, b)
	t.heads = t.swapBits(t.heads, i, a, b)
	moved := t.heads & (t.mask(i, a) | t.mask(i, b))
	for moved != 0 {
		l := lowBit(moved)
		moved &= moved - 1
		id := t.owner[l]
		t.reqs[id] = request{level: t.reqs[id].level, j: uint8(l)}
	}
}

// swapBits swaps the bits of labels E(i,a) and E(i,b) in a label bitmap.
func (t *Table) swapBits(m uint64, i, a, b int) uint64 {
	ma, mb := t.mask(i, a), t.mask(i, b)
	ba, bb := m&ma, m&mb
	if a < b {
		ba, bb = ba<<(b-a), bb>>(b-a)
	} else {
		ba, bb = ba>>(a-b), bb<<(a-b)
	}
	return m&^(ma|mb) | ba | bb
}

// swapSingulars moves the singular sets inside E(i,a) and E(i,b) with
// their blocks. A block inside a bigger free set is split out first, and
// a block that is wholly free afterwards merges with a free sibling.
func (t *Table) swapSingulars(i, a, b int) {
	t.detach(i, a)
	t.detach(i, b)
	n := t.setSize(i)
	for k := i; k <= t.emax; k++ {
		s := t.sing[k]
		for x, j := range s {
			switch {
			case j >= a && j < a+n:
				s[x] = j - a + b
			case j >= b && j < b+n:
				s[x] = j - b + a
			}
		}
		slices.Sort(s)
	}
	for _, x := range []int{a, b} {
		if t.removeSingular(i, x) {
			t.coalesce(i, x)
		}
	}
}

// detach registers E(i,x) as a singular set of its own when it lies
// inside a bigger one.
func (t *Table) detach(i, x int) {
	if l := t.AncestorSingularLevel(i, x); l >= 0 {
		t.split(l, i, x)
		t.addSingular(i, x)
	}
}
