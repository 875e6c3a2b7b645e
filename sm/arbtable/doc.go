// Package arbtable manages the entries of one InfiniBand VL arbitration
// table as sets of equally spaced entries, after the management model of
// Alfaro's thesis as implemented and evaluated by Laborda, Villar, Alfaro
// and Sánchez (UCLM technical report DIAB-04-12-1, 2004).
//
// # Model
//
// A table has Size entries, a power of two from 2 to 64 (IBA uses 64);
// Emax = log2(Size) and the levels are 0..Emax. Entries are labelled by
// the bit reversal of their physical slot, so that the set E(i,j) of
// level i, the labels j .. j+2^(Emax-i)-1, occupies slots spaced 2^i
// apart. A connection whose latency bound is a distance d between its
// entries asks for one set of level log2(d); any set of that level gives
// the same guarantee, which is what lets the table be compacted by
// exchanging whole sets of equal level.
//
// A set is free when none of its entries is used, and singular when it is
// free and its sibling is not (a free E(0,0) counts as singular, as in the
// report's implementation): the singular sets are the maximal free
// aligned blocks of a buddy allocator. A table is normalized when it has
// at most one singular set per level, and ordered when no singular set
// lies to the left of a smaller one. A normalized table never refuses a
// request for which enough entries are free.
//
// # Operations
//
// The occupancy bitmap is the source of truth; the report's incremental
// `singulares` structure (the singular sets of each level, left to right)
// is kept beside it because the algorithms read it, and Derived recomputes
// it from the bitmap for tests. Insert searches a singular set (leftmost,
// or best fit for Model4), Release frees and coalesces, Defragment merges
// two singular sets of a level by one exchange per level, and Reorder
// moves big free sets right of small ones. Model selects which of them run
// after an insertion and after a deletion (Models 1-3 of the report, and
// Model4, which the report proposes in its conclusions).
//
// Every mutating operation records the physical slots whose owner changed
// (LastChanged), so a subnet manager sends only the 32-entry blocks of the
// VLArbitrationTable attribute that changed. A Tracer, nil by default,
// sees each task begin and end, for the evaluation in arbbench.
//
// The package is pure logic: no I/O, no goroutines, no locks; a Table is
// not safe for concurrent use.
package arbtable
