package arbbench

import (
	"fmt"
	"strings"
)

// Markdown is report.md: the workload, our figures beside the report's
// as ratios, and each model's counts and task times.
func (rep *Report) Markdown() string {
	var b strings.Builder
	c := rep.Config
	fmt.Fprintf(&b, "# VL arbitration-table management: models compared\n\n")
	fmt.Fprintf(&b, "After Laborda, Villar, Alfaro, Sánchez, *Implementación y evaluación de un modelo de gestión de la tabla de arbitraje de InfiniBand* (UCLM DIAB-04-12-1, 2004), Cuadros 3-6. Model 4 is ours: the best-fit search with defragmentation after deletion only, which the report proposes in its conclusions but does not evaluate.\n\n")
	fmt.Fprintf(&b, "## Setup\n\n")
	fmt.Fprintf(&b, "- %d operations per model, a %d-entry table, seed %d; every model sees the same operations.\n", c.Ops, c.Size, c.Seed)
	w := rep.Workload
	fmt.Fprintf(&b, "- Workload (the report does not give its own): each operation is an insertion with probability %.2f, of a level uniform over %d..%d (%d..1 entries), else the deletion of %s.\n",
		w.InsertProbability, w.MinLevel, w.MaxLevel, c.Size>>w.MinLevel, w.Deletion)
	fmt.Fprintf(&b, "- Every task of the report's §5.2 is timed with Go's monotonic clock around the table's tracer hooks; a task's time includes the hooks of the tasks nested in it. Samples above %v are dropped, as the report dropped the ones its timer inflated (it lost about 3 %%); the share dropped is in the table below.\n", c.Threshold)
	fmt.Fprintf(&b, "- The report's absolute times (µs on a 2004 PC, through its simulator) are not comparable with ours (ns); only ratios and orderings are set beside them.\n\n")
	rep.ratioTable(&b)
	rep.countTable(&b)
	for _, r := range rep.Models {
		taskTable(&b, r)
	}
	return b.String()
}

func (rep *Report) ratioTable(b *strings.Builder) {
	fmt.Fprintf(b, "## Ratios beside the report's\n\n| figure | ours | report | agrees |\n|---|---|---|---|\n")
	for _, r := range rep.Ratios {
		paper, agrees := "—", "(ours only)"
		if r.Paper > 0 {
			paper = fmt.Sprintf("%.4g", r.Paper)
			agrees = map[bool]string{true: "yes", false: "no"}[r.Agrees]
		}
		fmt.Fprintf(b, "| %s | %.4g | %s | %s |\n", r.Name, r.Ours, paper, agrees)
	}
	fmt.Fprintf(b, "\nWhere they disagree:\n\n")
	n := 0
	for _, r := range rep.Ratios {
		if r.Paper > 0 && !r.Agrees {
			fmt.Fprintf(b, "- **%s**: ours %.4g, the report's %.4g: %s.\n", r.Name, r.Ours, r.Paper, r.Why)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintf(b, "- nowhere.\n")
	}
	fmt.Fprintf(b, "\n")
}

func (rep *Report) countTable(b *strings.Builder) {
	fmt.Fprintf(b, "## Counts\n\n| model | inserted | failed | deleted | exchanges / op | after insertion / op | after deletion / op | defrag. with exchange | reord. with exchange | mean op (ns) | dropped |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Models {
		ops := float64(r.Ops) / 100
		fmt.Fprintf(b, "| %s | %.1f %% | %.1f %% | %.1f %% | %.4f | %.4f | %.4f | %.1f %% | %.1f %% | %.0f | %.3f %% |\n",
			r.Model, float64(r.Inserted)/ops, float64(r.Rejected)/ops, float64(r.Deleted)/ops,
			r.ExchangesPerOp, r.ExchangesAfterInsertionPerOp, r.ExchangesAfterDeletionPerOp,
			r.DefragWithExchangePct, r.ReorderWithExchangePct, r.MeanOpNs, r.DroppedPct)
	}
	fmt.Fprintf(b, "\nThe report: exchanges per operation M1 0.0715, M2 0.1207, M3 0.1126; Model 2 exchanged in 9.05 %% of its reorderings and 8.72 %% of its defragmentations; its times imply about 46-48 %% successful insertions, 45 %% deletions and 7.5-9 %% failed insertions.\n\n")
	fmt.Fprintf(b, "Requests per level (made / served / rejected) and exchanges per level:\n\n| model | level | made | served | rejected | exchanges |\n|---|---|---|---|---|---|\n")
	for _, r := range rep.Models {
		s := r.Stats
		for l := range s.Made {
			if s.Made[l]+s.Exchanges[l] == 0 {
				continue
			}
			fmt.Fprintf(b, "| %s | %d | %d | %d | %d | %d |\n", r.Model, l, s.Made[l], s.Served[l], s.Rejected[l], s.Exchanges[l])
		}
	}
	fmt.Fprintf(b, "\n")
}

func taskTable(b *strings.Builder, r *ModelResult) {
	fmt.Fprintf(b, "## %s task times (ns)\n\n| task | samples | kept | mean | std | median | p99 | worst kept | max |\n|---|---|---|---|---|---|---|---|---|\n", r.Model)
	for _, t := range r.Tasks {
		fmt.Fprintf(b, "| %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n",
			t.Path, t.N, t.Kept, t.MeanNs, t.StdNs, t.MedianNs, t.P99Ns, t.WorstNs, t.MaxNs)
	}
	fmt.Fprintf(b, "\nHistograms: hist-%s-*.png.\n\n", r.Model)
}
