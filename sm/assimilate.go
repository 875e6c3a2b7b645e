package sm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"ibfab/sm/routing"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Change assimilation, thesis chapters 5 to 7: once a subnet is up, Run
// watches it and takes each change in with Assimilate, which detects
// (sweep or trap), discovers (partial or full), routes (the configured
// engine, or provisional PIRa then definitive FERa) and distributes under
// one of the chapter 7 strategies, reporting it all as one Result with
// event "assimilation".

// The phases only assimilations have.
const (
	PhaseDetection              = "detection"
	PhaseDefinitiveRouting      = "definitive-routing"
	PhaseDefinitiveDistribution = "definitive-distribution"
)

// MinSweepPeriod bounds the time between sweeps from below when
// SweepFactor sets it.
const MinSweepPeriod = time.Millisecond

// The outcomes of Assimilate that are not an assimilation.
var (
	// ErrNotAssimilating: there is no subnet up to assimilate a change
	// into; a full Sweep is what is needed.
	ErrNotAssimilating = errors.New("sm: no subnet up to assimilate changes into")
	// ErrNoChange: detection found nothing to assimilate.
	ErrNoChange = errors.New("sm: no change")
)

// Assimilate looks for changes as trigger says (TriggerSweep: a sweep of
// every switch; TriggerTrap: a scan of the switches whose traps came in)
// and, when it finds any, takes them in: discovery, routing, distribution
// and activation, as Config says. It returns ErrNoChange when nothing
// changed. A Result with SubnetUp false means the change could not be
// assimilated; the SM then needs a full Sweep (Run does one).
func (s *SM) Assimilate(ctx context.Context, trigger Trigger) (*Result, error) {
	if s.subnet == nil || !s.installed || s.state != mad.SMStateMaster {
		return nil, ErrNotAssimilating
	}
	start := time.Now()
	res := &Result{Event: "assimilation", Trigger: trigger, Discovery: s.cfg.Discovery,
		Distribution: s.cfg.Distribution, Provisional: s.cfg.Provisional, Sweep: s.sweeps, Routing: s.engine.Name()}
	old := s.subnet
	before := s.phaseSnapshot(PhaseDetection, PhaseDiscovery)
	p, err := s.detect(ctx, trigger)
	if err != nil {
		return nil, err
	}
	if p.tablesSuspect() {
		// The next sweep reads every table back, as out of standby: the
		// shadow of what this SM wrote no longer holds, and an
		// assimilation that trusts it finds the same silence at every
		// sweep (a soak saw ibsm do so for a minute after OpenSM had
		// mastered the subnet for half a second).
		s.dirty, s.comingOut = true, true
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d switches did not answer along this SM's routes yet answered directed probes: the forwarding tables are not what it wrote; the next sweep reads them back", p.refound))
	}
	if !p.changed() {
		if err := s.liftIdleBlocks(ctx, trigger); err != nil {
			return nil, err
		}
		s.tx.SetPhase(PhaseWatch)
		return nil, ErrNoChange
	}
	s.actCount++
	s.installed = false
	defer s.endAssimilation(res, start)
	res.Changes = p.changes
	res.SL2VLSets += len(p.ahead) // blocks sent with discovery's probes; their SMPs count there

	sn, err := s.discoverChange(ctx, res, p, before, start)
	if sn == nil {
		return res, err
	}
	s.describeChange(res, p, old, sn)
	rt, err := s.routeChange(res, sn)
	if rt == nil {
		return res, err
	}
	stage := ""
	if s.cfg.Provisional {
		stage = "provisional-"
	}
	if up, err := s.installChange(ctx, res, sn, rt, stage); !up {
		return res, err
	}
	conn := ms(time.Since(start))
	res.MsToConnectivity = &conn
	if s.cfg.Provisional {
		if up, err := s.installDefinitive(ctx, res, sn); !up {
			return res, err
		}
	}
	if err := s.partitionPhase(ctx, res); err != nil {
		return res, err
	}
	if err := s.qosPhase(ctx, res); err != nil {
		return res, err
	}
	if err := s.ccPhase(ctx, res); err != nil {
		return res, err
	}
	if err := s.arPhase(ctx, res); err != nil {
		return res, err
	}
	res.SubnetUp = true
	return res, nil
}

