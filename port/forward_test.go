package port_test

import (
	"sync"
	"testing"

	"ibfab/internal/clock"
	"ibfab/link/linktest"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

// forwarder is the crossbar of a two-port soft switch in miniature: what
// one port receives goes out of the others, the input buffer held until
// every output has sent it (virtual cut-through with backpressure). While
// hold is set it keeps what arrives instead, as a crossbar that has not
// decided yet.
type forwarder struct {
	outs []*port.Port

	mu   sync.Mutex
	hold bool
	held []*port.Packet
}

func (f *forwarder) Receive(_ *port.Port, pkt *port.Packet) {
	f.mu.Lock()
	if f.hold {
		f.held = append(f.held, pkt)
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.forward(pkt)
}

// forward sends pkt out of every output and returns the first error.
func (f *forwarder) forward(pkt *port.Packet) error {
	for range len(f.outs) - 1 {
		pkt.Ref()
	}
	var first error
	for _, o := range f.outs {
		// A refused packet is counted and released by the port.
		if err := o.Send(pkt); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// setHold switches holding on or off and returns what was held.
func (f *forwarder) setHold(h bool) []*port.Packet {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = h
	held := f.held
	f.held = nil
	return held
}

// chain builds src → [in | out...] → sinks: a switch whose input port in
// forwards to one or more output ports, each with a sink port behind it.
type chain struct {
	clk   *clock.Manual
	pipes []*pipe.Endpoint
	ports []*port.Port
	src   *port.Port
	in    *port.Port
	outs  []*port.Port
	sinks []*sink
	fw    *forwarder
}

func newChain(t *testing.T, cfg port.Config, fanout int) *chain {
	t.Helper()
	linktest.LeakCheck(t)
	c := &chain{clk: clock.NewManual(epoch)}
	cfg.Clock = c.clk
	open := func(ep *pipe.Endpoint, r port.Receiver) *port.Port {
		p, err := port.New(ep, cfg, r)
		if err != nil {
			t.Fatalf("port.New: %v", err)
		}
		t.Cleanup(func() { p.Close() })
		c.ports = append(c.ports, p)
		return p
	}
	fw := &forwarder{}
	c.fw = fw
	e1, e2 := pipe.NewPairWith(pipe.Options{QueueLen: 8192, NameA: "src", NameB: "in"})
	c.pipes = append(c.pipes, e1)
	c.src = open(e1, nil)
	c.in = open(e2, fw)
	for range fanout {
		e3, e4 := pipe.NewPairWith(pipe.Options{QueueLen: 8192, NameA: "out", NameB: "sink"})
		c.pipes = append(c.pipes, e3)
		out := open(e3, nil)
		s := &sink{}
		open(e4, s)
		c.outs = append(c.outs, out)
		c.sinks = append(c.sinks, s)
	}
	fw.outs = c.outs
	porttest.Settle(c.ports, c.pipes...)
	for _, p := range c.ports {
		for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
			if err := p.SetState(s); err != nil {
				t.Fatalf("%s: SetState(%v): %v", p.Name(), s, err)
			}
		}
	}
	return c
}

// run advances the clock from timer to timer until done.
func (c *chain) run(t *testing.T, done func() bool) {
	t.Helper()
	for range 1_000_000 {
		porttest.Settle(c.ports, c.pipes...)
		if done() {
			return
		}
		if !c.clk.AdvanceToNext() {
			t.Fatal("no timer pending and not done")
		}
	}
	t.Fatal("not done after a million timer steps")
}

// TestBackpressure stalls the last hop and watches the stall reach the
// source, hop by hop, with nothing dropped: the switch's input buffer
// stays taken while its packets wait for the output.
func TestBackpressure(t *testing.T) {
	const rxBlocks = 200
	c := newChain(t, port.Config{RxBlocks: rxBlocks}, 1)
	c.sinks[0].setHold(true)
	size := porttest.UDSize(1000)
	blocks := port.Blocks(size)
	fit := rxBlocks / blocks
	const n = 100
	for i := range n {
		send(t, c.src, porttest.UD(0, 1, 1000, byte(i)))
	}
	c.run(t, func() bool { return c.src.Credits(0).Available < blocks && c.outs[0].Credits(0).Available < blocks })

	if got := c.sinks[0].count(); got != fit {
		t.Errorf("sink received %d packets, want %d (its buffer)", got, fit)
	}
	if got := c.in.Credits(0).RxUsed; got != fit*blocks {
		t.Errorf("switch input holds %d blocks, want %d (full, waiting for the output)", got, fit*blocks)
	}
	if got, want := c.src.Credits(0).Queued, n-2*fit; got != want {
		t.Errorf("source still queues %d packets, want %d", got, want)
	}
	c.sinks[0].setHold(false)
	c.sinks[0].release(-1)
	c.run(t, func() bool { return c.sinks[0].count() == n })
	for i, a := range c.sinks[0].arrivals() {
		if a.seq != byte(i) {
			t.Fatalf("packet %d has seq %d: out of order", i, a.seq)
		}
	}
	noDrops(t, c.ports...)
}

// TestMulticastRelease sends each input packet out of three ports: the
// input's blocks come back only when the slowest output has sent it.
func TestMulticastRelease(t *testing.T) {
	c := newChain(t, port.Config{RxBlocks: 400}, 3)
	c.sinks[2].setHold(true)
	blocks := port.Blocks(porttest.UDSize(1000))
	for i := range 60 {
		send(t, c.src, porttest.UD(0, 0xc001, 1000, byte(i)))
	}
	c.run(t, func() bool { return c.src.Credits(0).Available < blocks })
	fit := 400 / blocks
	for i, s := range c.sinks[:2] {
		if got := s.count(); got != 2*fit {
			t.Errorf("sink %d received %d packets, want %d (held back by sink 2)", i, got, 2*fit)
		}
	}
	c.sinks[2].setHold(false)
	c.sinks[2].release(-1)
	c.run(t, func() bool { return c.sinks[2].count() == 60 })
	for i, s := range c.sinks {
		if got := s.count(); got != 60 {
			t.Errorf("sink %d received %d packets, want 60", i, got)
		}
	}
	if got := c.in.Credits(0).RxUsed; got != 0 {
		t.Errorf("switch input holds %d blocks after everything left, want 0", got)
	}
	if got := c.outs[0].CountersExtended().PortMulticastXmitPkts; got != 60 {
		t.Errorf("PortMulticastXmitPkts = %d, want 60", got)
	}
	noDrops(t, c.ports...)
}
