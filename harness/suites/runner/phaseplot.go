package runner

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PhaseReport is the subnet manager's time and SMPs per phase, for each
// sweep and assimilation it reported (Report.SM), drawn as stacked bars in
// phases.svg and phases.png.
type PhaseReport struct {
	// Names are the phases in the order they first appear.
	Names []string   `json:"names"`
	Rows  []PhaseRow `json:"rows"`
	// SMPsPerPhase is false when the SM counts SMPs per sweep only
	// (OpenSM); Note says why.
	SMPsPerPhase bool   `json:"smps_per_phase"`
	Note         string `json:"note,omitempty"`
}

// PhaseRow is one sweep or assimilation.
type PhaseRow struct {
	Label    string             `json:"label"`
	Event    string             `json:"event"`
	Trigger  string             `json:"trigger,omitempty"`
	SubnetUp bool               `json:"subnet_up"`
	Ms       map[string]float64 `json:"ms"`
	SMPs     map[string]uint64  `json:"smps,omitempty"`
	MsTotal  float64            `json:"ms_total"`
	// SMPsTotal is the SMPs of the whole sweep, phases and what lies
	// between them.
	SMPsTotal uint64 `json:"smps_total"`
}

// opensmSMPNote says why OpenSM's SMPs are per sweep only.
const opensmSMPNote = "OpenSM: SMPs per phase not available. Its phases are timed by the message boxes of its verbose log; " +
	"its SMPs are counted per heavy sweep at the SM's HCA (MADs from OpenSM between the status reads around the sweep, every 50 ms; " +
	"a light sweep just before it may fall in). Counting them per phase takes OpenSM's frame dumps, which slow its sweeps down."

// phaseReport collects the phases of rep's SM results; nil when there
// are none.
func phaseReport(rep *Report) *PhaseReport {
	if len(rep.SM) == 0 {
		return nil
	}
	pr := &PhaseReport{SMPsPerPhase: rep.SMKind != SMOpenSM}
	if !pr.SMPsPerPhase {
		pr.Note = opensmSMPNote
	}
	seen := map[string]bool{}
	for i, x := range rep.SM {
		label := fmt.Sprintf("%d %s", i+1, x.Event)
		if x.Trigger != "" {
			label += " (" + x.Trigger + ")"
		}
		row := PhaseRow{Label: label, Event: x.Event, Trigger: x.Trigger, SubnetUp: x.SubnetUp,
			Ms: map[string]float64{}, MsTotal: x.MsTotal, SMPsTotal: x.SMPsTotal}
		if pr.SMPsPerPhase {
			row.SMPs = map[string]uint64{}
		}
		for _, p := range x.Phases {
			if !seen[p.Name] {
				seen[p.Name] = true
				pr.Names = append(pr.Names, p.Name)
			}
			row.Ms[p.Name] += p.Ms
			if row.SMPs != nil {
				row.SMPs[p.Name] += p.SMPs
			}
		}
		pr.Rows = append(pr.Rows, row)
	}
	return pr
}

// PhaseColors tell the phases apart, in the order of PhaseReport.Names.
var PhaseColors = []color.RGBA{
	{R: 31, G: 119, B: 180, A: 255}, {R: 255, G: 127, B: 14, A: 255}, {R: 44, G: 160, B: 44, A: 255},
	{R: 214, G: 39, B: 40, A: 255}, {R: 148, G: 103, B: 189, A: 255}, {R: 140, G: 86, B: 75, A: 255},
	{R: 227, G: 119, B: 194, A: 255}, {R: 127, G: 127, B: 127, A: 255}, {R: 188, G: 189, B: 34, A: 255},
	{R: 23, G: 190, B: 207, A: 255},
}

// plotPhases draws two panels of stacked bars, one bar per sweep or
// assimilation: its milliseconds per phase and its SMPs per phase (OpenSM:
// per sweep), to path (.svg or .png).
func plotPhases(path, title string, pr *PhaseReport) error {
	labels := make([]string, len(pr.Rows))
	for i, r := range pr.Rows {
		labels[i] = r.Label
	}
	ms := func(r PhaseRow, n string) float64 { return r.Ms[n] }
	left, err := stackedBars(title+": time per phase", "ms", labels, pr.Names, pr.Rows, ms)
	if err != nil {
		return err
	}
	var right *plot.Plot
	if pr.SMPsPerPhase {
		right, err = stackedBars("SMPs per phase", "SMPs", labels, pr.Names, pr.Rows,
			func(r PhaseRow, n string) float64 { return float64(r.SMPs[n]) })
	} else {
		right, err = stackedBars("SMPs per sweep (per phase not available)", "SMPs", labels, []string{"whole sweep"}, pr.Rows,
			func(r PhaseRow, _ string) float64 { return float64(r.SMPsTotal) })
	}
	if err != nil {
		return err
	}
	return SavePanels(path, vg.Length(max(9, 2+0.9*float64(len(labels))))*vg.Inch, 4.5*vg.Inch, left, right)
}

// SavePanels draws plots side by side into a w×h image at path, its
// format by the extension (.svg, .png).
func SavePanels(path string, w, h vg.Length, ps ...*plot.Plot) error {
	c, err := draw.NewFormattedCanvas(w, h, strings.TrimPrefix(filepath.Ext(path), "."))
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(ps), PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	cs := plot.Align([][]*plot.Plot{ps}, tiles, draw.New(c))
	for i, p := range ps {
		p.Draw(cs[0][i])
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stackedBars is one panel: for each row a bar of value(row, name)
// stacked in the order of names.
func stackedBars(title, unit string, labels, names []string, rows []PhaseRow, value func(PhaseRow, string) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	p.NominalX(labels...)
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign = draw.XRight
	p.Legend.Top = true
	p.Legend.Left = true
	var below *plotter.BarChart
	for i, n := range names {
		vs := make(plotter.Values, len(rows))
		for j, r := range rows {
			vs[j] = value(r, n)
		}
		b, err := plotter.NewBarChart(vs, vg.Points(14))
		if err != nil {
			return nil, err
		}
		b.LineStyle.Width = 0
		b.Color = PhaseColors[i%len(PhaseColors)]
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(n, b)
	}
	p.Y.Min = 0
	LegendRoom(p, len(names), true)
	return p, nil
}

// LegendRoom stretches p's Y axis so that a legend of n entries at its
// top (or bottom) covers no bar.
func LegendRoom(p *plot.Plot, n int, top bool) {
	p.Legend.Top = top
	f := 1 + 0.08*float64(n+1)
	if top {
		p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)*f
	} else {
		p.Y.Min = p.Y.Max - (p.Y.Max-p.Y.Min)*f
	}
}
