package sm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"ibfab/internal/clock"
	"ibfab/madport"
	"ibfab/sm/ccmgr"
	"ibfab/sm/partmgr"
	"ibfab/sm/routing"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Phase names, as the sweep result spells them.
const (
	PhaseDiscovery    = "discovery"
	PhaseRouting      = "routing"
	PhaseDistribution = "distribution"
	PhaseActivation   = "activation"
	// PhaseProtection blocks the cut nodes' forbidden turns after the
	// subnet is up (Config.PreBlock).
	PhaseProtection = "protection"
	// PhaseWatch counts the light sweeps and trap represses between full
	// sweeps; it is not part of a sweep's phases.
	PhaseWatch = "watch"
)

// ClockPort is a madport.Port that brings its own clock, as a simulated
// fabric does; the SM schedules its timeouts on it unless Config.Clock
// says otherwise.
type ClockPort interface {
	madport.Port
	Clock() clock.Clock
}

// SM is a subnet manager on one port. Its methods are not safe for
// concurrent use: one goroutine sweeps, and answers SMInfo requests and
// traps while it does.
//
// Its state comes in groups, one embedded struct per concern. There is
// no lock: every group belongs to the SM's goroutine, and what other
// goroutines hand the SM (the QoS and AR control calls, the SA's Sets)
// comes in through the managers' inboxes and the transaction layer's
// wake (handOff), to be taken in between sweeps.
type SM struct {
	cfg    Config
	port   madport.Port
	clk    clock.Clock
	tx     *txn.Layer
	engine routing.Engine
	guid   uint64 // our port GUID, the SM's identity in SMInfo

	caches
	election
	sweepState
	watchState
	turnBlocks
	managers
	saLink
}

// caches is what the SM remembers of the devices from one sweep to the
// next: the LID and M_Key caches (package sm/cache, behind LIDCache and
// KeyCache; kept in files beside each other when Config.LIDFile is set),
// the M_Key manager's counters, the shadow of what it wrote (configure.go), and
// the NodeDescriptions read. Owned by the SM's goroutine; no lock.
type caches struct {
	lids      LIDCache    // *cache.LIDMap
	mk        KeyCache    // *cache.MKeys: the M_Key manager's keys (mkey.go)
	mkm       mkeyManager // the M_Key manager's counters (mkey.go)
	shadow    map[shadowKey][]byte
	described map[uint64]string // NodeDescriptions read, by node GUID
}

// election is the SM's state and its dealings with the other SMs
// (sminfo.go, standby.go): remotes by port GUID as they last answered;
// master, the SM a standby polls, and misses, its polls unanswered in a
// row; waitHandover, a master waiting for a lower master to hand over;
// comingOut, the SM leaves standby (a takeover or a handover): its next
// sweep reloads the LID file and reads the forwarding tables back;
// toSend, SMInfo Sets to send (ACKNOWLEDGE); smTraps, the LIDs whose
// Trap 144 came in. Owned by the SM's goroutine; no lock (State reads it
// only while Run does not run).
type election struct {
	state        mad.SMState
	actCount     uint32
	remotes      map[uint64]*remoteSM
	master       uint64
	misses       int
	waitHandover bool
	comingOut    bool
	toSend       []smInfoSet
	smTraps      map[uint16]bool
	polls        uint64 // polls of the master sent
	traps144     uint64 // Trap 144 sent
	trapSeq      uint32
	repressed    uint64 // TrapRepresses of our Trap 144
	refused      uint64 // SMInfo Sets refused
	mkeyDrops    uint64 // SMInfo requests dropped by the M_Key check
	smInfos      uint64 // SMInfo requests answered
}

