package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"ibfab/harness"
	"ibfab/sm"
	"ibfab/topologies"
)

// Options tune Run.
type Options struct {
	Out    string    // report directory; "" writes no files
	Fabric string    // fabric name; default "s_" and the suite's name
	Log    io.Writer // progress lines; nil: none
	// SM is the subnet manager: SMIbsm (the zero value) or SMOpenSM,
	// Debian's unmodified OpenSM as a daemon at the suite's SM node.
	SM SMKind
	// SMArgs are ibsm's flags instead of the suite's; with OpenSM, more
	// OpenSM arguments (-s 3, say).
	SMArgs []string
	Every  time.Duration // sampling interval; default 200 ms
	// Hosts, when 2 or more, spreads the fabric over that many host
	// namespaces (harness.UpOptions.Hosts), the links the suite fails
	// among those between hosts, VXLAN (Suite.PlaceOnHosts).
	Hosts int
}

// Check is one verdict of a run. A check that does not apply to the run's
// subnet manager is Skipped (and OK), Detail saying why.
type Check struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"`
	Detail  string `json:"detail"`
}

// Event is one thing that happened, in seconds since the traffic started.
type Event struct {
	T    float64 `json:"t"`
	What string  `json:"what"`
	Mark string  `json:"Mark,omitempty"` // "step" or "restored": drawn on the plot
}

// Window is the data traffic between two moments.
type Window struct {
	From, To float64           // seconds since the traffic started
	Sent     uint64            `json:"sent"`
	Received uint64            `json:"received"`
	Lost     int64             `json:"lost"` // sent - received
	Drops    map[string]uint64 `json:"drops"`
}

// Report is what a run measured and decided.
type Report struct {
	Suite     string    `json:"suite"`
	Summary   string    `json:"summary"`
	Fabric    string    `json:"fabric"`
	SMKind    SMKind    `json:"sm_kind"`
	SMNode    string    `json:"sm_node"`
	SMArgs    []string  `json:"sm_args"`
	TimeScale float64   `json:"time_scale"`
	Load      float64   `json:"load_percent"`
	Started   time.Time `json:"started"`
	Passed    bool      `json:"passed"`
	Checks    []Check   `json:"checks"`
	Events    []Event   `json:"events"`
	// RestoredMs is the time from the end of the last step until the
	// fabric was whole again (ports as expected, the SM done).
	RestoredMs float64    `json:"restored_ms"`
	Fault      Window     `json:"fault_window"`
	Steady     Window     `json:"steady_window"`
	BringUp    *SMResult  `json:"bring_up,omitempty"`
	SM         []SMResult `json:"sm"`
	// Phases is the SM's time and SMPs per phase of each sweep and
	// assimilation (phases.svg), from SM.
	Phases  *PhaseReport    `json:"phases,omitempty"`
	Rules   []harness.Fault `json:"bring_up_rules,omitempty"`
	Samples []Sample        `json:"samples"`
	Bins    []Bin           `json:"bins"`
	LIDs    map[string]int  `json:"lids"`
	Capture *CaptureInfo    `json:"capture,omitempty"`
	// Hosts is Options.Hosts on a fabric over hosts; CrossHost its links
	// between hosts, with each end's device (harness.CrossLink).
	Hosts     int                 `json:"hosts,omitempty"`
	CrossHost []harness.CrossLink `json:"cross_host_links,omitempty"`
	Files     []string            `json:"files,omitempty"`
	Error     string              `json:"error,omitempty"`
}

