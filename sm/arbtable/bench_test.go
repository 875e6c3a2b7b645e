package arbtable_test

import (
	"testing"

	"ibfab/sm/arbtable"
	"ibfab/sm/arbtable/arbbench"
)

// warm is a 64-entry table after 1000 workload steps: a few requests of
// mixed levels, as the SM's tables would hold.
func warm(b *testing.B, m arbtable.Model) (*arbtable.Table, *arbbench.Driver) {
	b.Helper()
	tb, err := arbtable.New(arbtable.MaxSize, m)
	if err != nil {
		b.Fatal(err)
	}
	d := &arbbench.Driver{W: arbbench.NewWorkload(1, tb.Emax())}
	for range 1000 {
		if _, _, err := d.Step(tb); err != nil {
			b.Fatal(err)
		}
	}
	return tb, d
}

// BenchmarkInsertRelease is one single-entry insertion and its release,
// maintenance included.
func BenchmarkInsertRelease(b *testing.B) {
	for _, m := range arbtable.Models {
		b.Run(m.String(), func(b *testing.B) {
			tb, _ := warm(b, m)
			for b.Loop() {
				id, err := tb.Insert(tb.Emax())
				if err != nil {
					b.Fatal(err)
				}
				if err := tb.Release(id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInsertWorkload is one operation of the evaluation's workload.
func BenchmarkInsertWorkload(b *testing.B) {
	for _, m := range arbtable.Models {
		b.Run(m.String(), func(b *testing.B) {
			tb, d := warm(b, m)
			for b.Loop() {
				if _, _, err := d.Step(tb); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClone is the copy the SM takes to try an admission.
func BenchmarkClone(b *testing.B) {
	tb, _ := warm(b, arbtable.Model4)
	for b.Loop() {
		_ = tb.Clone()
	}
}
