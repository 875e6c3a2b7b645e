package smfailover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/nodeproc"
	"ibfab/sm"
	"ibfab/topologies"
)

// Priorities: the master of a kill case outranks its standby; in a
// handover case the SM that joins outranks the master.
const (
	failoverLowPrio  = 1
	failoverHighPrio = 10
)

// failoverFlowPPS is each flow's packet rate, failoverFlowPayload its
// packets' payload: light traffic that crosses every switch path among
// the hosts while costing the machine little.
//
// failoverFlowBacklog is how many packets a flow's source holds while it
// cannot send: some 20 s of its arrivals. A sender starved of the CPU on
// a loaded machine, or held back by its link, then delays its packets
// rather than refusing them; what the network drops still shows as lost.
// The report gives the largest backlog any flow reached.
const (
	failoverFlowPPS     = 200
	failoverFlowPayload = 256
	failoverFlowBacklog = 4096
)

// RunFailover runs the SM failover suite on one fabric and, with o.Out,
// writes the report there. The error is for a run that could not be
// carried out (the fabric did not come up); a case that fails is in the
// report.
func RunFailover(ctx context.Context, o FailoverOptions) (rep *FailoverReport, err error) {
	if o.Fabric == "" {
		o.Fabric = "smfo"
	}
	topo, err := failoverTopology()
	if err != nil {
		return nil, err
	}
	smA, smB, observer, hosts, err := failoverRoles(topo)
	if err != nil {
		return nil, err
	}
	plan, err := selectFailover(failoverPlan(o.Quick), o.Only)
	if err != nil {
		return nil, err
	}
	bound := sm.PollingBound(FailoverPollInterval, FailoverPollRetries)
	rep = &FailoverReport{Suite: "sm-failover", Started: time.Now(), Fabric: o.Fabric, Topology: "mesh 2x3, one host per switch",
		Quick: o.Quick, PollInterval: FailoverPollInterval.Seconds(), PollRetries: FailoverPollRetries,
		BoundMs: float64(bound.Milliseconds()), SMNodes: []string{smA, smB}, Observer: observer, Hosts: hosts,
		OpenSMConf: failoverOpenSMConf(), IbsmArgs: failoverIbsmArgs(0)[2:]}
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return nil, err
		}
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	logf("sm-failover: SMs at %s and %s, %s reads their SMInfo and runs sminfo, traffic among %v", smA, smB, observer, hosts)
	if _, err := harness.Up(o.Fabric, topo, harness.UpOptions{}); err != nil {
		return nil, fmt.Errorf("up: %w", err)
	}
	defer func() {
		if derr := harness.Down(o.Fabric); derr != nil && err == nil {
			err = fmt.Errorf("down: %w", derr)
		}
		rep.DurationS = time.Since(rep.Started).Seconds()
		if o.Out != "" && err == nil {
			err = writeFailoverReport(o.Out, rep)
		}
	}()
	for _, c := range plan {
		if ctx.Err() != nil {
			rep.Error = ctx.Err().Error()
			break
		}
		fr := &failoverRun{o: o, topo: topo, c: c, first: smA, second: smB, observer: observer, hosts: hosts, bound: bound, logf: logf}
		if o.Out != "" {
			fr.dir = filepath.Join(o.Out, c.id())
		}
		rep.Cases = append(rep.Cases, fr.run(ctx))
	}
	rep.Passed = rep.Error == "" && len(rep.Cases) == len(plan)
	for _, c := range rep.Cases {
		rep.Passed = rep.Passed && c.Passed
	}
	return rep, nil
}

// failoverRun is one case in progress.
type failoverRun struct {
	o                       FailoverOptions
	topo                    *topologies.Topology
	c                       failoverCase
	first, second, observer string
	hosts                   []string
	bound                   time.Duration
	dir                     string // the case's files; "" none
	tmp                     string // OpenSM's and libumad2sim's files when dir is ""
	logf                    func(string, ...any)

	t0  time.Time
	rep *FailoverCase
	mu  sync.Mutex
	sms []*runner.SMProc
	smp *runner.SMInfoSampler
}

