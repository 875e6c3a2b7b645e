package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/internal/ctl"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// Options tune Run.
type Options struct {
	Out      string        // report directory; "" writes none
	Fabric   string        // fabric name; default "sk"
	Log      io.Writer     // progress lines
	Quick    bool          // every kind once, short gaps
	Duration time.Duration // a full run's length (default 1 h)
	Seed     uint64
}

// The soak's roles on the default fabric (the thesis's): ibsm at ca4 (the
// thesis's SM node), OpenSM at ca7, the SMInfo readings from ca12; the
// flows among the hosts that run no SM.
const (
	masterNode   = "ca4"
	standbyNode  = "ca7"
	observerNode = "ca12"
	masterPrio   = 10
	standbyPrio  = 1
)

var trafficHosts = []string{"ca11", "ca12", "ca13", "ca14", "ca15"}

// The SMs' timing, as the failover suite's: both poll every second, two
// retries; sweeps every 2 s.
const (
	pollInterval  = time.Second
	pollRetries   = 2
	sweepInterval = 2 * time.Second
)

// Traffic: light CBR flows between every ordered pair of traffic hosts,
// each source holding a backlog while its port cannot send, as in the
// failover suite.
const (
	flowPPS     = 100
	flowPayload = 256
	flowBacklog = 4096
)

// memEvery is how often every process's Pss is read; warmupFrac the part
// of the run (at least minWarmup) its fit leaves out.
const (
	memEveryQuick = 3 * time.Second
	memEveryFull  = 15 * time.Second
	minWarmup     = 2 * time.Minute
	warmupFrac    = 0.25
)

func ibsmArgs(control, partitions string) []string {
	return []string{"--priority", fmt.Sprint(masterPrio), "--pre-block=false", "--sweep-interval", sweepInterval.String(),
		"--polling-interval", pollInterval.String(), "--polling-retries", fmt.Sprint(pollRetries),
		"--qos", "--control", control, "--partitions", partitions}
}

func openSMConf() string {
	return fmt.Sprintf("sweep_interval %d\nsminfo_polling_timeout %d\npolling_retry_number %d\nqos TRUE\n",
		int(sweepInterval/time.Second), pollInterval.Milliseconds(), pollRetries)
}

// quickRounds is how many disturbances of each kind a quick soak runs:
// every kind once, in a seeded order, about 45 s here. It ends within
// the memory check's warm-up either way (that check is a long soak's),
// and make test has twenty minutes for everything.
const quickRounds = 1

// soakRun is the soak in progress.
type soakRun struct {
	o       Options
	topo    *topologies.Topology
	dir     string // the SMs' files
	rep     *Report
	t0      time.Time
	control string            // ibsm's control socket
	parts   string            // its partitions.conf
	lids    map[string]uint16 // the CAs' and the switches' LIDs

	mu      sync.Mutex
	ibsm    *runner.SMProc
	opensm  *runner.SMProc
	smp     *runner.SMInfoSampler
	drops   *dropReader
	mem     *memSampler
	qosFlow string   // the QoS flow admitted, "" none
	members []string // the soak partition's hosts, nil none
	ibsmN   int
	tid     uint64 // the soak's own SMPs' transaction IDs
}

// Run runs the soak and, with o.Out, writes its report there. The error
// is for a soak that could not start (the fabric did not come up); what
// failed later is in the report.
func Run(ctx context.Context, o Options) (rep *Report, err error) {
	goroutines := runtime.NumGoroutine()
	if o.Fabric == "" {
		o.Fabric = "sk"
	}
	if o.Duration <= 0 {
		o.Duration = time.Hour
	}
	r := &soakRun{o: o, topo: topologies.Default()}
	r.rep = &Report{Experiment: "soak", Started: time.Now(), Fabric: o.Fabric, Topology: "the thesis's 8 switches and 7 hosts (ibfab's default)",
		Seed: o.Seed, Quick: o.Quick, DurationS: o.Duration.Seconds(), Master: masterNode, Standby: standbyNode, Observer: observerNode,
		OpenSMConf: openSMConf(), BoundsMs: map[string]float64{}, Disturbances: []DisturbanceRun{}}
	r.rep.Leaks.GoroutinesBefore = goroutines
	for _, k := range kinds.Values() {
		r.rep.BoundsMs[k.String()] = float64(Bound(k).Milliseconds())
	}
	r.rep.Targets = FindTargets(r.topo, masterNode, []string{masterNode, standbyNode, observerNode}, trafficHosts)
	if err := r.prepareDir(); err != nil {
		return nil, err
	}
	r.t0 = time.Now()
	if _, err := harness.Up(o.Fabric, r.topo, harness.UpOptions{}); err != nil {
		return nil, fmt.Errorf("up: %w", err)
	}
	runErr := r.soak(ctx)
	r.stopSMs()
	derr := harness.Down(o.Fabric)
	r.afterDown()
	r.finish(errors.Join(runErr, derr))
	if o.Out != "" {
		if err := runner.WriteReportFiles(o.Out, r.rep, func() string { return indexMD(r.rep) }); err != nil {
			return r.rep, err
		}
	}
	return r.rep, nil
}