// detect looks for changes as trigger says (a sweep of every switch, or
// a scan of those whose traps came in) and discovers what they are, on a
// partial discovery of the subnet up.
func (s *SM) detect(ctx context.Context, trigger Trigger) (*partialDiscovery, error) {
	p := newPartial(s, s.cfg.Discovery == DiscoveryFull, true)
	s.tx.ResetWindowMin()
	s.tx.SetPhase(PhaseDiscovery)
	if trigger == TriggerSweep {
		s.lastSweep = s.clk.Now()
		p.sweep()
	} else {
		p.traps(s.takeTraps())
	}
	err := p.run(ctx)
	if !p.sweepStart.IsZero() && !p.sweepEnd.IsZero() {
		s.sweepDur = p.sweepEnd.Sub(p.sweepStart)
	}
	return p, err
}

// endAssimilation completes res once the assimilation is over, however
// it ended: totals, the SM's state, the reason it failed.
func (s *SM) endAssimilation(res *Result, start time.Time) {
	res.MsTotal = ms(time.Since(start))
	res.WindowMin = s.tx.WindowMin()
	res.SMPsTotal, res.Retries, res.Timeouts = 0, 0, 0
	for _, ph := range res.Phases {
		res.SMPsTotal += ph.SMPs
		res.Retries += ph.Retries
		res.Timeouts += ph.Timeouts
	}
	res.SMState = s.state.String()
	s.installed = res.SubnetUp
	s.lastChange = s.clk.Now()
	if !res.SubnetUp && res.Reason == "" {
		res.Reason = strings.Join(res.Problems, "; ")
	}
	s.tx.SetPhase(PhaseWatch)
}

// discoverChange ends the discovery detection began, fully or partially
// (Config.Discovery), and returns the subnet it found, which is the SM's
// now; nil when there is none to route (res says why, or the error).
//
// Detection and discovery ran interleaved: the sweep's SMPs are
// detection's, everything else discovery's; detection ends with the
// first change found.
func (s *SM) discoverChange(ctx context.Context, res *Result, p *partialDiscovery, before []PhaseStats, start time.Time) (*Subnet, error) {
	detected := p.detectedAt
	after := s.phaseSnapshot(PhaseDetection, PhaseDiscovery)
	res.Phases = append(res.Phases, phaseDelta(PhaseDetection, before[0], after[0], detected.Sub(start)))
	disc := phaseDelta(PhaseDiscovery, before[1], after[1], 0)
	if p.full {
		return s.rediscover(ctx, res, detected, disc)
	}
	return s.finishPartial(res, p, detected, disc), nil
}

// rediscover discovers the whole subnet again after detection (full
// discovery); its phase counts what detection sent beyond the sweep.
func (s *SM) rediscover(ctx context.Context, res *Result, detected time.Time, disc Phase) (*Subnet, error) {
	t0 := time.Now()
	if err := s.phase(res, PhaseDiscovery, func() error { return s.discover(ctx, res) }); err != nil {
		return nil, err
	}
	ph := &res.Phases[len(res.Phases)-1]
	ph.Ms += ms(t0.Sub(detected))
	ph.SMPs += disc.SMPs
	ph.Retries += disc.Retries
	ph.Timeouts += disc.Timeouts
	ph.Errors += disc.Errors
	if s.subnet == nil || len(res.Problems) > 0 {
		return nil, nil
	}
	return s.subnet, nil
}

// finishPartial builds the subnet partial discovery found and makes it
// the SM's, forgetting the devices that left; nil when it has problems.
func (s *SM) finishPartial(res *Result, p *partialDiscovery, detected time.Time, disc Phase) *Subnet {
	sn, removed, err := p.finish()
	disc.Ms = ms(time.Since(detected))
	res.Phases = append(res.Phases, disc)
	if err != nil {
		res.Problems = append(res.Problems, err.Error())
		return nil
	}
	for _, g := range removed {
		s.forget(g)
	}
	res.Problems = append(res.Problems, sn.Problems...)
	res.Warnings = append(res.Warnings, sn.Warnings...)
	if s.cfg.LIDFile != "" {
		if err := s.lids.Save(s.cfg.LIDFile); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("saving LIDs: %v", err))
		}
	}
	s.subnet, s.routes, s.report = sn, nil, nil
	if len(res.Problems) > 0 {
		return nil
	}
	return sn
}

// describeChange records in res the subnet the change left and how it
// differs from old.
func (s *SM) describeChange(res *Result, p *partialDiscovery, old, sn *Subnet) {
	if p.badTraps > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d traps named no known switch", p.badTraps))
	}
	res.Switches = sn.Topo.Count(topologies.Switch)
	res.HCAs = sn.Topo.Count(topologies.CA)
	res.Routers = sn.Topo.Count(topologies.Router)
	res.Links = sn.Topo.NumLinks()
	res.MaxLID = sn.MaxLID()
	res.SMLID = sn.SMLID
	res.NodesAdded, res.NodesRemoved, res.LinksAdded, res.LinksRemoved = diffSubnets(old, sn)
}