// sweepState is what the last sweep or assimilation found and put in
// place. Owned by the SM's goroutine; no lock (Subnet, Routes and
// Verification read it between sweeps).
type sweepState struct {
	sweeps int
	subnet *Subnet
	routes *routing.Routes
	report *routing.Report
	// installed: the switches hold routes (and every port is
	// configured) for subnet, so LID routes work and a change can be
	// assimilated; false after a sweep or assimilation that failed.
	installed bool
	// layers is the VL layers of the route set distributed last
	// (Routes.Layers, multipath.go): with more than one, every port maps
	// SL s to VL s mod layers.
	layers int
	// noPrefix: a directed route with a LID-routed prefix went
	// unanswered once and the same SMP purely directed did not, so
	// partial discovery routes purely directed.
	noPrefix bool
	// lastSweep is when the last sweep for changes started (SM clock),
	// sweepDur how long it took (wall time): SweepFactor's T_sweep.
	lastSweep time.Time
	sweepDur  time.Duration
	// lastChange is when the last assimilation ended (SM clock): a check
	// that finds nothing lifts the blocks it left only a sweep interval
	// later (liftIdleBlocks), when its packets have left the fabric.
	lastChange time.Time
}

// watchState is what came in between sweeps that may call for one: the
// traps and SMInfo Sets, and the changes the SM itself made. Owned by the
// SM's goroutine, which takes every MAD in (txn.Layer.Handle); no lock.
type watchState struct {
	dirty     bool            // an SMInfo Set asks for a full sweep
	trapped   bool            // a trap came in: Check whether something changed
	trapLIDs  map[uint16]bool // switches whose Trap 128 came in, not yet scanned
	represses uint64          // TrapRepresses sent
	badTraps  uint64          // traps that are not a Trap 128 with a LID
	// ownChanges: the switches at the ends of the links the running
	// distribution set Down, whose traps and PortStateChange are its own
	// (settleOwnChanges).
	ownChanges map[int]bool
	onTrap     func() // takes trapLIDs in at once, during an assimilation's discovery
}

// turnBlocks is the cut nodes' protection (protect.go): the turns
// blocked, and what a block replaced. Owned by the SM's goroutine; no
// lock.
type turnBlocks struct {
	blocked map[turnKey]bool   // SLtoVL pairs set to VL15 at cut nodes
	kept    map[turnKey][]byte // with VLTablesKeep: what a block replaced
	// blocksKnown: blocked holds every block in the subnet, read back
	// (readBlocks) at the first distribution as master.
	blocksKnown bool
}

// managers is the optional managers' state, each nil when its Config
// field turns it off. The pointers are set in New and never after, so
// QoSCall and ARCall may read them from other goroutines to reach the
// managers' inboxes (handOff); what they point to is the SM goroutine's,
// without a lock.
type managers struct {
	qos  *qosState         // nil with QoS off
	cc   CongestionManager // nil with congestion control off
	ar   *arState          // nil with adaptive routing unmanaged
	part PartitionManager  // nil with partitions unmanaged
}

// saLink is the Subnet Administrator beside the SM (subnadm.go), nil
// without one; saSubnet and saRoutes what its View was made of. Set by
// SetSubnetAdmin before Run, then the SM goroutine's; no lock (the SA
// guards its own state).
type saLink struct {
	sa       SubnetAdmin
	saSubnet *Subnet
	saRoutes *routing.Routes
}