// prepareDir makes the report directory, or a temporary one for the SMs'
// files.
func (r *soakRun) prepareDir() error {
	if r.o.Out != "" {
		r.dir = r.o.Out
		return os.MkdirAll(r.dir, 0o755)
	}
	d, err := os.MkdirTemp("", "ibfab-soak-")
	r.dir = d
	return err
}

func (r *soakRun) logf(format string, args ...any) {
	if r.o.Log != nil {
		fmt.Fprintf(r.o.Log, format+"\n", args...)
	}
}

// event records a line of the timeline and logs it.
func (r *soakRun) event(format string, args ...any) {
	e := runner.AppendEvent(&r.mu, &r.rep.Events, r.t0, runner.Event{What: fmt.Sprintf(format, args...)})
	r.logf("soak %7.1f s  %s", e.T, e.What)
}

// soak brings the SMs and the traffic up, runs the schedule and stops
// the traffic into the counters.
func (r *soakRun) soak(ctx context.Context) error {
	if err := r.startSMs(ctx); err != nil {
		return err
	}
	tr, err := r.startTraffic(ctx)
	if err != nil {
		return err
	}
	defer tr.stopIfRunning(ctx)
	if _, err := r.waitDelivering(ctx, time.Now().Add(30*time.Second), tr); err != nil {
		return fmt.Errorf("traffic: %w", err)
	}
	r.drops = newDropReader(r.o.Fabric, r.topo)
	r.drops.read(ctx) // what bring-up dropped is not the soak's
	r.drops.start(ctx, dropPollEvery)
	defer r.drops.stop()
	if err := r.switchLIDs(ctx); err != nil {
		return err
	}
	every := memEveryFull
	if r.o.Quick {
		every = memEveryQuick
	}
	r.mem = startMemSampler(r.o.Fabric, r.topo, r.t0, every)
	r.rep.Leaks.Start = snapshot(r.o.Fabric, r.topo)
	r.runSchedule(ctx, tr)
	r.rep.Leaks.End = snapshot(r.o.Fabric, r.topo)
	r.rep.Memory = r.mem.stop()
	return tr.stop(ctx, &r.rep.Counters)
}

// runSchedule runs the seed's disturbances one after another: every kind
// once with quick, else until the duration is spent.
func (r *soakRun) runSchedule(ctx context.Context, tr *traffic) {
	n := quickRounds * len(kinds.Values())
	if !r.o.Quick {
		n = int(r.o.Duration/minGap) + 1
	}
	end := time.Now().Add(r.o.Duration)
	for i, d := range Schedule(r.o.Seed, n, r.o.Quick, r.rep.Targets) {
		if ctx.Err() != nil || !r.o.Quick && time.Now().Add(d.Gap).After(end) {
			return
		}
		if err := pause(ctx, d.Gap); err != nil {
			return
		}
		r.quietDrops(ctx)
		r.rep.Disturbances = append(r.rep.Disturbances, r.disturb(ctx, i+1, d, tr))
	}
}

// quietDrops reads the drops since the last disturbance settled: none is
// allowed.
func (r *soakRun) quietDrops(ctx context.Context) {
	recs := r.drops.read(ctx)
	if bad := badDrops(recs, false, nil); len(bad) > 0 {
		r.rep.Counters.QuietDrops = append(r.rep.Counters.QuietDrops, bad...)
		r.event("dropped while quiet: %s", strings.Join(bad, "; "))
	}
	r.addRecords(recs)
}

func (r *soakRun) addRecords(recs []DropRec) {
	if r.rep.Counters.DropRecords == nil {
		r.rep.Counters.DropRecords = map[string]uint64{}
	}
	for _, x := range recs {
		r.rep.Counters.DropRecords[x.Cause.String()]++
		if blockedTurn(x) {
			r.rep.Counters.BlockedTurnDrops++
		}
	}
}

