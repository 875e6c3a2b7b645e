package arbtable

import (
	"fmt"
	"math/bits"
)

// MaxSize is the largest table IBA defines (VLArbitrationHighCap and
// LowCap are at most 64); it also bounds the label bitmap to one uint64.
const MaxSize = 64

// MaxLevels is the number of levels of a MaxSize table (0..6).
const MaxLevels = 7

// geometry is what follows from the table size alone.
type geometry struct {
	size int // entries, a power of two 2..MaxSize
	emax int // log2(size)
}

func newGeometry(size int) (geometry, error) {
	if size < 2 || size > MaxSize || size&(size-1) != 0 {
		return geometry{}, fmt.Errorf("arbtable: size %d is not a power of two in 2..%d", size, MaxSize)
	}
	return geometry{size: size, emax: bits.TrailingZeros(uint(size))}, nil
}

// setSize is the number of entries of a level-i set, 2^(emax-i).
func (g geometry) setSize(i int) int { return 1 << (g.emax - i) }

// reverse is the bit reversal over emax bits: slot→label and label→slot.
func (g geometry) reverse(x int) int {
	return int(bits.Reverse8(uint8(x)) >> (8 - g.emax))
}

// validLevel reports whether i is a level of the table.
func (g geometry) validLevel(i int) bool { return i >= 0 && i <= g.emax }

// validSet reports whether (i,j) names a set: j a multiple of its size.
func (g geometry) validSet(i, j int) bool {
	return g.validLevel(i) && j >= 0 && j < g.size && j&(g.setSize(i)-1) == 0
}

func (g geometry) checkSet(i, j int) error {
	if !g.validSet(i, j) {
		return fmt.Errorf("arbtable: E(%d,%d) is not a set of a %d-entry table", i, j, g.size)
	}
	return nil
}

// sibling is the other half of the parent of E(i,j); i >= 1.
func (g geometry) sibling(i, j int) int { return j ^ g.setSize(i) }

// parent is the first label of the level i-1 set holding E(i,j); i >= 1.
func (g geometry) parent(i, j int) int { return j &^ (g.setSize(i-1) - 1) }

// ancestor is the first label of the level-l set holding label j.
func (g geometry) ancestor(j, l int) int { return j &^ (g.setSize(l) - 1) }

// mask is E(i,j)'s labels in the label bitmap.
func (g geometry) mask(i, j int) uint64 {
	n := g.setSize(i)
	if n == 64 {
		return ^uint64(0)
	}
	return (uint64(1)<<n - 1) << j
}

// slotMask is the slot bitmap of E(i,j): slots R(j) + k*2^i.
func (g geometry) slotMask(i, j int) uint64 {
	var m uint64
	for s, step := g.reverse(j), 1<<i; s < g.size; s += step {
		m |= 1 << s
	}
	return m
}

// slotsOf lists the set bits of a slot bitmap, ascending.
func slotsOf(m uint64) []int {
	out := make([]int, 0, bits.OnesCount64(m))
	for m != 0 {
		s := bits.TrailingZeros64(m)
		out = append(out, s)
		m &= m - 1
	}
	return out
}

// SetSlots is the physical slots of E(i,j) in a table of size entries,
// ascending: the entries a level-i request owns, 2^i apart.
func SetSlots(size, i, j int) ([]int, error) {
	g, err := newGeometry(size)
	if err != nil {
		return nil, err
	}
	if err := g.checkSet(i, j); err != nil {
		return nil, err
	}
	return slotsOf(g.slotMask(i, j)), nil
}

// Label is the label of physical slot p (and the slot of label p): the
// bit reversal of p over log2(size) bits.
func Label(size, p int) (int, error) {
	g, err := newGeometry(size)
	if err != nil {
		return 0, err
	}
	if p < 0 || p >= size {
		return 0, fmt.Errorf("arbtable: slot %d outside a %d-entry table", p, size)
	}
	return g.reverse(p), nil
}

// lowBit is the index of the lowest set bit of m, which is not 0.
func lowBit(m uint64) int { return bits.TrailingZeros64(m) }
