package cc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/hca"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// Flow IDs: the permutation's flow and the hot spot's burst.
const (
	ccSweepFlow uint32 = 1
	ccBurstFlow uint32 = 2
)

// ccRun is one fabric of the experiments, up, with its SM.
type ccRun struct {
	runner.ExperimentRun // hosts by grid address
	f                    CCFabric
	w                    ccWindows
	bps                  uint64          // every link's data rate
	inter                map[string]bool // switch output ports cabled to a switch
	events               []string
}

// runCCGroup brings g's fabric up, runs its experiments and takes it
// down; hot holds the hot-spot runs by fabric and scheme, which D4 and
// D5/D6 share when their fabrics are the same (--quick).
func runCCGroup(ctx context.Context, g ccGroup, o CCOptions, rep *CCReport, hot map[string]*CCHotRun) []CCExperimentReport {
	scale := ccTimeScale(g.Fabric, o.TimeScale, o.Rate)
	fabric := o.Fabric + "_" + g.Fabric.key()
	var exps []CCExperimentReport
	for _, e := range g.Experiments {
		exps = append(exps, CCExperimentReport{ID: e.ID, Title: e.Title, Fabric: e.Fabric, FabricName: fabric, TimeScale: scale})
	}
	fail := func(err error) []CCExperimentReport {
		for i := range exps {
			if exps[i].Error == "" {
				exps[i].Error = err.Error()
			}
		}
		return exps
	}
	r, release, err := newCCRun(g.Fabric, fabric, scale, o, rep)
	if err != nil {
		return fail(err)
	}
	defer release()
	for i := range exps {
		exps[i].SMArgs = r.Suite().SMArgs
	}
	r.Logf("cc: fabric %s (%s), every link %s, at time scale %g for %v", fabric, g.Fabric, o.Rate, scale, ids(g.Experiments))
	down, err := r.Up()
	if err != nil {
		return fail(err)
	}
	defer func() {
		if derr := down(); derr != nil {
			r.Logf("cc: %s: %v", fabric, derr)
		}
		for i := range exps {
			exps[i].SM, exps[i].CCLogs = r.SMResults(), r.CCLogs()
			exps[i].Events = r.events
		}
	}()
	if err := r.BringUp(ctx, "subnet up, %d hosts", len(r.Hosts)); err != nil {
		return fail(err)
	}
	r.Report().LIDs = r.LIDs
	for i, e := range g.Experiments {
		if ctx.Err() != nil {
			exps[i].Error = ctx.Err().Error()
			continue
		}
		if e.HotSpot {
			r.hotExperiment(ctx, e, &exps[i], hot)
		} else {
			r.sweep(ctx, e, &exps[i])
		}
	}
	return exps
}

func ids(es []ccExperiment) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

// newCCRun prepares a fabric's run: its topology, every link at o.Rate,
// the SM's flags and the CC file (in the report's directory for the fabric, or a temporary one
// that release removes).
func newCCRun(f CCFabric, fabric string, scale float64, o CCOptions, rep *CCReport) (*ccRun, func(), error) {
	topo, err := f.topology()
	if err == nil {
		err = topo.SetRate(o.Rate)
	}
	if err != nil {
		return nil, nil, err
	}
	dir := ""
	if o.Out != "" {
		dir = filepath.Join(o.Out, f.key())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
	}
	// FERa: the shortest up*/down* routes on the base LIDs (minimal on a
	// mesh), where PIRa's detours would move the hot spot off its row.
	// Sweeps every 30 s rather than 3: at the torus's time scale a
	// directed-route SMP waits behind a data packet 8 ms per hop, and a
	// light sweep that timed out on a switch took its answer for a change
	// and reassimilated the subnet in the middle of the load sweep.
	args := append(slices.Clone(runner.DefaultSMArgs), "--routing", "updn-fera", "--lmc", "2", "--sweep-interval", "30s")
	release := func() {}
	if f.CC {
		var conf string
		conf, release, err = writeCCConf(dir, rep.Config)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, "--cc", conf)
	}
	sm := topologies.GridHost(f.Dims, 0)
	s := runner.Suite{Name: "cc-" + f.key(), TimeScale: scale, SMNode: sm, SMArgs: args, NodeArgs: runner.RateNodeArgs(o.Rate),
		Topology: func() (*topologies.Topology, error) { return topo, nil }}
	var hosts []string
	for i := range f.Nodes() {
		hosts = append(hosts, topologies.GridHost(f.Dims, i))
	}
	r := &ccRun{f: f, w: rep.Windows, bps: runner.RateBps(o.Rate), inter: map[string]bool{}}
	r.ExperimentRun = runner.NewExperimentRun(&s, topo, fabric, dir, hosts, o.Log)
	r.Tag, r.Notes = "cc "+fabric, &r.events
	for _, l := range topo.Links() {
		if topo.Node(l.A.Node).Type == topologies.Switch && topo.Node(l.B.Node).Type == topologies.Switch {
			r.inter[runner.PortKey(topo.Node(l.A.Node).Name, l.A.Port)] = true
			r.inter[runner.PortKey(topo.Node(l.B.Node).Name, l.B.Port)] = true
		}
	}
	return r, release, nil
}

