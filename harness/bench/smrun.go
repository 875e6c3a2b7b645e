package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"ibfab/simclient"
	"ibfab/sm"
)

// smRun is ibsm (package sm) running in-process at an HCA of a fabric,
// its port the HCA's attach point; every result is kept with the time it
// came.
type smRun struct {
	mu      sync.Mutex
	results []*sm.Result
	at      []time.Time

	port   *simclient.Client
	s      *sm.SM
	cancel context.CancelFunc
	done   chan error
}

// startSM runs ibsm with cfg at node and waits, up to a minute, for its
// first sweep to bring the subnet up.
func startSM(f *fabric, node string, cfg sm.Config) (*smRun, error) {
	port, err := f.attachSM(node)
	if err != nil {
		return nil, err
	}
	s, err := sm.New(port, cfg)
	if err != nil {
		port.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &smRun{port: port, s: s, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx, r.add) }()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if err := r.exited(); err != nil {
			r.stop()
			return nil, err
		}
		for _, res := range r.since(0) {
			if res.Event == "sweep" && res.SubnetUp {
				return r, nil
			}
		}
	}
	r.stop()
	return nil, errors.New("ibsm: no sweep with the subnet up within a minute")
}

func (r *smRun) add(res *sm.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, res)
	r.at = append(r.at, time.Now())
}

// exited returns the SM's error if it stopped.
func (r *smRun) exited() error {
	select {
	case err := <-r.done:
		r.done <- err
		return fmt.Errorf("ibsm stopped: %v", err)
	default:
		return nil
	}
}

// stop ends the SM.
func (r *smRun) stop() {
	r.cancel()
	<-r.done
	r.done <- nil
	r.s.Close()
	r.port.Close()
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

// arrivals returns the times the results from index from on came.
func (r *smRun) arrivals(from int) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.at[from:]...)
}
