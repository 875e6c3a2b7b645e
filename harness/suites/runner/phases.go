package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"ibfab/harness"
	"ibfab/internal/ctl"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// lossCauses are the drop causes of a link or node that died: packets
// queued for it, sent into it, received from it and still waiting for
// their output, or routed to it before the SM took the change in.
// pout_eq_pin is a packet a switch's new table sends back where it came
// from while the tables change.
var lossCauses = []string{"link_down_while_queued", "port_not_active", "input_port_down", "unroutable", "pout_eq_pin"}

// traffic runs the measured part: traffic, steps, restoration, and the
// survivors' steady traffic, then checks.
func (r *SuiteRun) traffic(ctx context.Context, hosts []string) error {
	s, rep := r.s, r.rep
	r.Start()
	r.smp = newSampler(r.fabric, r.t0)
	sctx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.smp.run(sctx, r.o.Every) }()
	defer func() { stopSampling(); wg.Wait() }()

	p0 := r.smp.mark(ctx)
	if err := r.StartTraffic(ctx, hosts, hosts); err != nil {
		return err
	}
	r.Eventf("traffic: %d hosts, %g %% of the link rate each, to every other host", len(hosts), s.Load)
	// The capture starts a second before the first step, so that it shows
	// the port's traffic before the fault as well as after.
	lead := min(time.Second, s.Warmup)
	Sleep(ctx, s.Warmup-lead)
	stopCapture := r.StartCapture(ctx)
	Sleep(ctx, lead)
	began, end, err := r.runSteps(ctx)
	if err != nil {
		stopCapture()
		return err
	}
	dead, down := r.expected()
	bound := s.scaledBound()
	restored := r.WaitWhole(ctx, began, end, dead, down, bound+10*time.Second)
	stopCapture()
	if restored < 0 {
		rep.check("restored within bound", false, "not whole %v after the last step: %s%s", bound+10*time.Second, r.WhyNot(ctx, began, dead, down), r.opensmDiag(end))
		return errors.New("the fabric was not restored")
	}
	rep.RestoredMs = float64(restored) / float64(time.Millisecond)
	r.markEvent("restored", "restored: %.0f ms after the last step", rep.RestoredMs)
	rep.check("restored within bound", restored <= bound, "%.0f ms after the last step (bound %v)", rep.RestoredMs, bound)

	r.StopTraffic(ctx, hosts)
	p1 := r.Drain(ctx)
	rep.Fault = window(p0, p1)
	r.Eventf("traffic stopped: %d sent, %d received, drops %v", rep.Fault.Sent, rep.Fault.Received, rep.Fault.Drops)

	// Hosts a step added take part from here on.
	all, lids, err := r.HostLIDs(ctx)
	if err != nil {
		return err
	}
	for n, l := range lids {
		if _, ok := rep.LIDs[n]; !ok {
			rep.LIDs[n] = l
		}
	}
	survivors := r.survivors(all, dead, down)
	a := r.smp.mark(ctx)
	if err := r.StartTraffic(ctx, survivors, survivors); err != nil {
		return err
	}
	r.Eventf("steady traffic among the %d surviving hosts", len(survivors))
	Sleep(ctx, s.Steady)
	r.StopTraffic(ctx, survivors)
	b := r.Drain(ctx)
	rep.Steady = window(a, b)
	r.Eventf("steady traffic stopped: %d sent, %d received", rep.Steady.Sent, rep.Steady.Received)
	r.finalChecks(ctx, all, survivors, dead, a, b)
	return nil
}

// Sleep waits d, or less when ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func window(a, b Sample) Window {
	return Window{From: a.T, To: b.T, Sent: b.Tx - a.Tx, Received: b.Rx - a.Rx,
		Lost: int64(b.Tx-a.Tx) - int64(b.Rx-a.Rx), Drops: DropsBetween(a, b)}
}

// mark takes a sample now and returns it.
func (s *sampler) mark(ctx context.Context) Sample {
	s.sample(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return Sample{Drops: map[string]uint64{}}
	}
	return s.samples[len(s.samples)-1]
}

// Drain waits until the hosts' received count stops growing (the packets
// in flight have arrived) and returns the last sample.
func (r *SuiteRun) Drain(ctx context.Context) Sample {
	last := r.smp.mark(ctx)
	same := 0
	for deadline := time.Now().Add(5 * time.Second); same < 3 && time.Now().Before(deadline); {
		Sleep(ctx, 100*time.Millisecond)
		cur := r.smp.mark(ctx)
		if cur.Rx == last.Rx {
			same++
		} else {
			same = 0
		}
		last = cur
	}
	return last
}