func (r *Report) check(name string, ok bool, format string, args ...any) {
	r.Checks = append(r.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
}

// skip records a check that does not apply, and why.
func (r *Report) skip(name, why string) {
	r.Checks = append(r.Checks, Check{Name: name, OK: true, Skipped: true, Detail: why})
}

// SuiteRun is one suite's run in progress on one fabric: the runner the
// failure suites and the experiments share (bring-up, the SM, traffic,
// the sampler, steps and checks). An experiment embeds it and adds its
// own state.
type SuiteRun struct {
	s      *Suite
	o      Options
	topo   *topologies.Topology
	fabric string
	rep    *Report
	t0     time.Time // traffic start
	smp    *sampler

	mu    sync.Mutex
	sms   []*SMProc
	smLog io.Writer
	smDir string // OpenSM's cache and log
	host  []int  // the nodes' hosts over Options.Hosts (placement)
	// opensmConf is more of OpenSM's configuration (the QoS run's qos_*
	// options).
	opensmConf string

	smMustReact bool // a change the SM must take in, outside Steps (ExpectSMReaction)
}

// placement returns the host of each node over Options.Hosts, placed
// once (Suite.PlaceOnHosts); nil on one host, an error for a bad count.
func (r *SuiteRun) placement() ([]int, error) {
	if r.host != nil {
		return r.host, nil
	}
	host, err := r.s.PlaceOnHosts(r.topo, r.o.Hosts)
	r.host = host
	return host, err
}

// NewSuiteRun prepares the run of suite s on topo as fabric with o, its
// findings in rep; the SM's lines go nowhere until the run sets a log.
func NewSuiteRun(s *Suite, o Options, topo *topologies.Topology, fabric string, rep *Report) *SuiteRun {
	return &SuiteRun{s: s, o: o, topo: topo, fabric: fabric, smLog: io.Discard, rep: rep}
}

// Suite is the suite r runs; an experiment may change its load and SM
// arguments between phases.
func (r *SuiteRun) Suite() *Suite { return r.s }

// Fabric is the name of r's fabric.
func (r *SuiteRun) Fabric() string { return r.fabric }

// Topology is r's fabric's topology.
func (r *SuiteRun) Topology() *topologies.Topology { return r.topo }

// Report is where r records its events, LIDs and checks.
func (r *SuiteRun) Report() *Report { return r.rep }

// T0 is when r's traffic started (Start), the zero of its events' times.
func (r *SuiteRun) T0() time.Time { return r.t0 }

// SetOpenSMConf adds conf to OpenSM's configuration when r starts it.
func (r *SuiteRun) SetOpenSMConf(conf string) { r.opensmConf = conf }

// SetSMLog sends the lines of the ibsm the run starts next to w.
func (r *SuiteRun) SetSMLog(w io.Writer) { r.smLog = w }

// ExpectSMReaction tells the run that the experiment makes changes the SM
// must take in outside the suite's steps (WhyNot then waits for its
// result).
func (r *SuiteRun) ExpectSMReaction() { r.smMustReact = true }

// StopSMs stops every SM the run started.
func (r *SuiteRun) StopSMs() {
	r.mu.Lock()
	sms := r.sms
	r.mu.Unlock()
	for _, p := range sms {
		p.Stop()
	}
}

// StartSampler prepares the run's sampler of every node's counters, its
// samples timed from T0 and taken by Sample.
func (r *SuiteRun) StartSampler() { r.smp = newSampler(r.Fabric(), r.T0()) }

// Sample takes a sample of every node's counters now (StartSampler
// first).
func (r *SuiteRun) Sample(ctx context.Context) Sample { return r.smp.mark(ctx) }

// Logf writes a progress line to the run's log, when it has one.
func (r *SuiteRun) Logf(format string, args ...any) {
	if r.o.Log != nil {
		fmt.Fprintf(r.o.Log, format+"\n", args...)
	}
}

// Eventf records an event of the run (its time since T0) and logs it.
func (r *SuiteRun) Eventf(format string, args ...any) { r.markEvent("", format, args...) }

func (r *SuiteRun) markEvent(mark, format string, args ...any) {
	e := AppendEvent(&r.mu, &r.rep.Events, r.t0, Event{What: fmt.Sprintf(format, args...), Mark: mark})
	r.Logf("%7.3f s  %s", e.T, e.What)
}

// AppendEvent stamps e with the seconds since t0 (0 before the run
// began, t0 zero) and appends it to events under mu: a run's timeline,
// which its goroutines add to as things happen.
func AppendEvent(mu *sync.Mutex, events *[]Event, t0 time.Time, e Event) Event {
	if !t0.IsZero() {
		e.T = time.Since(t0).Seconds()
	}
	mu.Lock()
	*events = append(*events, e)
	mu.Unlock()
	return e
}

// smKind is the run's subnet manager.
func (r *SuiteRun) smKind() SMKind { return r.o.SM }

// StartSM starts the run's subnet manager at the suite's SM node and
// adds it to those the run stops and reports.
func (r *SuiteRun) StartSM() (*SMProc, error) {
	var p *SMProc
	var err error
	if r.smKind() == SMOpenSM {
		p, err = StartOpenSM(r.fabric, r.s.SMNode, r.smDir, r.opensmConf, r.s.SMArgs, r.smEvent)
	} else {
		p, err = StartIbsm(r.fabric, r.s.SMNode, r.s.SMArgs, r.smLog, r.smEvent)
	}
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.sms = append(r.sms, p)
	r.mu.Unlock()
	return p, nil
}

// smEvent puts an SM result on the timeline.
func (r *SuiteRun) smEvent(x SMResult) {
	state := "subnet up"
	if !x.SubnetUp {
		state = "subnet NOT up: " + x.Reason
	}
	what := fmt.Sprintf("%s %s", r.smKind(), x.Event)
	switch {
	case x.Discovery != 0:
		what += fmt.Sprintf(" (%s, %s discovery, %s)", x.Trigger, x.Discovery, x.Distribution)
	case x.Trigger != "":
		what += fmt.Sprintf(" (%s)", x.Trigger)
	}
	what += fmt.Sprintf(": %s, %.0f ms, %d SMPs", state, x.MsTotal, x.SMPsTotal)
	if x.MsToConnectivity != nil {
		what += fmt.Sprintf(", connectivity after %.0f ms", *x.MsToConnectivity)
	}
	if len(x.Changes) > 0 {
		what += "; " + strings.Join(x.Changes, "; ")
	}
	r.Eventf("%s", what)
}

// Start sets the traffic's start, the origin of the timeline.
func (r *SuiteRun) Start() {
	r.mu.Lock()
	r.t0 = time.Now()
	r.mu.Unlock()
}

// SM is the subnet manager the run started last.
func (r *SuiteRun) SM() *SMProc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sms[len(r.sms)-1]
}

