package thesis

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"ibfab/harness/suites/runner"
)

// thesisRef holds the thesis's means (Tables 28-31): seconds to valid
// tables and dropped packets, [basic, improved], by switches and load.
type thesisRef struct {
	actS, deactS         [2]float64
	actDrops, deactDrops [2]float64
}

var thesisRefs = map[int]map[float64]thesisRef{
	8: {
		25: {[2]float64{0.084322, 0.043018}, [2]float64{0.061461, 0.026079}, [2]float64{25906.71, 4400.33}, [2]float64{47417.14, 22447.86}},
		50: {[2]float64{0.084184, 0.043004}, [2]float64{0.061422, 0.033075}, [2]float64{51865.43, 8754.33}, [2]float64{94864.57, 43835.71}},
	},
	16: {
		25: {[2]float64{0.309162, 0.106540}, [2]float64{0.262362, 0.095271}, [2]float64{50959.20, 1911.33}, [2]float64{158143.00, 54601.47}},
		50: {[2]float64{0.309141, 0.106548}, [2]float64{0.266308, 0.095274}, [2]float64{102008.47, 3776.00}, [2]float64{298304.13, 109209.60}},
	},
	24: {
		25: {[2]float64{0.820756, 0.231911}, [2]float64{0.735567, 0.209227}, [2]float64{110293.09, 4012.22}, [2]float64{301600.22, 126093.39}},
		50: {[2]float64{0.820750, 0.231935}, [2]float64{0.735569, 0.203523}, [2]float64{220441.26, 8060.00}, [2]float64{603357.87, 252187.26}},
	},
	32: {
		25: {[2]float64{2.444927, 0.591356}, [2]float64{2.195207, 0.526156}, [2]float64{107490.55, 5727.50}, [2]float64{504065.81, 132758.71}},
		50: {[2]float64{2.444983, 0.591355}, [2]float64{2.195328, 0.526184}, [2]float64{214994.13, 11359.00}, [2]float64{1008262.00, 265387.97}},
	},
}

// thesisRows averages the results per size and load.
func thesisRows(rs []ChangeResult, o ThesisOptions) []ThesisRow {
	var rows []ThesisRow
	for _, n := range o.Sizes {
		for _, l := range o.Loads {
			row := ThesisRow{Size: n, Load: l}
			var cnt [2][2]float64 // [mech][act/deact]
			for _, r := range rs {
				if r.Size != n || r.Load != l {
					continue
				}
				m := 0
				if r.Mechanism == "improved" {
					m = 1
				}
				if r.Change == "activation" {
					row.ActMs[m] += r.MsToValid
					row.ActDrops[m] += float64(r.Dropped)
					cnt[m][0]++
				} else {
					row.DeactMs[m] += r.MsToValid
					row.DeactDrops[m] += float64(r.Dropped)
					cnt[m][1]++
				}
			}
			for m := range 2 {
				if cnt[m][0] > 0 {
					row.ActMs[m] /= cnt[m][0]
					row.ActDrops[m] /= cnt[m][0]
				}
				if cnt[m][1] > 0 {
					row.DeactMs[m] /= cnt[m][1]
					row.DeactDrops[m] /= cnt[m][1]
				}
			}
			row.TimeRatioAct, row.TimeRatioDeact = ratio(row.ActMs), ratio(row.DeactMs)
			row.DropCutAct, row.DropCutDeact = cut(row.ActDrops), cut(row.DeactDrops)
			rows = append(rows, row)
		}
	}
	return rows
}

// ratio is basic / improved (0 when improved is 0).
func ratio(v [2]float64) float64 {
	if v[1] == 0 {
		return 0
	}
	return v[0] / v[1]
}

// cut is the fraction of basic's drops the improved mechanism avoids.
func cut(v [2]float64) float64 {
	if v[0] == 0 {
		return 0
	}
	return 1 - v[1]/v[0]
}

