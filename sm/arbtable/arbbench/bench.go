package arbbench

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"ibfab/sm/arbtable"
)

// Config is one evaluation.
type Config struct {
	Ops    int              `json:"ops"` // operations per model
	Models []arbtable.Model `json:"models"`
	Size   int              `json:"size"`
	Seed   uint64           `json:"seed"`
	// Threshold drops the samples above it, as the report dropped the
	// ones its timer inflated with other processes and cache misses.
	Threshold time.Duration `json:"threshold_ns"`
}

// Defaults of the evaluation: the report's 10^6 operations on IBA's 64
// entries. The threshold is far above any task's own time (a few µs at
// worst here) and catches preemption and page faults.
const (
	DefaultOps       = 1_000_000
	QuickOps         = 20_000
	DefaultSize      = arbtable.MaxSize
	DefaultThreshold = 20 * time.Microsecond
)

// Validate reports a configuration that cannot run.
func (c Config) Validate() error {
	switch {
	case c.Ops < 1:
		return fmt.Errorf("ops %d: want at least 1", c.Ops)
	case len(c.Models) == 0:
		return fmt.Errorf("no models")
	case c.Threshold <= 0:
		return fmt.Errorf("threshold %v: want more than 0", c.Threshold)
	}
	if _, err := arbtable.New(c.Size, arbtable.Model1); err != nil {
		return err
	}
	if bits.TrailingZeros(uint(c.Size)) <= MinLevel {
		return fmt.Errorf("size %d: the workload's levels %d..log2(size) need at least 4 entries", c.Size, MinLevel)
	}
	for _, m := range c.Models {
		if _, err := arbtable.New(c.Size, m); err != nil {
			return err
		}
	}
	return nil
}

// ModelResult is one model's run.
type ModelResult struct {
	Model string `json:"model"`
	// Inserted, Rejected and Deleted split the operations.
	Ops      int `json:"ops"`
	Inserted int `json:"inserted"`
	Rejected int `json:"rejected"`
	Deleted  int `json:"deleted"`
	// Stats are the table's counts.
	Stats arbtable.Stats `json:"stats"`
	// ExchangesPerOp is the report's "intercambios por operación".
	ExchangesPerOp float64 `json:"exchanges_per_op"`
	// ExchangesAfterInsertionPerOp and ...DeletionPerOp split it by the
	// operation whose maintenance exchanged (Model1 defragments after
	// both).
	ExchangesAfterInsertionPerOp float64 `json:"exchanges_after_insertion_per_op"`
	ExchangesAfterDeletionPerOp  float64 `json:"exchanges_after_deletion_per_op"`
	// DefragWithExchangePct and ReorderWithExchangePct are the shares of
	// the calls that exchanged at least once (NaN-free: 0 when none ran).
	DefragWithExchangePct  float64 `json:"defragmentations_with_exchange_pct"`
	ReorderWithExchangePct float64 `json:"reorderings_with_exchange_pct"`
	// MeanOpNs is the mean time of an operation over the kept samples of
	// insertions, failed insertions and deletions.
	MeanOpNs float64 `json:"mean_op_ns"`
	// Samples and Dropped count all timed samples and those above the
	// threshold.
	Samples    int         `json:"samples"`
	Dropped    int         `json:"dropped"`
	DroppedPct float64     `json:"dropped_pct"`
	Tasks      []TaskStats `json:"tasks"`
	ElapsedMs  float64     `json:"elapsed_ms"`

	hists map[string][]float64 // kept samples in µs of the histogrammed tasks
}

// TaskStats are one task's times, in ns, over its kept samples.
type TaskStats struct {
	Path     string  `json:"path"`
	N        int     `json:"n"`
	Kept     int     `json:"kept"`
	MeanNs   float64 `json:"mean_ns"`
	StdNs    float64 `json:"std_ns"`
	MedianNs float64 `json:"median_ns"`
	P99Ns    float64 `json:"p99_ns"`
	WorstNs  float64 `json:"worst_ns"` // the worst kept sample
	MaxNs    float64 `json:"max_ns"`   // the worst sample, dropped or not
}

// Task is the stats of the task at path p ("insertion",
// "deletion/defragmentation/exchange"), zero when it never ran.
func (r *ModelResult) Task(p string) TaskStats {
	for _, t := range r.Tasks {
		if t.Path == p {
			return t
		}
	}
	return TaskStats{Path: p}
}

// histogrammed are the tasks drawn as histograms.
var histogrammed = []string{"insertion", "failed insertion", "deletion", "exchange"}