func (r *failoverRun) event(format string, args ...any) {
	e := runner.AppendEvent(&r.mu, &r.rep.Events, r.t0, runner.Event{What: fmt.Sprintf(format, args...)})
	r.logf("  %6.2f s  %s", e.T, e.What)
}

// run carries the case out and returns its report; everything it started
// is stopped again.
func (r *failoverRun) run(ctx context.Context) FailoverCase {
	r.t0 = time.Now()
	r.rep = &FailoverCase{Pairing: r.c.Pairing, Scenario: r.c.Scenario, FirstNode: r.first, SecondNode: r.second,
		BoundMs: float64(r.bound.Milliseconds()), LIDsChanged: []string{}}
	r.logf("case %s: %s at %s first, %s at %s second", r.c, r.c.Pairing.First, r.first, r.c.Pairing.Second, r.second)
	err := r.prepare()
	if err == nil {
		err = r.execute(ctx)
	}
	r.stopAll()
	if r.smp != nil {
		r.smp.Stop()
	}
	if r.tmp != "" {
		os.RemoveAll(r.tmp)
	}
	if err != nil {
		r.rep.Error = err.Error()
		r.event("case did not complete: %v", err)
	}
	r.rep.Checks = failoverChecks(r.rep)
	if err != nil {
		r.rep.Checks = append(r.rep.Checks, runner.Check{Name: "case completed", OK: false, Detail: err.Error()})
	}
	r.rep.Passed = true
	for _, c := range r.rep.Checks {
		r.rep.Passed = r.rep.Passed && c.OK
	}
	r.rep.DurationS = time.Since(r.t0).Seconds()
	verdict := "PASS"
	if !r.rep.Passed {
		verdict = "FAIL"
	}
	r.logf("case %s: %s (%.1f s)", r.c, verdict, r.rep.DurationS)
	return *r.rep
}

// prepare makes the case's directory, or a temporary one.
func (r *failoverRun) prepare() error {
	if r.dir != "" {
		if err := os.RemoveAll(r.dir); err != nil {
			return err
		}
		return os.MkdirAll(r.dir, 0o755)
	}
	d, err := os.MkdirTemp("", "ibfab-smfo-")
	if err != nil {
		return err
	}
	r.tmp = d
	return nil
}

// workDir is where the case's files go.
func (r *failoverRun) workDir() string {
	if r.dir != "" {
		return r.dir
	}
	return r.tmp
}

// startSM starts an SM of kind at node with priority prio.
func (r *failoverRun) startSM(kind runner.SMKind, node string, prio int) (*runner.SMProc, error) {
	var p *runner.SMProc
	var err error
	onResult := func(x runner.SMResult) {
		if x.SubnetUp {
			r.event("%s at %s: %s, subnet up (%.0f ms, %d SMPs)", kind, node, x.Event, x.MsTotal, x.SMPsTotal)
		}
	}
	if kind == runner.SMOpenSM {
		dir := filepath.Join(r.workDir(), "opensm-"+node)
		p, err = runner.StartOpenSM(r.o.Fabric, node, dir, failoverOpenSMConf(), []string{"-p", fmt.Sprint(prio)}, onResult)
	} else {
		var f *os.File
		f, err = os.Create(filepath.Join(r.workDir(), "ibsm-"+node+".jsonl"))
		if err != nil {
			return nil, err
		}
		p, err = runner.StartIbsm(r.o.Fabric, node, failoverIbsmArgs(prio), f, onResult)
		if err == nil {
			go func() { <-p.Done(); f.Close() }()
		} else {
			f.Close()
		}
	}
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.sms = append(r.sms, p)
	r.mu.Unlock()
	r.event("%s started at %s, priority %d", kind, node, prio)
	if r.dir != "" {
		name := "ibsm-" + node + ".jsonl"
		if kind == runner.SMOpenSM {
			name = "opensm-" + node + "/opensm.log"
		}
		r.rep.Files = append(r.rep.Files, filepath.Join(r.c.id(), name))
	}
	return p, nil
}

