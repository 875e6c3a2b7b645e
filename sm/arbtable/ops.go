package arbtable

import (
	"errors"
	"fmt"
)

// Insert allocates a set of the given level (2^(Emax-level) entries,
// 2^level apart) and runs the model's maintenance. It fails with ErrFull
// when too few entries are free; a bad level is an error that is not
// counted as a request.
func (t *Table) Insert(level int) (ID, error) {
	t.changed = 0
	if !t.validLevel(level) {
		return 0, fmt.Errorf("arbtable: level %d outside 0..%d", level, t.emax)
	}
	t.phase = Insertion
	defer t.endPhase()
	t.begin(Insertion)
	id, err := t.allocate(level)
	if err != nil {
		t.end(FailedInsertion, level)
		return 0, err
	}
	if t.model == Model1 {
		t.defragment(level)
	}
	t.end(Insertion, level)
	return id, nil
}

// Release frees request id's set and runs the model's maintenance.
func (t *Table) Release(id ID) error {
	t.changed = 0
	r, ok := t.reqs[id]
	if !ok {
		return fmt.Errorf("arbtable: no request %d", id)
	}
	level := int(r.level)
	t.phase = Deletion
	defer t.endPhase()
	t.begin(Deletion)
	t.release(id, r)
	switch t.model {
	case Model2:
		t.reorder()
		t.defragment(level)
	case Model3:
		t.defragment(level)
		t.reorder()
	default:
		t.defragment(level)
	}
	t.end(Deletion, level)
	return nil
}

// Place allocates exactly E(level,j), which must be free, with no search
// and no maintenance: for restoring a known table (and for tests). It is
// not counted in Stats. The table may be left unnormalized.
func (t *Table) Place(level, j int) (ID, error) {
	t.changed = 0
	if err := t.checkSet(level, j); err != nil {
		return 0, err
	}
	if !t.freeBits(level, j) {
		return 0, fmt.Errorf("arbtable: E(%d,%d) is not free", level, j)
	}
	if t.nextID == 0 {
		return 0, errIDs
	}
	l := level
	if !t.hasSingular(level, j) {
		l = t.AncestorSingularLevel(level, j)
	}
	t.split(l, level, j)
	return t.occupy(level, j), nil
}

func (t *Table) endPhase() { t.phase = numTasks }

// errIDs is the end of the ID space: 2^32-1 requests in one table's life.
var errIDs = errors.New("arbtable: request ids exhausted")

// allocate is the report's insertion without maintenance: the entry
// count test, the search, the structure update and the occupation.
func (t *Table) allocate(level int) (ID, error) {
	if t.nextID == 0 {
		return 0, errIDs
	}
	t.stats.Made[level]++
	need := t.setSize(level)
	if need > t.Free() {
		t.stats.Rejected[level]++
		return 0, fmt.Errorf("%w: level %d needs %d entries, %d free", ErrFull, level, need, t.Free())
	}
	t.begin(Occupation)
	t.begin(Search)
	l, j, ok := t.search(level)
	t.end(Search, level)
	if !ok {
		t.end(Occupation, level)
		t.stats.Rejected[level]++
		return 0, fmt.Errorf("%w: level %d: %d entries free but no free set (table not normalized)", ErrFull, level, t.Free())
	}
	t.begin(Update)
	t.split(l, level, j)
	t.end(Update, level)
	id := t.occupy(level, j)
	t.end(Occupation, level)
	t.stats.Served[level]++
	return id, nil
}

// search finds the singular set E(l,j), l <= level, to take E(level,j)
// from.
func (t *Table) search(level int) (l, j int, ok bool) {
	if t.model == Model4 {
		return t.searchBestFit(level)
	}
	return t.searchLeftmost(level)
}

// searchLeftmost is the report's buscaPrimeraEntradaNuevaPeticion: the
// leftmost singular set at least as big as the request. The report tests
// "exactly one singular set" per level; its own Example 4 needs "at
// least one", taking the leftmost of the level.
func (t *Table) searchLeftmost(level int) (l, j int, ok bool) {
	j, l = t.size, -1
	for i := level; i >= 0; i-- {
		if len(t.sing[i]) >= 1 && t.sing[i][0] < j {
			j, l = t.sing[i][0], i
		}
	}
	return l, j, l >= 0
}

// searchBestFit is the report's busquedaInteligenteDeConjunto: the
// leftmost singular set of the deepest level that fits, so that the
// levels it splits into had none and the table stays normalized.
func (t *Table) searchBestFit(level int) (l, j int, ok bool) {
	for i := level; i >= 0; i-- {
		if len(t.sing[i]) >= 1 {
			return i, t.sing[i][0], true
		}
	}
	return -1, 0, false
}

// occupy gives E(level,j) to a new request once the structure is
// updated; the caller has checked that an ID is left.
func (t *Table) occupy(level, j int) ID {
	id := t.nextID
	t.nextID++
	t.reqs[id] = request{level: uint8(level), j: uint8(j)}
	n := t.setSize(level)
	for l := j; l < j+n; l++ {
		t.owner[l] = id
	}
	t.used |= t.mask(level, j)
	t.heads |= 1 << j
	t.nUsed += n
	t.changed |= t.slotMask(level, j)
	return id
}

// release is the report's deletion proper: free the entries, then
// coalesce the structure.
func (t *Table) release(id ID, r request) {
	t.begin(Release)
	level, j := int(r.level), int(r.j)
	n := t.setSize(level)
	delete(t.reqs, id)
	for l := j; l < j+n; l++ {
		t.owner[l] = 0
	}
	t.used &^= t.mask(level, j)
	t.heads &^= 1 << j
	t.nUsed -= n
	t.changed |= t.slotMask(level, j)
	t.stats.Deleted++
	t.begin(Update)
	t.coalesce(level, j)
	t.end(Update, level)
	t.end(Release, level)
}