// Call sends op with args to node's control socket, its answer into res.
func (r *SuiteRun) Call(ctx context.Context, node, op string, args, res any) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return ctl.Call(cctx, nodeproc.SocketPath(r.fabric, node), op, args, res)
}

// StartTraffic makes every host of from send to every other host of to.
func (r *SuiteRun) StartTraffic(ctx context.Context, from, to []string) error {
	for i, h := range from {
		var dests []uint16
		for _, d := range to {
			if d != h {
				dests = append(dests, uint16(r.rep.LIDs[d]))
			}
		}
		if len(dests) == 0 {
			continue
		}
		args := nodeproc.TrafficArgs{Port: 1, Load: r.s.Load, Payload: r.s.Payload, Dests: dests, Seed: uint64(i + 1)}
		if err := r.Call(ctx, h, "traffic-start", args, nil); err != nil {
			return fmt.Errorf("traffic-start on %s: %w", h, err)
		}
	}
	return nil
}

// StopTraffic stops the generators; a host that died has none to stop.
func (r *SuiteRun) StopTraffic(ctx context.Context, hosts []string) {
	for _, h := range hosts {
		r.Call(ctx, h, "traffic-stop", map[string]int{"port": 1}, nil)
	}
}

// HostLIDs returns the HCAs and every node's LID.
func (r *SuiteRun) HostLIDs(ctx context.Context) ([]string, map[string]int, error) {
	st, err := harness.Status(ctx, r.fabric)
	if err != nil {
		return nil, nil, err
	}
	lids := map[string]int{}
	var hosts []string
	for _, n := range st.Nodes {
		for _, p := range n.Ports {
			if p.LID != 0 {
				lids[n.Name] = int(p.LID)
				break
			}
		}
		if n.Type == "hca" {
			if lids[n.Name] == 0 {
				return nil, nil, fmt.Errorf("%s has no LID", n.Name)
			}
			hosts = append(hosts, n.Name)
		}
	}
	return hosts, lids, nil
}

// runSteps applies the steps at their times (each in its own goroutine, so
// that a flap does not hold back the next step) and returns when the last
// one began and when the last has finished. The SM may take a change in
// before the step that made it returns (an added piece's links train, and
// are assimilated, while the add still waits for them): its reaction
// counts from when the step began.
func (r *SuiteRun) runSteps(ctx context.Context) (began, end time.Time, err error) {
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := make([]error, len(r.s.Steps))
	for i, st := range r.s.Steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Sleep(ctx, time.Until(start.Add(st.At)))
			r.markEvent("step", "%v", st.Action)
			mu.Lock()
			if now := time.Now(); now.After(began) {
				began = now
			}
			mu.Unlock()
			errs[i] = r.apply(ctx, st.Action)
		}()
	}
	wg.Wait()
	return began, time.Now(), errors.Join(errs...)
}

// apply carries out one action.
func (r *SuiteRun) apply(ctx context.Context, a Action) error {
	var err error
	switch a.Kind {
	case LinkDown, LinkUp:
		err = harness.SetLink(r.fabric, a.Node, a.Port, a.Kind == LinkUp)
	case LinkFlap:
		err = harness.FlapLink(ctx, r.fabric, a.Node, a.Port, a.Period, a.Count, nil)
	case KillNode:
		err = harness.Kill(r.fabric, a.Node)
	case Restart:
		_, _, err = harness.Restart(r.fabric, a.Node, 30*time.Second)
	case AddFault:
		_, err = harness.AddFault(r.fabric, a.Node, a.Port, a.Ingress, a.Rule)
	case ClearFault:
		if fs, lerr := harness.ListFaults(r.fabric); lerr == nil && len(fs) > 0 {
			r.mu.Lock()
			r.rep.Rules = fs
			r.mu.Unlock()
		}
		_, err = harness.ClearFaults(r.fabric, "", 0)
	case AddPiece:
		var t *topologies.Topology
		if t, err = harness.Add(r.fabric, a.Piece(), harness.AddOptions{}); err == nil {
			r.mu.Lock()
			r.topo = t
			r.mu.Unlock()
		}
	case KillSM:
		r.SM().Kill()
	case StartSM:
		_, err = r.StartSM()
	default:
		err = fmt.Errorf("unknown action %q", a.Kind)
	}
	if err != nil {
		return fmt.Errorf("%v: %w", a, err)
	}
	return nil
}

// PortKey names a port.
func PortKey(node string, port int) string { return fmt.Sprintf("%s[%d]", node, port) }

