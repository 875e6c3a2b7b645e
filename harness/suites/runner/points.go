package runner

import (
	"image/color"
	"sync"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// What the experiments of load points (cc, afc) share beyond
// experiment.go: emulated time, the control calls in parallel, a hot
// spot's phases, and their plots' lines and colours.

// controlParallel bounds the control calls in flight: enough to read a
// 64-node fabric in a fraction of a second, few enough to leave the
// switches their CPU.
const controlParallel = 4

// ForEach calls fn for every name, controlParallel at a time, and returns the
// first error.
func ForEach(names []string, fn func(string) error) error {
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, controlParallel)
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(n); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// AtScale is d of emulated time at time scale s, in real time.
func AtScale(d time.Duration, s float64) time.Duration { return time.Duration(float64(d) * s) }

// EmuSeconds is a real interval in emulated seconds.
func EmuSeconds(d time.Duration, scale float64) float64 { return d.Seconds() / scale }

// A hot spot's phases: the load before the burst, the burst, the load
// after it.
const (
	PhaseBefore = "before"
	PhaseBurst  = "burst"
	PhaseAfter  = "after"
)

// ErrSuffix is "; " and e, or "" without an error.
func ErrSuffix(e string) string {
	if e == "" {
		return ""
	}
	return "; " + e
}

// AddLine adds a line (dashed with dash) and, with a name, its legend.
func AddLine(p *plot.Plot, xy plotter.XYs, name string, c color.Color, dash bool) error {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color, l.Width = c, vg.Points(1.5)
	if dash {
		l.Dashes, l.Width = []vg.Length{vg.Points(4), vg.Points(3)}, vg.Points(1)
	}
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
	return nil
}

// PlotPalette are the lines' colours of the experiments' plots.
func PlotPalette() []color.Color {
	return []color.Color{
		color.RGBA{B: 200, A: 255}, color.RGBA{R: 200, A: 255}, color.RGBA{G: 140, A: 255}, color.RGBA{R: 200, G: 120, A: 255},
		color.RGBA{R: 120, B: 160, A: 255}, color.RGBA{G: 140, B: 160, A: 255}, color.RGBA{R: 90, G: 90, B: 90, A: 255}, color.RGBA{R: 160, G: 160, A: 255},
	}
}
