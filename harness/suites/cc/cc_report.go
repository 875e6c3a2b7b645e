package cc

import (
	"fmt"
	"image/color"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"ibfab/harness/suites/runner"
	"ibfab/topologies"
)

var ccColors = map[CCScheme]color.Color{
	CCOff: color.RGBA{R: 110, G: 110, B: 110, A: 255},
	CCIBA: color.RGBA{R: 200, A: 255},
	CCDRB: color.RGBA{B: 200, A: 255},
}

// writeCCReport writes the experiments to dir: report.json (every
// measurement), the plots (PNG and SVG) and index.md.
func writeCCReport(dir string, rep *CCReport) error {
	rep.Files = []string{"index.md", "report.json"}
	for i := range rep.Experiments {
		files, err := plotCCExperiment(dir, &rep.Experiments[i])
		if err != nil {
			return fmt.Errorf("plot %s: %w", rep.Experiments[i].ID, err)
		}
		rep.Files = append(rep.Files, files...)
	}
	return runner.WriteReportFiles(dir, rep, func() string { return ccMarkdown(rep) })
}

// ccPlot is one figure to draw.
type ccPlot struct {
	name  string // file name without extension
	build func() (*plot.Plot, error)
}

// ccPlots are an experiment's figures: accepted and latency against
// offered load per pattern (sweeps); the inter-switch links' load over
// time per scheme and the peak per scheme, the CCTI per source and the
// active paths per pair (hot spots).
func ccPlots(e *CCExperimentReport) []ccPlot {
	var ps []ccPlot
	for _, pat := range e.Patterns {
		ps = append(ps,
			ccPlot{fmt.Sprintf("%s-%s-accepted", e.ID, pat.Name), func() (*plot.Plot, error) { return plotSweep(e, pat.Name, false) }},
			ccPlot{fmt.Sprintf("%s-%s-latency", e.ID, pat.Name), func() (*plot.Plot, error) { return plotSweep(e, pat.Name, true) }})
	}
	if len(e.Hot) > 0 {
		ps = append(ps, ccPlot{e.ID + "-peak", func() (*plot.Plot, error) { return plotPeak(e) }})
	}
	for _, h := range e.Hot {
		if len(h.Samples) == 0 {
			continue
		}
		ps = append(ps, ccPlot{fmt.Sprintf("%s-%s-links", e.ID, h.Scheme), func() (*plot.Plot, error) { return plotLinks(e, h) }})
		switch h.Scheme {
		case CCIBA:
			ps = append(ps, ccPlot{fmt.Sprintf("%s-%s-ccti", e.ID, h.Scheme), func() (*plot.Plot, error) {
				return plotPerKey(e, h, "CCTI per burst source", "CCTI", func(s CCHotSample) map[string]float64 { return toFloat(s.CCTI) })
			}})
		case CCDRB:
			ps = append(ps, ccPlot{fmt.Sprintf("%s-%s-aliases", e.ID, h.Scheme), func() (*plot.Plot, error) {
				return plotPerKey(e, h, "paths in use per burst pair", "active paths", func(s CCHotSample) map[string]float64 { return toFloat(s.Active) })
			}})
		}
	}
	return ps
}

func plotCCExperiment(dir string, e *CCExperimentReport) ([]string, error) {
	var files []string
	for _, c := range ccPlots(e) {
		p, err := c.build()
		if err != nil {
			return nil, err
		}
		for _, ext := range []string{"png", "svg"} {
			name := c.name + "." + ext
			if err := p.Save(9*vg.Inch, 4*vg.Inch, filepath.Join(dir, name)); err != nil {
				return nil, err
			}
			files = append(files, name)
		}
	}
	return files, nil
}