// expected returns what the steps leave behind: the nodes dead, and the
// ports (both ends) whose link is down.
func (r *SuiteRun) expected() (dead, down map[string]bool) {
	dead, down = map[string]bool{}, map[string]bool{}
	steps := slices.Clone(r.s.Steps)
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At < steps[j].At })
	for _, st := range steps {
		switch st.Kind {
		case KillNode:
			dead[st.Node] = true
		case Restart:
			delete(dead, st.Node)
		case LinkDown, LinkUp:
			i, _ := r.topo.Lookup(st.Node)
			peer, ok := r.topo.Peer(topologies.PortRef{Node: i, Port: st.Port})
			if !ok {
				continue
			}
			for _, k := range []string{PortKey(st.Node, st.Port), PortKey(r.topo.Node(peer.Node).Name, peer.Port)} {
				if st.Kind == LinkDown {
					down[k] = true
				} else {
					delete(down, k)
				}
			}
		}
	}
	return dead, down
}

// wantActive says whether node i's port p should be Active.
func (r *SuiteRun) wantActive(i, p int, dead, down map[string]bool) (want, cabled bool) {
	peer, ok := r.topo.Peer(topologies.PortRef{Node: i, Port: p})
	if !ok {
		return false, false
	}
	n := r.topo.Node(i).Name
	return !dead[n] && !dead[r.topo.Node(peer.Node).Name] && !down[PortKey(n, p)], true
}

// survivors returns the hosts still connected to the SM's.
func (r *SuiteRun) survivors(hosts []string, dead, down map[string]bool) []string {
	start, _ := r.topo.Lookup(r.s.SMNode)
	seen := map[int]bool{start: true}
	queue := []int{start}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for p := 1; p <= r.topo.Node(i).NumPorts; p++ {
			if want, _ := r.wantActive(i, p, dead, down); !want {
				continue
			}
			peer, _ := r.topo.Peer(topologies.PortRef{Node: i, Port: p})
			if !seen[peer.Node] {
				seen[peer.Node] = true
				queue = append(queue, peer.Node)
			}
		}
	}
	var out []string
	for _, h := range hosts {
		if i, _ := r.topo.Lookup(h); seen[i] {
			out = append(out, h)
		}
	}
	return out
}

// changesTopology says whether the steps change what the SM must route.
func (r *SuiteRun) changesTopology() bool {
	return r.smMustReact || slices.ContainsFunc(r.s.Steps, func(st Step) bool {
		switch st.Kind {
		case LinkDown, LinkUp, LinkFlap, KillNode, Restart, AddPiece:
			return true
		}
		return false
	})
}

// WhyNot says what keeps the fabric from being whole ("" when it is): a
// change the steps made needs an SM result after since, when they began.
func (r *SuiteRun) WhyNot(ctx context.Context, since time.Time, dead, down map[string]bool) string {
	st, err := harness.Status(ctx, r.fabric)
	if err != nil {
		return err.Error()
	}
	var bad []string
	for _, n := range st.Nodes {
		i, _ := r.topo.Lookup(n.Name)
		if dead[n.Name] {
			continue
		}
		if !n.Alive {
			bad = append(bad, n.Name+" not running")
			continue
		}
		for _, p := range n.Ports {
			want, cabled := r.wantActive(i, p.Port, dead, down)
			if cabled && want != (p.State == "Active") {
				bad = append(bad, fmt.Sprintf("%s %s", PortKey(n.Name, p.Port), p.State))
			}
		}
	}
	if len(bad) > 0 {
		if len(bad) > 6 {
			bad = append(bad[:6], "...")
		}
		return "ports: " + strings.Join(bad, ", ")
	}
	p := r.SM()
	rs := p.Results()
	switch {
	case !p.Alive():
		return p.kind.String() + " is not running"
	case len(rs) == 0:
		return p.kind.String() + " has not reported"
	case !rs[len(rs)-1].SubnetUp:
		return p.kind.String() + "'s last result: subnet not up: " + rs[len(rs)-1].Reason
	case r.changesTopology() && !rs[len(rs)-1].At.After(since):
		return p.kind.String() + " has not taken the change in"
	}
	return ""
}

// WaitWhole waits until WhyNot (with since) is empty and returns how long
// after end that was, or -1 after timeout.
func (r *SuiteRun) WaitWhole(ctx context.Context, since, end time.Time, dead, down map[string]bool, timeout time.Duration) time.Duration {
	for deadline := end.Add(timeout); time.Now().Before(deadline) && ctx.Err() == nil; {
		if r.WhyNot(ctx, since, dead, down) == "" {
			return time.Since(end)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1
}

// WaitPorts waits until every cabled port is Active.
func (r *SuiteRun) WaitPorts(ctx context.Context, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); ; {
		why := r.WhyNot(ctx, time.Time{}, nil, nil)
		if why == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not every port Active after %v: %s", timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
