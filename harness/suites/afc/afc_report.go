package afc

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"ibfab/harness/suites/runner"
	"ibfab/topologies"
)

// AFCReport is `ibfab run afc`'s report.
type AFCReport struct {
	Started   time.Time         `json:"started"`
	Quick     bool              `json:"quick"`
	LinkRate  topologies.Rate   `json:"link_rate"` // every link's
	ElapsedS  float64           `json:"elapsed_s"`
	Passed    bool              `json:"passed"`
	Windows   afcWindows        `json:"windows"`
	Fabrics   []AFCFabricReport `json:"fabrics"`
	Points    []AFCPoint        `json:"points"`
	Exchanges []AFCExchange     `json:"exchanges,omitempty"`
	Mechanism []AFCMechanism    `json:"mechanism,omitempty"`
	Claims    []AFCClaim        `json:"claims"`
	Checks    []runner.Check    `json:"checks"`
	Files     []string          `json:"files"`
}

// AFCFabricReport is one fabric of the run.
type AFCFabricReport struct {
	K           int      `json:"k"`
	Name        string   `json:"name"`
	Hosts       int      `json:"hosts"`
	Switches    int      `json:"switches"`
	TimeScale   float64  `json:"time_scale"`
	SMArgs      []string `json:"sm_args"`
	Experiments []string `json:"experiments"`
	ElapsedS    float64  `json:"elapsed_s"`
	Error       string   `json:"error,omitempty"`
	Events      []string `json:"events,omitempty"`
}

var afcQueuingColors = map[AFCQueuing]color.Color{
	AFC1VC:     color.RGBA{R: 200, A: 255},
	AFCDBBM:    color.RGBA{G: 140, A: 255},
	AFCFlow2SL: color.RGBA{B: 200, A: 255},
	AFCVFtree:  color.RGBA{R: 200, G: 120, A: 255},
}

// writeAFCReport writes report.json, the figures and index.md to dir.
func writeAFCReport(dir string, rep *AFCReport) error {
	rep.Files = []string{"index.md", "report.json"}
	figs, err := afcFigures(rep)
	if err != nil {
		return err
	}
	for _, f := range figs {
		names, err := f.save(dir)
		if err != nil {
			return fmt.Errorf("figure %s: %w", f.name, err)
		}
		rep.Files = append(rep.Files, names...)
	}
	return runner.WriteReportFiles(dir, rep, func() string { return afcMarkdown(rep, figs) })
}

// afcFigure is a grid of plots saved as one PNG and one SVG.
type afcFigure struct {
	name    string
	caption string
	plots   [][]*plot.Plot
	w, h    vg.Length
}