// plotSweep draws a pattern's accepted throughput (or mean latency)
// against offered load, one line per scheme; the accepted plot has the
// diagonal, accepted = offered.
func plotSweep(e *CCExperimentReport, pat string, latency bool) (*plot.Plot, error) {
	p := plot.New()
	p.X.Label.Text = "offered load per source (Mb/s)"
	if latency {
		p.Title.Text = fmt.Sprintf("%s %s on %s: mean latency from generation", e.ID, pat, e.Fabric)
		p.Y.Label.Text = "µs (emulated)"
	} else {
		p.Title.Text = fmt.Sprintf("%s %s on %s: accepted throughput", e.ID, pat, e.Fabric)
		p.Y.Label.Text = "accepted per source (Mb/s)"
	}
	var top float64
	for _, s := range []CCScheme{CCOff, CCIBA, CCDRB} {
		c := curve(e.Points, pat, s)
		if len(c) == 0 {
			continue
		}
		var xy plotter.XYs
		for _, pt := range c {
			y := pt.AcceptedMbps
			if latency {
				y = pt.MeanLatencyUs
			}
			xy = append(xy, plotter.XY{X: pt.OfferedMbps, Y: y})
			top = max(top, pt.OfferedMbps)
		}
		if err := runner.AddLine(p, xy, s.String(), ccColors[s], false); err != nil {
			return nil, err
		}
	}
	if !latency && top > 0 {
		if err := runner.AddLine(p, plotter.XYs{{X: 0, Y: 0}, {X: top, Y: top}}, "offered", ccColors[CCOff], true); err != nil {
			return nil, err
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Y.Min = 0
	return p, nil
}

// plotPeak draws each scheme's highest inter-switch link load over time.
func plotPeak(e *CCExperimentReport) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s on %s: highest inter-switch link load", e.ID, e.Fabric)
	p.X.Label.Text = "time (ms, emulated)"
	p.Y.Label.Text = "load (fraction of the link rate)"
	for _, h := range e.Hot {
		var xy plotter.XYs
		for _, s := range h.Samples {
			peak, _ := peakMean(s.Loads)
			xy = append(xy, plotter.XY{X: s.T, Y: peak})
		}
		if len(xy) == 0 {
			continue
		}
		if err := runner.AddLine(p, xy, h.Scheme.String(), ccColors[h.Scheme], false); err != nil {
			return nil, err
		}
	}
	p.Legend.Top = true
	p.Y.Min = 0
	return p, nil
}

// plotLinks draws every inter-switch link's load over one run, the hot
// link (the run's highest during the burst) in the scheme's colour.
func plotLinks(e *CCExperimentReport, h *CCHotRun) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s on %s: inter-switch link loads (hot link %s)", e.ID, h.Scheme, e.Fabric, h.HotLink)
	p.X.Label.Text = "time (ms, emulated)"
	p.Y.Label.Text = "load (fraction of the link rate)"
	series := map[string]plotter.XYs{}
	for _, s := range h.Samples {
		for k, v := range s.Loads {
			series[k] = append(series[k], plotter.XY{X: s.T, Y: v})
		}
	}
	for _, k := range runner.Keys(series) {
		if k == h.HotLink {
			continue
		}
		if err := runner.AddLine(p, series[k], "", color.RGBA{R: 190, G: 190, B: 190, A: 255}, false); err != nil {
			return nil, err
		}
	}
	if xy := series[h.HotLink]; len(xy) > 0 {
		if err := runner.AddLine(p, xy, h.HotLink, ccColors[h.Scheme], false); err != nil {
			return nil, err
		}
	}
	p.Legend.Top = true
	p.Y.Min = 0
	return p, nil
}

// plotPerKey draws one value per source or pair over a run.
func plotPerKey(e *CCExperimentReport, h *CCHotRun, what, unit string, get func(CCHotSample) map[string]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s on %s: %s", e.ID, h.Scheme, e.Fabric, what)
	p.X.Label.Text = "time (ms, emulated)"
	p.Y.Label.Text = unit
	series := map[string]plotter.XYs{}
	for _, s := range h.Samples {
		for k, v := range get(s) {
			series[k] = append(series[k], plotter.XY{X: s.T, Y: v})
		}
	}
	palette := runner.PlotPalette()
	for i, k := range runner.Keys(series) {
		if err := runner.AddLine(p, series[k], k, palette[i%len(palette)], false); err != nil {
			return nil, err
		}
	}
	p.Legend.Top = true
	p.Y.Min = 0
	return p, nil
}