// New returns an SM on port. It reads Config.LIDFile, if any, and sets
// the port's IsSM capability.
func New(port madport.Port, cfg Config) (*SM, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	eng, err := routing.NewEngine(cfg.Routing, cfg.Options)
	if err != nil {
		return nil, err
	}
	var q *qosState
	if cfg.QoS != nil {
		if q, err = newQoSState(cfg.QoS); err != nil {
			return nil, err
		}
	}
	clk := cfg.Clock
	if clk == nil {
		if cp, ok := port.(ClockPort); ok {
			clk = cp.Clock()
		} else {
			clk = clock.Real()
		}
	}
	lids := NewLIDMap()
	if cfg.LIDFile != "" {
		if lids, err = LoadLIDMap(cfg.LIDFile); err != nil {
			return nil, err
		}
	}
	info, err := port.Info()
	if err != nil {
		return nil, fmt.Errorf("sm: port info: %w", err)
	}
	s := &SM{cfg: cfg, port: port, clk: clk, engine: eng, guid: info.PortGUID,
		caches:     caches{lids: lids, mk: newKeyCache(&cfg), shadow: map[shadowKey][]byte{}, described: map[uint64]string{}},
		election:   election{state: mad.SMStateDiscovering, remotes: map[uint64]*remoteSM{}, smTraps: map[uint16]bool{}},
		watchState: watchState{trapLIDs: map[uint16]bool{}},
		turnBlocks: turnBlocks{blocked: map[turnKey]bool{}, kept: map[turnKey][]byte{}},
		managers:   managers{qos: q},
	}
	s.mk.MetAt([]uint8{0}, s.guid) // the SM's own port
	if err := s.loadKeys(); err != nil {
		return nil, err
	}
	s.tx = txn.New(port, clk, s.cfg.TxnConfig, s.cfg.MKey)
	s.tx.KeyOf = s.smpKey
	s.tx.OnUnsolicited = s.unsolicited
	s.tx.OnSA = s.subnAdm
	if cfg.Partitions != nil {
		if s.part, err = partmgr.New(cfg.Partitions, s.tx); err != nil {
			return nil, err
		}
	}
	if cfg.CC != nil {
		s.cc = ccmgr.New(cfg.CC, s.tx, clk)
	}
	if cfg.AR != nil {
		s.ar = newARState(cfg.AR, s.tx)
	}
	if err := port.SetIsSM(true); err != nil {
		return nil, fmt.Errorf("sm: setting IsSM: %w", err)
	}
	return s, nil
}

// Close clears the port's IsSM capability. It does not close the port.
func (s *SM) Close() error { return s.port.SetIsSM(false) }

// State returns the SM's state: Discovering until a sweep decides, then
// Master or Standby, and as the other SMs and the polls make it. Not safe
// while Run runs: Config.OnSMEvent hears of every change.
func (s *SM) State() mad.SMState { return s.state }

// Subnet returns what the last sweep discovered, nil before one.
func (s *SM) Subnet() *Subnet { return s.subnet }

// Routes returns the last route set computed, nil before one.
func (s *SM) Routes() *routing.Routes { return s.routes }

// Verification returns the verifier's report on Routes.
func (s *SM) Verification() *routing.Report { return s.report }

// LIDs returns the SM's GUID→LID map (nil should its LID cache be
// another LIDCache than a LIDMap).
func (s *SM) LIDs() *LIDMap {
	m, _ := s.lids.(*LIDMap)
	return m
}

// Sweep discovers the subnet from scratch and, when this SM is master,
// computes and verifies routes, distributes them and activates every
// port. The error is for a port that failed or ctx's end; a subnet that
// could not be brought up is a Result with SubnetUp false and a Reason.
//
// Each step below either brings the subnet one phase further or ends
// the sweep; endSweep totals the result whichever it was.
func (s *SM) Sweep(ctx context.Context) (*Result, error) {
	res, start, attrs := s.beginSweep()
	defer s.endSweep(res, start, attrs)

	if err := s.phase(res, PhaseDiscovery, func() error { return s.discover(ctx, res) }); err != nil {
		return res, err
	}
	if !s.mastersSubnet(res) {
		return res, nil
	}
	sn := s.subnet
	rt, err := s.routePhase(ctx, sn, res)
	if err != nil || rt == nil {
		return res, err
	}
	plan := s.plan(sn)
	if err := s.phase(res, PhaseDistribution, func() error { return s.distribute(ctx, sn, rt, plan, res) }); err != nil {
		return res, err
	}
	// The traps that came in so far are kept: most reported changes this
	// sweep has seen (the switches announcing their links as they learn
	// the SM's LID), but one may be for a change after the sweep read the
	// switch, and its distribution cleared PortStateChange since. A scan
	// of each tells them apart.
	if len(res.Problems) > 0 {
		return res, nil
	}
	if err := s.partitionPhase(ctx, res); err != nil {
		return res, err
	}
	if err := s.phase(res, PhaseActivation, func() error { return s.activate(ctx, sn, plan, res) }); err != nil {
		return res, err
	}
	res.SubnetUp = len(res.Problems) == 0
	if !res.SubnetUp {
		return res, nil
	}
	s.comingOut = false
	if err := s.managerPhases(ctx, res); err != nil {
		return res, err
	}
	return res, s.protectionPhase(ctx, sn, rt, res)
}