// routeChange routes the changed subnet: with the engine, or with PIRa's
// provisional routes (Config.Provisional). nil when it fails (res says
// why, or the error).
func (s *SM) routeChange(res *Result, sn *Subnet) (*routing.Routes, error) {
	engine := s.engine
	if s.cfg.Provisional {
		var err error
		if engine, err = routing.NewEngine("updn-pira", s.cfg.Options); err != nil {
			return nil, err
		}
		res.Routing, res.ProvisionalRouting = "updn-fera", engine.Name()
	}
	rt := s.route(res, PhaseRouting, engine, sn)
	if rt == nil {
		return nil, nil
	}
	if s.cfg.Provisional {
		res.ProvisionalEntries = rt.Computed
	} else {
		res.EntriesComputed, res.DefaultPorts = rt.Computed, rt.DefaultPorts
	}
	res.LFTEntries, res.DeadlockFree = rt.Entries(), s.report.DeadlockFree()
	return rt, nil
}

// installChange distributes rt's tables under the configured strategy,
// activates the ports again, and settles what a deactivation made the
// switches report (their traps, PortStateChange). It reports whether the
// subnet is up on rt (res says why not, or the error).
func (s *SM) installChange(ctx context.Context, res *Result, sn *Subnet, rt *routing.Routes, stage string) (bool, error) {
	plan := s.plan(sn)
	err := s.phase(res, PhaseDistribution, func() error { return s.distributeChange(ctx, sn, rt, plan, res, stage) })
	if err != nil || len(res.Problems) > 0 {
		return false, err
	}
	err = s.phase(res, PhaseActivation, func() error {
		if err := s.activate(ctx, sn, plan, res); err != nil || len(res.Problems) > 0 {
			return err
		}
		return s.settleOwnChanges(ctx, sn, res)
	})
	if err != nil || len(res.Problems) > 0 {
		return false, err
	}
	s.emitTables(stage+"active", sn, rt)
	return true, nil
}

// installDefinitive replaces the provisional routes with FERa's on the
// same up*/down* graph (thesis 6.3). It reports whether they are in (res
// says why not, or the error).
func (s *SM) installDefinitive(ctx context.Context, res *Result, sn *Subnet) (bool, error) {
	fera, err := routing.NewEngine("updn-fera", s.cfg.Options)
	if err != nil {
		return false, err
	}
	def := s.route(res, PhaseDefinitiveRouting, fera, sn)
	if def == nil {
		return false, nil
	}
	res.EntriesComputed, res.LFTEntries, res.DeadlockFree = def.Computed, def.Entries(), s.report.DeadlockFree()
	err = s.phase(res, PhaseDefinitiveDistribution, func() error { return s.distributeDefinitive(ctx, sn, def, res) })
	if err != nil || len(res.Problems) > 0 {
		return false, err
	}
	s.emitTables("final", sn, def)
	return true, nil
}

// route runs engine on sn as the named phase and verifies the result,
// which becomes the SM's route set if acceptRoutes takes it; nil when
// not (res says why).
func (s *SM) route(res *Result, phase string, engine routing.Engine, sn *Subnet) *routing.Routes {
	rt, rep := s.computeRoutes(res, phase, engine, sn)
	if rt == nil || !s.acceptRoutes(res, rt, rep) {
		return nil
	}
	s.routes, s.report = rt, rep
	return rt
}

// phaseSnapshot returns the counters of the named phases.
func (s *SM) phaseSnapshot(names ...string) []PhaseStats {
	out := make([]PhaseStats, len(names))
	for i, n := range names {
		out[i] = *s.tx.PhaseStats(n)
	}
	return out
}

func phaseDelta(name string, before, after PhaseStats, d time.Duration) Phase {
	return Phase{Name: name, Ms: ms(max(d, 0)), SMPs: after.SMPs - before.SMPs, Retries: after.Retries - before.Retries,
		Timeouts: after.Timeouts - before.Timeouts, Errors: after.Errors - before.Errors}
}

