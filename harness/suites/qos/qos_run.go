package qos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"ibfab/harness"
	"ibfab/harness/suites/runner"
	"ibfab/hca"
	"ibfab/internal/opensmrun"
	"ibfab/nodeproc"
	"ibfab/sm"
	"ibfab/sm/qos"
	"ibfab/topologies"
)

// qosRun is one arrangement of the QoS experiment in progress.
type qosRun struct {
	*runner.SuiteRun
	mode    QoSMode
	conf    qosAt // the rate, time scale and flows
	mr      *QoSModeReport
	control string // ibsm's control socket
	dir     string
	sl      map[string]uint8 // per flow
	flows   map[string]*sm.QoSEvent
	length  time.Duration // of a measurement window, real
}

// qosPoll is how often the flows at b1 are read during a window.
const qosPoll = 500 * time.Millisecond

// runQoSMode brings a fabric up for mode, every link at at's rate, runs
// the experiment on it and takes it down.
func runQoSMode(ctx context.Context, m QoSMode, o QoSOptions, at qosAt) (mr *QoSModeReport, err error) {
	fabric := qosFabricName(o.Fabric, m)
	mr = &QoSModeReport{Mode: m, Fabric: fabric, TimeScale: at.scale}
	dir := qosModeDir(o.Out, m)
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	kind := runner.SMIbsm
	if m == QoSOpenSM {
		kind = runner.SMOpenSM
	}
	topo := topologies.Dumbbell()
	if err := topo.SetRate(at.rate); err != nil {
		return nil, err
	}
	s := runner.Suite{Name: "qos-" + m.String(), TimeScale: at.scale, SMNode: "sm0", Capture: qosBottleneck,
		NodeArgs: runner.RateNodeArgs(at.rate), Topology: func() (*topologies.Topology, error) { return topo, nil }}
	r := &qosRun{mode: m, conf: at, mr: mr, dir: dir, sl: map[string]uint8{}, flows: map[string]*sm.QoSEvent{}, length: o.Measure,
		control: filepath.Join(filepath.Dir(nodeproc.SocketPath(fabric, "sm0")), "ibsm-qos.sock")}
	r.SuiteRun = runner.NewSuiteRun(&s, runner.Options{Out: dir, Fabric: fabric, SM: kind, Log: o.Log}, topo, fabric,
		&runner.Report{Suite: s.Name, Fabric: fabric, SMKind: kind, SMNode: s.SMNode, TimeScale: s.TimeScale})
	release, err := r.smArgs()
	if err != nil {
		return nil, err
	}
	defer release()
	r.Logf("qos %s: fabric %s, every link %s, at time scale %g", m, fabric, at.rate, at.scale)
	down, err := r.Up()
	if err != nil {
		return nil, err
	}
	defer func() {
		derr := down()
		mr.SM = r.SMResults()
		if derr != nil && err == nil {
			err = derr
		}
	}()
	if err := r.execute(ctx); err != nil {
		mr.Error = err.Error()
		mr.Checks = append(mr.Checks, runner.Check{Name: "run completed", Detail: err.Error()})
	}
	return mr, nil
}

// smArgs sets the SM's flags for the mode: ibsm with QoS, its flow file
// holding f1 and its control socket; ibsm without; OpenSM with QoS.
// release removes the flow file when the run has no report directory.
func (r *qosRun) smArgs() (release func(), err error) {
	release = func() {}
	base := slices.Clone(runner.DefaultSMArgs)
	switch r.mode {
	case QoSIbsm:
		var file string
		file, release, err = r.flowFile()
		if err != nil {
			return nil, err
		}
		r.Suite().SMArgs = append(base, "--qos-flows", file, "--control", r.control)
	case QoSNone:
		r.Suite().SMArgs = base
	case QoSOpenSM:
		r.Suite().SMArgs = []string{"-Q"}
	default:
		return nil, fmt.Errorf("unknown mode %q", r.mode)
	}
	return release, nil
}

// flowFile writes ibsm's static flows, f1, to the report directory, or
// to a temporary one that release removes.
func (r *qosRun) flowFile() (path string, release func(), err error) {
	dir, release := r.dir, func() {}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ibfab-qos-"); err != nil {
			return "", nil, err
		}
		release = func() { os.RemoveAll(dir) }
	}
	b, err := json.MarshalIndent(map[string][]qos.Request{"flows": {r.conf.f1.Request}}, "", "  ")
	if err != nil {
		release()
		return "", nil, err
	}
	path = filepath.Join(dir, "qos-flows.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		release()
		return "", nil, err
	}
	return path, release, nil
}

