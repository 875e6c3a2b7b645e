package port_test

import (
	"sync/atomic"
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

func TestCarrierLoss(t *testing.T) {
	e := newEnv(t, port.Config{RxBlocks: 200}, nil)
	e.activate(t)
	e.rb.setHold(true)
	for i := range 20 {
		send(t, e.a, porttest.UD(0, 1, 2000, byte(i)))
	}
	blocks := port.Blocks(porttest.UDSize(2000))
	e.run(t, func() bool { return e.a.Credits(0).Available < blocks })
	queued := e.a.Credits(0).Queued

	e.ea.SetCarrier(false)
	e.settle() // no clock time passes: Down at once
	for _, p := range []*port.Port{e.a, e.b} {
		if got := p.State(); got != pollingDown {
			t.Errorf("%s: State() = %v after carrier loss, want %v", p.Name(), got, pollingDown)
		}
		if got := p.Counters().LinkDownedCounter; got != 1 {
			t.Errorf("%s: LinkDownedCounter = %d, want 1", p.Name(), got)
		}
	}
	if got := e.a.Drops()[port.DropLinkDown]; got != uint64(queued) || queued == 0 {
		t.Errorf("a Drops()[link down while queued] = %d, want %d (> 0)", got, queued)
	}
	for _, l := range []*stateLog{e.la, e.lb} {
		if got := l.states(); got[len(got)-1] != pollingDown {
			t.Errorf("last state change = %v, want %v", got[len(got)-1], pollingDown)
		}
	}
	e.rb.release(-1)

	// Carrier back: the ports train again.
	e.ea.SetCarrier(true)
	e.settle()
	for _, p := range []*port.Port{e.a, e.b} {
		if got := p.State(); got != linkUpInit {
			t.Errorf("%s: State() = %v after carrier returned, want %v", p.Name(), got, linkUpInit)
		}
	}
}

// TestSilentPeer trains a port from a peer that then falls silent, as a
// killed process does: the port goes Down exactly LivenessTimeout after
// the last link packet.
func TestSilentPeer(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
	}{
		{name: "default timeout"},
		{name: "short timeout", timeout: 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			linktest.LeakCheck(t)
			clk := clock.NewManual(epoch)
			ea, eb := pipe.NewPair()
			rec := linktest.NewRecorder(1024)
			eb.Attach(rec)
			t.Cleanup(func() { eb.Close() })
			log := &stateLog{}
			p, err := port.New(ea, port.Config{Clock: clk, LivenessTimeout: tt.timeout, OnStateChange: log.record}, nil)
			if err != nil {
				t.Fatalf("port.New: %v", err)
			}
			t.Cleanup(func() { p.Close() })
			timeout := p.Config().LivenessTimeout

			// The port asks for training at once: its training frame (a
			// 4X SDR port enables 1X and 4X, SDR), then flow control.
			ts := link.Training{Width: mad.LinkWidth1X | mad.LinkWidth4X, Speed: mad.LinkSpeedSDR}
			if got := rec.Expect(t); got.Kind != link.KindTraining || string(got.Data) != string(link.AppendTraining(nil, ts)) {
				t.Fatalf("first packet from a new port = %v %x, want the training frame of %+v", got.Kind, got.Data, ts)
			}
			if got := rec.Expect(t); got.Kind != link.KindLink || wire.FlowControl(got.Data).Op() != wire.FlowControlInit {
				t.Fatalf("second packet from a new port = %v %x, want a flow-control Init packet", got.Kind, got.Data)
			}
			if err := eb.WritePacket(link.KindTraining, link.AppendTraining(nil, ts)); err != nil {
				t.Fatalf("WritePacket(training): %v", err)
			}
			if err := eb.WritePacket(link.KindLink, porttest.FC(wire.FlowControlInit, 0, 0, 100)); err != nil {
				t.Fatalf("WritePacket(FC): %v", err)
			}
			porttest.Settle([]*port.Port{p}, ea)
			if got := p.State(); got != linkUpInit {
				t.Fatalf("State() = %v after the peer's FC packet, want %v", got, linkUpInit)
			}
			clk.Advance(timeout - time.Nanosecond)
			porttest.Settle([]*port.Port{p}, ea)
			if got := p.State(); got != linkUpInit {
				t.Fatalf("State() = %v just before the timeout, want %v", got, linkUpInit)
			}
			clk.Advance(time.Nanosecond)
			porttest.Settle([]*port.Port{p}, ea)
			if got := p.State(); got != pollingDown {
				t.Errorf("State() = %v at the timeout, want %v", got, pollingDown)
			}
			if got := p.Counters().LinkDownedCounter; got != 1 {
				t.Errorf("LinkDownedCounter = %d, want 1", got)
			}
			want := []port.State{linkUpInit, pollingDown}
			if got := log.states(); !equalStates(got, want) {
				t.Errorf("state changes = %v, want %v", got, want)
			}
		})
	}
}