// diffSubnets counts the nodes and links (by GUID and port) b has that a
// has not, and the other way round.
func diffSubnets(a, b *Subnet) (nodesAdded, nodesRemoved, linksAdded, linksRemoved int) {
	nodes := func(sn *Subnet) map[uint64]bool {
		m := map[uint64]bool{}
		for _, n := range sn.Topo.Nodes() {
			m[n.GUID] = true
		}
		return m
	}
	links := func(sn *Subnet) map[[4]uint64]bool {
		m := map[[4]uint64]bool{}
		t := sn.Topo
		for _, l := range t.Links() {
			x := [2]uint64{t.Node(l.A.Node).GUID, uint64(l.A.Port)}
			y := [2]uint64{t.Node(l.B.Node).GUID, uint64(l.B.Port)}
			if y[0] < x[0] || (y[0] == x[0] && y[1] < x[1]) {
				x, y = y, x
			}
			m[[4]uint64{x[0], x[1], y[0], y[1]}] = true
		}
		return m
	}
	count := func(x, y map[uint64]bool) (n int) {
		for k := range x {
			if !y[k] {
				n++
			}
		}
		return n
	}
	countL := func(x, y map[[4]uint64]bool) (n int) {
		for k := range x {
			if !y[k] {
				n++
			}
		}
		return n
	}
	na, nb := nodes(a), nodes(b)
	la, lb := links(a), links(b)
	return count(nb, na), count(na, nb), countL(lb, la), countL(la, lb)
}

// forget drops what the SM knows it wrote to a device that left the
// subnet: if it comes back, it comes back reset.
func (s *SM) forget(guid uint64) {
	for k := range s.shadow {
		if k.guid == guid {
			delete(s.shadow, k)
		}
	}
	for k := range s.blocked {
		if k.guid == guid {
			delete(s.blocked, k)
			delete(s.kept, k)
		}
	}
	delete(s.described, guid)
	s.partForget(guid)
}

// forgetResets forgets what the SM wrote to the devices of sn that lost
// their configuration since prev: a switch whose LinearFDBTop is back to
// 0, a CA port whose LID is.
func (s *SM) forgetResets(prev, sn *Subnet) {
	if prev == nil {
		return
	}
	for i, n := range sn.Topo.Nodes() {
		j, ok := prev.Topo.LookupGUID(n.GUID)
		if !ok {
			continue
		}
		reset := false
		if n.Type == topologies.Switch {
			reset = prev.Switch[j].LinearFDBTop != 0 && sn.Switch[i].LinearFDBTop == 0
		} else {
			for p := 1; p <= n.NumPorts && p < len(prev.LID[j]); p++ {
				reset = reset || (prev.LID[j][p] != 0 && sn.Have[i][p] && sn.PortInfo[i][p].LID == 0)
			}
		}
		if reset {
			s.forget(n.GUID)
		}
	}
}

// takeTraps returns the switch LIDs whose traps came in, sorted, and
// forgets them; none when traps do not drive detection.
func (s *SM) takeTraps() []uint16 {
	if s.cfg.Detect == DetectSweep {
		clear(s.trapLIDs)
		return nil
	}
	var lids []uint16
	for l := range s.trapLIDs {
		lids = append(lids, l)
	}
	clear(s.trapLIDs)
	slices.Sort(lids)
	return lids
}

// sweepPeriod returns the time between the starts of two sweeps.
func (s *SM) sweepPeriod() time.Duration {
	if s.cfg.SweepFactor <= 0 {
		return s.cfg.SweepInterval
	}
	return max(time.Duration(s.cfg.SweepFactor*float64(s.sweepDur)), MinSweepPeriod)
}