// ThesisTable formats the comparison with the thesis's ratios.
func ThesisTable(rep *ThesisReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| switches | load | valid tables, activation ms (basic / improved) | ratio | thesis | deactivation ms | ratio | thesis | dropped on activation (basic / improved) | cut | thesis | dropped on deactivation | cut | thesis |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Rows {
		ref, ok := thesisRefs[r.Size][r.Load]
		th := func(f func(thesisRef) string) string {
			if !ok {
				return "—"
			}
			return f(ref)
		}
		fmt.Fprintf(&b, "| %d | %g %% | %.1f / %.1f | %.2f× | %s | %.1f / %.1f | %.2f× | %s | %.0f / %.0f | %s | %s | %.0f / %.0f | %s | %s |\n",
			r.Size, r.Load,
			r.ActMs[0], r.ActMs[1], r.TimeRatioAct, th(func(t thesisRef) string { return fmt.Sprintf("%.2f×", ratio(t.actS)) }),
			r.DeactMs[0], r.DeactMs[1], r.TimeRatioDeact, th(func(t thesisRef) string { return fmt.Sprintf("%.2f×", ratio(t.deactS)) }),
			r.ActDrops[0], r.ActDrops[1], pct(r.ActDrops), th(func(t thesisRef) string { return pct(t.actDrops) }),
			r.DeactDrops[0], r.DeactDrops[1], pct(r.DeactDrops), th(func(t thesisRef) string { return pct(t.deactDrops) }))
	}
	return b.String()
}

// pct is the change in drops from basic to improved, as the thesis writes
// it (−83 %).
func pct(v [2]float64) string {
	if v[0] == 0 {
		return "n/a (basic dropped none)"
	}
	return fmt.Sprintf("%+.0f %%", -100*cut(v))
}

// writeThesis writes the evaluation to dir: thesis.json (everything),
// index.md (the table, the changes, ibsm's lines) and, when a row has
// results, thesis.svg and thesis.png (our ratios next to the thesis's).
func writeThesis(dir string, rep *ThesisReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "thesis.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	plotted := len(rep.Rows) > 0
	if plotted {
		for _, f := range []string{"thesis.svg", "thesis.png"} {
			if err := plotThesis(filepath.Join(dir, f), rep); err != nil {
				return fmt.Errorf("plot: %w", err)
			}
		}
	}
	var md strings.Builder
	o := rep.Options
	fmt.Fprintf(&md, "# Thesis chapter 8 on the soft fabric\n\n")
	fmt.Fprintf(&md, "Irregular networks of %v switches (4 ports, one host per switch, seed %d), time scale %g, traffic at %v %% of saturation "+
		"(uniform destinations, 256-byte payloads; saturation measured per network as the packets/s per host received at %g %% of the link rate offered: %s). "+
		"Per size, mechanism and load, %d switch(es) other than the SM's are killed (deactivation) and restarted (activation). "+
		"Time to valid tables is ibsm's ms_to_connectivity (from the start of the assimilation); drops are data packets dropped from the change until 300 ms after the fabric is whole. "+
		"Run took %.0f s.\n\n", o.Sizes, o.Seed, max(o.TimeScale, 1), o.Loads, saturationLoad, saturationText(rep), o.Changes, rep.Seconds)
	md.WriteString(ThesisTable(rep))
	md.WriteString("\nThesis: time to valid tables 1.96–4.13× better on activation and 2.36–4.17× on deactivation (8–32 switches); packets dropped on activation −83 to −96 %, on deactivation −53 to −74 %.\n\n")
	if plotted {
		md.WriteString("![ours against the thesis](thesis.svg)\n\nLeft: basic / improved time to valid tables; right: the change in dropped packets from basic to improved; ours next to the thesis's for each network and load. [PNG](thesis.png)\n\n")
	}
	md.WriteString("## Changes\n\n")
	md.WriteString("| switches | mechanism | load | change | switch | ms to valid | SMPs | dropped | sent | drops by cause |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&md, "| %d | %s | %g | %s | %s | %.1f | %d | %d | %d | %s |\n", r.Size, r.Mechanism, r.Load, r.Change, r.Switch, r.MsToValid, r.SMPs, r.Dropped, r.Sent, runner.Causes(r.Drops))
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(&md, "\n**Error:** %s\n", e)
	}
	md.WriteString("\n## Files\n\n- [thesis.json](thesis.json): options, saturation, every change, the rows\n")
	if plotted {
		md.WriteString("- [thesis.svg](thesis.svg), [thesis.png](thesis.png)\n")
	}
	for _, n := range o.Sizes {
		for _, m := range Mechanisms {
			f := fmt.Sprintf("thesis%d-%s-ibsm.jsonl", n, m.Name)
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				fmt.Fprintf(&md, "- [%s](%s): ibsm's lines, %d switches, %s mechanism\n", f, f, n, m.Name)
			}
		}
	}
	return os.WriteFile(filepath.Join(dir, "index.md"), []byte(md.String()), 0o644)
}