// TestLivePeer keeps a pair up over many timeouts: keepalives suffice.
func TestLivePeer(t *testing.T) {
	e := newEnv(t, port.Config{}, nil)
	e.activate(t)
	for range 100 {
		e.clk.Advance(10 * time.Millisecond)
		e.settle()
	}
	for _, p := range []*port.Port{e.a, e.b} {
		if got := p.State(); got != linkUpActive {
			t.Errorf("%s: State() = %v after 1 s, want %v", p.Name(), got, linkUpActive)
		}
		// 1 s at a 50 ms keepalive, one VL each: about 20 flow-control
		// packets beyond those of training (all 8 VLs, twice at most).
		if lc := p.LinkCounters(); lc.FCSent < 20 || lc.FCSent > 40 {
			t.Errorf("%s: FCSent = %d in 1 s, want about 20", p.Name(), lc.FCSent)
		}
	}
}

func TestDisable(t *testing.T) {
	e := newEnv(t, port.Config{}, nil)
	e.activate(t)
	if err := e.a.SetPhysState(mad.PhysStateDisabled); err != nil {
		t.Fatalf("SetPhysState(Disabled): %v", err)
	}
	if got := e.a.State(); got != disabledDown {
		t.Errorf("a.State() = %v, want %v", got, disabledDown)
	}
	// The peer hears nothing more and times out.
	e.clk.Advance(e.b.Config().LivenessTimeout)
	e.settle()
	if got := e.b.State(); got != pollingDown {
		t.Errorf("b.State() = %v after the timeout, want %v", got, pollingDown)
	}
	if err := e.a.SetPhysState(mad.PhysStatePolling); err != nil {
		t.Fatalf("SetPhysState(Polling): %v", err)
	}
	e.settle()
	for _, p := range []*port.Port{e.a, e.b} {
		if got := p.State(); got != linkUpInit {
			t.Errorf("%s: State() = %v after re-enabling, want %v", p.Name(), got, linkUpInit)
		}
	}
	if err := e.a.SetPhysState(mad.PhysStateSleep); err == nil {
		t.Error("SetPhysState(Sleep) = nil, want an error")
	}
}

// TestStartStop opens and closes ports in various states: no goroutine
// may outlive Close, and Close must not hang on queued or held packets.
func TestStartStop(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, e *env)
	}{
		{name: "fresh", run: func(t *testing.T, e *env) {}},
		{name: "trained", run: func(t *testing.T, e *env) { e.settle() }},
		{name: "queued and held", run: func(t *testing.T, e *env) {
			e.activate(t)
			e.rb.setHold(true)
			for i := range 100 {
				send(t, e.a, porttest.UD(0, 1, 2000, byte(i)))
			}
			e.settle()
		}},
		{name: "closed twice", run: func(t *testing.T, e *env) {
			e.settle()
			e.a.Close()
			if err := e.a.Send(port.NewPacket(porttest.SMP(1, 0))); err == nil {
				t.Error("Send after Close = nil, want an error")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, port.Config{}, nil)
			tt.run(t, e)
			e.a.Close()
			e.b.Close()
			e.rb.release(-1)
		})
	}
}

// muted is an endpoint whose link packets can be silenced: a peer that
// hangs, whose carrier stays up.
type muted struct {
	link.Endpoint
	on *atomic.Bool
}

func (m muted) WritePacket(k link.Kind, pkt []byte) error {
	if k == link.KindLink && m.on.Load() {
		return nil
	}
	return m.Endpoint.WritePacket(k, pkt)
}