func (r *qosRun) check(name string, ok bool, format string, args ...any) {
	r.mr.Checks = append(r.mr.Checks, runner.Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
}

// execute is one arrangement: SM up, flows admitted, traffic, a window,
// and with ibsm the cut.
func (r *qosRun) execute(ctx context.Context) error {
	if r.mode == QoSOpenSM {
		if err := r.openSMQoS(); err != nil {
			return err
		}
	}
	r.Start()
	p, err := r.StartSM()
	if err != nil {
		return err
	}
	if _, _, err := p.WaitResult(0, 120*time.Second, func(x runner.SMResult) bool { return x.SubnetUp }); err != nil {
		return fmt.Errorf("subnet not up: %w", err)
	}
	if err := r.WaitPorts(ctx, 60*time.Second); err != nil {
		return err
	}
	_, lids, err := r.HostLIDs(ctx)
	if err != nil {
		return err
	}
	r.Report().LIDs = lids
	if err := r.admit(ctx, p); err != nil {
		return err
	}
	if err := r.startLoad(ctx); err != nil {
		return err
	}
	runner.Sleep(ctx, time.Second)
	stop := r.StartCapture(ctx)
	res, series, err := r.window(ctx, r.length)
	stop()
	r.mr.Capture = r.Report().Capture
	if err != nil {
		return err
	}
	r.mr.Flows, r.mr.Series = res, series
	r.judge(res)
	if r.mode == QoSIbsm {
		if err := r.cut(ctx, p); err != nil {
			return err
		}
	}
	for _, f := range r.conf.flows() {
		harness.StopFlow(ctx, r.Fabric(), f.Src, f.id)
	}
	r.StopTraffic(ctx, qosBestEffort)
	return nil
}

// admit gets the flows their SLs: from ibsm's decisions (f1 from its
// file, f2 through `ibsm qos add`, f3 refused), SL 0 without QoS, or
// ibsm's mapping computed here for OpenSM.
func (r *qosRun) admit(ctx context.Context, p *runner.SMProc) error {
	switch r.mode {
	case QoSNone:
		r.sl["f1"], r.sl["f2"] = 0, 0
		return nil
	case QoSOpenSM:
		fs, err := offlineAdmit([]qos.Request{r.conf.f1.Request, r.conf.f2.Request}, r.conf.bps)
		if err != nil {
			return err
		}
		for _, f := range fs {
			r.sl[f.ID] = f.SL
		}
		return nil
	}
	f1, err := r.waitQoS(p, "f1", 30*time.Second)
	if err != nil {
		return err
	}
	r.check("f1 admitted from the flow file", f1.Action == sm.QoSAdmit, "%s %s", f1.Action, f1.Reason)
	for _, req := range []qos.Request{r.conf.f2.Request, r.conf.f3} {
		ev, err := r.qosAdd(ctx, req)
		if err != nil {
			return err
		}
		r.mr.Events = append(r.mr.Events, *ev)
		r.Eventf("ibsm qos add %s: %s %s %s", req.ID, ev.Action, ev.Port, ev.Reason)
		if req.ID == r.conf.f3.ID {
			r.mr.Rejected = ev
			r.check("f3 refused at the bottleneck", ev.Action == sm.QoSReject && ev.Port == qosBottleneck,
				"%s at %q (want %s): %s", ev.Action, ev.Port, qosBottleneck, ev.Reason)
			continue
		}
		r.check("f2 admitted by ibsm qos add", ev.Action == sm.QoSAdmit, "%s %s", ev.Action, ev.Reason)
		r.flows[req.ID] = ev
	}
	r.flows["f1"] = &f1
	for id, ev := range r.flows {
		if ev.Flow == nil {
			return fmt.Errorf("flow %s not admitted: %s", id, ev.Reason)
		}
		r.sl[id] = ev.Flow.SL
	}
	return nil
}

// waitQoS waits for ibsm's first decision on flow id.
func (r *qosRun) waitQoS(p *runner.SMProc, id string, timeout time.Duration) (sm.QoSEvent, error) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, e := range p.QoSEvents() {
			if e.ID == id {
				r.mr.Events = append(r.mr.Events, e)
				return e, nil
			}
		}
	}
	return sm.QoSEvent{}, fmt.Errorf("no QoS decision on %s after %v", id, timeout)
}