// RunModel runs the workload on one model.
func RunModel(c Config, m arbtable.Model) (*ModelResult, error) {
	tb, err := arbtable.New(c.Size, m)
	if err != nil {
		return nil, err
	}
	tm := newTimer()
	tb.SetTracer(tm)
	d := &Driver{W: NewWorkload(c.Seed, tb.Emax())}
	r := &ModelResult{Model: m.String(), Ops: c.Ops}
	start := time.Now()
	for range c.Ops {
		_, out, err := d.Step(tb)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		r.count(out)
	}
	r.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000
	r.Stats = tb.Stats()
	r.rates()
	r.summarize(tm, c.Threshold)
	return r, nil
}

func (r *ModelResult) count(out Outcome) {
	switch out {
	case Inserted:
		r.Inserted++
	case Rejected:
		r.Rejected++
	case Deleted:
		r.Deleted++
	}
}

func (r *ModelResult) rates() {
	ops := float64(r.Ops)
	s := &r.Stats
	r.ExchangesPerOp = float64(s.TotalExchanges()) / ops
	r.ExchangesAfterInsertionPerOp = float64(s.ExchangesAfterInsertion) / ops
	r.ExchangesAfterDeletionPerOp = float64(s.ExchangesAfterDeletion) / ops
	r.DefragWithExchangePct = pct(s.DefragmentationsWithExchange, s.Defragmentations)
	r.ReorderWithExchangePct = pct(s.ReorderingsWithExchange, s.Reorderings)
}

func pct(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}

// summarize turns the timer's samples into TaskStats, dropping those
// above the threshold; it keeps the histogrammed tasks' samples.
func (r *ModelResult) summarize(tm *timer, threshold time.Duration) {
	r.hists = map[string][]float64{}
	var opSum float64
	var opN int
	for key, s := range tm.series {
		name := key.name()
		ts, kept := taskStats(name, *s, threshold)
		r.Tasks = append(r.Tasks, ts)
		r.Samples += ts.N
		r.Dropped += ts.N - ts.Kept
		if name == "insertion" || name == "failed insertion" || name == "deletion" {
			opSum += ts.MeanNs * float64(ts.Kept)
			opN += ts.Kept
		}
		r.keepHist(name, kept)
	}
	// Exchanges are timed under their callers' paths; "exchange" is all
	// of them (not counted twice in Samples).
	ex, kept := taskStats("exchange", exchangeSamples(tm), threshold)
	r.Tasks = append(r.Tasks, ex)
	r.hists["exchange"] = micros(kept)
	slices.SortFunc(r.Tasks, func(a, b TaskStats) int { return strings.Compare(a.Path, b.Path) })
	if opN > 0 {
		r.MeanOpNs = opSum / float64(opN)
	}
	if r.Samples > 0 {
		r.DroppedPct = 100 * float64(r.Dropped) / float64(r.Samples)
	}
}

func (r *ModelResult) keepHist(name string, kept []int32) {
	if slices.Contains(histogrammed, name) {
		r.hists[name] = micros(kept)
	}
}

// exchangeSamples are the samples of every exchange, whatever ran it.
func exchangeSamples(tm *timer) []int32 {
	var all []int32
	for key, s := range tm.series {
		if arbtable.Task(key&15-1) == arbtable.Exchange {
			all = append(all, *s...)
		}
	}
	return all
}

func micros(ns []int32) []float64 {
	out := make([]float64, len(ns))
	for i, x := range ns {
		out[i] = float64(x) / 1000
	}
	return out
}

// taskStats summarizes samples (ns); it returns the kept ones, sorted.
func taskStats(name string, samples []int32, threshold time.Duration) (TaskStats, []int32) {
	ts := TaskStats{Path: name, N: len(samples)}
	kept := make([]int32, 0, len(samples))
	for _, x := range samples {
		ts.MaxNs = max(ts.MaxNs, float64(x))
		if time.Duration(x) <= threshold {
			kept = append(kept, x)
		}
	}
	ts.Kept = len(kept)
	if ts.Kept == 0 {
		return ts, kept
	}
	slices.Sort(kept)
	var sum, sq float64
	for _, x := range kept {
		sum += float64(x)
	}
	ts.MeanNs = sum / float64(ts.Kept)
	for _, x := range kept {
		d := float64(x) - ts.MeanNs
		sq += d * d
	}
	ts.StdNs = math.Sqrt(sq / float64(ts.Kept))
	ts.MedianNs = float64(kept[ts.Kept/2])
	ts.P99Ns = float64(kept[min(ts.Kept-1, ts.Kept*99/100)])
	ts.WorstNs = float64(kept[ts.Kept-1])
	return ts, kept
}