// save draws the grid into name.png and name.svg.
func (f afcFigure) save(dir string) ([]string, error) {
	t := draw.Tiles{Rows: len(f.plots), Cols: len(f.plots[0]),
		PadX: vg.Millimeter * 2, PadY: vg.Millimeter * 2, PadTop: vg.Millimeter, PadBottom: vg.Millimeter,
		PadLeft: vg.Millimeter, PadRight: vg.Millimeter}
	png := vgimg.PngCanvas{Canvas: vgimg.New(f.w, f.h)}
	svg := vgsvg.New(f.w, f.h)
	var names []string
	for _, c := range []struct {
		ext    string
		canvas vg.CanvasWriterTo
	}{{"png", png}, {"svg", svg}} {
		dc := draw.New(c.canvas)
		cs := plot.Align(f.plots, t, dc)
		for j := range f.plots {
			for i, p := range f.plots[j] {
				if p != nil {
					p.Draw(cs[j][i])
				}
			}
		}
		name := f.name + "." + c.ext
		if err := writeTo(filepath.Join(dir, name), c.canvas); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

func writeTo(path string, w io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// afcFigures are the report's figures: per K and switch architecture a
// grid like the paper's (rows UT, HS10, HS25; columns the routings; a
// line per queuing scheme), E5's execution times, E6's time series.
func afcFigures(rep *AFCReport) ([]afcFigure, error) {
	var out []afcFigure
	type panelKey struct {
		k   int
		voq bool
	}
	var keys []panelKey
	for _, p := range rep.Points {
		if k := (panelKey{p.K, p.VOQ}); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, key := range keys {
		f, err := sweepFigure(rep.Points, key.k, key.voq)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	if len(rep.Exchanges) > 0 {
		p, err := exchangePlot(rep.Exchanges)
		if err != nil {
			return nil, err
		}
		out = append(out, afcFigure{name: "e5-exec", caption: "E5: execution time of the all-to-all exchange",
			plots: [][]*plot.Plot{{p}}, w: 9 * vg.Inch, h: 4 * vg.Inch})
	}
	for _, m := range rep.Mechanism {
		if len(m.Samples) == 0 {
			continue
		}
		occ, adapted, err := mechanismPlots(m)
		if err != nil {
			return nil, err
		}
		out = append(out, afcFigure{name: "e6-" + strings.ToLower(m.Routing.String()),
			caption: fmt.Sprintf("E6 %s (%s): switch VL occupancy and adapted packets over time", m.Routing, m.Queuing),
			plots:   [][]*plot.Plot{{occ}, {adapted}}, w: 8 * vg.Inch, h: 6 * vg.Inch})
	}
	return out, nil
}

func arch(voq bool) string {
	if voq {
		return "voq"
	}
	return "iq"
}

// sweepFigure is the grid of normalized throughput against load on one K
// and architecture.
func sweepFigure(ps []AFCPoint, k int, voq bool) (afcFigure, error) {
	var traffics []AFCTraffic
	for _, t := range []AFCTraffic{AFCUniform, AFCHS10, AFCHS25} {
		if slices.ContainsFunc(ps, func(p AFCPoint) bool { return p.K == k && p.VOQ == voq && p.Traffic == t }) {
			traffics = append(traffics, t)
		}
	}
	grid := make([][]*plot.Plot, len(traffics))
	for j, t := range traffics {
		for _, r := range afcRoutings {
			p := plot.New()
			p.Title.Text = fmt.Sprintf("%s, %s", t, r)
			p.X.Label.Text, p.Y.Label.Text = "load %", "normalized throughput"
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 100, 0, 1
			for _, q := range afcQueuings {
				var xy plotter.XYs
				for _, x := range ps {
					if x.K == k && x.VOQ == voq && x.Traffic == t && x.Routing == r && x.Queuing == q && x.Error == "" {
						xy = append(xy, plotter.XY{X: x.Load, Y: x.Accepted})
					}
				}
				if len(xy) == 0 {
					continue
				}
				slices.SortFunc(xy, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
				if err := runner.AddLine(p, xy, q.String(), afcQueuingColors[q], false); err != nil {
					return afcFigure{}, err
				}
			}
			p.Legend.Top, p.Legend.Left = true, true
			grid[j] = append(grid[j], p)
		}
	}
	name := fmt.Sprintf("sweep-k%d-%s", k, arch(voq))
	caption := fmt.Sprintf("RLFT K=%d, switches %s: normalized accepted throughput against load", k,
		map[bool]string{false: "without VOQs", true: "with VOQs"}[voq])
	return afcFigure{name: name, caption: caption, plots: grid, w: 14 * vg.Inch, h: vg.Length(len(traffics)) * 3.2 * vg.Inch}, nil
}

// exchangePlot is E5's execution times: a group of bars per routing and
// architecture, a bar per queuing scheme.
func exchangePlot(ex []AFCExchange) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "E5: all-to-all exchange (PTRANS stand-in)"
	p.Y.Label.Text = "execution time (emulated µs)"
	type group struct {
		r   AFCRouting
		voq bool
	}
	var groups []group
	for _, e := range ex {
		if g := (group{e.Routing, e.VOQ}); !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	var names []string
	for _, g := range groups {
		names = append(names, fmt.Sprintf("%s %s", g.r, strings.ToUpper(arch(g.voq))))
	}
	w := vg.Points(10)
	for i, q := range afcQueuings {
		vals := make(plotter.Values, len(groups))
		for gi, g := range groups {
			for _, e := range ex {
				if e.Routing == g.r && e.VOQ == g.voq && e.Queuing == q && e.Error == "" {
					vals[gi] = e.ExecUs
				}
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = afcQueuingColors[q]
		b.LineStyle.Width = 0
		b.Offset = vg.Length(i-2) * w
		p.Add(b)
		p.Legend.Add(q.String(), b)
	}
	p.NominalX(names...)
	p.Legend.Top = true
	return p, nil
}

// mechanismPlots are E6's occupancy per VL and adapted packets per
// interval over time.
func mechanismPlots(m AFCMechanism) (*plot.Plot, *plot.Plot, error) {
	occ := plot.New()
	occ.Title.Text = fmt.Sprintf("E6 %s: fullest switch input buffer per VL", m.Routing)
	occ.X.Label.Text, occ.Y.Label.Text = "emulated ms", "occupancy"
	occ.Y.Min, occ.Y.Max = 0, 1
	var vls []string
	for _, s := range m.Samples {
		for vl := range s.Occupancy {
			if !slices.Contains(vls, vl) {
				vls = append(vls, vl)
			}
		}
	}
	slices.Sort(vls)
	pal := runner.PlotPalette()
	for i, vl := range vls {
		var xy plotter.XYs
		for _, s := range m.Samples {
			xy = append(xy, plotter.XY{X: s.TMs, Y: s.Occupancy[vl]})
		}
		if err := runner.AddLine(occ, xy, vl, pal[i%len(pal)], false); err != nil {
			return nil, nil, err
		}
	}
	if m.Threshold > 0 && len(m.Samples) > 0 {
		th := plotter.XYs{{X: m.Samples[0].TMs, Y: m.Threshold}, {X: m.Samples[len(m.Samples)-1].TMs, Y: m.Threshold}}
		if err := runner.AddLine(occ, th, "threshold", color.Gray{Y: 120}, true); err != nil {
			return nil, nil, err
		}
	}
	ad := plot.New()
	ad.Title.Text = "adapted packets and queues holding hot-spot packets, per interval"
	ad.X.Label.Text = "emulated ms"
	var a, hs, ha plotter.XYs
	for _, s := range m.Samples {
		a = append(a, plotter.XY{X: s.TMs, Y: float64(s.Adapted)})
		hs = append(hs, plotter.XY{X: s.TMs, Y: float64(s.HotSQS)})
		ha = append(ha, plotter.XY{X: s.TMs, Y: float64(s.HotAFC)})
	}
	for _, l := range []struct {
		xy   plotter.XYs
		name string
		c    color.Color
	}{{a, "adapted packets", pal[0]}, {hs, "SQS VL queues with hot-spot packets", pal[1]}, {ha, "AFC queues with hot-spot packets", pal[2]}} {
		if err := runner.AddLine(ad, l.xy, l.name, l.c, false); err != nil {
			return nil, nil, err
		}
	}
	ad.Legend.Top = true
	return occ, ad, nil
}

// afcRateNote says, at a rate other than 4x SDR, how the figures tuned
// at 4x SDR were scaled to it.
func afcRateNote(r topologies.Rate) string {
	if r == runner.TunedRate {
		return ""
	}
	return fmt.Sprintf(" (time scales and windows tuned at 4x SDR, scaled by %g, the rate's over 4x SDR's: the same experiments in packet times)",
		runner.RateFactor(r))
}

// afcMarkdown is the index: the claims beside ours, the checks, then each
// part with its figures and numbers.
func afcMarkdown(rep *AFCReport, figs []afcFigure) string {
	var b strings.Builder
	runner.WritePreamble(&b, "Adaptive routing with adapted-flow isolation in fat trees (issue 20, seed 003)", rep.Passed, rep.Quick, rep.Started, rep.ElapsedS)
	rate := runner.OrTuned(rep.LinkRate)
	fmt.Fprintf(&b, "Every time and rate is emulated; each fabric runs at its own time scale (below). "+
		"Every link is %s (%g Gb/s of data)%s where the paper's are 40 Gb/s: only ratios matter, and every window is in emulated time "+
		"(warm-up %v, measurement %v, drain %v; E6: %v uniform, %v with the hot spot, %v after, sampled every %v). "+
		"Packets are %d-byte UD payloads (the 4 KB MTU); switch input buffers are 128 KB per port split equally over the VLs in use "+
		"(1VC 2048 blocks; 1VC+AFC 2×1024; 3VC 3×682; 3VC+AFC 4×512), the AFC the VL after the SQS VLs; AFI's threshold 75 %%.\n\n",
		rate, float64(runner.RateBps(rate))/1e9, afcRateNote(rate), rep.Windows.Warmup, rep.Windows.Measure, rep.Windows.Drain,
		rep.Windows.Before, rep.Windows.Hot, rep.Windows.After, rep.Windows.Sample, afcPayload)
	b.WriteString("The paper's fabrics (config #1: 432 hosts, 180 switches; config #2: 11,664 hosts, 1,620 switches, 36-port) are far " +
		"beyond a process per device on this machine; we run RLFT(2,3) (16 hosts, 20 switches), RLFT(3,3) (54 hosts, 45 switches) and, for E2, RLFT(4,3) (128 hosts, 80 switches), " +
		"with the same 10 % and 25 % hot-spot shares (2 and 4 sources on K=2, 6 and 14 on K=3, 13 and 32 on K=4). The paper's text kept no numbers, " +
		"only trends: the table checks each.\n\n")
	b.WriteString("Queuing schemes as the SL a source gives each destination, SL s on VL s (formulas ours where the paper gives none): " +
		"1VC SL 0; DBBM SL = DLID mod 3; vFtree SL = (source leaf + destination leaf) mod 3; Flow2SL SL = (g(dst) − g(src)) mod 3 " +
		"with g(x) = ⌊3x/N⌋ over host indices. Hot-spot sources send at their full link rate to one destination for the whole run " +
		"(the load of the paper's thousand sources at any load); the others, and the hot destination, send uniformly at the swept load.\n\n")

	b.WriteString("## The paper's claims beside ours\n\n| claim | K | paper | ours | verdict |\n|---|---|---|---|---|\n")
	for _, c := range rep.Claims {
		k := fmt.Sprint(c.K)
		if c.K == 0 {
			k = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c.ID, k, c.Paper, c.Ours, c.Verdict)
	}
	var why []string
	for _, c := range rep.Claims {
		if c.Why != "" {
			why = append(why, fmt.Sprintf("- **%s (K=%d, %s)**: %s.", c.ID, c.K, c.Verdict, c.Why))
		}
	}
	if len(why) > 0 {
		b.WriteString("\nWhere ours differ, and why:\n\n" + strings.Join(why, "\n") + "\n")
	}
	b.WriteString("\n## Checks\n\n")
	for _, ch := range rep.Checks {
		fmt.Fprintf(&b, "- %s %s: %s\n", runner.Mark(ch), ch.Name, ch.Detail)
	}
	b.WriteString("\n## Fabrics\n\n| K | fabric | hosts | switches | time scale | experiments | s | ibsm |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range rep.Fabrics {
		fmt.Fprintf(&b, "| %d | `%s` | %d | %d | %g | %s | %.0f | `%s` |\n", f.K, f.Name, f.Hosts, f.Switches, f.TimeScale,
			strings.Join(f.Experiments, ", "), f.ElapsedS, strings.Join(f.SMArgs, " "))
		if f.Error != "" {
			fmt.Fprintf(&b, "\n**K=%d did not complete:** %s\n\n", f.K, f.Error)
		}
	}
	b.WriteString("\n## Figures\n\n")
	for _, f := range figs {
		fmt.Fprintf(&b, "**%s**\n\n![%s](%s.png)\n\n", f.caption, f.name, f.name)
	}
	afcPointsMarkdown(&b, rep)
	b.WriteString("\n## Files\n\n")
	for _, f := range rep.Files {
		if !strings.HasSuffix(f, ".svg") {
			fmt.Fprintf(&b, "- [%s](%s)\n", f, f)
		}
	}
	return b.String()
}

// afcPointsMarkdown lists the measurements.
func afcPointsMarkdown(b *strings.Builder, rep *AFCReport) {
	if len(rep.Points) > 0 {
		b.WriteString("\n## Load sweeps (E1-E4)\n\n| K | traffic | setup | load % | offered | accepted | hot | adapted | dropped at source |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, p := range rep.Points {
			if p.Error != "" {
				fmt.Fprintf(b, "| %d | %s | %s | %.0f | error: %s |||||\n", p.K, p.Traffic, p.afcSetup, p.Load, p.Error)
				continue
			}
			fmt.Fprintf(b, "| %d | %s | %s | %.0f | %.3f | %.3f | %.3f | %d | %d |\n", p.K, p.Traffic, p.afcSetup, p.Load,
				p.Offered, p.Accepted, p.HotAccepted, p.Adapted, p.SourceDrops)
		}
	}
	if len(rep.Exchanges) > 0 {
		b.WriteString("\n## E5: all-to-all exchange\n\n| K | setup | execution µs | packets received / expected |\n|---|---|---|---|\n")
		for _, e := range rep.Exchanges {
			if e.Error != "" {
				fmt.Fprintf(b, "| %d | %s | error: %s | %d / %d |\n", e.K, e.afcSetup, e.Error, e.Received, e.Expected)
				continue
			}
			fmt.Fprintf(b, "| %d | %s | %.1f | %d / %d |\n", e.K, e.afcSetup, e.ExecUs, e.Received, e.Expected)
		}
	}
	if len(rep.Mechanism) > 0 {
		b.WriteString("\n## E6: the mechanism\n\n| routing | queuing | SQS VL queues with hot-spot packets | AFC queues | adapted while hot | adapted at the end | fullest VL at the end |\n|---|---|---|---|---|---|---|\n")
		for _, m := range rep.Mechanism {
			if m.Error != "" {
				fmt.Fprintf(b, "| %s | %s | error: %s |||||\n", m.Routing, m.Queuing, m.Error)
				continue
			}
			fmt.Fprintf(b, "| %s | %s | %d | %d | %d | %d | %.0f %% |\n", m.Routing, m.Queuing, len(m.HotSQS), len(m.HotAFC),
				m.AdaptedHot, m.AdaptedTail, 100*m.EndOccupancy)
		}
	}
}