// qosAdd runs `ibsm qos add` against the SM's control socket, as a user
// would, and returns its decision.
func (r *qosRun) qosAdd(ctx context.Context, q qos.Request) (*sm.QoSEvent, error) {
	bin, err := runner.SMBinary()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, "qos", "add", "--id", q.ID, "--src", q.Src, "--dst", q.Dst,
		"--mbps", fmt.Sprint(q.Mbps), "--latency-us", fmt.Sprint(q.LatencyUs), "--scope", q.Scope.String(),
		"--control", r.control, "--json")
	out, err := cmd.Output()
	var rep sm.QoSReply
	if jerr := json.Unmarshal(out, &rep); jerr != nil || rep.Event == nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("ibsm qos add %s: %v: %s", q.ID, err, ee.Stderr)
		}
		return nil, fmt.Errorf("ibsm qos add %s: %v %v: %q", q.ID, err, jerr, out)
	}
	return rep.Event, nil
}

// offlineAdmit is what ibsm's mapping gives requests on the experiment's
// paths (three hops of bps, MTU 2048 and 8 data VLs), for OpenSM: their
// SLs and entries.
func offlineAdmit(reqs []qos.Request, bps uint64) ([]*qos.Flow, error) {
	m, err := qos.NewManager(qos.Params{})
	if err != nil {
		return nil, err
	}
	var out []*qos.Flow
	for _, req := range reqs {
		f, err := m.Admit(req, offlinePath(bps))
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func offlinePath(bps uint64) []qos.Link {
	var out []qos.Link
	for i := range 3 {
		out = append(out, qos.Link{Key: qos.PortKey{GUID: uint64(i + 1)}, Name: fmt.Sprintf("hop%d", i),
			Rate: bps, MTU: 2048, DataVLs: 8})
	}
	return out
}

// startLoad starts best effort at 100 % from qosBestEffort to b1 on SL 0,
// and the flows on their SLs at their rates.
func (r *qosRun) startLoad(ctx context.Context) error {
	b1 := uint16(r.Report().LIDs["b1"])
	for i, h := range qosBestEffort {
		if err := r.Call(ctx, h, "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 100, Payload: 2048,
			Dests: []uint16{b1}, Seed: uint64(i + 1)}, nil); err != nil {
			return fmt.Errorf("best effort from %s: %w", h, err)
		}
	}
	for _, f := range r.conf.flows() {
		st, err := harness.StartFlow(ctx, r.Fabric(), f.Src, nodeproc.FlowArgs{ID: f.id, Port: 1, DLID: b1, SL: r.sl[f.ID],
			RateBPS: uint64(f.Mbps * 1e6), Payload: qos.DefaultPayload, Pattern: hca.CBR})
		if err != nil {
			return err
		}
		r.Eventf("flow %s from %s: SL %d on VL %d, %.0f Mb/s", f.ID, f.Src, st.SL, st.VL, f.Mbps)
	}
	return nil
}

// rxSnap is what b1 had received of the flows, and of everything, at a
// moment.
type rxSnap struct {
	at    time.Time
	flows map[string]hca.FlowRxStats
	rcv   uint64 // b1's port: data bytes received
}

// snap reads b1's flows and port counters (b1's status alone: a
// fabric's status asks every node, whose CPU the switches need while
// the window runs).
func (r *qosRun) snap(ctx context.Context, reset bool) (rxSnap, error) {
	s := rxSnap{at: time.Now(), flows: map[string]hca.FlowRxStats{}}
	rep, err := harness.Flows(ctx, r.Fabric(), "b1", nodeproc.FlowsArgs{Reset: reset})
	if err != nil {
		return s, err
	}
	for _, f := range rep.Received {
		for _, q := range r.conf.flows() {
			if f.ID == q.id && f.SLID == uint16(r.Report().LIDs[q.Src]) {
				s.flows[q.ID] = f
			}
		}
	}
	var st nodeproc.Status
	if err := r.Call(ctx, "b1", "status", nil, &st); err != nil {
		return s, err
	}
	if len(st.Ports) > 0 {
		s.rcv = st.Ports[0].Counters.PortRcvData * 4
	}
	return s, nil
}

// window measures d of real time: what b1 received of each flow and of
// best effort, and a series of samples every qosPoll.
func (r *qosRun) window(ctx context.Context, d time.Duration) ([]QoSFlowResult, []QoSSeriesPoint, error) {
	senders0 := r.senders(ctx)
	first, err := r.snap(ctx, true)
	if err != nil {
		return nil, nil, err
	}
	// The reset's answer holds the counts before it: the flows start
	// from nothing, b1's port counter from where it was.
	base := rxSnap{at: first.at, flows: map[string]hca.FlowRxStats{}, rcv: first.rcv}
	prev := base
	var series []QoSSeriesPoint
	for end := time.Now().Add(d); time.Now().Before(end); {
		runner.Sleep(ctx, qosPoll)
		cur, err := r.snap(ctx, false)
		if err != nil {
			return nil, nil, err
		}
		series = append(series, r.point(prev, cur))
		prev = cur
	}
	senders1 := r.senders(ctx)
	var out []QoSFlowResult
	for _, q := range r.conf.flows() {
		f, ok := prev.flows[q.ID]
		res := QoSFlowResult{ID: q.ID, SL: r.sl[q.ID], RequestedMbps: q.Mbps, BoundUs: q.LatencyUs}
		if ev := r.flows[q.ID]; ev != nil && ev.Flow != nil {
			res.PromisedUs = ev.Flow.BoundUs
		}
		if ok {
			res.Packets, res.Lost = f.Packets, f.Lost
			res.ReceivedMbps = f.ThroughputBPS / 1e6
			res.P50Us, res.P99Us, res.MaxUs = runner.Micros(f.Latency.P50Ns), runner.Micros(f.Latency.P99Ns), runner.Micros(f.Latency.MaxNs)
		}
		a, b := senders0[q.ID], senders1[q.ID]
		if dt := b.Elapsed - a.Elapsed; dt > 0 {
			res.SentMbps = float64(b.SentBytes-a.SentBytes) * 8 / dt.Seconds() / 1e6
		}
		res.SourceDropped = b.Dropped - a.Dropped
		res.BandwidthMet = res.ReceivedMbps >= 0.98*q.Mbps
		res.LatencyMet = ok && res.P99Us <= q.LatencyUs
		out = append(out, res)
	}
	if len(prev.flows) == 0 {
		return out, series, errNoFlows
	}
	r.mr.BestMbps = r.point(base, prev).Mbps["best-effort"]
	return out, series, nil
}

// senders reads the flows' sender counters, by flow.
func (r *qosRun) senders(ctx context.Context) map[string]hca.FlowStats {
	out := map[string]hca.FlowStats{}
	for _, q := range r.conf.flows() {
		rep, err := harness.Flows(ctx, r.Fabric(), q.Src, nodeproc.FlowsArgs{})
		if err != nil {
			continue
		}
		for _, s := range rep.Sent {
			if s.ID == q.id {
				out[q.ID] = s
			}
		}
	}
	return out
}

// point is one series sample between two snapshots: each flow's rate and
// p99 over the interval, and best effort's rate.
func (r *qosRun) point(a, b rxSnap) QoSSeriesPoint {
	p := QoSSeriesPoint{T: time.Since(r.T0()).Seconds(), Mbps: map[string]float64{}, P99: map[string]float64{}}
	emu := b.at.Sub(a.at).Seconds() / r.conf.scale
	if emu <= 0 {
		return p
	}
	var flows float64
	for id, fb := range b.flows {
		fa := a.flows[id]
		if fb.WireBytes < fa.WireBytes {
			continue // counts started over
		}
		bits := float64(fb.WireBytes-fa.WireBytes) * 8
		flows += bits
		p.Mbps[id] = bits / emu / 1e6
		p.P99[id] = runner.Micros(runner.P99Between(fa.Latency.Buckets, fb.Latency.Buckets))
	}
	if b.rcv >= a.rcv {
		p.Mbps["best-effort"] = max(0, (float64(b.rcv-a.rcv)*8-flows)/emu/1e6)
	}
	return p
}

// judge checks a window of the mode.
func (r *qosRun) judge(res []QoSFlowResult) {
	sat := 0.0
	for _, f := range res {
		sat += f.ReceivedMbps
	}
	sat += r.mr.BestMbps
	r.mr.LinkMbps = float64(r.conf.bps) / 1e6
	r.check("bottleneck saturated", sat >= 0.95*r.mr.LinkMbps, "b1 received %.0f Mb/s of %.0f (flows and best effort)", sat, r.mr.LinkMbps)
	if r.mode != QoSIbsm {
		return
	}
	for _, f := range res {
		r.check(f.ID+" bandwidth", f.BandwidthMet, "received %.1f Mb/s, requested %.0f (≥ 98 %%)", f.ReceivedMbps, f.RequestedMbps)
		r.check(f.ID+" latency", f.LatencyMet, "p99 %.1f µs, bound %.0f µs (ibsm promised %.1f)", f.P99Us, f.BoundUs, f.PromisedUs)
	}
	r.check("best effort not starved", r.mr.BestMbps > 0.1*r.mr.LinkMbps, "best effort received %.0f Mb/s", r.mr.BestMbps)
}

// portRef reads "node[port]".
var portRefRE = regexp.MustCompile(`^(.+)\[([0-9]+)\]$`)

// cut takes down the switch link f1 crosses and checks that ibsm moved or
// gave up every flow that crossed it, then measures again.
func (r *qosRun) cut(ctx context.Context, p *runner.SMProc) error {
	var link string
	for _, h := range r.flows["f1"].Flow.Hops {
		if strings.HasPrefix(h.Port, "sw1[") {
			link = h.Port
		}
	}
	m := portRefRE.FindStringSubmatch(link)
	if m == nil {
		return fmt.Errorf("f1 crosses no sw1 port: %+v", r.flows["f1"].Flow.Hops)
	}
	port, _ := strconv.Atoi(m[2])
	var affected []string
	for id, ev := range r.flows {
		for _, h := range ev.Flow.Hops {
			if h.Port == link {
				affected = append(affected, id)
			}
		}
	}
	slices.Sort(affected)
	r.mr.Cut = link
	from := len(p.QoSEvents())
	r.Eventf("cut %s (flows %v cross it)", link, affected)
	if err := harness.SetLink(r.Fabric(), m[1], port, false); err != nil {
		return err
	}
	decided := map[string]sm.QoSEvent{}
	for deadline := time.Now().Add(120 * time.Second); len(decided) < len(affected) && time.Now().Before(deadline); {
		runner.Sleep(ctx, 100*time.Millisecond)
		for _, e := range p.QoSEvents()[from:] {
			if e.Action == sm.QoSReroute || e.Action == sm.QoSLost {
				decided[e.ID] = e
			}
		}
	}
	var got []string
	for _, id := range affected {
		e, ok := decided[id]
		if !ok {
			got = append(got, id+": no decision")
			continue
		}
		r.mr.Events = append(r.mr.Events, e)
		got = append(got, fmt.Sprintf("%s: %s %s", id, e.Action, e.Reason))
		if e.Action == sm.QoSReroute {
			r.flows[id] = &e
		}
	}
	r.check("link cut: every flow moved or reported", len(decided) == len(affected) && len(affected) > 0,
		"cut %s, %d flows crossed it: %s", link, len(affected), strings.Join(got, "; "))
	sw, _ := r.Topology().Lookup(m[1])
	peer, _ := r.Topology().Peer(topologies.PortRef{Node: sw, Port: port})
	down := map[string]bool{link: true, runner.PortKey(r.Topology().Node(peer.Node).Name, peer.Port): true}
	for deadline := time.Now().Add(60 * time.Second); ; runner.Sleep(ctx, 100*time.Millisecond) {
		why := r.WhyNot(ctx, time.Time{}, nil, down)
		if why == "" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after the cut: %s", why)
		}
	}
	runner.Sleep(ctx, time.Second)
	after, _, err := r.window(ctx, r.length/2)
	if err != nil {
		return fmt.Errorf("after the cut: %w", err)
	}
	r.mr.AfterCut = after
	for _, f := range after {
		if e, ok := decided[f.ID]; ok && e.Action == sm.QoSReroute {
			r.check(f.ID+" bandwidth after the cut", f.BandwidthMet, "received %.1f Mb/s on its new route, requested %.0f", f.ReceivedMbps, f.RequestedMbps)
		}
	}
	return nil
}

