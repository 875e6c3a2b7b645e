package arbtable_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"ibfab/sm/arbtable"
)

// bytesIn feeds a fuzz input out byte by byte, zeros once it is used up.
type bytesIn struct {
	b []byte
}

func (in *bytesIn) next() int {
	if len(in.b) == 0 {
		return 0
	}
	x := in.b[0]
	in.b = in.b[1:]
	return int(x)
}

// runOps plays data as operations. The first byte picks the size, the
// model and the mode: in model mode only Insert and Release run and the
// model's invariants must hold; in free mode Place, Exchange, Defragment,
// Reorder and Clone with arbitrary (also bad) arguments run as well, and
// only consistency is checked. No input may panic.
func runOps(data []byte) error {
	in := &bytesIn{b: data}
	head := in.next()
	size := 2 << (head % 6)
	model := arbtable.Models[(head>>3)%4]
	free := head&0x80 != 0
	tb, err := arbtable.New(size, model)
	if err != nil {
		return err
	}
	for n := 0; len(in.b) > 0; n++ {
		before := owners(tb)
		fits := tb.Free()
		var op string
		op, tb, err = applyOp(tb, in, free)
		if err != nil && !free {
			var level int
			if _, scanErr := fmt.Sscanf(op, "insert %d", &level); scanErr == nil && errors.Is(err, arbtable.ErrFull) && tb.SetSize(level) <= fits {
				return fmt.Errorf("op %d %s: (P1) refused with %d free: %v", n, op, fits, err)
			}
		}
		if err := checkAfter(tb, before, free); err != nil {
			return fmt.Errorf("op %d %s: %w", n, op, err)
		}
	}
	return nil
}

// applyOp runs one operation; its error is the operation's own (bad
// arguments are expected), and the table may be a clone.
func applyOp(tb *arbtable.Table, in *bytesIn, free bool) (string, *arbtable.Table, error) {
	kinds := 2
	if free {
		kinds = 7
	}
	level := func() int { return in.next()%(tb.Emax()+3) - 1 } // -1 .. emax+1
	switch in.next() % kinds {
	case 0:
		l := level()
		_, err := tb.Insert(l)
		return fmt.Sprintf("insert %d", l), tb, err
	case 1:
		id := pick(tb, in.next())
		return fmt.Sprintf("release %d", id), tb, tb.Release(id)
	case 2:
		l, j := level(), in.next()%(tb.Size()+1)
		_, err := tb.Place(l, j)
		return fmt.Sprintf("place E(%d,%d)", l, j), tb, err
	case 3:
		l, a, b := level(), in.next()%(tb.Size()+1), in.next()%(tb.Size()+1)
		return fmt.Sprintf("exchange %d %d %d", l, a, b), tb, tb.Exchange(l, a, b)
	case 4:
		l := level()
		return fmt.Sprintf("defragment %d", l), tb, tb.Defragment(l)
	case 5:
		tb.Reorder()
		return "reorder", tb, nil
	default:
		return "clone", tb.Clone(), nil
	}
}

// pick is one of the live requests, or an unknown id for 255.
func pick(tb *arbtable.Table, b int) arbtable.ID {
	ids := tb.Requests()
	if b == 255 || len(ids) == 0 {
		return arbtable.ID(b) + 1<<20
	}
	return ids[b%len(ids)]
}

func owners(tb *arbtable.Table) []arbtable.ID {
	out := make([]arbtable.ID, tb.Size())
	for p := range out {
		out[p], _ = tb.Owner(p)
	}
	return out
}

// checkAfter checks consistency, that every slot whose owner changed is
// reported, and in model mode the model's invariants.
func checkAfter(tb *arbtable.Table, before []arbtable.ID, free bool) error {
	if err := tb.Check(); err != nil {
		return err
	}
	after := owners(tb)
	if len(after) == len(before) { // a clone keeps the size
		changed := tb.LastChanged()
		for p := range after {
			if after[p] != before[p] && !slices.Contains(changed, p) {
				return fmt.Errorf("slot %d changed owner %d→%d, not reported in %v", p, before[p], after[p], changed)
			}
		}
	}
	if free {
		return nil
	}
	if !tb.Normalized() {
		return fmt.Errorf("not normalized: %v", tb.Singulars())
	}
	if m := tb.Model(); (m == arbtable.Model2 || m == arbtable.Model3) && !tb.Ordered() {
		return fmt.Errorf("not ordered: %v", tb.Singulars())
	}
	return nil
}

func FuzzOps(f *testing.F) {
	f.Add([]byte{5, 0, 3, 0, 4, 1, 0, 0, 2})
	f.Add([]byte{0x80 | 2, 2, 3, 5, 3, 2, 0, 8, 5, 4, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := runOps(data); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRandomOps plays random inputs through runOps in both modes, for
// every size and model, so plain go test covers what FuzzOps does.
func TestRandomOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	runs := 2000
	if testing.Short() {
		runs = 200
	}
	for range runs {
		data := make([]byte, 1+rng.IntN(400))
		for k := range data {
			data[k] = byte(rng.UintN(256))
		}
		if err := runOps(data); err != nil {
			t.Fatalf("input %x: %v", data, err)
		}
	}
}