// TestQuietEnd: a sends its keepalives on the grid of the epoch, b
// (KeepaliveAnswers) sends none of its own but answers each at once; when
// a falls silent b asks after half the liveness timeout, and goes Down at
// the timeout.
func TestQuietEnd(t *testing.T) {
	const iv = 10 * time.Millisecond
	grid := epoch.Add(3 * time.Millisecond)
	var mute atomic.Bool
	e := newEnvOver(t, port.Config{LivenessTimeout: 3 * iv, KeepaliveInterval: iv, KeepaliveEpoch: grid},
		func(c *port.Config) { c.KeepaliveAnswers = true },
		func(ep link.Endpoint) link.Endpoint { return muted{ep, &mute} })
	e.activate(t)
	sent := func() (a, b uint64) { return e.a.LinkCounters().FCSent, e.b.LinkCounters().FCSent }
	// step moves the clock by d and lets the pair work.
	step := func(d time.Duration) {
		e.clk.Advance(d)
		e.settle()
	}
	// Past the first grid point, in steps that let each packet arrive
	// when sent: b, just trained, owes no answer there.
	for range 10 {
		step(iv / 10)
	}
	for k := range 5 {
		// Up to just before the next grid point nothing is sent; at it, a
		// sends one and b answers it.
		since := e.clk.Now().Sub(grid) % iv
		step(iv - since - time.Microsecond)
		a0, b0 := sent()
		step(time.Microsecond)
		step(time.Microsecond) // the packet's time on the wire
		a1, b1 := sent()
		if a1-a0 != 1 || b1-b0 != 1 {
			t.Fatalf("grid point %d (%v after the epoch): a sent %d, b %d flow-control packets; want 1 and 1 (%+v)",
				k, e.clk.Now().Sub(grid), a1-a0, b1-b0, e.b.LinkCounters())
		}
	}

	mute.Store(true)     // a hangs
	heard := e.clk.Now() // a's last packet came a microsecond or two ago
	_, b0 := sent()
	step(3*iv/2 - 10*time.Microsecond)
	if _, b := sent(); b != b0 {
		t.Errorf("b sent %d flow-control packets before its peer was silent for half the timeout", b-b0)
	}
	step(20 * time.Microsecond)
	if _, b := sent(); b != b0+1 {
		t.Errorf("b sent %d flow-control packets once its peer was silent for half the timeout, want 1 (its probe)", b-b0)
	}
	step(heard.Add(3*iv).Sub(e.clk.Now()) - 10*time.Microsecond)
	if got := e.b.State(); got != linkUpActive {
		t.Errorf("b: State() = %v just before the liveness timeout, want %v", got, linkUpActive)
	}
	step(20 * time.Microsecond)
	if got := e.b.State(); got != pollingDown {
		t.Errorf("b: State() = %v at the liveness timeout, want %v", got, pollingDown)
	}
}

// TestBusyLinkNoKeepalive: a port that has just sent a flow-control
// packet (here a credit update for a packet it received) skips the
// keepalive at the next grid point: only idle links wake there.
func TestBusyLinkNoKeepalive(t *testing.T) {
	const iv = 10 * time.Millisecond
	e := newEnv(t, port.Config{LivenessTimeout: 3 * iv, KeepaliveInterval: iv, KeepaliveEpoch: epoch, CreditSlack: 1}, nil)
	e.activate(t)
	for range 28 { // to 2.8 intervals: past two grid points
		e.clk.Advance(iv / 10)
		e.settle()
	}
	a0 := e.a.LinkCounters().FCSent
	send(t, e.b, porttest.UD(0, 1, 100, 0)) // a returns its credit at once
	e.run(t, func() bool { return e.a.LinkCounters().FCSent > a0 })
	a1 := e.a.LinkCounters().FCSent
	for range 10 { // past the grid point at 3 intervals, a fifth of one later
		e.clk.Advance(iv / 20)
		e.settle()
	}
	if got := e.a.LinkCounters().FCSent - a1; got != 0 {
		t.Errorf("a sent %d flow-control packets at the grid point a fifth of an interval after its credit update, want 0", got)
	}
	for range 20 { // past the next grid point: the link is idle again
		e.clk.Advance(iv / 20)
		e.settle()
	}
	if got := e.a.LinkCounters().FCSent - a1; got != 1 {
		t.Errorf("a sent %d flow-control packets at the next grid point, want its keepalive", got)
	}
}