// disturb does d, undoes it, waits for the fabric to settle and judges.
func (r *soakRun) disturb(ctx context.Context, n int, d Disturbance, tr *traffic) DisturbanceRun {
	dr := DisturbanceRun{N: n, Disturbance: d, StartS: time.Since(r.t0).Seconds(), BoundMs: float64(Bound(d.Kind).Milliseconds())}
	r.event("#%d %s %s (hold %v)", n, d.Kind, d.Target(), d.Hold)
	downsBefore := linkDowns(ctx, r.o.Fabric)
	restored, err := r.apply(ctx, d, &dr)
	if err == nil {
		dr.RestoredS = restored.Sub(r.t0).Seconds()
		err = r.settle(ctx, d, restored, &dr, tr)
	}
	if d.Kind == KindMADLoss {
		if _, cerr := harness.ClearFaults(r.o.Fabric, masterNode, 0); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	recs := r.drops.read(ctx)
	r.addRecords(recs)
	dr.Drops = countDrops(recs)
	// A link besides the disturbance's that went down meanwhile (a node
	// process starved of the CPU past its peers' liveness timeout) is a
	// downed link too: what it dropped it dropped while down.
	down := downPorts(r.topo, d)
	dr.AlsoDown = wentDown(r.topo, downsBefore, linkDowns(ctx, r.o.Fabric), down)
	for _, p := range dr.AlsoDown {
		down[p] = true
	}
	if len(dr.AlsoDown) > 0 {
		r.event("#%d: links down besides the disturbance's: %s", n, strings.Join(dr.AlsoDown, ", "))
	}
	dr.BadDrops = badDrops(recs, d.Kind.TakesLinkDown() || len(dr.AlsoDown) > 0, down)
	if err != nil {
		dr.Error = err.Error()
	}
	dr.Checks = disturbanceChecks(&dr)
	dr.Passed = allOK(dr.Checks)
	r.event("#%d %s: %s, settled %s (bound %.0f ms), drops %s%s%s", n, d.Kind, runner.PassFail(dr.Passed), ms(dr.SettleMs), dr.BoundMs,
		fmtCounts(dr.Drops), prefixed("; unexplained: ", strings.Join(first(dr.BadDrops, 5), ", ")), prefixed("; ", dr.Error))
	return dr
}

// apply does d and undoes it; restored is when the undo began (the link
// set up, the switch's restart, ibsm's start, the QoS call made).
func (r *soakRun) apply(ctx context.Context, d Disturbance, dr *DisturbanceRun) (restored time.Time, err error) {
	switch d.Kind {
	case KindLinkFlap:
		return r.flap(ctx, d)
	case KindMADLoss:
		if err := r.addMADLoss(d.LossPct); err != nil {
			return restored, err
		}
		return r.flap(ctx, d)
	case KindSwitchRestart:
		if err := harness.Kill(r.o.Fabric, d.Switch); err != nil {
			return restored, err
		}
		if err := pause(ctx, d.Hold); err != nil {
			return restored, err
		}
		// The SM may sweep the switch in while Restart still waits for
		// its ports to train: the undo is timed from its start.
		restored = time.Now()
		if _, note, err := harness.Restart(r.o.Fabric, d.Switch, 30*time.Second); err != nil {
			return restored, err
		} else if note != "" {
			dr.Notes = append(dr.Notes, note)
		}
		return restored, nil
	case KindSMFailover:
		return r.failover(ctx, d, dr)
	case KindPartition:
		return r.repartition(ctx, d, dr)
	case KindQoS:
		return r.changeQoS(ctx, d, dr)
	}
	return restored, fmt.Errorf("no disturbance %v", d.Kind)
}

// flap takes d's link down for its hold and up again.
func (r *soakRun) flap(ctx context.Context, d Disturbance) (time.Time, error) {
	if d.Link == nil {
		return time.Time{}, errors.New("no link to flap")
	}
	if err := harness.SetLink(r.o.Fabric, d.Link.Node, d.Link.Port, false); err != nil {
		return time.Time{}, err
	}
	perr := pause(ctx, d.Hold)
	up := time.Now()
	if err := harness.SetLink(r.o.Fabric, d.Link.Node, d.Link.Port, true); err != nil {
		return time.Time{}, err
	}
	return up, perr
}

// settle waits for the fabric to settle after restored and times each
// part from it; it gives up at twice the bound, so that the report shows
// a time a little over it rather than none.
func (r *soakRun) settle(ctx context.Context, d Disturbance, restored time.Time, dr *DisturbanceRun, tr *traffic) error {
	deadline := restored.Add(2 * Bound(d.Kind))
	if d.Kind.Sweeps() {
		at, err := r.waitSweep(ctx, restored, deadline)
		if err != nil {
			return err
		}
		dr.SweepMs = msSince(at, restored)
	}
	at, err := r.waitPorts(ctx, deadline)
	if err != nil {
		return err
	}
	dr.ActiveMs = msSince(at, restored)
	if at, err = r.waitUnblocked(ctx, deadline); err != nil {
		return err
	}
	dr.UnblockedMs = msSince(at, restored)
	if at, err = r.waitDelivering(ctx, deadline, tr); err != nil {
		return err
	}
	dr.SettleMs = msSince(at, restored)
	return r.kindSettled(ctx, d, dr)
}

// waitSweep waits for ibsm, Master, to report the subnet up in a result
// read after from (and OpenSM Standby under it).
func (r *soakRun) waitSweep(ctx context.Context, from, deadline time.Time) (time.Time, error) {
	p := r.currentIbsm()
	x, _, err := p.WaitResult(0, time.Until(deadline), func(x runner.SMResult) bool { return x.SubnetUp && !x.At.Before(from) })
	if err != nil {
		return time.Time{}, fmt.Errorf("ibsm: no sweep done: %w", err)
	}
	for {
		s := r.smp.Take()
		if s.States[masterNode] == "Master" && s.States[standbyNode] == "Standby" {
			return x.At, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("SMs not ibsm Master, OpenSM Standby: %v", s.States)
		}
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

// waitPorts waits until every node is alive and every cabled port Active.
func (r *soakRun) waitPorts(ctx context.Context, deadline time.Time) (time.Time, error) {
	why := ""
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := harness.Status(cctx, r.o.Fabric)
		cancel()
		if err == nil {
			var ok bool
			if ok, why = st.Settled(r.topo, nil); ok {
				return time.Now(), nil
			}
		} else {
			why = err.Error()
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("ports not settled: %s", why)
		}
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

// waitUnblocked waits until no switch maps SL 0 to VL15 on a turn
// between two cabled ports: the blocks ibsm's cut-node distribution sets
// for a change are lifted again (beside another SM they must be, or the
// SM that takes over routes into them).
func (r *soakRun) waitUnblocked(ctx context.Context, deadline time.Time) (time.Time, error) {
	for {
		blocked, err := r.blockedTurns(ctx)
		if err == nil && len(blocked) == 0 {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return time.Time{}, err
			}
			return time.Time{}, fmt.Errorf("turns still blocked (SL 0 on VL15): %s", strings.Join(blocked, ", "))
		}
		if err := pause(ctx, 250*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

// waitDelivering waits until every flow has delivered a packet more than
// when it was first asked.
func (r *soakRun) waitDelivering(ctx context.Context, deadline time.Time, tr *traffic) (time.Time, error) {
	first, err := tr.received(ctx)
	if err != nil {
		return time.Time{}, err
	}
	for {
		now, err := tr.received(ctx)
		if err == nil {
			if stuck := notGrown(first, now, tr.pairs()); len(stuck) == 0 {
				return time.Now(), nil
			} else if time.Now().After(deadline) {
				return time.Time{}, fmt.Errorf("flows not delivering: %s", strings.Join(stuck, ", "))
			}
		} else if time.Now().After(deadline) {
			return time.Time{}, err
		}
		if err := pause(ctx, 100*time.Millisecond); err != nil {
			return time.Time{}, err
		}
	}
}

// kindSettled is what a kind must show beyond settling: OpenSM took the
// subnet over and gave it back; the partition's members hold its P_Key
// and the others not.
func (r *soakRun) kindSettled(ctx context.Context, d Disturbance, dr *DisturbanceRun) error {
	if d.Kind != KindPartition {
		return nil
	}
	bad, err := r.checkPKeys(ctx)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("P_Key tables: %s", strings.Join(bad, "; "))
	}
	dr.Notes = append(dr.Notes, fmt.Sprintf("partition %#04x members: %v; every traffic host's table as it should be", soakPKey, r.members))
	return nil
}

func msSince(t, from time.Time) *float64 {
	v := float64(t.Sub(from).Microseconds()) / 1000
	return &v
}

// pause waits d, or less when ctx ends (then its error).
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func allOK(cs []runner.Check) bool {
	for _, c := range cs {
		if !c.OK && !c.Skipped {
			return false
		}
	}
	return true
}

// call makes one control call to a node.
func call(ctx context.Context, fabric, node, op string, args, result any) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return ctl.Call(cctx, nodeproc.SocketPath(fabric, node), op, args, result)
}

// currentIbsm is the ibsm that runs now.
func (r *soakRun) currentIbsm() *runner.SMProc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ibsm
}
