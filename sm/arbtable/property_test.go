package arbtable_test

import (
	"fmt"
	"testing"

	"ibfab/sm/arbtable"
	"ibfab/sm/arbtable/arbbench"
)

// propertyOps is the length of the random run per model: the report's
// 10^6 operations, fewer under -short.
func propertyOps() int {
	if testing.Short() {
		return 50_000
	}
	return 1_000_000
}

// invariants checks the table at the ends of its tasks: consistency
// after every exchange, and (P2) after an occupation.
type invariants struct {
	t       *arbtable.Table
	ordered bool // before the running insertion
	err     error
}

func (v *invariants) Begin(k arbtable.Task) {
	if k == arbtable.Insertion {
		v.ordered = v.t.Normalized() && v.t.Ordered()
	}
}

func (v *invariants) End(k arbtable.Task, level int) {
	if v.err != nil {
		return
	}
	switch k {
	case arbtable.Exchange:
		if err := v.t.Check(); err != nil {
			v.err = fmt.Errorf("after an exchange of level %d: %w", level, err)
		}
	case arbtable.Occupation:
		// (P2) for the leftmost search; best fit keeps any normalized
		// table normalized.
		if v.t.Model() == arbtable.Model4 && !v.t.Normalized() {
			v.err = fmt.Errorf("best fit of level %d de-normalized the table", level)
		}
		if v.t.Model() != arbtable.Model4 && v.ordered && !(v.t.Normalized() && v.t.Ordered()) {
			v.err = fmt.Errorf("(P2) insertion of level %d into an ordered, normalized table broke it", level)
		}
	}
}

// TestModelInvariants runs the digest's workload on every model and
// checks the invariants after every operation: the structure equals the
// bitmap's, used equals the population, every request owns a set of its
// level (also after every exchange), normalized (and ordered for Models
// 2 and 3), and (P1) no insertion fails while enough entries are free.
func TestModelInvariants(t *testing.T) {
	for _, m := range arbtable.Models {
		t.Run(m.String(), func(t *testing.T) {
			t.Parallel()
			tb, err := arbtable.New(arbtable.MaxSize, m)
			if err != nil {
				t.Fatal(err)
			}
			v := &invariants{t: tb}
			tb.SetTracer(v)
			d := &arbbench.Driver{W: arbbench.NewWorkload(uint64(m), tb.Emax())}
			for n := range propertyOps() {
				if err := step(tb, d, v); err != nil {
					t.Fatalf("operation %d: %v", n, err)
				}
			}
			s := tb.Stats()
			t.Logf("%s: %d exchanges, %d deleted", m, s.TotalExchanges(), s.Deleted)
		})
	}
}

func step(tb *arbtable.Table, d *arbbench.Driver, v *invariants) error {
	free := tb.Free()
	op, out, err := d.Step(tb)
	if err != nil {
		return err
	}
	if v.err != nil {
		return v.err
	}
	if out == arbbench.Rejected && tb.SetSize(op.Level) <= free {
		return fmt.Errorf("(P1) level %d refused with %d entries free", op.Level, free)
	}
	if err := tb.Check(); err != nil {
		return err
	}
	if !tb.Normalized() {
		return fmt.Errorf("%+v left the table not normalized: %v", op, tb.Singulars())
	}
	m := tb.Model()
	if (m == arbtable.Model2 || m == arbtable.Model3) && !tb.Ordered() {
		return fmt.Errorf("%+v left the table not ordered: %v", op, tb.Singulars())
	}
	return nil
}