// stopAll stops every SM the case started.
func (r *failoverRun) stopAll() {
	r.mu.Lock()
	sms := append([]*runner.SMProc(nil), r.sms...)
	r.mu.Unlock()
	for _, p := range sms {
		p.Stop()
	}
}

// waitUp waits for p to report the subnet up in a result read at or
// after from.
func waitUp(p *runner.SMProc, from time.Time, timeout time.Duration) (time.Time, error) {
	x, _, err := p.WaitResult(0, timeout, func(x runner.SMResult) bool { return x.SubnetUp && !x.At.Before(from) })
	return x.At, err
}

// waitReading waits until a reading of the sampler at or after from
// satisfies ok, and returns it.
func waitReading(ctx context.Context, s *runner.SMInfoSampler, from time.Time, timeout time.Duration, what string, ok func(runner.SMState) bool) (runner.SMSample, error) {
	deadline := time.Now().Add(timeout)
	for {
		for _, x := range s.Samples() {
			if !x.At.Before(from) && ok(x.States) {
				return x, nil
			}
		}
		if time.Now().After(deadline) {
			ss := s.Samples()
			last := runner.SMState{}
			if len(ss) > 0 {
				last = ss[len(ss)-1].States
			}
			return runner.SMSample{}, fmt.Errorf("%s: not within %v (last reading %v)", what, timeout, last)
		}
		if err := pause(ctx, 50*time.Millisecond); err != nil {
			return runner.SMSample{}, err
		}
	}
}

// portLIDs reads every port's LID, by "node[port]".
func (r *failoverRun) portLIDs(ctx context.Context) (map[string]uint16, error) {
	lids, _, err := r.readPorts(ctx)
	return lids, err
}

// readPorts reads every port's LID and its drops by cause, both by
// "node[port]" (drops: "node[port] cause").
func (r *failoverRun) readPorts(ctx context.Context) (map[string]uint16, map[string]uint64, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := harness.Status(cctx, r.o.Fabric)
	if err != nil {
		return nil, nil, err
	}
	lids, drops := map[string]uint16{}, map[string]uint64{}
	for _, n := range st.Nodes {
		if n.Error != "" {
			return nil, nil, fmt.Errorf("%s: %s", n.Name, n.Error)
		}
		for _, p := range n.Ports {
			if n.Type == "hca" && p.Peer == "" {
				continue
			}
			port := fmt.Sprintf("%s[%d]", n.Name, p.Port)
			lids[port] = p.LID
			for cause, v := range p.Drops {
				drops[port+" "+cause] = v
			}
		}
	}
	return lids, drops, nil
}

// execute is the case's sequence: the first SM up and Master (and, for a
// kill, the second its Standby), traffic on, the change (the first
// killed, or the second started), the second Master and the subnet up
// again, and the readings gathered into the report.
func (r *failoverRun) execute(ctx context.Context) error {
	kill := r.c.Scenario == FailoverKill
	firstPrio, secondPrio := failoverHighPrio, failoverLowPrio
	if !kill {
		firstPrio, secondPrio = failoverLowPrio, failoverHighPrio
	}
	first, guids, err := r.firstMaster(ctx, firstPrio)
	if err != nil {
		return err
	}
	var second *runner.SMProc
	if kill {
		// The standby joins before the traffic: the case is its takeover.
		if second, err = r.joinStandby(ctx, secondPrio); err != nil {
			return err
		}
	}
	tr, err := r.startTraffic(ctx)
	if err != nil {
		return err
	}
	defer tr.stopIfRunning(ctx)
	before, dropsBefore, err := r.readPorts(ctx)
	if err != nil {
		return err
	}
	r.rep.PortsRead = len(before)
	sminfo := &sminfoRunner{r: r, guids: guids}
	if err := pause(ctx, time.Second); err != nil {
		return err
	}
	var from time.Time
	if kill {
		from = r.killFirst(ctx, first, sminfo)
	} else if second, from, err = r.startSecond(ctx, sminfo, secondPrio); err != nil {
		return err
	}
	masterAt, readAt, err := r.timeTakeover(ctx, second, from, kill)
	if err != nil {
		return err
	}
	if err := r.timeUp(second, from, masterAt, kill, sminfo); err != nil {
		return err
	}
	if err := r.settle(ctx, sminfo, tr); err != nil {
		return err
	}
	// A kill leaves no Master until a reading shows the second's: the
	// readings between do not count against one Master.
	var excludeFrom, excludeTo time.Time
	if kill {
		excludeFrom, excludeTo = from, readAt
	}
	return r.gather(ctx, before, dropsBefore, excludeFrom, excludeTo, sminfo)
}