func toFloat(m map[string]int) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = float64(v)
	}
	return out
}

// rateNote says, at a rate other than 4x SDR, how the experiments'
// figures tuned at 4x SDR were scaled to it.
func rateNote(r topologies.Rate) string {
	if r == runner.TunedRate {
		return ""
	}
	return fmt.Sprintf("; the time scales, loads, windows and CCTI timer are those tuned at 4x SDR scaled by %g, "+
		"the rate's over 4x SDR's: the same experiments in packet times", runner.RateFactor(r))
}

// ccMarkdown is the index: the table beside the paper's, a sentence per
// disagreement, the checks, each experiment with its plots.
func ccMarkdown(rep *CCReport) string {
	var b strings.Builder
	runner.WritePreamble(&b, "Congestion control: IBA CC against DRB (issue 19, seed 004)", rep.Passed, rep.Quick, rep.Started, rep.ElapsedS)
	rate := runner.OrTuned(rep.LinkRate)
	fmt.Fprintf(&b, "Every rate and latency is in emulated time; each fabric runs at its own time scale "+
		"(below), chosen so that the machine keeps up with the links. Every link is %s (%g Gb/s of data)%s; traffic is "+
		"flows of %d-byte messages (Poisson arrivals) in %d-byte packets, offered load in Mb/s of wire bytes per source; "+
		"latency runs from the message's generation, time queued at the source included (backlog up to %d packets). "+
		"Windows (emulated): warm-up %v, measurement %v; hot spot %v before, %v burst, %v after, sampled every %v.\n\n",
		rate, float64(runner.RateBps(rate))/1e9, rateNote(rate), ccMessageBytes, ccPayload, ccMaxBacklog,
		rep.Windows.Warmup, rep.Windows.Measure, rep.Windows.Before, rep.Windows.Burst, rep.Windows.After, rep.Windows.Sample)
	c := rep.Config
	fmt.Fprintf(&b, "Congestion control (ibsm `--cc`, OpenSM's cc_* options; the file is in each CC fabric's directory): "+
		"switch threshold %d (a VL's queue at %d/16 of its buffer), marking rate %d, packet size %d; CAs per SL 0–%d: "+
		"CCTI_Timer %d × 1.024 µs, CCTI_Increase %d, trigger %d, CCTI_Min %d; CCT of %d entries, shift %d, multiplier = index. "+
		"DRB: cap %d paths over LMC 2.\n\n",
		c.Threshold, 16-int(c.Threshold), c.MarkingRate, c.PacketSize, c.SLs-1, c.CCTITimer, c.CCTIIncrease, c.TriggerThreshold,
		c.CCTIMin, len(c.CCT), firstShift(c.CCT), ccDRBCap)

	b.WriteString("## Our figures beside the paper's\n\n| exp. | pattern | metric | ours | paper | verdict |\n|---|---|---|---|---|---|\n")
	for _, r := range rep.Comparisons {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.Experiment, r.Pattern, r.Metric, r.Ours, r.Paper, r.Verdict)
	}
	if ds := disagreements(rep.Comparisons); len(ds) > 0 {
		b.WriteString("\nWhere ours differ:\n\n")
		for _, d := range ds {
			fmt.Fprintf(&b, "- %s\n", d)
		}
	}
	b.WriteString("\n## Must-show checks\n\n")
	if len(rep.Checks) == 0 {
		b.WriteString("None ran (they need D0, D5 and D6).\n")
	}
	for _, ch := range rep.Checks {
		fmt.Fprintf(&b, "- %s %s: %s\n", runner.Mark(ch), ch.Name, ch.Detail)
	}
	for i := range rep.Experiments {
		ccExperimentMarkdown(&b, &rep.Experiments[i])
	}
	b.WriteString("\n## Files\n\n")
	for _, f := range rep.Files {
		if strings.HasSuffix(f, ".svg") {
			continue
		}
		fmt.Fprintf(&b, "- [%s](%s)\n", f, f)
	}
	return b.String()
}

