package afc

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/hca"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// Flow IDs of the experiments: the hot-spot flow, the uniform flows (one
// per SL, afcUniformFlow+SL) and the exchange.
const (
	afcHotFlow      uint32 = 1
	afcUniformFlow  uint32 = 10
	afcExchangeFlow uint32 = 50
)

// AFCOptions tune RunAFC: the fabric prefix defaults to "afc", the time
// scale to afcTimeScale per fabric, the rate to 4x SDR.
type AFCOptions = runner.ExperimentOptions

// afcRun is one fabric of the experiments, up, with its SM.
type afcRun struct {
	runner.ExperimentRun // hosts by host index
	k                    int
	w                    afcWindows
	bps                  uint64 // every link's data rate
	layout               *topologies.FatTreeLayout
	control              string // ibsm's control socket
	fr                   *AFCFabricReport

	cur    afcSetup // what the fabric is set to
	curSet bool
}

// RunAFC runs the experiments and, with o.Out, writes the report there.
// The error is for a run that could not start; an experiment that failed
// midway has its errors in its points, and failed checks are in the
// report.
func RunAFC(ctx context.Context, o AFCOptions) (*AFCReport, error) {
	o.Rate = runner.OrTuned(o.Rate)
	plan, err := selectAFC(afcPlan(o.Quick), o.Only)
	if err != nil {
		return nil, err
	}
	if err := o.Prepare("afc"); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &AFCReport{Started: start, Quick: o.Quick, LinkRate: o.Rate, Windows: afcWindowsFor().at(runner.RateFactor(o.Rate))}
	for _, k := range []int{2, 3} {
		var exps []afcExperiment
		for _, e := range plan {
			if e.K == k {
				exps = append(exps, e)
			}
		}
		if len(exps) == 0 || ctx.Err() != nil {
			continue
		}
		runAFCFabric(ctx, k, exps, o, rep)
	}
	rep.Claims = afcClaims(rep.Points, rep.Exchanges, rep.Mechanism)
	rep.Checks = afcChecks(rep, plan)
	rep.Passed = runner.AllOK(rep.Checks)
	rep.ElapsedS = time.Since(start).Seconds()
	if o.Out != "" {
		if err := writeAFCReport(o.Out, rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// runAFCFabric brings RLFT(k, 3) up, runs exps on it and takes it down;
// what it measured goes into rep.
func runAFCFabric(ctx context.Context, k int, exps []afcExperiment, o AFCOptions, rep *AFCReport) {
	t0 := time.Now()
	fr := &AFCFabricReport{K: k, Name: fmt.Sprintf("%s_k%d", o.Fabric, k)}
	for _, e := range exps {
		fr.Experiments = append(fr.Experiments, e.ID)
	}
	defer func() {
		fr.ElapsedS = time.Since(t0).Seconds()
		rep.Fabrics = append(rep.Fabrics, *fr)
	}()
	r, err := newAFCRun(k, fr, o)
	if err != nil {
		fr.Error = err.Error()
		return
	}
	r.w = rep.Windows
	down, err := r.Up()
	if err != nil {
		fr.Error = err.Error()
		return
	}
	defer func() {
		if derr := down(); derr != nil {
			r.Note("down: %v", derr)
		}
	}()
	if err := r.BringUp(ctx, "subnet up: %d hosts, %d switches, time scale %g", len(r.Hosts), len(r.Switches), r.Scale); err != nil {
		fr.Error = err.Error()
		return
	}
	for _, e := range exps {
		if ctx.Err() != nil {
			fr.Error = ctx.Err().Error()
			return
		}
		switch e.Kind {
		case afcSweep:
			rep.Points = append(rep.Points, r.sweep(ctx, e)...)
		case afcAllToAll:
			rep.Exchanges = append(rep.Exchanges, r.exchanges(ctx, e)...)
		case afcMechanism:
			rep.Mechanism = append(rep.Mechanism, r.mechanisms(ctx, e)...)
		}
	}
}

// newAFCRun prepares RLFT(k, 3) and the SM's flags: D-mod-K routing, the
// adaptive routing off until a setup asks for it, the control socket the
// setups change it by.
func newAFCRun(k int, fr *AFCFabricReport, o AFCOptions) (*afcRun, error) {
	topo, err := topologies.RLFT(k, 3)
	if err == nil {
		err = topo.SetRate(o.Rate)
	}
	if err != nil {
		return nil, err
	}
	layout, err := topologies.LayoutFatTree(topo)
	if err != nil {
		return nil, err
	}
	dir := ""
	if o.Out != "" {
		dir = filepath.Join(o.Out, fmt.Sprintf("k%d", k))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	r := &afcRun{k: k, layout: layout, fr: fr, bps: runner.RateBps(o.Rate)}
	var hosts []string
	for _, n := range layout.Hosts {
		hosts = append(hosts, topo.Node(n).Name)
	}
	scale := afcTimeScale(len(hosts), o.TimeScale, o.Rate)
	r.control = filepath.Join(filepath.Dir(nodeproc.SocketPath(fr.Name, "sm0")), "ibsm-ar.sock")
	// Sweeps every 30 s: at a time scale in the thousands a sweep's SMPs
	// wait behind the data packets, and the fabric does not change.
	args := append(slices.Clone(runner.DefaultSMArgs), afcSMArgs(r.control)...)
	s := runner.Suite{Name: fmt.Sprintf("afc-k%d", k), TimeScale: scale, SMNode: hosts[0], SMArgs: args, NodeArgs: append(afcNodeArgs(), runner.RateNodeArgs(o.Rate)...),
		Topology: func() (*topologies.Topology, error) { return topo, nil }}
	r.ExperimentRun = runner.NewExperimentRun(&s, topo, fr.Name, dir, hosts, o.Log)
	r.Tag, r.Notes = fmt.Sprintf("afc k=%d", k), &fr.Events
	fr.Hosts, fr.Switches, fr.TimeScale, fr.SMArgs = len(r.Hosts), len(r.Switches), r.Scale, args
	return r, nil
}

// apply sets the fabric to s: the switches' architecture and buffers,
// then the adaptive routing, each only when it changes.
func (r *afcRun) apply(ctx context.Context, s afcSetup) error {
	afc := s.Routing == AFCAFI
	if !r.curSet || r.cur.VOQ != s.VOQ || r.cur.Queuing.vls() != s.Queuing.vls() || (r.cur.Routing == AFCAFI) != afc {
		blocks := afcVLBlocks(s.Queuing, afc)
		if err := runner.ForEach(r.Switches, func(sw string) error { return afcConfigureSwitch(ctx, r.Fabric(), sw, s.VOQ, blocks) }); err != nil {
			return err
		}
	}
	if !r.curSet || r.cur.Routing != s.Routing || r.cur.afcVL() != s.afcVL() {
		if err := afcSetAR(ctx, r.control, s.Routing.mode(), s.afcVL()); err != nil {
			return err
		}
	}
	r.cur, r.curSet = s, true
	return nil
}

// sl is the SL setup s gives the flow from host index src to dst.
func (r *afcRun) sl(q AFCQueuing, src, dst int) (uint8, error) {
	dlid := uint16(r.LIDs[r.Hosts[dst]])
	e, ok := r.layout.Flow(src, dst, dlid)
	if !ok {
		return 0, fmt.Errorf("no flow %d→%d in the layout", src, dst)
	}
	return q.sqs().SL(q.vls(), len(r.Hosts), e)
}

// uniformFlows are host src's uniform flows at load percent of its link:
// one per SL over the destinations the scheme puts on it, each at that
// share of the load.
func (r *afcRun) uniformFlows(q AFCQueuing, src int, load float64, seed uint64, exclude int) ([]nodeproc.FlowArgs, error) {
	bySL := map[uint8][]nodeproc.FlowDest{}
	var sls []uint8
	for dst := range r.Hosts {
		if dst == src || dst == exclude {
			continue
		}
		sl, err := r.sl(q, src, dst)
		if err != nil {
			return nil, err
		}
		if _, ok := bySL[sl]; !ok {
			sls = append(sls, sl)
		}
		bySL[sl] = append(bySL[sl], nodeproc.FlowDest{DLID: uint16(r.LIDs[r.Hosts[dst]]), SL: sl})
	}
	slices.Sort(sls)
	var out []nodeproc.FlowArgs
	others := 0.0
	for _, sl := range sls {
		others += float64(len(bySL[sl]))
	}
	for _, sl := range sls {
		d := bySL[sl]
		rate := load / 100 * float64(r.bps) * float64(len(d)) / others
		out = append(out, nodeproc.FlowArgs{ID: afcUniformFlow + uint32(sl), Port: 1, Dests: d, RateBPS: uint64(rate),
			Payload: afcPayload, Pattern: hca.Poisson, Seed: seed*16 + uint64(sl), MaxBacklog: afcMaxBacklog})
	}
	return out, nil
}

// hotFlow is a hot-spot source's flow: its full link rate to hot.
func (r *afcRun) hotFlow(q AFCQueuing, src, hot int) (nodeproc.FlowArgs, error) {
	sl, err := r.sl(q, src, hot)
	if err != nil {
		return nodeproc.FlowArgs{}, err
	}
	return nodeproc.FlowArgs{ID: afcHotFlow, Port: 1, DLID: uint16(r.LIDs[r.Hosts[hot]]), SL: sl, RateBPS: r.bps,
		Payload: afcPayload, Pattern: hca.CBR, MaxBacklog: afcMaxBacklog}, nil
}

// hotSpot returns the hot destination (the last host) and the sources of
// traffic t.
func (r *afcRun) hotSpot(t AFCTraffic) (int, []int, error) {
	hot := len(r.Hosts) - 1
	if t.hotFraction() == 0 {
		return hot, nil, nil
	}
	src, err := topologies.HotSpotSources(len(r.Hosts), t.hotFraction(), hot, 1)
	return hot, src, err
}

// afcParts says which flows startTraffic starts.
type afcParts struct {
	uniform, hot bool
	// isolated keeps the uniform flows off the hot destination, so that
	// every packet for it is a hot-spot packet (E6 counts them by DLID).
	isolated bool
}

// startTraffic starts t at load under queuing q: the hot-spot sources'
// flow to the hot destination, every other host's uniform flows, as parts
// says (E6 adds the hot spot to a running uniform load).
func (r *afcRun) startTraffic(ctx context.Context, t AFCTraffic, q AFCQueuing, load float64, parts afcParts) error {
	hotDst, srcs, err := r.hotSpot(t)
	if err != nil {
		return err
	}
	return runner.ForEach(r.Hosts, func(h string) error {
		i := slices.Index(r.Hosts, h)
		var flows []nodeproc.FlowArgs
		exclude := -1
		if parts.isolated {
			exclude = hotDst
		}
		switch {
		case slices.Contains(srcs, i):
			if parts.hot {
				f, err := r.hotFlow(q, i, hotDst)
				if err != nil {
					return err
				}
				flows = append(flows, f)
			}
		case parts.uniform:
			flows, err = r.uniformFlows(q, i, load, uint64(i+1)+uint64(load)*1000, exclude)
			if err != nil {
				return err
			}
		}
		if len(flows) == 0 {
			return nil
		}
		_, err := harness.StartFlows(ctx, r.Fabric(), h, flows)
		return err
	})
}

// stopTraffic stops every flow and lets the fabric drain.
func (r *afcRun) stopTraffic(ctx context.Context) {
	runner.ForEach(r.Hosts, func(h string) error {
		harness.StopAllFlows(ctx, r.Fabric(), h)
		return nil
	})
	r.drain(ctx)
}

// afcDrainRounds bounds the Drain periods drain waits for the switches to
// empty.
const afcDrainRounds = 20

// drain waits until no switch holds a data packet, a Drain period at a
// time, at most afcDrainRounds of them: a hot spot's tree empties through
// the one hot link, far slower than the rest, and until it has, the next
// setup's adaptive routing MADs (GMPs on VL0) wait behind it, and the next
// measurement would start on a loaded fabric.
func (r *afcRun) drain(ctx context.Context) {
	for range afcDrainRounds {
		runner.Sleep(ctx, runner.AtScale(r.w.Drain, r.Scale))
		st, err := r.readSwitches(ctx)
		if err != nil || ctx.Err() != nil {
			return
		}
		if _, o := st.fullest(); o == 0 {
			return
		}
	}
	r.Note("switches still hold packets after %d drain periods", afcDrainRounds)
}

// readFlows reads every host's flows, resetting them with reset.
func (r *afcRun) readFlows(ctx context.Context, reset bool) (afcFlows, error) {
	s := newAFCFlows()
	err := r.ReadHostFlows(ctx, r.Hosts, reset, s.flows, s.at)
	return s, err
}

// afcSnapshot is a reading of the fabric: every host's flows, then every
// switch.
type afcSnapshot struct {
	flows    afcFlows
	switches afcSwitches
}

// snapshot reads every host's flows (resetting them with reset), then
// every switch.
func (r *afcRun) snapshot(ctx context.Context, reset bool) (afcSnapshot, error) {
	f, err := r.readFlows(ctx, reset)
	if err != nil {
		return afcSnapshot{flows: f}, err
	}
	s, err := r.readSwitches(ctx)
	return afcSnapshot{f, s}, err
}

// sweep measures every point of e.
func (r *afcRun) sweep(ctx context.Context, e afcExperiment) []AFCPoint {
	var out []AFCPoint
	for _, voq := range e.VOQ {
		for _, rt := range e.Routings {
			for _, q := range e.Queuings {
				for _, t := range e.Traffics {
					for _, load := range e.Loads {
						p := AFCPoint{K: r.k, Traffic: t, afcSetup: afcSetup{Routing: rt, Queuing: q, VOQ: voq}, Load: load}
						if ctx.Err() != nil {
							p.Error = ctx.Err().Error()
						} else if err := r.point(ctx, &p); err != nil {
							p.Error = err.Error()
						}
						r.Note("%s %s %s at %.0f %%: offered %.3f, accepted %.3f (hot %.3f), %d adapted%s", e.ID, t, p.afcSetup, load,
							p.Offered, p.Accepted, p.HotAccepted, p.Adapted, runner.ErrSuffix(p.Error))
						out = append(out, p)
					}
				}
			}
		}
	}
	return out
}

// point measures one load: the fabric set up, the traffic started,
// warm-up, a window between two readings, the traffic stopped.
func (r *afcRun) point(ctx context.Context, p *AFCPoint) error {
	if err := r.apply(ctx, p.afcSetup); err != nil {
		return err
	}
	defer r.stopTraffic(ctx)
	if err := r.startTraffic(ctx, p.Traffic, p.Queuing, p.Load, afcParts{uniform: true, hot: true}); err != nil {
		return err
	}
	a, b, err := runner.MeasurePoint(ctx, r.w.PointWindows, r.Scale, r.snapshot)
	if err != nil {
		return err
	}
	p.Accepted, p.HotAccepted = afcAccepted(a.flows, b.flows, r.Hosts, r.Scale, r.bps, afcHotFlow)
	p.Offered, p.SourceDrops = afcOffered(b.flows, r.Hosts, r.bps)
	p.Adapted = b.switches.adapted() - a.switches.adapted()
	return nil
}

// exchanges runs E5 under every setup of e.
func (r *afcRun) exchanges(ctx context.Context, e afcExperiment) []AFCExchange {
	var out []AFCExchange
	for _, voq := range e.VOQ {
		for _, rt := range e.Routings {
			for _, q := range e.Queuings {
				x := AFCExchange{K: r.k, afcSetup: afcSetup{Routing: rt, Queuing: q, VOQ: voq}}
				if ctx.Err() != nil {
					x.Error = ctx.Err().Error()
				} else if err := r.exchange(ctx, &x); err != nil {
					x.Error = err.Error()
				}
				r.Note("%s %s: %.0f µs, %d of %d packets%s", e.ID, x.afcSetup, x.ExecUs, x.Received, x.Expected, runner.ErrSuffix(x.Error))
				out = append(out, x)
			}
		}
	}
	return out
}

// exchange runs the all-to-all once: every host sends afcExchangeMessages
// packets to each partner in the order of topologies.PairwiseExchange's
// phases, at its link's rate, and the run waits until every packet has
// arrived.
func (r *afcRun) exchange(ctx context.Context, x *AFCExchange) error {
	s := x.afcSetup
	if err := r.apply(ctx, s); err != nil {
		return err
	}
	defer r.stopTraffic(ctx)
	phases, err := topologies.PairwiseExchange(len(r.Hosts))
	if err != nil {
		return err
	}
	partners := make([][]nodeproc.FlowDest, len(r.Hosts))
	for _, ph := range phases {
		for _, pr := range ph {
			sl, err := r.sl(x.Queuing, pr.Src, pr.Dst)
			if err != nil {
				return err
			}
			partners[pr.Src] = append(partners[pr.Src], nodeproc.FlowDest{DLID: uint16(r.LIDs[r.Hosts[pr.Dst]]), SL: sl})
		}
	}
	if _, err := r.readFlows(ctx, true); err != nil { // receivers start clean
		return err
	}
	per := uint64(afcExchangeMessages * (len(r.Hosts) - 1))
	x.Expected = per * uint64(len(r.Hosts))
	err = runner.ForEach(r.Hosts, func(h string) error {
		i := slices.Index(r.Hosts, h)
		// The whole exchange may wait at its source: an application's
		// sends wait, they are not dropped as an open-loop source's are.
		f := nodeproc.FlowArgs{ID: afcExchangeFlow, Port: 1, Dests: partners[i], Order: hca.InTurn, Burst: afcExchangeMessages,
			Messages: per, RateBPS: r.bps, Payload: afcPayload, Pattern: hca.CBR, MaxBacklog: int(per)}
		_, err := harness.StartFlows(ctx, r.Fabric(), h, []nodeproc.FlowArgs{f})
		return err
	})
	if err != nil {
		return err
	}
	// The exchange's ideal time is per packets at the link rate; give it
	// twenty times that before calling it stuck.
	ideal := time.Duration(float64(per) * float64(afcPayload*8) / float64(r.bps) * float64(time.Second))
	deadline := time.Now().Add(runner.AtScale(20*ideal, r.Scale) + 30*time.Second)
	for {
		runner.Sleep(ctx, max(runner.AtScale(ideal/4, r.Scale), 200*time.Millisecond))
		b, err := r.readFlows(ctx, false)
		if err != nil {
			return err
		}
		var first, last int64
		var got uint64
		for _, h := range r.Hosts {
			for _, rx := range b.flows[h].Received {
				if rx.ID != afcExchangeFlow || rx.Packets == 0 {
					continue
				}
				got += rx.Packets
				if first == 0 || rx.FirstNs < first {
					first = rx.FirstNs
				}
				last = max(last, rx.LastNs)
			}
		}
		x.Received = got
		x.ExecUs = float64(last-first) / 1e3
		switch {
		case got >= x.Expected:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d packets after %v", got, x.Expected, 20*ideal)
		}
	}
}

// mechanisms runs E6 under each routing of e.
func (r *afcRun) mechanisms(ctx context.Context, e afcExperiment) []AFCMechanism {
	var out []AFCMechanism
	for _, rt := range e.Routings {
		m := AFCMechanism{Routing: rt, Queuing: e.Queuings[0], Threshold: afcThreshold}
		if ctx.Err() != nil {
			m.Error = ctx.Err().Error()
		} else if err := r.mechanism(ctx, e.Traffics[0], &m); err != nil {
			m.Error = err.Error()
		}
		if st, err := r.readSwitches(ctx); err == nil {
			q, o := st.fullest()
			r.Note("%s %s drained: fullest VL %s %.0f %%", e.ID, rt, q, 100*o)
		}
		r.Note("%s %s: hot-spot packets in %d SQS VL queues and %d AFC queues, %d adapted while hot, %d at the end, fullest VL %s %.0f %%%s",
			e.ID, rt, len(m.HotSQS), len(m.HotAFC), m.AdaptedHot, m.AdaptedTail, m.EndFullest, 100*m.EndOccupancy, runner.ErrSuffix(m.Error))
		out = append(out, m)
	}
	return out
}

// afcThreshold is the switches' adaptive threshold (ibsm's default).
const afcThreshold = 0.75

// mechanism samples the fabric while a uniform load runs alone, with the
// hot spot of t added, and after it.
func (r *afcRun) mechanism(ctx context.Context, t AFCTraffic, m *AFCMechanism) error {
	s := afcSetup{Routing: m.Routing, Queuing: m.Queuing}
	if err := r.apply(ctx, s); err != nil {
		return err
	}
	hot, _, err := r.hotSpot(t)
	if err != nil {
		return err
	}
	hotLID := uint16(r.LIDs[r.Hosts[hot]])
	if err := runner.ForEach(r.Switches, func(sw string) error { return afcWatch(ctx, r.Fabric(), sw, hotLID) }); err != nil {
		return err
	}
	defer r.stopTraffic(ctx)
	if err := r.startTraffic(ctx, t, m.Queuing, afcE6Load, afcParts{uniform: true, isolated: true}); err != nil {
		return err
	}
	runner.Sleep(ctx, runner.AtScale(r.w.Warmup, r.Scale))
	prev, err := r.readSwitches(ctx)
	if err != nil {
		return err
	}
	t0 := time.Now()
	every := runner.AtScale(r.w.Sample, r.Scale)
	hotOn, hotOff := runner.AtScale(r.w.Before, r.Scale), runner.AtScale(r.w.Before+r.w.Hot, r.Scale)
	end := runner.AtScale(r.w.Before+r.w.Hot+r.w.After, r.Scale)
	var started, stopped bool
	sqs, afc := map[string]bool{}, map[string]bool{}
	for el := time.Duration(0); el < end && ctx.Err() == nil; el = time.Since(t0) {
		if !started && el >= hotOn {
			if err := r.startTraffic(ctx, t, m.Queuing, afcE6Load, afcParts{hot: true, isolated: true}); err != nil {
				return err
			}
			started = true
		}
		if started && !stopped && el >= hotOff {
			if err := runner.ForEach(r.Hosts, func(h string) error {
				harness.StopFlow(ctx, r.Fabric(), h, afcHotFlow)
				return nil
			}); err != nil {
				return err
			}
			stopped = true
		}
		runner.Sleep(ctx, every)
		cur, err := r.readSwitches(ctx)
		if err != nil {
			return err
		}
		at := time.Since(t0)
		phase := runner.PhaseBefore
		switch {
		case stopped:
			phase = runner.PhaseAfter
		case started:
			phase = runner.PhaseBurst
		}
		smp := AFCMechSample{TMs: runner.EmuSeconds(at, r.Scale) * 1e3, Phase: phase, Adapted: cur.adapted() - prev.adapted(),
			Occupancy: cur.occupancyByVL()}
		for _, q := range cur.hotQueues(prev) {
			if q.vl == s.afcVL() {
				smp.HotAFC++
				if phase == runner.PhaseBurst {
					afc[q.name] = true
				}
			} else {
				smp.HotSQS++
				if phase == runner.PhaseBurst {
					sqs[q.name] = true
				}
			}
		}
		if phase == runner.PhaseBurst {
			m.AdaptedHot += smp.Adapted
		}
		m.Samples = append(m.Samples, smp)
		prev = cur
	}
	m.HotSQS, m.HotAFC = sortedKeys(sqs), sortedKeys(afc)
	// The tail: a window of its own once the hot spot and the backlog it
	// left at the sources have drained, in which the uniform load alone
	// keeps every VL below the threshold and nothing may be adapted.
	runner.Sleep(ctx, runner.AtScale(r.w.Tail, r.Scale))
	last, err := r.readSwitches(ctx)
	if err != nil {
		return err
	}
	m.AdaptedTail, m.TailMs = last.adapted()-prev.adapted(), float64(r.w.Tail)/float64(time.Millisecond)
	m.EndFullest, m.EndOccupancy = last.fullest()
	return ctx.Err()
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// afcChecks are the run's checks: every planned measurement made, and
// E6's mechanism claims (the must-show) holding.
func afcChecks(rep *AFCReport, plan []afcExperiment) []runner.Check {
	var out []runner.Check
	for _, f := range rep.Fabrics {
		out = append(out, runner.Check{Name: fmt.Sprintf("K=%d fabric ran its experiments", f.K), OK: f.Error == "",
			Detail: map[bool]string{true: fmt.Sprintf("%s in %.0f s", f.Name, f.ElapsedS), false: f.Error}[f.Error == ""]})
	}
	failed := 0
	for _, p := range rep.Points {
		if p.Error != "" {
			failed++
		}
	}
	for _, x := range rep.Exchanges {
		if x.Error != "" {
			failed++
		}
	}
	for _, m := range rep.Mechanism {
		if m.Error != "" {
			failed++
		}
	}
	total := len(rep.Points) + len(rep.Exchanges) + len(rep.Mechanism)
	out = append(out, runner.Check{Name: "every measurement completed", OK: failed == 0 && total > 0,
		Detail: fmt.Sprintf("%d of %d failed", failed, total)})
	if slices.ContainsFunc(plan, func(e afcExperiment) bool { return e.Kind == afcMechanism }) {
		for _, c := range mechanismClaims(rep.Mechanism) {
			out = append(out, runner.Check{Name: c.ID + ": " + c.Paper, OK: c.Verdict == verdictAgree, Detail: c.Ours})
		}
	}
	return out
}

const (
	afcSynopsis = "run afc [--quick] [--time-scale S] [--rate RATE] [--out DIR] [--only E1,...] [--name N] [--json]"
	afcDesc     = `The adaptive-routing experiments (issue 20, seed 003): D-mod-K, Adaptive,
Adaptive-th and AFI (adapted packets isolated in the Adapted Flow Channel, adapted
at most once) under the static queuing schemes 1VC, DBBM-3VC, Flow2SL-3VC and
vFtree-3VC, in input-queued switches without and with VOQs, on RLFT(2,3) (16
hosts, 20 switches) and RLFT(3,3) (54 hosts, 45 switches), ibsm as SM with
--routing dmodk and adaptive routing set through its vendor class. E1-E3: UT,
HS10, HS25 without VOQs, load sweep on K=2 (and HS10 at full load on K=3
and on RLFT(4,3), 128 hosts and 80 switches);
E4: the same with VOQs on K=2; E5: an all-to-all exchange standing in for
the PTRANS trace (execution time) on K=2; E6: the mechanism on K=2 (occupancy,
adapted packets, SQS VLs holding hot-spot packets).
--quick: K=2, UT and HS10, 1VC and Flow2SL, E5 with two routings, E6 (under 10
minutes). The time scale is 62.5 per host on K=2, 125 on K=3, 250 on K=4, unless
--time-scale sets one. --rate cables every link at RATE (default 4xSDR): the
time scale grows by RATE's data rate over 4x SDR's (25 for 4xHDR), the
windows shrink by it. The report (index.md with the paper's claims beside
ours, figure grids like the paper's, report.json) goes to DIR. The exit
status is 1 when a check fails.`
)

// runAFCCmd is `ibfab run afc`.
func runAFCCmd(env *harness.Env, args []string) error {
	return runner.ExperimentCmd[*AFCReport]{Cmd: "run afc", Synopsis: afcSynopsis, Desc: afcDesc,
		QuickUsage: "K=2, fewer setups and loads (under 10 minutes)",
		ScaleUsage: "time scale of every fabric (default 62.5 per host on K=2, 125 on K=3, 250 on K=4 at 4x SDR, times the rate's factor)", DefOut: "out/afc", DefName: "afc", MaxName: 9, IDs: afcIDs,
		Rate: true,
		Validate: func(quick bool, only []string) error {
			_, err := selectAFC(afcPlan(quick), only)
			return err
		},
		Run: RunAFC, Print: printAFC, Passed: func(r *AFCReport) bool { return r.Passed },
	}.Main(env, args)
}

// printAFC is the command's summary: the verdict, the claims and the
// checks.
func printAFC(w io.Writer, rep *AFCReport, index string) {
	runner.PrintSummary(w, "afc", rep.Passed, rep.ElapsedS, index, func(w io.Writer) {
		for _, f := range rep.Fabrics {
			fmt.Fprintf(w, "  K=%d: every link %s, time scale %g\n", f.K, rep.LinkRate, f.TimeScale)
		}
		for _, c := range rep.Claims {
			fmt.Fprintf(w, "  %-22s K=%d %-12s %s\n", c.ID, c.K, c.Verdict, c.Ours)
		}
	}, rep.Checks)
}