// firstMaster starts the case's first SM at prio, waits for its subnet
// up and its port LIDs, starts the SMInfo sampler on both SMs' ports and
// waits for a reading of the first Master. guids names the SMs' port
// GUIDs.
func (r *failoverRun) firstMaster(ctx context.Context, prio int) (first *runner.SMProc, guids map[uint64]string, err error) {
	first, err = r.startSM(r.c.Pairing.First, r.first, prio)
	if err != nil {
		return nil, nil, err
	}
	if _, err := waitUp(first, r.t0, 90*time.Second); err != nil {
		return nil, nil, fmt.Errorf("%s at %s: subnet not up: %w", r.c.Pairing.First, r.first, err)
	}
	lids, err := r.portLIDs(ctx)
	if err != nil {
		return nil, nil, err
	}
	smLIDs := map[string]uint16{}
	for _, n := range []string{r.first, r.second} {
		if smLIDs[n] = lids[n+"[1]"]; smLIDs[n] == 0 {
			return nil, nil, fmt.Errorf("%s has no LID", n)
		}
	}
	guids = map[uint64]string{}
	for _, n := range []string{r.first, r.second} {
		i, ok := r.topo.Lookup(n)
		if !ok {
			return nil, nil, fmt.Errorf("no node %s", n)
		}
		guids[r.topo.Node(i).Ports[1].GUID] = n
	}
	r.smp = runner.NewSMInfoSampler(r.o.Fabric, r.observer, smLIDs)
	r.smp.Start(FailoverSampleEvery)
	if _, err := waitReading(ctx, r.smp, r.t0, 30*time.Second, r.first+" Master", func(s runner.SMState) bool { return s.Master() == r.first }); err != nil {
		return nil, nil, err
	}
	return first, guids, nil
}

// joinStandby starts the second SM at prio and waits for a reading of it
// Standby under the first.
func (r *failoverRun) joinStandby(ctx context.Context, prio int) (*runner.SMProc, error) {
	second, err := r.startSM(r.c.Pairing.Second, r.second, prio)
	if err != nil {
		return nil, err
	}
	if _, err := waitReading(ctx, r.smp, time.Now(), 60*time.Second, r.second+" Standby", func(s runner.SMState) bool {
		return s[r.second] == "Standby" && s.Master() == r.first
	}); err != nil {
		return nil, err
	}
	r.event("%s Standby under %s", r.second, r.first)
	return second, nil
}

// killFirst queries SMInfo once, kills the first SM and returns when.
func (r *failoverRun) killFirst(ctx context.Context, first *runner.SMProc, sminfo *sminfoRunner) time.Time {
	sminfo.once(ctx)
	r.event("SIGKILL %s at %s", r.c.Pairing.First, r.first)
	first.Kill()
	from := time.Now()
	r.smp.Drop(r.first)
	r.event("%s exited", r.c.Pairing.First)
	return from
}

// startSecond queries SMInfo every second and starts the second SM at
// prio a second later; from is when it started.
func (r *failoverRun) startSecond(ctx context.Context, sminfo *sminfoRunner, prio int) (second *runner.SMProc, from time.Time, err error) {
	sminfo.loop(ctx, time.Second)
	if err := pause(ctx, time.Second); err != nil {
		return nil, from, err
	}
	if second, err = r.startSM(r.c.Pairing.Second, r.second, prio); err != nil {
		return nil, from, err
	}
	return second, time.Now(), nil
}