// setScheme sets every HCA's CCA to the scheme. Setting a mode starts
// the CCA afresh (hca.SetCCA), even the mode it has: no CCTI or open
// alias is left from the last measurement.
func (r *ccRun) setScheme(ctx context.Context, s CCScheme) error {
	return runner.ForEach(r.Hosts, func(h string) error {
		cap := 0
		if s == CCDRB {
			cap = ccDRBCap
		}
		m := s.mode()
		if _, err := harness.CCA(ctx, r.Fabric(), h, nodeproc.CCAArgs{Mode: &m, Cap: cap}); err != nil {
			return fmt.Errorf("%s: cca %s: %w", h, s, err)
		}
		return nil
	})
}

// startFlows starts flow id from every source to its destination:
// Poisson arrivals of ccMessageBytes messages in ccPayload packets at
// mbps (wire bytes).
func (r *ccRun) startFlows(ctx context.Context, id uint32, src, dst []string, mbps float64, seed uint64) error {
	idx := map[string]int{}
	for i, s := range src {
		idx[s] = i
	}
	return runner.ForEach(src, func(s string) error {
		i := idx[s]
		a := nodeproc.FlowArgs{ID: id, Port: 1, DLID: uint16(r.LIDs[dst[i]]), RateBPS: uint64(mbps * 1e6),
			Payload: ccPayload, Pattern: hca.Poisson, Seed: seed + uint64(i), MaxBacklog: ccMaxBacklog,
			MessageBytes: ccMessageBytes}
		_, err := harness.StartFlow(ctx, r.Fabric(), s, a)
		return err
	})
}

// stopFlows stops flow id at every source; a flow already gone is no
// error.
func (r *ccRun) stopFlows(ctx context.Context, id uint32, src []string) {
	runner.ForEach(src, func(s string) error {
		harness.StopFlow(ctx, r.Fabric(), s, id)
		return nil
	})
}

// snap reads, each a few at a time (runner.ForEach), the flows of hcas (reset after
// the read with reset), every switch's port counters, and the CCAs of
// cca.
func (r *ccRun) snap(ctx context.Context, hcas []string, reset bool, cca []string) (ccSnap, error) {
	s := newCCSnap()
	var mu sync.Mutex
	if err := r.ReadHostFlows(ctx, hcas, reset, s.flows, s.at); err != nil {
		return s, err
	}
	if err := runner.ForEach(r.Switches, func(sw string) error { return r.readSwitch(ctx, sw, &s, &mu) }); err != nil {
		return s, err
	}
	err := runner.ForEach(cca, func(h string) error {
		st, err := harness.CCA(ctx, r.Fabric(), h, nodeproc.CCAArgs{})
		if err != nil {
			return fmt.Errorf("%s: cca: %w", h, err)
		}
		mu.Lock()
		s.cca[h] = st
		mu.Unlock()
		return nil
	})
	return s, err
}

// readSwitch adds a switch's port counters to s.
func (r *ccRun) readSwitch(ctx context.Context, sw string, s *ccSnap, mu *sync.Mutex) error {
	var st nodeproc.Status
	if err := r.Call(ctx, sw, "status", nil, &st); err != nil {
		return fmt.Errorf("%s status: %w", sw, err)
	}
	at := time.Now()
	mu.Lock()
	defer mu.Unlock()
	for _, p := range st.Ports {
		snap := ccPortSnap{At: at, XmitWords: p.Counters.PortXmitData, Rate: p.Rate}
		if p.Congestion != nil {
			snap.Marked = p.Congestion.Marked
		}
		s.ports[runner.PortKey(sw, p.Port)] = snap
	}
	return nil
}