// beginSweep starts a sweep's account: its number and result, its start
// (wall time), and a copy of the SMP counts by attribute to take the
// sweep's from. Out of standby it forgets what it wrote before and
// reloads the LID and M_Key caches.
func (s *SM) beginSweep() (*Result, time.Time, map[txn.AttrKey]uint64) {
	s.sweeps++
	s.actCount++
	s.dirty = false
	res := &Result{Event: "sweep", Sweep: s.sweeps, Routing: s.engine.Name()}
	start := time.Now()
	s.installed = false
	if s.comingOut {
		s.forgetWritten()
	}
	if s.comingOut && s.cfg.LIDFile != "" {
		s.reloadCaches(res)
	}
	s.tx.ResetWindowMin()
	return res, start, s.tx.AttrCounts()
}

// reloadCaches reads the LID and M_Key caches again as a sweep out of
// standby starts: the LIDs the master kept, when it wrote them where this
// SM reads (OpenSM's guid2lid when honoured); the ports' own LIDs come
// first all the same.
func (s *SM) reloadCaches(res *Result) {
	if lids, err := LoadLIDMap(s.cfg.LIDFile); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("reloading LIDs: %v", err))
	} else {
		s.lids = lids
	}
	if err := s.loadKeys(); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("reloading M_Keys: %v", err))
	}
}

// endSweep totals res, however far the sweep got: whether the subnet is
// installed, time, SMP counts, the window's narrowest, the state, and
// the reason a subnet is not up. A master not waiting for a handover
// saves the M_Key cache.
func (s *SM) endSweep(res *Result, start time.Time, attrs map[txn.AttrKey]uint64) {
	s.installed = res.SubnetUp && s.state == mad.SMStateMaster
	res.MsTotal = ms(time.Since(start))
	res.WindowMin = s.tx.WindowMin()
	res.SMPsByAttr = s.tx.AttrsSince(attrs)
	for _, p := range res.Phases {
		res.SMPsTotal += p.SMPs
		res.Retries += p.Retries
		res.Timeouts += p.Timeouts
	}
	res.SMState = s.state.String()
	if s.state == mad.SMStateMaster && !s.waitHandover {
		if err := s.saveKeys(); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("saving M_Keys: %v", err))
		}
	}
	if !res.SubnetUp && res.Reason == "" {
		res.Reason = strings.Join(res.Problems, "; ")
	}
}

// mastersSubnet reports whether the sweep goes on past discovery: a
// subnet was found without problems, and this SM is its master and not
// waiting to hand it over. A standby's result says so in its Reason.
func (s *SM) mastersSubnet(res *Result) bool {
	if s.subnet == nil || len(res.Problems) > 0 {
		return false
	}
	if s.state != mad.SMStateMaster {
		res.Reason = strings.ToLower(s.state.String()) + ": " + res.Reason
		return false
	}
	return !s.waitHandover
}

