package runner

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// writeReport writes rep to dir: report.json (everything), traffic.svg and
// traffic.png (sent and received packets per second around the steps),
// phases.svg and phases.png (the SM's time and SMPs per phase of each
// sweep and assimilation) and index.md, which links them with the capture
// and ibsm's lines (OpenSM's log).
func writeReport(dir string, rep *Report) error {
	rep.Files = []string{"index.md", "report.json"}
	if len(rep.Bins) > 0 {
		rep.Files = append(rep.Files, "traffic.svg", "traffic.png")
		for _, f := range []string{"traffic.svg", "traffic.png"} {
			if err := plotTraffic(filepath.Join(dir, f), rep); err != nil {
				return fmt.Errorf("plot: %w", err)
			}
		}
	}
	if rep.Phases != nil {
		rep.Files = append(rep.Files, "phases.svg", "phases.png")
		for _, f := range []string{"phases.svg", "phases.png"} {
			if err := plotPhases(filepath.Join(dir, f), rep.Suite, rep.Phases); err != nil {
				return fmt.Errorf("plot: %w", err)
			}
		}
	}
	if rep.SMKind == SMOpenSM {
		rep.Files = append(rep.Files, "opensm/opensm.log")
	} else {
		rep.Files = append(rep.Files, "ibsm.jsonl")
	}
	if rep.Capture != nil && rep.Capture.Error == "" {
		rep.Files = append(rep.Files, rep.Capture.File)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.md"), []byte(markdown(rep)), 0o644)
}

// plotTraffic draws the packets per second the hosts sent and received in
// each bin, with a dashed line at each step and a dotted one at the
// restoration.
func plotTraffic(path string, rep *Report) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: data packets per second, all hosts", rep.Suite)
	p.X.Label.Text = "time since the traffic started (s)"
	p.Y.Label.Text = "packets/s"
	var sent, recv plotter.XYs
	ymax := 1.0
	for _, b := range rep.Bins {
		d := b.T1 - b.T0
		if d <= 0 {
			continue
		}
		x := (b.T0 + b.T1) / 2
		sent = append(sent, plotter.XY{X: x, Y: float64(b.Sent) / d})
		recv = append(recv, plotter.XY{X: x, Y: float64(b.Received) / d})
		ymax = max(ymax, float64(b.Sent)/d, float64(b.Received)/d)
	}
	ls, err := plotter.NewLine(sent)
	if err != nil {
		return err
	}
	ls.Color = color.RGBA{R: 150, G: 150, B: 150, A: 255}
	lr, err := plotter.NewLine(recv)
	if err != nil {
		return err
	}
	lr.Color = color.RGBA{B: 200, A: 255}
	lr.Width = vg.Points(1.5)
	p.Add(ls, lr)
	p.Legend.Add("sent", ls)
	p.Legend.Add("received", lr)
	p.Legend.Top = true
	for _, e := range rep.Events {
		if e.Mark == "" {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{{X: e.T, Y: 0}, {X: e.T, Y: ymax * 1.05}})
		if err != nil {
			return err
		}
		l.Color = color.RGBA{R: 200, A: 255}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		if e.Mark == "restored" {
			l.Color = color.RGBA{G: 140, A: 255}
			l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		}
		p.Add(l)
	}
	p.Y.Min = 0
	return p.Save(9*vg.Inch, 4*vg.Inch, path)
}

