package qos

import (
	"encoding/json"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"ibfab/harness/suites/runner"
)

// writeQoSReport writes the experiment to dir: report.json, per mode
// throughput and latency plots (MODE-throughput.png/svg,
// MODE-latency.png/svg) and index.md, which puts the modes side by side.
func writeQoSReport(dir string, rep *QoSReport) error {
	rep.Files = []string{"index.md", "report.json"}
	for _, m := range rep.Modes {
		if len(m.Series) == 0 {
			continue
		}
		for _, kind := range []string{"throughput", "latency"} {
			for _, ext := range []string{"svg", "png"} {
				name := fmt.Sprintf("%s-%s.%s", m.Mode, kind, ext)
				if err := plotQoS(filepath.Join(dir, name), m, kind); err != nil {
					return fmt.Errorf("plot: %w", err)
				}
				rep.Files = append(rep.Files, name)
			}
		}
		if m.Capture != nil && m.Capture.Error == "" {
			rep.Files = append(rep.Files, filepath.Join(m.Mode.String(), m.Capture.File))
		}
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "index.md"), []byte(qosMarkdown(rep)), 0o644)
}

var qosColors = map[string]color.Color{
	"f1":          color.RGBA{B: 200, A: 255},
	"f2":          color.RGBA{R: 200, A: 255},
	"best-effort": color.RGBA{R: 140, G: 140, B: 140, A: 255},
}