func (r *ccRun) isInter(port string) bool { return r.inter[port] }

// sweep runs a load sweep: every pattern under every scheme at every
// load, one window each.
func (r *ccRun) sweep(ctx context.Context, e ccExperiment, er *CCExperimentReport) {
	for _, pat := range e.Patterns {
		pairs, fixed, err := pat.Pairs(r.f.Nodes())
		if err != nil {
			er.Error = err.Error()
			return
		}
		er.Patterns = append(er.Patterns, CCPattern{Name: pat.String(), Sources: len(pairs), Fixed: fixed})
		var src, dst []string
		for _, p := range pairs {
			src, dst = append(src, r.Hosts[p.Src]), append(dst, r.Hosts[p.Dst])
		}
		for _, sch := range e.Schemes {
			for _, load := range e.Loads {
				if ctx.Err() != nil {
					er.Error = ctx.Err().Error()
					return
				}
				p, err := r.point(ctx, pat.String(), sch, load, src, dst)
				if err != nil {
					p.Error = err.Error()
					r.Note("%s %s %s %.0f Mb/s: %v", e.ID, pat, sch, load, err)
				} else {
					r.Note("%s %s %s %.0f Mb/s: accepted %.0f, injected %.0f, latency %.1f µs (p99 %.1f), peak link %.2f, %d marks, CCTI %.1f, %.2f paths",
						e.ID, pat, sch, load, p.AcceptedMbps, p.InjectedMbps, p.MeanLatencyUs, p.P99LatencyUs, p.PeakLinkLoad, p.FECNMarks, p.MeanCCTI, p.MeanActive)
				}
				er.Points = append(er.Points, p)
			}
		}
	}
}

