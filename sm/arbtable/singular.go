package arbtable

import (
	"fmt"
	"slices"
)

// The incremental structure: t.sing[i] lists the first labels of the
// level-i singular sets, ascending. The report's C structure holds two
// per level, which a Model1 defragmentation cascade can exceed (three at
// one level for a moment), so these are slices.

func (t *Table) addSingular(i, j int) {
	s := t.sing[i]
	k, _ := slices.BinarySearch(s, j)
	t.sing[i] = slices.Insert(s, k, j)
}

func (t *Table) removeSingular(i, j int) bool {
	k, ok := slices.BinarySearch(t.sing[i], j)
	if ok {
		t.sing[i] = slices.Delete(t.sing[i], k, k+1)
	}
	return ok
}

func (t *Table) hasSingular(i, j int) bool {
	_, ok := slices.BinarySearch(t.sing[i], j)
	return ok
}

// split unregisters the singular E(l, ancestor of x) and registers the
// halves that stay free when E(i,x), l <= i, is taken out of it: the
// siblings along the path from level l+1 down to i. E(i,x) itself is left
// unregistered (the report's update before adding a request).
func (t *Table) split(l, i, x int) {
	t.removeSingular(l, t.ancestor(x, l))
	for k := l + 1; k <= i; k++ {
		t.addSingular(k, t.sibling(k, t.ancestor(x, k)))
	}
}

// coalesce registers the free E(i,j), merging it upward with free
// siblings. Before the call E(i,j)'s parent was not free, so a free
// sibling is a singular set of the same level.
func (t *Table) coalesce(i, j int) {
	for i > 0 && t.removeSingular(i, t.sibling(i, j)) {
		j = t.parent(i, j)
		i--
	}
	t.addSingular(i, j)
}

// Singulars is the incremental structure: for each level 0..Emax, the
// first labels of its singular sets, ascending (a copy).
func (t *Table) Singulars() [][]int {
	out := make([][]int, t.emax+1)
	for i := range out {
		out[i] = slices.Clone(t.sing[i])
		if out[i] == nil {
			out[i] = []int{}
		}
	}
	return out
}

// Derived is the singular sets computed from the occupancy bitmap alone,
// in the layout of Singulars; it equals Singulars in a consistent table.
func (t *Table) Derived() [][]int {
	out := make([][]int, t.emax+1)
	for i := range out {
		out[i] = []int{}
		for j, n := 0, t.setSize(i); j < t.size; j += n {
			if t.freeBits(i, j) && (i == 0 || !t.freeBits(i, t.sibling(i, j))) {
				out[i] = append(out[i], j)
			}
		}
	}
	return out
}

// freeBits reports from the bitmap whether E(i,j) is free.
func (t *Table) freeBits(i, j int) bool { return t.used&t.mask(i, j) == 0 }

// IsSingular reports whether E(i,j) is a singular set (false for no set).
func (t *Table) IsSingular(i, j int) bool {
	return t.validSet(i, j) && t.hasSingular(i, j)
}

// AncestorSingularLevel is the level of the singular proper ancestor of
// E(i,j), or -1 when E(i,j) is singular itself, has none, or is no set.
func (t *Table) AncestorSingularLevel(i, j int) int {
	if !t.validSet(i, j) || t.hasSingular(i, j) {
		return -1
	}
	for l := i - 1; l >= 0; l-- {
		if t.hasSingular(l, t.ancestor(j, l)) {
			return l
		}
	}
	return -1
}

// IsFree reports from the structure whether E(i,j) is free: singular, or
// inside a singular set.
func (t *Table) IsFree(i, j int) bool {
	return t.IsSingular(i, j) || t.AncestorSingularLevel(i, j) >= 0
}

// Normalized reports whether every level has at most one singular set.
func (t *Table) Normalized() bool {
	for i := 0; i <= t.emax; i++ {
		if len(t.sing[i]) > 1 {
			return false
		}
	}
	return true
}

// Ordered reports whether no singular set lies left of a smaller one:
// no E(l,m) and E(i,j) singular with l < i and m < j.
func (t *Table) Ordered() bool {
	for i := 1; i <= t.emax; i++ {
		for _, j := range t.sing[i] {
			for l := 0; l < i; l++ {
				if len(t.sing[l]) > 0 && t.sing[l][0] < j {
					return false
				}
			}
		}
	}
	return true
}

// Check verifies the table's internal consistency: the structure equals
// the one derived from the bitmap, the used count equals the bitmap's
// population, and each request owns exactly a set of its level. It is
// for tests and fuzzing; a nil error is the only good answer. It does
// not allocate, so that property tests can call it after every step.
func (t *Table) Check() error {
	if !t.structureMatches() {
		return fmt.Errorf("arbtable: structure %v, bitmap says %v", t.Singulars(), t.Derived())
	}
	if p := t.popcount(); p != t.nUsed {
		return fmt.Errorf("arbtable: %d used entries counted, bitmap has %d", t.nUsed, p)
	}
	return t.checkOwners()
}

// structureMatches compares the incremental structure with the bitmap.
func (t *Table) structureMatches() bool {
	for i := 0; i <= t.emax; i++ {
		k := 0
		for j, n := 0, t.setSize(i); j < t.size; j += n {
			if !t.freeBits(i, j) || (i > 0 && t.freeBits(i, t.sibling(i, j))) {
				continue
			}
			if k >= len(t.sing[i]) || t.sing[i][k] != j {
				return false
			}
			k++
		}
		if k != len(t.sing[i]) {
			return false
		}
	}
	return true
}

// checkOwners checks that each request's set is wholly its own and that
// the sets cover the used labels exactly.
func (t *Table) checkOwners() error {
	for l := 0; l < t.size; l++ {
		if (t.owner[l] != 0) != (t.used&(1<<l) != 0) {
			return fmt.Errorf("arbtable: label %d owner %d disagrees with the bitmap", l, t.owner[l])
		}
	}
	var heads uint64
	total := 0
	for id, r := range t.reqs {
		level, j := int(r.level), int(r.j)
		if !t.validSet(level, j) {
			return fmt.Errorf("arbtable: request %d holds no set: E(%d,%d)", id, level, j)
		}
		for l := j; l < j+t.setSize(level); l++ {
			if t.owner[l] != id {
				return fmt.Errorf("arbtable: label %d of request %d's E(%d,%d) is owned by %d", l, id, level, j, t.owner[l])
			}
		}
		heads |= 1 << j
		total += t.setSize(level)
	}
	if total != t.nUsed || heads != t.heads {
		return fmt.Errorf("arbtable: requests hold %d entries (heads %#x), table counts %d (heads %#x)", total, heads, t.nUsed, t.heads)
	}
	return nil
}