// openSMQoS writes OpenSM's QoS options: ibsm's SLtoVL (SL n on VL n),
// its high limit, best effort alone in the low table, and in the high
// table each flow's entries with the weights ibsm's mapping gives it,
// interleaved flow by flow, as an administrator would write them from
// the same requests. OpenSM applies the same tables to every port; what
// it lacks is admission and the model's spacing.
func (r *qosRun) openSMQoS() error {
	high, err := openSMHighTable([]qos.Request{r.conf.f1.Request, r.conf.f2.Request}, r.conf.bps)
	if err != nil {
		return err
	}
	conf, err := opensmrun.IBSMQoS(2048, high)
	if err != nil {
		return err
	}
	r.SetOpenSMConf(conf.String())
	return nil
}

// openSMHighTable is the high-priority table of OpenSM's QoS run: each
// request's entries as ibsm's mapping weighs them on the experiment's
// paths (links of bps), dealt out one per request in turn.
func openSMHighTable(reqs []qos.Request, bps uint64) ([]opensmrun.ArbEntry, error) {
	fs, err := offlineAdmit(reqs, bps)
	if err != nil {
		return nil, err
	}
	var high []opensmrun.ArbEntry
	for k := 0; len(high) < 64; k++ {
		added := false
		for _, f := range fs {
			if h := f.Hops[0]; k < h.Entries && len(high) < 64 {
				high = append(high, opensmrun.ArbEntry{VL: int(h.VL), Weight: h.Weight})
				added = true
			}
		}
		if !added {
			break
		}
	}
	return high, nil
}