// Run runs suite s: it brings its fabric up, starts ibsm, runs the
// traffic, applies the steps, checks and measures, takes the fabric down
// and, with o.Out, writes the report there. The error is for a run that
// could not be carried out; failed checks are in the report
// (Report.Passed false).
func Run(ctx context.Context, s Suite, o Options) (rep *Report, err error) {
	if o.Every <= 0 {
		o.Every = 200 * time.Millisecond
	}
	if o.Fabric == "" {
		o.Fabric = fabricName(s.Name)
	}
	if err := smKinds.Check(o.SM); err != nil {
		return nil, err
	}
	if o.SM == SMOpenSM {
		// The suite's flags are ibsm's.
		s.SMArgs = nil
	}
	if o.SMArgs != nil {
		s.SMArgs = o.SMArgs
	}
	topo, err := s.Topology()
	if err != nil {
		return nil, err
	}
	if s.SMNode == "" {
		for _, n := range topo.Nodes() {
			if n.Type == topologies.CA {
				s.SMNode = n.Name
				break
			}
		}
	}
	r := &SuiteRun{s: &s, o: o, topo: topo, fabric: o.Fabric, smLog: io.Discard}
	if _, err := r.placement(); err != nil {
		return nil, err // before anything is made
	}
	r.rep = &Report{Suite: s.Name, Summary: s.Summary, Fabric: o.Fabric, SMKind: o.SM, SMNode: s.SMNode, SMArgs: s.SMArgs,
		TimeScale: s.TimeScale, Load: s.Load, Started: time.Now()}
	if o.Hosts > 1 {
		r.rep.Hosts = o.Hosts
	}
	if o.Out != "" {
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return nil, err
		}
	}
	r.Logf("suite %s: %s", s.Name, s.Summary)
	down, err := r.Up()
	if err != nil {
		return nil, err
	}
	defer func() {
		if derr := down(); derr != nil && err == nil {
			err = derr
		}
		if o.Out != "" && rep != nil {
			if werr := writeReport(o.Out, rep); werr != nil && err == nil {
				err = werr
			}
		}
	}()
	if err := r.execute(ctx); err != nil {
		r.rep.Error = err.Error()
		r.rep.check("run completed", false, "%v", err)
	}
	r.rep.Passed = true
	for _, c := range r.rep.Checks {
		r.rep.Passed = r.rep.Passed && c.OK
	}
	r.rep.SM = r.SMResults()
	r.rep.Phases = phaseReport(r.rep)
	if r.smp != nil {
		r.rep.Samples = r.smp.Samples()
		r.rep.Bins = bins(r.rep.Samples, BinWidth)
	}
	return r.rep, nil
}