// point measures one load: the scheme set afresh, the flows started,
// warm-up, a window between two snapshots, the flows stopped and the
// fabric drained.
func (r *ccRun) point(ctx context.Context, pat string, sch CCScheme, load float64, src, dst []string) (CCPoint, error) {
	p := CCPoint{Pattern: pat, Scheme: sch, OfferedMbps: load, Sources: len(src)}
	if err := r.setScheme(ctx, sch); err != nil {
		return p, err
	}
	defer func() {
		r.stopFlows(ctx, ccSweepFlow, src)
		runner.Sleep(ctx, runner.AtScale(r.w.Drain, r.Scale))
	}()
	if err := r.startFlows(ctx, ccSweepFlow, src, dst, load, uint64(load)); err != nil {
		return p, err
	}
	hcas := union(src, dst)
	a, b, err := runner.MeasurePoint(ctx, r.w.PointWindows, r.Scale, func(ctx context.Context, first bool) (ccSnap, error) {
		if first {
			return r.snap(ctx, hcas, true, nil)
		}
		return r.snap(ctx, hcas, false, src)
	})
	if err != nil {
		return p, err
	}
	w := ccWindow{pattern: pat, scheme: sch, offered: load, id: ccSweepFlow, sources: src, receivers: dst,
		scale: r.Scale, inter: r.isInter, a: a, b: b}
	return w.point(), nil
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// hotBurst is the fabric's hot spot: GridHotSpot at the load that offers
// a row's middle link ccHotLinkLoad of its rate.
func (r *ccRun) hotBurst() (topologies.Burst, error) {
	load := min(ccHotSourceMax, ccHotLinkLoad/float64(r.f.Dims[0]/2))
	b, err := topologies.GridHotSpot(r.f.Dims, load)
	if err != nil {
		return b, err
	}
	b.Start = runner.AtScale(r.w.Before, r.Scale)
	b.Length = runner.AtScale(r.w.Burst, r.Scale)
	return b, nil
}

// hotExperiment runs the hot spot under each of e's schemes, or takes
// the run another experiment made of it on this fabric.
func (r *ccRun) hotExperiment(ctx context.Context, e ccExperiment, er *CCExperimentReport, cache map[string]*CCHotRun) {
	b, err := r.hotBurst()
	if err != nil {
		er.Error = err.Error()
		return
	}
	src, dst := burstNames(b, r.f.Dims)
	er.Burst = &CCBurstNames{Load: b.Load}
	for i := range src {
		er.Burst.Pairs = append(er.Burst.Pairs, pairName(src[i], dst[i]))
	}
	for _, sch := range e.Schemes {
		key := r.f.key() + "/" + sch.String()
		h, ok := cache[key]
		if !ok {
			h = r.hotSpot(ctx, sch, b, src, dst)
			cache[key] = h
			r.Note("%s hot spot %s: peak %.2f at %s, injected %.0f of %.0f Mb/s, %d marks, CCTI up to %d, up to %d paths%s",
				e.ID, sch, h.PeakLoad, h.HotLink, h.InjectedMbps, h.OfferedMbps, h.FECNBurst, h.MaxCCTI, h.MaxActive, runner.ErrSuffix(h.Error))
		}
		er.Hot = append(er.Hot, h)
		if h.Error != "" && er.Error == "" {
			er.Error = fmt.Sprintf("hot spot %s: %s", sch, h.Error)
		}
	}
}

// hotSpot runs the burst under one scheme: the fabric sampled every
// Sample before, during and after it.
func (r *ccRun) hotSpot(ctx context.Context, sch CCScheme, b topologies.Burst, src, dst []string) *CCHotRun {
	h := &CCHotRun{Scheme: sch, Fabric: r.Fabric(), OfferedMbps: b.Load * float64(r.bps) / 1e6}
	fail := func(err error) *CCHotRun {
		h.Error = err.Error()
		summarizeHot(h)
		return h
	}
	if err := r.setScheme(ctx, sch); err != nil {
		return fail(err)
	}
	defer func() {
		r.stopFlows(ctx, ccBurstFlow, src)
		runner.Sleep(ctx, runner.AtScale(r.w.Drain, r.Scale))
	}()
	hcas := union(src, dst)
	t0 := time.Now()
	prev, err := r.snap(ctx, hcas, true, src)
	if err != nil {
		return fail(err)
	}
	first := prev
	end := b.Start + b.Length + runner.AtScale(r.w.After, r.Scale)
	every := max(runner.AtScale(r.w.Sample, r.Scale), 300*time.Millisecond)
	var started, stopped time.Time
	for time.Since(t0) < end && ctx.Err() == nil {
		runner.Sleep(ctx, every)
		if started.IsZero() && time.Since(t0) >= b.Start {
			if err := r.startFlows(ctx, ccBurstFlow, src, dst, h.OfferedMbps, 1000); err != nil {
				return fail(err)
			}
			started = time.Now()
		}
		if !started.IsZero() && stopped.IsZero() && time.Since(t0) >= b.Start+b.Length {
			r.stopFlows(ctx, ccBurstFlow, src)
			stopped = time.Now()
		}
		cur, err := r.snap(ctx, hcas, false, src)
		if err != nil {
			return fail(err)
		}
		mid := latest(prev.at).Add(latest(cur.at).Sub(latest(prev.at)) / 2)
		t := runner.EmuSeconds(latest(cur.at).Sub(t0), r.Scale) * 1e3
		h.Samples = append(h.Samples, hotSample(prev, cur, t, phaseOf(mid, started, stopped), src, dst, r.LIDs, ccBurstFlow, r.Scale, r.isInter))
		prev = cur
	}
	rx := received(first, prev, dst, ccBurstFlow, r.Scale)
	if n := len(src); n > 0 && !started.IsZero() {
		// Over the burst only: the receivers' window began before it.
		burst := stopped
		if burst.IsZero() {
			burst = time.Now()
		}
		whole := latest(prev.at).Sub(latest(first.at))
		if d := burst.Sub(started); d > 0 && whole > 0 {
			h.AcceptedMbps = rx.bits / 1e6 / float64(n) * whole.Seconds() / d.Seconds()
		}
	}
	h.MeanLatencyUs, h.P99LatencyUs = rx.meanNs/1e3, runner.Micros(runner.P99Between(nil, rx.buckets))
	summarizeHot(h)
	return h
}

// latest is the last of a snapshot's moments.
func latest(at map[string]time.Time) time.Time {
	var t time.Time
	for _, x := range at {
		if x.After(t) {
			t = x
		}
	}
	return t
}

// phaseOf is the hot-spot phase of a sample whose interval's middle is
// mid: before the burst started, during it, after it stopped.
func phaseOf(mid, started, stopped time.Time) string {
	switch {
	case started.IsZero() || mid.Before(started):
		return runner.PhaseBefore
	case stopped.IsZero() || mid.Before(stopped):
		return runner.PhaseBurst
	}
	return runner.PhaseAfter
}
