package hca_test

import (
	"sync"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/hca"
	"ibfab/internal/clock"
	"ibfab/link"
	"ibfab/link/linktest"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// inbox is a MADClient that keeps what it is given.
type inbox struct {
	mu  sync.Mutex
	got []agent.Outbound
}

func (b *inbox) DeliverMAD(_ uint8, o agent.Outbound) {
	b.mu.Lock()
	b.got = append(b.got, o)
	b.mu.Unlock()
}

func (b *inbox) take() []agent.Outbound {
	b.mu.Lock()
	defer b.mu.Unlock()
	g := b.got
	b.got = nil
	return g
}

// pair is two one-port HCAs back to back over a pipe, on one manual clock.
type pair struct {
	clk    *clock.Manual
	ea, eb *pipe.Endpoint
	a, b   *hca.HCA
	ia, ib *inbox
}

const (
	guidA = 0x0002c90300000a00
	guidB = 0x0002c90300000b00
)

func newPair(t *testing.T) *pair {
	t.Helper()
	linktest.LeakCheck(t)
	p := &pair{clk: clock.NewManual(epoch), ia: &inbox{}, ib: &inbox{}}
	p.ea, p.eb = pipe.NewPairWith(pipe.Options{QueueLen: 8192, NameA: "a", NameB: "b"})
	var err error
	p.a, err = hca.New(hca.Config{NodeGUID: guidA, Description: "ibf-t a", Ports: []link.Endpoint{p.ea}, Clock: p.clk, MADClient: p.ia})
	if err != nil {
		t.Fatalf("hca.New(a): %v", err)
	}
	t.Cleanup(func() { p.a.Close() })
	p.b, err = hca.New(hca.Config{NodeGUID: guidB, Description: "ibf-t b", Ports: []link.Endpoint{p.eb}, Clock: p.clk, MADClient: p.ib})
	if err != nil {
		t.Fatalf("hca.New(b): %v", err)
	}
	t.Cleanup(func() { p.b.Close() })
	return p
}

func (p *pair) settle() {
	porttest.Settle([]*port.Port{p.a.Port(1), p.b.Port(1)}, p.ea)
}

// runFor moves the clock d forward from timer to timer, letting the pair
// settle at each step.
func (p *pair) runFor(t *testing.T, d time.Duration) {
	t.Helper()
	end := p.clk.Now().Add(d)
	for range 10_000_000 {
		p.settle()
		next, ok := p.clk.Next()
		if !ok || next.After(end) {
			p.clk.Advance(end.Sub(p.clk.Now()))
			p.settle()
			return
		}
		p.clk.AdvanceToNext()
	}
	t.Fatal("runFor: too many timer steps")
}

// sm sends r from HCA h and returns the one MAD that comes back for the SM.
func sm(t *testing.T, p *pair, h *hca.HCA, in *inbox, r agent.Request) mad.DRSMP {
	t.Helper()
	if err := h.SendMAD(r); err != nil {
		t.Fatalf("SendMAD: %v", err)
	}
	p.settle()
	got := in.take()
	if len(got) != 1 {
		t.Fatalf("SendMAD: %d MADs came back, want 1", len(got))
	}
	smp := mad.DRSMP(got[0].MAD)
	if !smp.IsValid() {
		t.Fatalf("response is not a DR SMP: % x", got[0].MAD)
	}
	if s := smp.Status(); s != 0 {
		t.Fatalf("response status %#x", s)
	}
	return smp
}

func drRequest(t *testing.T, r mad.DRRequest) agent.Request {
	t.Helper()
	b, err := mad.AppendDRRequest(nil, &r)
	if err != nil {
		t.Fatalf("AppendDRRequest: %v", err)
	}
	return agent.Request{Port: 1, MAD: b}
}
