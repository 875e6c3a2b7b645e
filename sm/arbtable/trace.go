package arbtable

//go:generate go tool stringer -type=Task -linecomment

// Task is one of the timed tasks of the report's evaluation (its §5.2):
// operations (Insertion, FailedInsertion, Deletion) and the tasks they
// are made of. Tasks nest: an Exchange runs inside a Defragmentation or a
// Reordering, which runs inside an Insertion or a Deletion, so a Tracer
// that keeps a stack knows, e.g., a defragmentation after a deletion.
type Task uint8

const (
	// Insertion is Insert as a whole, maintenance included. A failed
	// insertion begins as Insertion and ends as FailedInsertion.
	// Insertion: FailedInsertion ends an Insertion that found no free set.
	Insertion Task = iota // insertion
	// FailedInsertion: Occupation is "the insertion proper": search, structure update and
	FailedInsertion // failed insertion
	// writing the entries.
	// Occupation: Search is the search for a singular set: for a free set to occupy,
	Occupation // occupation
	// for two singular sets of a level to merge (defragmentation), or for
	// a disordered pair (reordering).
	// Search: Update is an update of the incremental singular-set structure.
	Search // search
	// Update: Defragmentation is one Defragment call.
	Update // update
	// Defragmentation: Reordering is one Reorder call.
	Defragmentation // defragmentation
	// Reordering: Exchange is one exchange of two same-level sets, its structure
	Reordering // reordering
	// update included; End carries its level.
	// Exchange: Deletion is Release as a whole, maintenance included.
	Exchange // exchange
	// Deletion: Release is "the deletion proper": freeing the entries and
	Deletion // deletion
	// coalescing the structure.
	Release  // release
	numTasks // task?
)

// Tracer sees the tasks of a Table as they run, to time them. Begin and
// End pair up and nest; level is the level the task worked on (the
// request's for Insertion, Occupation, Deletion and Release, the exchanged
// sets' for Exchange, the starting level for Defragmentation), or -1.
// The table is consistent (though perhaps not normalized) at every End of
// an Exchange.
type Tracer interface {
	Begin(task Task)
	End(task Task, level int)
}

// Stats are the counts of the report's evaluation, kept by every Table
// (a few increments per operation).
type Stats struct {
	// Made, Served and Rejected count requests per level: insertions
	// asked for, granted, and refused for want of free entries.
	Made, Served, Rejected [MaxLevels]uint64
	// Deleted counts releases.
	Deleted uint64
	// Exchanges counts exchanges per level of the exchanged sets.
	Exchanges [MaxLevels]uint64
	// Defragmentations and Reorderings count the calls, and the
	// ...WithExchange fields those that made at least one exchange.
	Defragmentations, DefragmentationsWithExchange uint64
	Reorderings, ReorderingsWithExchange           uint64
	// ExchangesAfterInsertion and ExchangesAfterDeletion split the
	// exchanges by the operation whose maintenance made them (Model1
	// defragments after both).
	ExchangesAfterInsertion, ExchangesAfterDeletion uint64
}

// TotalExchanges is the sum of Exchanges over the levels.
func (s Stats) TotalExchanges() uint64 {
	var n uint64
	for _, x := range s.Exchanges {
		n += x
	}
	return n
}

func (t *Table) begin(k Task) {
	if t.tracer != nil {
		t.tracer.Begin(k)
	}
}

func (t *Table) end(k Task, level int) {
	if t.tracer != nil {
		t.tracer.End(k, level)
	}
}