func firstShift(cct []CCTEntry) uint8 {
	if len(cct) == 0 {
		return 0
	}
	return cct[0].Shift
}

func ccExperimentMarkdown(b *strings.Builder, e *CCExperimentReport) {
	fmt.Fprintf(b, "\n## %s: %s\n\n", e.ID, e.Title)
	fmt.Fprintf(b, "Fabric `%s` (%s), time scale %g, ibsm `%s`.\n\n", e.FabricName, e.Fabric, e.TimeScale, strings.Join(e.SMArgs, " "))
	if e.Error != "" {
		fmt.Fprintf(b, "**Did not complete:** %s\n\n", e.Error)
	}
	for _, p := range e.Patterns {
		fmt.Fprintf(b, "- %s: %d sources, %d fixed points (send nothing)\n", p.Name, p.Sources, p.Fixed)
	}
	if len(e.Points) > 0 {
		b.WriteString("\n| pattern | scheme | offered | injected | accepted | mean µs | p99 µs | peak link | marks | CCTI | paths | dropped at source |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, p := range e.Points {
			if p.Error != "" {
				fmt.Fprintf(b, "| %s | %s | %.0f | error: %s |||||||||\n", p.Pattern, p.Scheme, p.OfferedMbps, p.Error)
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %.0f | %.0f | %.0f | %.1f | %.1f | %.2f | %d | %.1f | %.2f | %d |\n", p.Pattern, p.Scheme, p.OfferedMbps,
				p.InjectedMbps, p.AcceptedMbps, p.MeanLatencyUs, p.P99LatencyUs, p.PeakLinkLoad, p.FECNMarks, p.MeanCCTI, p.MeanActive, p.SourceDropped)
		}
		for _, p := range e.Patterns {
			fmt.Fprintf(b, "\n![%s accepted](%s-%s-accepted.png) ![%s latency](%s-%s-latency.png)\n", p.Name, e.ID, p.Name, p.Name, e.ID, p.Name)
		}
	}
	if e.Burst != nil {
		fmt.Fprintf(b, "\nHot spot: %s, each at %.0f %% of its link.\n\n", strings.Join(e.Burst.Pairs, ", "), e.Burst.Load*100)
		b.WriteString("| scheme | hot link | peak load | injected / offered Mb/s | accepted | mean µs | p99 µs | marks before / during | BECNs | CCTI max / end | paths max / end | opens / closes | backlog |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, h := range e.Hot {
			fmt.Fprintf(b, "| %s | %s | %.2f | %.0f / %.0f | %.0f | %.1f | %.1f | %d / %d | %d | %d / %d | %d / %d | %d / %d | %d |\n", h.Scheme, h.HotLink, h.PeakLoad,
				h.InjectedMbps, h.OfferedMbps, h.AcceptedMbps, h.MeanLatencyUs, h.P99LatencyUs, h.FECNBefore, h.FECNBurst, h.BECNs,
				h.MaxCCTI, h.FinalCCTI, h.MaxActive, h.FinalActive, h.Opens, h.Closes, h.MaxBacklog)
		}
		fmt.Fprintf(b, "\n![peak link load](%s-peak.png)\n", e.ID)
		for _, h := range e.Hot {
			fmt.Fprintf(b, "![%s links](%s-%s-links.png)\n", h.Scheme, e.ID, h.Scheme)
			switch h.Scheme {
			case CCIBA:
				fmt.Fprintf(b, "![%s CCTI](%s-%s-ccti.png)\n", h.Scheme, e.ID, h.Scheme)
			case CCDRB:
				fmt.Fprintf(b, "![%s aliases](%s-%s-aliases.png)\n", h.Scheme, e.ID, h.Scheme)
			}
		}
	}
	if len(e.Events) > 0 {
		b.WriteString("\n<details><summary>fabric log</summary>\n\n")
		for _, ev := range e.Events {
			fmt.Fprintf(b, "- %s\n", ev)
		}
		b.WriteString("\n</details>\n")
	}
}
