package arbbench

import (
	"errors"
	"math/rand/v2"

	"ibfab/sm/arbtable"
)

// The workload. The report says only "random operations, distributed
// between insertions and deletions"; this is the one whose operation mix
// matches the mix its mean times imply (about 46 % successful
// insertions, 46 % deletions, 8 % failed insertions on 64 entries).
const (
	// InsertProbability is the chance that an operation is an insertion
	// (always one when no request is active).
	InsertProbability = 0.5
	// MinLevel is the lowest request level drawn; levels are uniform over
	// MinLevel..Emax (32..1 entries on 64). Level 0, the whole table, is
	// left out.
	MinLevel = 1
)

// Op is one operation of the workload.
type Op struct {
	Insert bool
	// Level is an insertion's request level.
	Level int
	// Victim is a deletion's index into the active requests.
	Victim int
}

// Workload draws operations from a seeded generator, so every model sees
// the same sequence: whether an insertion succeeds depends only on the
// free entry count, which is the same in all models (none fails a
// request that fits), so the requests alive are the same too.
type Workload struct {
	rng  *rand.Rand
	emax int
}

// NewWorkload is the workload for a table of 2^emax entries.
func NewWorkload(seed uint64, emax int) *Workload {
	return &Workload{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), emax: emax}
}

// Next is the next operation when active requests are alive.
func (w *Workload) Next(active int) Op {
	if active == 0 || w.rng.Float64() < InsertProbability {
		return Op{Insert: true, Level: MinLevel + w.rng.IntN(w.emax-MinLevel+1)}
	}
	return Op{Victim: w.rng.IntN(active)}
}

// Driver applies a Workload to a table and keeps the active requests.
type Driver struct {
	W      *Workload
	Active []arbtable.ID
}

// Outcome is what one step did.
type Outcome uint8

const (
	Inserted Outcome = iota
	Rejected
	Deleted
)

// Step draws and applies one operation. A rejection for want of entries
// is an outcome, not an error; any other error is returned.
func (d *Driver) Step(t *arbtable.Table) (Op, Outcome, error) {
	op := d.W.Next(len(d.Active))
	if op.Insert {
		id, err := t.Insert(op.Level)
		switch {
		case errors.Is(err, arbtable.ErrFull):
			return op, Rejected, nil
		case err != nil:
			return op, Rejected, err
		}
		d.Active = append(d.Active, id)
		return op, Inserted, nil
	}
	last := len(d.Active) - 1
	id := d.Active[op.Victim]
	d.Active[op.Victim] = d.Active[last]
	d.Active = d.Active[:last]
	return op, Deleted, t.Release(id)
}