// Up prepares where the run's SM writes (ibsm's lines to ibsm.jsonl in
// the report directory; OpenSM's cache and log to a fresh opensm/ there,
// or to a temporary directory) and brings the fabric up, the SM's HCA
// with the flags its SM wants. down stops every SM the run started,
// takes the fabric down and closes or removes those files.
func (r *SuiteRun) Up() (down func() error, err error) {
	var release []func()
	undo := func() {
		for _, f := range release {
			f()
		}
	}
	switch {
	case r.o.SM == SMOpenSM && r.o.Out != "":
		r.smDir = filepath.Join(r.o.Out, "opensm")
		// A fresh cache: no LIDs from an earlier run.
		if err := os.RemoveAll(r.smDir); err != nil {
			return nil, err
		}
	case r.o.SM == SMOpenSM:
		d, err := os.MkdirTemp("", "ibfab-opensm-")
		if err != nil {
			return nil, err
		}
		release = append(release, func() { os.RemoveAll(d) })
		r.smDir = d
	case r.o.Out != "":
		f, err := os.Create(filepath.Join(r.o.Out, "ibsm.jsonl"))
		if err != nil {
			return nil, err
		}
		release = append(release, func() { f.Close() })
		r.smLog = f
	}
	o := harness.UpOptions{TimeScale: r.s.TimeScale, NodeArgs: r.s.NodeArgs,
		NodeArgsFor: map[string][]string{r.s.SMNode: IbsmHCAArgs(r.s.SMArgs)}}
	if r.o.SM == SMOpenSM {
		o.NodeArgsFor = map[string][]string{r.s.SMNode: {"--sim-retries", fmt.Sprint(OpenSMRetries)}}
	}
	if r.o.Hosts > 1 {
		host, err := r.placement()
		if err != nil {
			undo()
			return nil, err
		}
		o.Hosts, o.Placement = r.o.Hosts, host
	}
	if _, err := harness.Up(r.fabric, r.topo, o); err != nil {
		undo()
		return nil, fmt.Errorf("up: %w", err)
	}
	if r.o.Hosts > 1 {
		cut, err := harness.CrossHostLinks(r.fabric)
		if err != nil {
			undo()
			return nil, errors.Join(fmt.Errorf("up: %w", err), harness.Down(r.fabric))
		}
		r.Logf("fabric over %d hosts, %d links between them:", r.o.Hosts, len(cut))
		r.rep.CrossHost = cut
		for _, c := range cut {
			r.Logf("  %v", c)
		}
	}
	return func() error {
		r.mu.Lock()
		for _, p := range r.sms {
			p.Stop()
		}
		r.mu.Unlock()
		err := harness.Down(r.fabric)
		undo()
		if err != nil {
			return fmt.Errorf("down: %w", err)
		}
		return nil
	}, nil
}

// bringUpSM starts the timeline and the run's SM, waits for the subnet
// and for every port, and returns the LIDs by node name. The first sweep
// of a fabric of some hundred ports with LMC aliases and CC or AR MADs
// takes a while at a time scale in the thousands.
func (r *SuiteRun) bringUpSM(ctx context.Context) (map[string]int, error) {
	r.Start()
	p, err := r.StartSM()
	if err != nil {
		return nil, err
	}
	if _, _, err := p.WaitResult(0, 300*time.Second, func(x SMResult) bool { return x.SubnetUp }); err != nil {
		return nil, fmt.Errorf("subnet not up: %w", err)
	}
	if err := r.WaitPorts(ctx, 120*time.Second); err != nil {
		return nil, err
	}
	_, lids, err := r.HostLIDs(ctx)
	return lids, err
}

// SMResults returns what every SM the run started reported.
func (r *SuiteRun) SMResults() []SMResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []SMResult
	for _, p := range r.sms {
		out = append(out, p.Results()...)
	}
	return out
}

// CCLogs returns the CongestionLog entries the run's ibsm processes
// reported.
func (r *SuiteRun) CCLogs() []sm.CCLogEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sm.CCLogEvent
	for _, p := range r.sms {
		out = append(out, p.CCLogEvents()...)
	}
	return out
}

// execute is the run's sequence; an error ends it early.
func (r *SuiteRun) execute(ctx context.Context) error {
	s, rep := r.s, r.rep
	for _, a := range s.BringUp {
		if err := r.apply(ctx, a); err != nil {
			return err
		}
	}
	p, err := r.StartSM()
	if err != nil {
		return err
	}
	up, _, err := p.WaitResult(0, 90*time.Second, func(x SMResult) bool { return x.SubnetUp })
	if err != nil {
		rep.check("subnet up", false, "%v", err)
		return errors.New("the subnet did not come up")
	}
	rep.BringUp = &up
	if p.kind == SMOpenSM {
		rep.check("subnet up", true, "first heavy sweep: %.0f ms, %d SMPs (OpenSM's log; SMPs counted at its HCA)", up.MsTotal, up.SMPsTotal)
	} else {
		rep.check("subnet up", true, "first sweep: %d switches, %d CAs, %.0f ms, %d SMPs, %d retries, %d timeouts",
			up.Switches, up.HCAs, up.MsTotal, up.SMPsTotal, up.Retries, up.Timeouts)
	}
	if len(s.BringUp) > 0 {
		fs, err := harness.ListFaults(r.fabric)
		if err != nil {
			return err
		}
		rep.Rules = fs
		var matched, acted uint64
		for _, f := range fs {
			matched, acted = matched+f.Counters.Matched, acted+f.Counters.Acted
		}
		rep.check("bring-up faults acted", acted > 0, "%d rules matched %d frames and acted on %d", len(fs), matched, acted)
	}
	if err := r.WaitPorts(ctx, 30*time.Second); err != nil {
		return fmt.Errorf("after bring-up: %w", err)
	}
	hosts, lids, err := r.HostLIDs(ctx)
	if err != nil {
		return err
	}
	rep.LIDs = lids
	return r.traffic(ctx, hosts)
}