// routePhase finds the sweep's route set: out of standby, the tables the
// switches hold, when they do; else the engine's. The route set is kept,
// and reported, even when it is refused: Routes and Verification show
// what was wrong with it. It returns nil when the sweep stops here (res
// says why).
func (s *SM) routePhase(ctx context.Context, sn *Subnet, res *Result) (*routing.Routes, error) {
	var rt *routing.Routes
	var rep *routing.Report
	if s.comingOut {
		var err error
		if err := s.phase(res, PhaseRouting, func() error {
			rt, rep, err = s.keptRoutes(ctx, sn, res)
			return err
		}); err != nil {
			return nil, err
		}
		res.RoutesKept = rt != nil
		if rt != nil {
			res.Routing = KeptRoutes
		}
	}
	if rt == nil {
		rt, rep = s.computeRoutes(res, PhaseRouting, s.engine, sn)
	}
	if rt == nil {
		return nil, nil
	}
	s.routes, s.report = rt, rep
	res.EntriesComputed, res.DefaultPorts, res.LFTEntries = rt.Computed, rt.DefaultPorts, rt.Entries()
	res.MaxLID, res.DeadlockFree = rt.MaxLID, rep.DeadlockFree()
	if !s.acceptRoutes(res, rt, rep) {
		return nil, nil
	}
	return rt, nil
}

// managerPhases runs the managers that configure an up subnet, in their
// order: QoS, congestion control, adaptive routing.
func (s *SM) managerPhases(ctx context.Context, res *Result) error {
	if err := s.qosPhase(ctx, res); err != nil {
		return err
	}
	if err := s.ccPhase(ctx, res); err != nil {
		return err
	}
	return s.arPhase(ctx, res)
}

// protectionPhase lifts or sets the cut nodes' turn blocks of an up
// subnet. With another SM about, the blocks are lifted: it may take
// over, and it would keep them. A sweep that sent no tables follows the
// last change by a sweep interval at least, so their packets have long
// left the fabric. Alone, with PreBlock under cut-node deactivation, the
// forbidden turns are blocked ahead of the next change.
func (s *SM) protectionPhase(ctx context.Context, sn *Subnet, rt *routing.Routes, res *Result) error {
	switch {
	case len(s.remotes) > 0 && res.LFTBlocks == 0 && len(s.blocked) > 0:
		return s.phase(res, PhaseProtection, func() error { return s.liftBlocks(ctx, sn, res) })
	case len(s.remotes) == 0 && s.cfg.PreBlock && s.cfg.Distribution == DistCutDeps && rt.Up != nil:
		return s.phase(res, PhaseProtection, func() error { return s.preBlock(ctx, sn, rt, res) })
	}
	return nil
}

// preBlock blocks the forbidden turns of rt's cut nodes that are not
// blocked yet (Config.PreBlock). The subnet is up already: what fails is
// a warning, and the next change blocks it.
func (s *SM) preBlock(ctx context.Context, sn *Subnet, rt *routing.Routes, res *Result) error {
	s.blockCutDeps(sn, rt, res, func(format string, args ...any) {
		res.Warnings = append(res.Warnings, "blocking a cut-node turn: "+fmt.Sprintf(format, args...))
	})
	return s.tx.Run(ctx)
}

// computeRoutes runs engine on sn as the named phase and verifies the
// route set; nil when the engine fails (res says why).
func (s *SM) computeRoutes(res *Result, phase string, engine routing.Engine, sn *Subnet) (*routing.Routes, *routing.Report) {
	var rt *routing.Routes
	var rep *routing.Report
	_ = s.phase(res, phase, func() error {
		t0 := time.Now()
		var err error
		rt, err = engine.Route(&sn.Fabric)
		if err == nil {
			rt, err = s.multipath(res, sn, rt)
		}
		res.RouteMs += ms(time.Since(t0))
		if err != nil {
			res.Problems = append(res.Problems, err.Error())
			return nil
		}
		t0 = time.Now()
		rep = routing.Verify(&sn.Fabric, rt)
		res.VerifyMs += ms(time.Since(t0))
		return nil
	})
	if rt == nil {
		return nil, nil
	}
	return rt, rep
}

// acceptRoutes is the SM's rule for a verified route set, in sweeps and
// assimilations alike: it must connect every pair of end ports, and be
// free of credit loops, unless the engine promises nothing and
// Config.AllowCreditLoops lets a cycle pass as a warning. It reports
// whether the set is accepted; res's problems say why not.
func (s *SM) acceptRoutes(res *Result, rt *routing.Routes, rep *routing.Report) bool {
	switch {
	case !rep.Connected():
		res.Problems = append(res.Problems, rep.Err().Error())
		return false
	case rep.DeadlockFree():
		return true
	case s.cfg.AllowCreditLoops && !promisesDeadlockFreedom(rt.Engine):
		res.Warnings = append(res.Warnings, rep.Err().Error())
		return true
	}
	res.Problems = append(res.Problems, rep.Err().Error())
	return false
}