// timeTakeover waits for a reading of the second Master and times it
// from from: by the second's own account when it gives one (ibsm's
// election or handover event, OpenSM's log), else by the readings; for a
// kill also when the second noticed (DetectMs). readAt is when the
// reading showed it.
func (r *failoverRun) timeTakeover(ctx context.Context, second *runner.SMProc, from time.Time, kill bool) (masterAt, readAt time.Time, err error) {
	x, err := waitReading(ctx, r.smp, from, 60*time.Second, r.second+" Master", func(s runner.SMState) bool { return s.Master() == r.second })
	if err != nil {
		return masterAt, readAt, err
	}
	masterAt, readAt = x.At, x.At
	r.rep.MasterFrom = "SMInfo readings"
	if second.Kind() == runner.SMIbsm {
		evs, ats := second.SMEventsAt()
		if t, ok := failoverMasterEvent(evs, ats, from, sm.SMActionElection, sm.SMActionHandover); ok {
			masterAt, r.rep.MasterFrom = t, "ibsm's event"
		}
		if t, ok := failoverPollingTimeout(evs, ats, from); ok && kill {
			r.rep.DetectMs = msSince(t, from)
		}
	}
	if second.Kind() == runner.SMOpenSM {
		// Its log times its state changes to the µs; the readings only
		// to their period.
		b, _ := os.ReadFile(filepath.Join(r.workDir(), "opensm-"+r.second, "opensm.log"))
		states, ats := osmStates(string(b), from)
		if t, ok := firstOSMState(states, ats, "MASTER"); ok {
			masterAt, r.rep.MasterFrom = t, "OpenSM's log"
		}
		if t, ok := firstOSMState(states, ats, "DISCOVERING"); ok && kill {
			r.rep.DetectMs = msSince(t, from)
		}
	}
	if kill && r.rep.DetectMs == nil {
		if t, ok := firstLeft(r.smp.Samples(), from, r.second); ok {
			r.rep.DetectMs = msSince(t, from)
		}
	}
	r.rep.MasterMs = msSince(masterAt, from)
	r.event("%s Master (%s), %.0f ms after %s", r.second, r.rep.MasterFrom, *r.rep.MasterMs, map[bool]string{true: "the kill", false: "it started"}[kill])
	return masterAt, readAt, nil
}

// timeUp waits for the second's subnet up and times it from from; for a
// handover it sets the window the SMInfo queries are judged in.
func (r *failoverRun) timeUp(second *runner.SMProc, from, masterAt time.Time, kill bool, sminfo *sminfoRunner) error {
	// OpenSM's SUBNET UP may come before a reading shows it Master.
	upFrom := from
	if second.Kind() == runner.SMIbsm {
		upFrom = masterAt
	}
	upAt, err := waitUp(second, upFrom, 60*time.Second)
	if err != nil {
		return fmt.Errorf("%s at %s: subnet not up: %w", r.c.Pairing.Second, r.second, err)
	}
	r.rep.UpMs = msSince(upAt, from)
	if !kill {
		// A reading shows the change up to a period late, ibsm's event not.
		sminfo.windowFrom, sminfo.windowTo = masterAt.Add(-FailoverSampleEvery), upAt
	}
	return nil
}

// settle lets the new Master settle, queries SMInfo twice more a second
// apart, and stops the traffic into the report.
func (r *failoverRun) settle(ctx context.Context, sminfo *sminfoRunner, tr *failoverTraffic) error {
	if err := pause(ctx, 2*time.Second); err != nil {
		return err
	}
	sminfo.stop()
	sminfo.once(ctx)
	if err := pause(ctx, time.Second); err != nil {
		return err
	}
	sminfo.once(ctx)
	return tr.stop(ctx, r.rep)
}

