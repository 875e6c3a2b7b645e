package smfabric_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"ibfab/fabricnet"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/simclient"
	"ibfab/sm"
)

// smRun is the subnet manager of package sm running in-process at an HCA
// of a soft fabric: its port is the HCA's attach point, opened in the
// HCA's namespace, and Run watches the subnet on its own goroutine. Every
// result and every table state the distribution goes through are kept;
// each state is checked as it comes.
type smRun struct {
	t    testing.TB
	node string

	mu      sync.Mutex
	results []*sm.Result
	states  int      // table states checked
	stages  []string // of the current distribution
	bad     []string // states the verifier rejects
	check   sm.TransitionCheck

	stop func() // ends the SM; the test's cleanup does too
	done chan error
	sm   *sm.SM // read only after stop
}

// startSM runs an SM at node with cfg (OnTables is the run's own) and
// waits for its first sweep to bring the subnet up.
func startSM(t testing.TB, f *fabrictest.Fabric, node string, cfg sm.Config) *smRun {
	t.Helper()
	return runSM(t, f, node, cfg, true)
}

func runSM(t testing.TB, f *fabrictest.Fabric, node string, cfg sm.Config, check bool) *smRun {
	t.Helper()
	r := &smRun{t: t, node: node, done: make(chan error, 1)}
	var port *simclient.Client
	err := fabricnet.Do(fabricnet.Namespace(f.Name, node), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		port, err = simclient.Dial(ctx, simclient.Config{IsSM: true, Wait: true})
		return err
	})
	if err != nil {
		t.Fatalf("attaching to %s: %v", node, err)
	}
	cfg.OnTables = nil
	if check {
		cfg.OnTables = r.onTables
	}
	s, err := sm.New(port, cfg)
	if err != nil {
		port.Close()
		t.Fatal(err)
	}
	r.sm = s
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.done <- s.Run(ctx, r.add) }()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("sm: %v", err)
			}
			r.done <- nil
			s.Close()
			port.Close()
		})
	}
	t.Cleanup(r.stop)
	r.waitResult(t, 0, 60*time.Second, func(res *sm.Result) bool { return res.Event == "sweep" && res.SubnetUp })
	return r
}

func (r *smRun) add(res *sm.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, res)
}

// onTables checks one intermediate state: together with the states of the
// same distribution before it (packets of one state may still wait in the
// buffers of the next) no cycle of channel dependencies and no turn the
// new up*/down* graph forbids; once the tables are in and the ports
// active, every CA reaches every LID.
func (r *smRun) onTables(st *sm.TableState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st.Stage == "protected" || st.Stage == "provisional-protected" {
		r.check, r.stages = sm.TransitionCheck{}, nil // a new distribution
	}
	r.states++
	r.stages = append(r.stages, st.Stage)
	if rep := r.check.Add(st); !rep.DeadlockFree() {
		r.bad = append(r.bad, fmt.Sprintf("state %d (%s, after %v): %d down-up turns, cycle %v",
			r.states, st.Stage, r.stages, rep.DownUp, rep.Cycle))
	}
	switch st.Stage {
	case "active", "provisional-active", "definitive", "final":
		if rep := sm.VerifyState(st); !rep.Connected() {
			r.bad = append(r.bad, fmt.Sprintf("state %d (%s): %v", r.states, st.Stage, rep.Err()))
		}
	}
}

// count returns how many results came so far.
func (r *smRun) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.results)
}

// since returns the results from index from on.
func (r *smRun) since(from int) []*sm.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*sm.Result(nil), r.results[from:]...)
}

// checked returns the number of states checked and the rejected ones.
func (r *smRun) checked() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.states, append([]string(nil), r.bad...)
}

// waitResult waits for a result from index from on that ok accepts.
func (r *smRun) waitResult(t testing.TB, from int, timeout time.Duration, ok func(*sm.Result) bool) *sm.Result {
	t.Helper()
	var got *sm.Result
	fabrictest.Wait(t, timeout, "sm result", func() bool {
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("sm stopped: %v", err)
		default:
		}
		for _, res := range r.since(from) {
			if ok(res) {
				got = res
				return true
			}
		}
		return false
	})
	return got
}

// diagnose describes, for a failure message, what the SM and the nodes
// saw of traps: the SM's counters (it is stopped first: they are its
// goroutine's) and every switch's trap state, and the SM's attach point.
func diagnose(f *fabrictest.Fabric, r *smRun) string {
	r.stop()
	var b strings.Builder
	st := r.sm.Stats()
	fmt.Fprintf(&b, "\n  sm: represses=%d bad_traps=%d received=%+v", st.Represses, st.BadTraps, st.Received)
	for name, p := range st.Phases {
		fmt.Fprintf(&b, "\n    %s %+v", name, p)
	}
	for _, n := range f.Status().Nodes {
		switch {
		case n.Agent == nil:
		case n.Type == "switch":
			a := n.Agent
			fmt.Fprintf(&b, "\n  %s: traps_sent=%d traps_dropped=%d unroutable=%d outstanding=%v port_state_change=%v",
				n.Name, a.TrapsSent, a.TrapsDropped, a.Unroutable, a.TrapOutstanding, a.PortStateChange)
		case n.Name == r.node:
			fmt.Fprintf(&b, "\n  %s (SM): agent %+v sim %+v client_dropped=%d", n.Name, *n.Agent, n.Sim, n.ClientDropped)
		}
	}
	return b.String()
}

// describe prints results for a failure message.
func describe(rs []*sm.Result) string {
	var b strings.Builder
	for _, res := range rs {
		fmt.Fprintf(&b, "\n  %s trigger=%s discovery=%s up=%v smps=%d ms=%.1f retries=%d timeouts=%d deactivated=%d own_traps=%d changes=%v reason=%q\n   ",
			res.Event, res.Trigger, res.Discovery, res.SubnetUp, res.SMPsTotal, res.MsTotal, res.Retries, res.Timeouts,
			res.PortsDeactivated, res.OwnTraps, res.Changes, res.Reason)
		for _, p := range res.Phases {
			fmt.Fprintf(&b, " %s %.1fms/%d", p.Name, p.Ms, p.SMPs)
		}
	}
	return b.String()
}