// markdown is the run's index page.
func markdown(rep *Report) string {
	var b strings.Builder
	verdict := "PASSED"
	if !rep.Passed {
		verdict = "FAILED"
	}
	fmt.Fprintf(&b, "# Suite %s: %s\n\n%s\n\n", rep.Suite, verdict, rep.Summary)
	sm := fmt.Sprintf("%s on %s with `%s`", rep.SMKind, rep.SMNode, strings.Join(rep.SMArgs, " "))
	if len(rep.SMArgs) == 0 {
		sm = fmt.Sprintf("%s on %s", rep.SMKind, rep.SMNode)
	}
	if rep.SMKind == SMOpenSM {
		sm += " (Debian's OpenSM as a daemon, libumad2sim preloaded)"
	}
	fmt.Fprintf(&b, "Fabric `%s`, %s, %g %% of the link rate per host, time scale %g, started %s.\n\n",
		rep.Fabric, sm, rep.Load, max(rep.TimeScale, 1), rep.Started.UTC().Format("2006-01-02 15:04:05 MST"))
	if rep.Error != "" {
		fmt.Fprintf(&b, "**Run stopped early:** %s\n\n", rep.Error)
	}
	b.WriteString("## Checks\n\n| check | result | detail |\n|---|---|---|\n")
	for _, c := range rep.Checks {
		ok := "ok"
		switch {
		case c.Skipped:
			ok = "skipped"
		case !c.OK:
			ok = "**FAIL**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, ok, strings.ReplaceAll(c.Detail, "|", "/"))
	}
	if len(rep.Bins) > 0 {
		b.WriteString("\n## Traffic\n\n![received traffic](traffic.svg)\n\n")
		b.WriteString("Dashed red: a step; dotted green: the fabric whole again. [PNG](traffic.png)\n\n")
	}
	b.WriteString("| window | sent | received | lost | drops by cause |\n|---|---|---|---|---|\n")
	for _, w := range []struct {
		name string
		w    Window
	}{{"traffic through the steps", rep.Fault}, {"survivors, after restoration", rep.Steady}} {
		fmt.Fprintf(&b, "| %s (%.1f–%.1f s) | %d | %d | %d | %s |\n", w.name, w.w.From, w.w.To, w.w.Sent, w.w.Received, w.w.Lost, Causes(w.w.Drops))
	}
	fmt.Fprintf(&b, "\nRestored %.0f ms after the last step.\n\n## Timeline\n\n", rep.RestoredMs)
	for _, e := range rep.Events {
		fmt.Fprintf(&b, "- %7.3f s: %s\n", e.T, e.What)
	}
	b.WriteString("\n## Subnet manager\n\n")
	if rep.Phases != nil {
		b.WriteString("![time and SMPs per phase](phases.svg)\n\nEach sweep and assimilation: its time per phase (left) and its SMPs per phase (right). [PNG](phases.png)\n\n")
		if rep.Phases.Note != "" {
			b.WriteString(rep.Phases.Note + "\n\n")
		}
	}
	b.WriteString("| event | trigger | up | phases (ms / SMPs) | total ms | SMPs | to connectivity ms |\n|---|---|---|---|---|---|---|\n")
	for _, x := range rep.SM {
		var ph []string
		for _, p := range x.Phases {
			if rep.SMKind == SMOpenSM {
				ph = append(ph, fmt.Sprintf("%s %.1f", p.Name, p.Ms))
				continue
			}
			ph = append(ph, fmt.Sprintf("%s %.1f/%d", p.Name, p.Ms, p.SMPs))
		}
		conn := ""
		if x.MsToConnectivity != nil {
			conn = fmt.Sprintf("%.1f", *x.MsToConnectivity)
		}
		fmt.Fprintf(&b, "| %s | %s | %v | %s | %.1f | %d | %s |\n", x.Event, x.Trigger, x.SubnetUp, strings.Join(ph, ", "), x.MsTotal, x.SMPsTotal, conn)
	}
	if len(rep.Rules) > 0 {
		b.WriteString("\n## Fault rules\n\n| from | to | rule | matched | acted |\n|---|---|---|---|---|\n")
		for _, f := range rep.Rules {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d |\n", f.From, f.To, f.Rule, f.Counters.Matched, f.Counters.Acted)
		}
	}
	b.WriteString("\n## Files\n\n")
	for _, f := range rep.Files {
		fmt.Fprintf(&b, "- [%s](%s)", f, f)
		if rep.Capture != nil && f == rep.Capture.File {
			fmt.Fprintf(&b, ": %s, %d frames, %.1f–%.1f s (`tshark -r %s`, `ibfab pcap decode %s`)", rep.Capture.Port, rep.Capture.Frames, rep.Capture.From, rep.Capture.To, f, f)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Causes is drops by cause as text, the causes sorted.
func Causes(m map[string]uint64) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for c, v := range m {
		out = append(out, fmt.Sprintf("%s %d", c, v))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