// plotThesis draws two panels of grouped bars, one group per network and
// load: the time ratios (basic / improved) and the change in drops, ours
// beside the thesis's, for activation and deactivation.
func plotThesis(path string, rep *ThesisReport) error {
	var labels []string
	for _, r := range rep.Rows {
		labels = append(labels, fmt.Sprintf("%d sw, %g %%", r.Size, r.Load))
	}
	type series struct {
		name string
		v    func(ThesisRow, thesisRef, bool) float64
	}
	refOf := func(r ThesisRow) (thesisRef, bool) { ref, ok := thesisRefs[r.Size][r.Load]; return ref, ok }
	ratios := []series{
		{"activation, ours", func(r ThesisRow, _ thesisRef, _ bool) float64 { return r.TimeRatioAct }},
		{"activation, thesis", func(_ ThesisRow, t thesisRef, ok bool) float64 { return when(ok, ratio(t.actS)) }},
		{"deactivation, ours", func(r ThesisRow, _ thesisRef, _ bool) float64 { return r.TimeRatioDeact }},
		{"deactivation, thesis", func(_ ThesisRow, t thesisRef, ok bool) float64 { return when(ok, ratio(t.deactS)) }},
	}
	drops := []series{
		{"activation, ours", func(r ThesisRow, _ thesisRef, _ bool) float64 { return -100 * cut(r.ActDrops) }},
		{"activation, thesis", func(_ ThesisRow, t thesisRef, ok bool) float64 { return when(ok, -100*cut(t.actDrops)) }},
		{"deactivation, ours", func(r ThesisRow, _ thesisRef, _ bool) float64 { return -100 * cut(r.DeactDrops) }},
		{"deactivation, thesis", func(_ ThesisRow, t thesisRef, ok bool) float64 { return when(ok, -100*cut(t.deactDrops)) }},
	}
	panel := func(title, unit string, ss []series) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = title
		p.Y.Label.Text = unit
		p.NominalX(labels...)
		p.Legend.Left = true
		w := vg.Points(10)
		for i, s := range ss {
			vs := make(plotter.Values, len(rep.Rows))
			for j, r := range rep.Rows {
				ref, ok := refOf(r)
				vs[j] = s.v(r, ref, ok)
			}
			b, err := plotter.NewBarChart(vs, w)
			if err != nil {
				return nil, err
			}
			b.LineStyle.Width = 0
			b.Color = runner.PhaseColors[i/2]
			if i%2 == 1 { // the thesis's: the same hue, lighter
				c := runner.PhaseColors[i/2]
				b.Color = color.RGBA{R: c.R/2 + 127, G: c.G/2 + 127, B: c.B/2 + 127, A: 255}
			}
			b.Offset = w * vg.Length(float64(i)-1.5)
			p.Add(b)
			p.Legend.Add(s.name, b)
		}
		if p.Y.Max > 0 {
			p.Y.Min = min(p.Y.Min, 0)
			runner.LegendRoom(p, len(ss), true)
		} else { // every change a cut: the bars hang from 0
			p.Y.Max = 0
			runner.LegendRoom(p, len(ss), false)
		}
		return p, nil
	}
	left, err := panel("time to valid tables, basic / improved", "ratio (×)", ratios)
	if err != nil {
		return err
	}
	right, err := panel("dropped packets, improved vs basic", "change (%)", drops)
	if err != nil {
		return err
	}
	return runner.SavePanels(path, vg.Length(max(9, 2+1.4*float64(len(labels))))*vg.Inch, 4.5*vg.Inch, left, right)
}

// when is v when ok, else 0 (no bar).
func when(ok bool, v float64) float64 {
	if !ok {
		return 0
	}
	return v
}

// saturationText lists each network's saturation, with the CPU its hosts
// and switches used while it was measured.
func saturationText(rep *ThesisReport) string {
	var parts []string
	for _, n := range rep.Options.Sizes {
		if sat, ok := rep.Saturation[n]; ok {
			parts = append(parts, fmt.Sprintf("%d switches %.0f (CPU: %s)", n, sat, rep.SaturationCPU[n]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