// plotQoS draws, per flow (and best effort for throughput), the received
// rate or the interval's p99 latency at b1 over the run, with each flow's
// request as a dashed line.
func plotQoS(path string, m QoSModeReport, kind string) error {
	p := plot.New()
	p.X.Label.Text = "time (s, real)"
	if kind == "throughput" {
		p.Title.Text = fmt.Sprintf("%s: received at b1 (Mb/s, emulated time, scale %g)", m.Mode, m.TimeScale)
		p.Y.Label.Text = "Mb/s"
	} else {
		p.Title.Text = fmt.Sprintf("%s: one-way latency p99 per %v (µs, emulated)", m.Mode, qosPoll)
		p.Y.Label.Text = "µs"
	}
	names := []string{"f1", "f2"}
	if kind == "throughput" {
		names = append(names, "best-effort")
	}
	for _, n := range names {
		var xy plotter.XYs
		for _, s := range m.Series {
			v, ok := s.Mbps[n]
			if kind == "latency" {
				v, ok = s.P99[n]
			}
			if ok {
				xy = append(xy, plotter.XY{X: s.T, Y: v})
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color, l.Width = qosColors[n], vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(n, l)
		if err := addTarget(p, m, n, kind, xy); err != nil {
			return err
		}
	}
	p.Legend.Top = true
	p.Y.Min = 0
	return p.Save(9*vg.Inch, 4*vg.Inch, path)
}

// addTarget draws flow n's request (rate or latency bound) as a dashed
// line across the series.
func addTarget(p *plot.Plot, m QoSModeReport, n, kind string, xy plotter.XYs) error {
	i := slices.IndexFunc(m.Flows, func(f QoSFlowResult) bool { return f.ID == n })
	if i < 0 {
		return nil
	}
	y := m.Flows[i].RequestedMbps
	if kind == "latency" {
		y = m.Flows[i].BoundUs
	}
	l, err := plotter.NewLine(plotter.XYs{{X: xy[0].X, Y: y}, {X: xy[len(xy)-1].X, Y: y}})
	if err != nil {
		return err
	}
	l.Color = qosColors[n]
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(l)
	return nil
}

// qosMarkdown is the experiment's index page.
func qosMarkdown(rep *QoSReport) string {
	var b strings.Builder
	verdict := "PASS"
	if !rep.Passed {
		verdict = "FAIL"
	}
	fmt.Fprintf(&b, "# QoS: arbitration-table management on a saturated bottleneck — %s\n\n", verdict)
	qosIntro(&b, rep)
	b.WriteString("## Flows side by side\n\n")
	b.WriteString("| mode | flow | SL | requested Mb/s | received Mb/s | sent Mb/s | p50 µs | p99 µs | bound µs | SM's bound µs | met |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, m := range rep.Modes {
		for _, f := range m.Flows {
			met := "yes"
			if !f.BandwidthMet || !f.LatencyMet {
				met = fmt.Sprintf("no (bandwidth %v, latency %v)", f.BandwidthMet, f.LatencyMet)
			}
			promised := "—" // no SM's promise: no admission
			if f.PromisedUs > 0 {
				promised = fmt.Sprintf("%.1f", f.PromisedUs)
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %.1f | %.1f | %.1f | %.1f | %.0f | %s | %s |\n", m.Mode, f.ID, f.SL,
				f.RequestedMbps, f.ReceivedMbps, f.SentMbps, f.P50Us, f.P99Us, f.BoundUs, promised, met)
		}
		fmt.Fprintf(&b, "| %s | best effort | 0 | — | %.1f | | | | | | |\n", m.Mode, m.BestMbps)
	}
	b.WriteString("\n")
	for _, m := range rep.Modes {
		fmt.Fprintf(&b, "## %s (fabric %s)\n\n", m.Mode, m.Fabric)
		if m.Error != "" {
			fmt.Fprintf(&b, "The run stopped early: %s\n\n", m.Error)
		}
		for _, c := range m.Checks {
			fmt.Fprintf(&b, "- %s %s: %s\n", runner.Mark(c), c.Name, c.Detail)
		}
		if m.Rejected != nil {
			fmt.Fprintf(&b, "- f3: %s at %s: %s\n", m.Rejected.Action, m.Rejected.Port, m.Rejected.Reason)
		}
		if m.Cut != "" {
			fmt.Fprintf(&b, "- cut %s; after it:\n", m.Cut)
			for _, f := range m.AfterCut {
				fmt.Fprintf(&b, "  - %s: %.1f Mb/s (requested %.0f), p99 %.1f µs (bound %.0f)\n", f.ID, f.ReceivedMbps, f.RequestedMbps, f.P99Us, f.BoundUs)
			}
		}
		for _, e := range m.Events {
			if e.Flow != nil {
				var hops []string
				for _, h := range e.Flow.Hops {
					hops = append(hops, fmt.Sprintf("%s VL %d level %d %d×%d", h.Port, h.VL, h.Level, h.Entries, h.Weight))
				}
				fmt.Fprintf(&b, "- ibsm %s %s: SL %d, %s\n", e.Action, e.ID, e.Flow.SL, strings.Join(hops, ", "))
			}
		}
		if len(m.Series) > 0 {
			fmt.Fprintf(&b, "\n![throughput](%s-throughput.png)\n![latency](%s-latency.png)\n", m.Mode, m.Mode)
		}
		if m.Capture != nil {
			fmt.Fprintf(&b, "\nCapture of %s: [%s/%s](%s/%s), %d frames (`tshark -r` decodes it).\n", m.Capture.Port, m.Mode, m.Capture.File, m.Mode, m.Capture.File, m.Capture.Frames)
		}
		b.WriteString("\n")
	}
	if len(rep.Checks) > 0 {
		b.WriteString("## Across modes\n\n")
		for _, c := range rep.Checks {
			fmt.Fprintf(&b, "- %s %s: %s\n", runner.Mark(c), c.Name, c.Detail)
		}
	}
	return b.String()
}

// qosIntro is the index's first paragraphs: the rate and time scale, the
// fabric and the flows at that rate.
func qosIntro(b *strings.Builder, rep *QoSReport) {
	at := qosAtRate(rep.LinkRate)
	fmt.Fprintf(b, "Started %s. Every link %s, time scale %g: every rate, latency and bound below is emulated time "+
		"(one emulated second is %g real ones); each window is %.1f s of real time.\n\n",
		rep.Started.Format("2006-01-02 15:04:05"), at.rate, rep.TimeScale, rep.TimeScale, rep.Measure)
	fmt.Fprintf(b, "The fabric (`ibfab topo dumbbell`): sw1 with sm0, a1, a2, a3; sw2 with b1, b2; two links "+
		"sw1[5]-sw2[3] and sw1[6]-sw2[4]; every link %s (%g Gb/s of data). Best effort from a3 and b2 to b1 at 100 %% "+
		"of their links each (SL 0) offers twice what b1's link, the bottleneck, carries. f1 (a1→b1, %g Mb/s, "+
		"%g µs end to end) comes from ibsm's flow file, f2 (a2→b1, %g Mb/s, %g µs) through `ibsm qos add`, "+
		"f3 (b2→b1, %g Mb/s, more than b1's link has left) must be refused at sw2[1]. The flows are constant bit rate with 2048-byte payloads; "+
		"latency is one way, from the packet's generation at the source (time queued there included).",
		at.rate, float64(at.bps)/1e9, at.f1.Mbps, at.f1.LatencyUs, at.f2.Mbps, at.f2.LatencyUs, at.f3.Mbps)
	if at.rate != runner.TunedRate {
		fmt.Fprintf(b, " The time scale and the flows are those of 4x SDR scaled by %g, the rate's over 4x SDR's "+
			"(rates up, bounds down): the same experiment in packet times.", runner.RateFactor(at.rate))
	}
	b.WriteString("\n\n")
}