// promisesDeadlockFreedom reports whether an engine's route sets are
// deadlock-free by construction, so a cycle is a bug, never a warning.
func promisesDeadlockFreedom(engine string) bool {
	return strings.HasPrefix(engine, "updn") || engine == "ftree" || engine == "dmodk"
}

// phase runs fn as the named phase and records its time and SMPs.
func (s *SM) phase(res *Result, name string, fn func() error) error {
	s.tx.SetPhase(name)
	before := *s.tx.PhaseStats(name)
	start := time.Now()
	err := fn()
	after := *s.tx.PhaseStats(name)
	res.Phases = append(res.Phases, Phase{Name: name, Ms: ms(time.Since(start)),
		SMPs: after.SMPs - before.SMPs, Retries: after.Retries - before.Retries,
		Timeouts: after.Timeouts - before.Timeouts, Errors: after.Errors - before.Errors})
	s.tx.SetPhase(PhaseWatch)
	return err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// discover runs a full discovery and the SM election, and keeps the
// subnet.
func (s *SM) discover(ctx context.Context, res *Result) error {
	prev := s.subnet
	s.subnet, s.routes, s.report = nil, nil, nil
	s.mkm.unreadable = 0
	d := &discovery{sm: s, tx: s.tx}
	if err := d.run(ctx); err != nil {
		return err
	}
	sn, err := d.subnet()
	if err != nil {
		res.Problems = append(res.Problems, err.Error())
		return nil
	}
	res.Problems = append(res.Problems, sn.Problems...)
	res.Warnings = append(res.Warnings, sn.Warnings...)
	s.forgetResets(prev, sn)
	res.Switches = sn.Topo.Count(topologies.Switch)
	res.HCAs = sn.Topo.Count(topologies.CA)
	res.Routers = sn.Topo.Count(topologies.Router)
	res.Links = sn.Topo.NumLinks()
	res.MaxLID = sn.MaxLID()
	res.SMLID = sn.SMLID
	s.subnet = sn
	if len(res.Problems) > 0 {
		return nil
	}
	if err := s.elect(ctx, sn, res); err != nil {
		return err
	}
	if s.cfg.LIDFile != "" && s.state == mad.SMStateMaster && !s.waitHandover {
		// Only the master writes the cache: a standby's would be what
		// another SM assigned.
		if err := s.lids.Save(s.cfg.LIDFile); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("saving LIDs: %v", err))
		}
		if err := s.saveKeys(); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("saving M_Keys: %v", err))
		}
	}
	return nil
}

// Serve answers SMInfo requests and represses traps for d on the SM's
// clock. It returns early once a trap has come in (after TrapCoalesce
// more, so that the traps of one change are taken together) or an SMInfo
// Set asked for a sweep; Pending then reports it.
func (s *SM) Serve(ctx context.Context, d time.Duration) error {
	s.tx.SetPhase(PhaseWatch)
	s.trapped = false
	until := s.clk.Now().Add(d)
	coalescing := false
	for !s.dirty && len(s.smTraps) == 0 && s.clk.Now().Before(until) {
		if s.trapped && !coalescing {
			coalescing = true
			if u := s.clk.Now().Add(TrapCoalesce); u.Before(until) {
				until = u
			}
		}
		if err := s.waitServing(ctx, until); err != nil {
			return err
		}
	}
	return nil
}

