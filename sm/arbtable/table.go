package arbtable

import (
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"

	"ibfab/internal/enum"
)

// ID is a request (allocation) handle, never reused within a Table's life
// (or its clones'); 0 is no request.
type ID uint32

// ErrFull is a failed insertion: not enough free entries, or (only in a
// table that is not normalized) no free set of the level. Errors wrap it
// with the detail.
var ErrFull = errors.New("arbtable: no free set for the request")

// Model is a maintenance policy: what runs after an insertion and after a
// deletion, and how insertion searches.
type Model uint8

const (
	// Model1 defragments after insertion and after deletion; leftmost
	// search.
	Model1 Model = 1 + iota // M1
	// Model2 reorders then defragments after deletion; leftmost search.
	Model2 // M2
	// Model3 defragments then reorders after deletion; leftmost search.
	Model3 // M3
	// Model4 searches best fit (the smallest singular set that fits,
	// stopping at the first level that has one) and defragments after
	// deletion only: the report's proposal in its conclusions.
	Model4 // M4
)

//go:generate go tool stringer -type=Model -linecomment

// Models are the four models, in order.
var Models = []Model{Model1, Model2, Model3, Model4}

var models = enum.New("model", Models...)

// MarshalText implements encoding.TextMarshaler: "M1" to "M4", so a list
// of models is a list of names in JSON, not bytes.
func (m Model) MarshalText() ([]byte, error) { return models.Marshal(m) }

// UnmarshalText implements encoding.TextUnmarshaler: "M1" to "M4", or the
// number alone.
func (m *Model) UnmarshalText(b []byte) error {
	if len(b) == 1 && b[0] >= '1' && b[0] <= '9' {
		b = append([]byte("M"), b...)
	}
	return models.Unmarshal(m, b)
}

func (m Model) valid() bool { return m >= Model1 && m <= Model4 }

// request is where a request's set lies now.
type request struct {
	level, j uint8
}

// Table is one arbitration table's entry allocation.
type Table struct {
	geometry
	model  Model
	owner  [MaxSize]ID // by label; 0 = free
	used   uint64      // label bitmap, the source of truth
	heads  uint64      // label bitmap of the first label of each request
	nUsed  int
	sing   [MaxLevels][]int // the incremental structure: singular sets per level, ascending
	reqs   map[ID]request
	nextID ID
	// changed is the slot bitmap of owner changes in the last operation.
	changed uint64
	// phase is the operation running, to attribute exchanges.
	phase  Task
	stats  Stats
	tracer Tracer
}

// New is an empty table of size entries (a power of two 2..64) kept by
// model m.
func New(size int, m Model) (*Table, error) {
	g, err := newGeometry(size)
	if err != nil {
		return nil, err
	}
	if !m.valid() {
		return nil, fmt.Errorf("arbtable: unknown model %d", uint8(m))
	}
	t := &Table{geometry: g, model: m, reqs: map[ID]request{}, nextID: 1}
	t.sing[0] = []int{0} // a free E(0,0) counts as singular
	return t, nil
}

// SetTracer installs tr (nil removes it).
func (t *Table) SetTracer(tr Tracer) { t.tracer = tr }

// Model is the table's maintenance model.
func (t *Table) Model() Model { return t.model }

// Size is the number of entries.
func (t *Table) Size() int { return t.size }

// Emax is log2(Size): the deepest level, whose sets are single entries.
func (t *Table) Emax() int { return t.emax }

// Free is the number of unused entries.
func (t *Table) Free() int { return t.size - t.nUsed }

// Stats are the counts since New (a clone copies them).
func (t *Table) Stats() Stats { return t.stats }

// Set is the set request id holds now: exchanges move requests.
func (t *Table) Set(id ID) (level, j int, ok bool) {
	r, ok := t.reqs[id]
	return int(r.level), int(r.j), ok
}

// Slots is the physical slots request id owns, ascending; nil for an
// unknown id.
func (t *Table) Slots(id ID) []int {
	r, ok := t.reqs[id]
	if !ok {
		return nil
	}
	return slotsOf(t.slotMask(int(r.level), int(r.j)))
}

// Owner is the request owning physical slot p.
func (t *Table) Owner(p int) (ID, bool) {
	if p < 0 || p >= t.size {
		return 0, false
	}
	id := t.owner[t.reverse(p)]
	return id, id != 0
}

// Requests is the live requests, ascending.
func (t *Table) Requests() []ID {
	return slices.Sorted(maps.Keys(t.reqs))
}

// LastChanged is the physical slots whose owner the last Insert, Place,
// Release, Defragment, Reorder or Exchange changed, ascending (empty
// after a failure).
func (t *Table) LastChanged() []int { return slotsOf(t.changed) }

// LastChangedMask is LastChanged as a bitmap, bit p for slot p.
func (t *Table) LastChangedMask() uint64 { return t.changed }

// Clone is a deep copy (tracer included), so a caller can try an
// operation and throw the copy away.
func (t *Table) Clone() *Table {
	c := *t
	c.reqs = maps.Clone(t.reqs)
	for i := range c.sing {
		c.sing[i] = slices.Clone(t.sing[i])
	}
	return &c
}

// Used is the number of used entries, as counted on each operation.
func (t *Table) Used() int { return t.nUsed }

// UsedBitmap is the occupancy by label, bit l for label l.
func (t *Table) UsedBitmap() uint64 { return t.used }

// popcount is the used entries as the bitmap has them.
func (t *Table) popcount() int { return bits.OnesCount64(t.used) }

// SetSize is the number of entries of a level-i set, 0 for no level.
func (t *Table) SetSize(i int) int {
	if !t.validLevel(i) {
		return 0
	}
	return t.setSize(i)
}

// Sibling is the other half of E(i,j)'s parent; level 0 has none.
func (t *Table) Sibling(i, j int) (int, error) {
	if err := t.checkSet(i, j); err != nil || i == 0 {
		return 0, fmt.Errorf("arbtable: E(%d,%d) has no sibling", i, j)
	}
	return t.sibling(i, j), nil
}

// Parent is the set of level i-1 holding E(i,j).
func (t *Table) Parent(i, j int) (int, error) {
	if err := t.checkSet(i, j); err != nil || i == 0 {
		return 0, fmt.Errorf("arbtable: E(%d,%d) has no parent", i, j)
	}
	return t.parent(i, j), nil
}

// Ancestor is the first label of the level-l set holding E(i,j), l <= i.
func (t *Table) Ancestor(i, j, l int) (int, error) {
	if err := t.checkSet(i, j); err != nil || l < 0 || l > i {
		return 0, fmt.Errorf("arbtable: E(%d,%d) has no ancestor at level %d", i, j, l)
	}
	return t.ancestor(j, l), nil
}

// SetSlots is the physical slots of E(i,j), ascending.
func (t *Table) SetSlots(i, j int) ([]int, error) {
	if err := t.checkSet(i, j); err != nil {
		return nil, err
	}
	return slotsOf(t.slotMask(i, j)), nil
}
