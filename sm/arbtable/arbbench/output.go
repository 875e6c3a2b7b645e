package arbbench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Write puts arbtable.json, report.md and the histograms (hist-M1-insertion.png,
// …) in dir, which it creates; it returns the files written.
func Write(rep *Report, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	files := []string{filepath.Join(dir, "arbtable.json"), filepath.Join(dir, "report.md")}
	if err := os.WriteFile(files[0], append(js, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(files[1], []byte(rep.Markdown()), 0o644); err != nil {
		return nil, err
	}
	for _, r := range rep.Models {
		for _, task := range histogrammed {
			name := filepath.Join(dir, fmt.Sprintf("hist-%s-%s.png", r.Model, strings.ReplaceAll(task, " ", "-")))
			ok, err := histogram(r.hists[task], fmt.Sprintf("%s %s", r.Model, task), name)
			if err != nil {
				return files, err
			}
			if ok {
				files = append(files, name)
			}
		}
	}
	return files, nil
}

// histogram draws µs samples, clipped at their 99.5th percentile so the
// tail does not squash the body; false when there are none.
func histogram(us []float64, title, file string) (bool, error) {
	if len(us) == 0 {
		return false, nil
	}
	s := slices.Clone(us)
	slices.Sort(s)
	clip := s[min(len(s)-1, len(s)*995/1000)]
	body := s[:0]
	for _, x := range s {
		if x <= clip {
			body = append(body, x)
		}
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (%d samples up to the 99.5th percentile, %.2f µs)", title, len(body), clip)
	p.X.Label.Text = "µs"
	p.Y.Label.Text = "samples"
	h, err := plotter.NewHist(plotter.Values(body), 60)
	if err != nil {
		return false, err
	}
	p.Add(h)
	return true, p.Save(8*vg.Inch, 4*vg.Inch, file)
}