// waitServing waits as tx.Wait does, and then answers the QoS and
// adaptive routing control calls that came in; a call ends the wait
// early.
func (s *SM) waitServing(ctx context.Context, until time.Time) error {
	master := s.state == mad.SMStateMaster
	if due, ok := s.ccLogDue(); master && ok && (until.IsZero() || due.Before(until)) {
		until = due // the congestion logs are due first
	}
	s.tx.SetWakeable(master && (s.qos != nil || s.ar != nil))
	err := s.tx.Wait(ctx, until)
	s.tx.SetWakeable(false)
	if err != nil || !master {
		// Only a master reads logs and changes tables: a control call
		// waits until this SM is master.
		return err
	}
	if err := s.ccPoll(ctx); err != nil {
		return err
	}
	if err := s.serveSA(ctx); err != nil {
		return err
	}
	if err := s.serveQoS(ctx); err != nil {
		return err
	}
	return s.serveAR(ctx)
}

// handOff gives a control call to the SM's goroutine through its
// manager's inbox, wakes the SM should it be waiting, and waits for the
// reply (QoSCall, ARCall): the calls are served between sweeps
// (waitServing), never beside one.
func handOff[C, R any](ctx context.Context, s *SM, inbox chan<- C, c C, reply <-chan R) (R, error) {
	var none R
	select {
	case inbox <- c:
	case <-ctx.Done():
		return none, ctx.Err()
	}
	s.tx.Wake()
	select {
	case r := <-reply:
		return r, nil
	case <-ctx.Done():
		return none, ctx.Err()
	}
}

// serveInbox serves the calls in inbox, in the order they came, until
// none is left or serving one fails.
func serveInbox[C any](ctx context.Context, inbox <-chan C, serve func(context.Context, C) error) error {
	for {
		select {
		case c := <-inbox:
			if err := serve(ctx, c); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// TrapCoalesce is how long Serve goes on after a trap, to take in the
// other traps of the same change.
const TrapCoalesce = 50 * time.Millisecond

// Pending reports whether, during the last Serve, a trap came in (Check
// tells whether anything changed) or an SMInfo Set asked for a new sweep.
func (s *SM) Pending() bool { return s.trapped || s.dirty }

// Check is a light sweep (thesis 5.2): it reads SwitchInfo of every known
// switch and reports whether one has PortStateChange set or does not
// answer, that is whether a full sweep is needed.
func (s *SM) Check(ctx context.Context) (bool, error) {
	sn := s.subnet
	if sn == nil || s.dirty {
		return true, nil
	}
	s.tx.SetPhase(PhaseWatch)
	changed := false
	for _, sw := range sn.Switches() {
		s.tx.Get(txn.Request{DR: true, Path: sn.Paths[sw], Attr: mad.AttrSwitchInfo}, func(r *txn.Response) {
			if r.Err != nil || mad.SwitchInfo(r.Data).Fields().PortStateChange {
				changed = true
			}
		})
	}
	err := s.tx.Run(ctx)
	s.trapped = false
	return changed, err
}

// Stats are an SM's counters since New.
type Stats struct {
	Phases    map[string]PhaseStats // SMPs by phase, PhaseWatch included
	Received  EngineStats           // what arrived that answered nothing
	Represses uint64                // TrapRepresses sent
	SMInfo    uint64                // SMInfo requests answered
	BadTraps  uint64                // traps repressed that were no Trap 128 or 144 naming a LID
	// Dealings with other SMs: polls of the master sent as a standby,
	// Trap 144 sent to it, SMInfo Sets refused, SMInfo requests dropped
	// by the M_Key check.
	Polls, Traps144, Refused, MKeyDrops uint64
	// MKey is what the M_Key manager counted.
	MKey MKeyStats
}

// Stats returns the SM's counters.
func (s *SM) Stats() Stats {
	st := Stats{Phases: s.tx.Phases(), Received: s.tx.Stats(), Represses: s.represses, SMInfo: s.smInfos,
		BadTraps: s.badTraps, Polls: s.polls, Traps144: s.traps144, Refused: s.refused, MKeyDrops: s.mkeyDrops,
		MKey: s.mkm.stats}
	st.MKey.Keys = s.mk.Len()
	return st
}