// gather stops the sampler, reads the ports again and puts into the
// report what changed since before (LIDs, drops), the readings (those
// between excludeFrom and excludeTo not counted against one Master), the
// final Master and the SMInfo queries' results.
func (r *failoverRun) gather(ctx context.Context, before map[string]uint16, dropsBefore map[string]uint64, excludeFrom, excludeTo time.Time, sminfo *sminfoRunner) error {
	samples := r.smp.Stop()
	after, dropsAfter, err := r.readPorts(ctx)
	if err != nil {
		return err
	}
	r.rep.LIDsChanged = lidChanges(before, after)
	r.rep.Drops = dropChanges(dropsBefore, dropsAfter)
	if len(r.rep.Drops) > 0 {
		r.event("dropped in the fabric: %s", fmtDrops(r.rep.Drops))
	}
	r.rep.NotOneMaster = notOneMaster(samples, excludeFrom, excludeTo)
	r.rep.Rereads = r.smp.Rereads()
	for _, s := range samples {
		r.rep.Samples = append(r.rep.Samples, FailoverSample{T: s.At.Sub(r.t0).Seconds(), States: s.States})
	}
	if len(samples) > 0 {
		r.rep.FinalMaster = samples[len(samples)-1].States.Master()
	}
	r.rep.SMInfo = sminfo.results()
	return nil
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

// failoverPollingTimeout returns when ibsm's events show it giving the
// master up after from.
func failoverPollingTimeout(evs []sm.SMEvent, ats []time.Time, from time.Time) (time.Time, bool) {
	for i, e := range evs {
		if i < len(ats) && !ats[i].Before(from) && e.Action == sm.SMActionPollingTimeout {
			return ats[i], true
		}
	}
	return time.Time{}, false
}

// sminfoRunner runs sminfo at the observer, once or every period, and
// judges each run against the SMInfo readings around it.
type sminfoRunner struct {
	r     *failoverRun
	guids map[uint64]string
	// windowFrom and windowTo are a handover's transition: from the new
	// master's state change until it reported the subnet up.
	windowFrom, windowTo time.Time

	mu   sync.Mutex
	runs []sminfoRun
	halt chan struct{}
	done chan struct{}
}

type sminfoRun struct {
	from, to time.Time
	out      string
	err      error
}

func (s *sminfoRunner) once(ctx context.Context) {
	from := time.Now()
	out, err := runner.RunSMInfo(ctx, s.r.o.Fabric, s.r.observer, s.r.workDir())
	s.mu.Lock()
	s.runs = append(s.runs, sminfoRun{from: from, to: time.Now(), out: out, err: err})
	s.mu.Unlock()
}

// loop runs sminfo every period until stop.
func (s *sminfoRunner) loop(ctx context.Context, period time.Duration) {
	s.halt, s.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		for {
			s.once(ctx)
			select {
			case <-s.halt:
				return
			case <-ctx.Done():
				return
			case <-time.After(period):
			}
		}
	}()
}

func (s *sminfoRunner) stop() {
	if s.halt != nil {
		close(s.halt)
		<-s.done
		s.halt = nil
	}
}

// results judges the runs; the readings must cover them (the sampler
// stopped after the last).
func (s *sminfoRunner) results() []FailoverSMInfo {
	s.stop()
	samples := s.r.smp.Samples()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []FailoverSMInfo
	for _, run := range s.runs {
		v := judgeSMInfo(run.out, run.err, s.guids, mastersAround(samples, run.from, run.to))
		v.T = run.from.Sub(s.r.t0).Seconds()
		v.Transition = inTransition(v, run.from, run.to, s.windowFrom, s.windowTo, map[string]bool{s.r.first: true, s.r.second: true})
		if !v.OK {
			v.Output = runner.LastLines(run.out, 3)
		}
		out = append(out, v)
	}
	return out
}

// failoverTraffic is the flows among the non-SM hosts: one per ordered
// pair.
type failoverTraffic struct {
	r       *failoverRun
	lids    map[string]uint16
	running bool
}