// Run sweeps, then watches the subnet: it serves SMInfo requests and
// traps, and assimilates every change it detects (Config.Detect: by
// sweeps every sweepPeriod, by traps as they come, or both), giving each
// full sweep's result and each assimilation's to each. When a sweep or an
// assimilation leaves the subnet not up, or an SMInfo Set asks for it, it
// falls back to light sweeps every SweepInterval and full sweeps. A
// standby SM polls the master instead (standby.go) and sweeps again only
// when it gives the master up or is handed the subnet; a NotActive one
// only answers SMInfo. Run returns ctx's error or the port's.
func (s *SM) Run(ctx context.Context, each func(*Result)) error {
	for {
		if err := s.sendPending(ctx); err != nil {
			return err
		}
		switch s.state {
		case mad.SMStateStandby:
			if err := s.standby(ctx); err != nil {
				return err
			}
			continue
		case mad.SMStateNotActive:
			if err := s.notActive(ctx); err != nil {
				return err
			}
			continue
		}
		res, err := s.Sweep(ctx)
		if res != nil && each != nil {
			each(res)
		}
		if err != nil {
			return err
		}
		if s.state == mad.SMStateDiscovering {
			// The sweep decided nothing (discovery failed): the next
			// one after SweepInterval.
			if err := s.Serve(ctx, s.cfg.SweepInterval); err != nil {
				return err
			}
		}
		if s.state != mad.SMStateMaster {
			continue
		}
		s.lastSweep = s.clk.Now()
		up := res.SubnetUp && !s.waitHandover
		for {
			trigger, err := s.awaitChange(ctx, up)
			if err != nil {
				return err
			}
			if trigger == fullSweep || s.state != mad.SMStateMaster {
				break // a full sweep, or what the new state does
			}
			a, err := s.Assimilate(ctx, trigger)
			if errors.Is(err, ErrNoChange) {
				continue
			}
			if errors.Is(err, ErrNotAssimilating) {
				break
			}
			if err != nil {
				if a != nil && each != nil {
					each(a)
				}
				return err
			}
			if each != nil {
				each(a)
			}
			up = a.SubnetUp
		}
	}
}

// awaitChange serves until a change may have happened: it returns the
// trigger of an assimilation, or fullSweep (also when the SM is no
// longer master). Trap 144s and each sweep for changes have the other
// SMs asked for their SMInfo (reviewSMs), as OpenSM's light sweep does.
func (s *SM) awaitChange(ctx context.Context, up bool) (Trigger, error) {
	for {
		if s.state != mad.SMStateMaster {
			return fullSweep, nil
		}
		// Ports found protected by a key this SM does not hold are swept
		// for again every SweepInterval: each of those SMPs keeps their
		// lease running out, and once it has, the next sweep takes them
		// (and reaches what lies behind them).
		protected := s.mkm.unreadable > 0
		if up && !s.dirty && s.installed && !protected {
			return s.watchForChange(ctx)
		}
		again, err := s.lightSweep(ctx, up, protected)
		if err != nil || !again {
			return fullSweep, err
		}
	}
}

// lightSweep is how a master whose subnet cannot be assimilated into
// watches it, as before assimilation: it serves for SweepInterval, then
// a light sweep decides. It reports whether nothing changed, so that
// awaitChange waits again; otherwise a full sweep follows.
func (s *SM) lightSweep(ctx context.Context, up, protected bool) (bool, error) {
	if err := s.Serve(ctx, s.cfg.SweepInterval); err != nil {
		return false, err
	}
	if err := s.reviewSMs(ctx, s.takeSMTraps(true)); err != nil || s.state != mad.SMStateMaster {
		return false, err
	}
	if !up || s.dirty || s.waitHandover || protected {
		return false, nil
	}
	changed, err := s.Check(ctx)
	if err != nil || changed {
		return false, err
	}
	return true, nil
}

// watchForChange serves an installed subnet until a trap (unless Detect
// is DetectSweep) or the next sweep for changes (unless DetectTrap) calls
// for an assimilation, or an SMInfo Set or a lost mastership for a full
// sweep. The Trap 144s that come in meanwhile are reviewed as they come.
func (s *SM) watchForChange(ctx context.Context) (Trigger, error) {
	var until time.Time
	if s.cfg.Detect != DetectTrap {
		until = s.lastSweep.Add(s.sweepPeriod())
	}
	traps := s.cfg.Detect != DetectSweep
	s.tx.SetPhase(PhaseWatch)
	for {
		switch {
		case s.dirty || s.state != mad.SMStateMaster:
			return fullSweep, nil
		case len(s.smTraps) > 0:
			if err := s.reviewSMs(ctx, s.takeSMTraps(false)); err != nil {
				return fullSweep, err
			}
			continue
		case traps && len(s.trapLIDs) > 0:
			return TriggerTrap, nil
		case !until.IsZero() && !s.clk.Now().Before(until):
			if err := s.reviewSMs(ctx, nil); err != nil || s.state != mad.SMStateMaster {
				return fullSweep, err
			}
			return TriggerSweep, nil
		}
		if err := s.waitServing(ctx, until); err != nil {
			return fullSweep, err
		}
	}
}

// takeSMTraps returns the LIDs whose Trap 144 came in, and forgets them;
// with none, nil (every SM) when all says so, else an empty set.
func (s *SM) takeSMTraps(all bool) map[uint16]bool {
	if len(s.smTraps) == 0 && all {
		return nil
	}
	out := maps.Clone(s.smTraps)
	clear(s.smTraps)
	return out
}
