package port_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"ibfab/internal/clock"
	"ibfab/link"
	"ibfab/link/linktest"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// epoch is where manual clocks start.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// sink is a Receiver that records what arrives and either releases each
// packet at once or holds it until the test calls release.
type sink struct {
	mu   sync.Mutex
	hold bool
	got  []arrival
	held []*port.Packet
}

// arrival is what a sink remembers of a packet.
type arrival struct {
	vl   uint8
	n    int
	seq  byte // first payload byte
	at   time.Time
	lvl  uint8 // LRH VL
	dlid uint16
}

var _ port.Receiver = (*sink)(nil)

func (s *sink) Receive(_ *port.Port, pkt *port.Packet) {
	lrh := wire.LRH(pkt.Bytes)
	a := arrival{vl: pkt.VL(), n: len(pkt.Bytes), at: pkt.Arrival(), lvl: lrh.VL(), dlid: lrh.DLID()}
	if off := wire.UDHeaderSize(false); len(pkt.Bytes) > off {
		a.seq = pkt.Bytes[off]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, a)
	if s.hold {
		s.held = append(s.held, pkt)
		return
	}
	pkt.Release()
}

// arrivals returns a copy of what arrived so far.
func (s *sink) arrivals() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]arrival(nil), s.got...)
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// release releases up to n held packets (all with n < 0) and stops
// holding when all is.
func (s *sink) release(n int) {
	s.mu.Lock()
	if n < 0 || n > len(s.held) {
		n = len(s.held)
	}
	rel := s.held[:n:n]
	s.held = s.held[n:]
	s.mu.Unlock()
	for _, pkt := range rel {
		pkt.Release()
	}
}

// setHold switches holding on or off.
func (s *sink) setHold(h bool) {
	s.mu.Lock()
	s.hold = h
	s.mu.Unlock()
}

// stateLog records a port's state changes.
type stateLog struct {
	mu  sync.Mutex
	evs []port.State // the "to" of each change
}

func (l *stateLog) record(_ *port.Port, from, to port.State) {
	l.mu.Lock()
	l.evs = append(l.evs, to)
	l.mu.Unlock()
}

func (l *stateLog) states() []port.State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]port.State(nil), l.evs...)
}

// env is two ports, a and b, joined by a pipe, on one manual clock.
type env struct {
	clk    *clock.Manual
	ea, eb *pipe.Endpoint
	a, b   *port.Port
	ra, rb *sink
	la, lb *stateLog
}

// newEnv returns a pair of ports with config cfg (b's modified by cfgB if
// set) on a manual clock, closed at cleanup, with a goroutine leak check.
func newEnv(t *testing.T, cfg port.Config, cfgB func(*port.Config)) *env {
	t.Helper()
	return newEnvOver(t, cfg, cfgB, func(ep link.Endpoint) link.Endpoint { return ep })
}

// darkless is an endpoint that cannot turn its transmitter off: the
// embedded interface hides the pipe's SetTransmitter.
type darkless struct{ link.Endpoint }

// newEnvOver is newEnv with each port's endpoint wrapped by wrap.
func newEnvOver(t *testing.T, cfg port.Config, cfgB func(*port.Config), wrap func(link.Endpoint) link.Endpoint) *env {
	t.Helper()
	linktest.LeakCheck(t)
	e, err := buildEnv(cfg, cfgB, wrap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return e
}

// buildEnv makes the pair of newEnvOver; the caller closes it.
func buildEnv(cfg port.Config, cfgB func(*port.Config), wrap func(link.Endpoint) link.Endpoint) (*env, error) {
	e := &env{clk: clock.NewManual(epoch), ra: &sink{}, rb: &sink{}, la: &stateLog{}, lb: &stateLog{}}
	e.ea, e.eb = pipe.NewPairWith(pipe.Options{QueueLen: 8192, NameA: "a", NameB: "b"})
	cfg.Clock = e.clk
	ca, cb := cfg, cfg
	if cfgB != nil {
		cfgB(&cb)
	}
	ca.OnStateChange, cb.OnStateChange = e.la.record, e.lb.record
	var err error
	if e.a, err = port.New(wrap(e.ea), ca, e.ra); err != nil {
		return nil, fmt.Errorf("port.New(a): %w", err)
	}
	if e.b, err = port.New(wrap(e.eb), cb, e.rb); err != nil {
		e.a.Close()
		return nil, fmt.Errorf("port.New(b): %w", err)
	}
	return e, nil
}

// close closes both ports.
func (e *env) close() {
	e.a.Close()
	e.b.Close()
}

// settle waits until the pair is quiet.
func (e *env) settle() { porttest.Settle([]*port.Port{e.a, e.b}, e.ea) }

// run lets the pair work, advancing the clock from timer to timer
// whenever it is quiet, until done reports true; it fails t if the clock
// runs out of timers or done takes implausibly many steps.
func (e *env) run(t *testing.T, done func() bool) {
	t.Helper()
	for range 1_000_000 {
		e.settle()
		if done() {
			return
		}
		if !e.clk.AdvanceToNext() {
			t.Fatal("no timer pending and not done")
		}
	}
	t.Fatal("not done after a million timer steps")
}

// activate trains the pair and takes both ports Active.
func (e *env) activate(t testing.TB) {
	t.Helper()
	e.settle()
	for _, p := range []*port.Port{e.a, e.b} {
		if got, want := p.State(), (port.State{Phys: mad.PhysStateLinkUp, Port: mad.PortStateInit}); got != want {
			t.Fatalf("%s: State() = %v after training, want %v", p.Name(), got, want)
		}
		for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
			if err := p.SetState(s); err != nil {
				t.Fatalf("%s: SetState(%v): %v", p.Name(), s, err)
			}
		}
	}
	e.settle()
}

// send sends a copy of b from p, failing t on error.
func send(t *testing.T, p *port.Port, b []byte) {
	t.Helper()
	if err := p.Send(port.NewPacket(b)); err != nil {
		t.Fatalf("%s: Send(%d bytes): %v", p.Name(), len(b), err)
	}
}

// noDrops fails t if any port dropped anything.
func noDrops(t *testing.T, ps ...*port.Port) {
	t.Helper()
	for _, p := range ps {
		if d := p.Drops(); d.Total() != 0 {
			t.Errorf("%s: Drops() = %v, want none", p.Name(), d.Map())
		}
	}
}