// startTraffic starts a flow from every traffic host to every other, its
// receivers' records reset first.
func (r *failoverRun) startTraffic(ctx context.Context) (*failoverTraffic, error) {
	lids, err := r.portLIDs(ctx)
	if err != nil {
		return nil, err
	}
	t := &failoverTraffic{r: r, lids: map[string]uint16{}}
	for _, h := range r.hosts {
		t.lids[h] = lids[h+"[1]"]
		if _, err := harness.Flows(ctx, r.o.Fabric, h, nodeproc.FlowsArgs{Reset: true}); err != nil {
			return nil, fmt.Errorf("flows at %s: %w", h, err)
		}
	}
	n := 0
	for _, h := range r.hosts {
		var fs []nodeproc.FlowArgs
		for j, d := range r.hosts {
			if d == h {
				continue
			}
			fs = append(fs, nodeproc.FlowArgs{ID: uint32(j + 1), DLID: t.lids[d], Payload: failoverFlowPayload,
				RateBPS: failoverFlowPPS * 8 * (failoverFlowPayload + 64), MaxBacklog: failoverFlowBacklog})
		}
		if _, err := harness.StartFlows(ctx, r.o.Fabric, h, fs); err != nil {
			t.stopIfRunning(ctx)
			return nil, fmt.Errorf("flows-start at %s: %w", h, err)
		}
		t.running = true
		n += len(fs)
	}
	r.rep.Flows = n
	r.event("%d flows among %v, %d packets/s each", n, r.hosts, failoverFlowPPS)
	return t, nil
}

// stopIfRunning stops the flows, as on an error.
func (t *failoverTraffic) stopIfRunning(ctx context.Context) {
	if !t.running {
		return
	}
	for _, h := range t.r.hosts {
		harness.StopAllFlows(ctx, t.r.o.Fabric, h)
	}
	t.running = false
}

// stop stops the flows, lets the last packets arrive and counts what was
// sent and received.
func (t *failoverTraffic) stop(ctx context.Context, c *FailoverCase) error {
	t.running = false
	hostOf := map[uint16]string{}
	for h, l := range t.lids {
		hostOf[l] = h
	}
	type pair struct {
		src uint16
		id  uint32
	}
	sent := map[pair]uint64{}
	for _, h := range t.r.hosts {
		st, err := harness.StopAllFlows(ctx, t.r.o.Fabric, h)
		if err != nil {
			return fmt.Errorf("flows-stop at %s: %w", h, err)
		}
		for _, f := range st {
			sent[pair{t.lids[h], f.ID}] += f.Sent
			c.Sent += f.Sent
			c.Refused += f.Failed + f.Dropped
			c.RefusedPort += f.Failed
			c.RefusedBacklog += f.Dropped
			c.MaxBacklog = max(c.MaxBacklog, f.MaxBacklog)
		}
	}
	if err := pause(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	var short []string
	got := map[pair]uint64{}
	for _, h := range t.r.hosts {
		fr, err := harness.Flows(ctx, t.r.o.Fabric, h, nodeproc.FlowsArgs{})
		if err != nil {
			return fmt.Errorf("flows at %s: %w", h, err)
		}
		for _, x := range fr.Received {
			if _, ours := hostOf[x.SLID]; ours {
				got[pair{x.SLID, x.ID}] += x.Packets
				c.Received += x.Packets
			}
		}
	}
	for p, n := range sent {
		if g := got[p]; g < n {
			short = append(short, fmt.Sprintf("%s flow %d: %d of %d", hostOf[p.src], p.id, g, n))
		}
	}
	sort.Strings(short)
	c.Short = short
	c.Lost = int64(c.Sent) - int64(c.Received)
	t.r.event("traffic stopped: %d sent, %d received, %d refused at the source%s", c.Sent, c.Received, c.Refused, prefixed("; short: ", strings.Join(short, ", ")))
	if c.Sent == 0 {
		return errors.New("the flows sent nothing")
	}
	return nil
}
