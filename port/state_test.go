package port_test

import (
	"errors"
	"testing"
	"time"

	"ibfab/link"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

var (
	linkUpInit   = port.State{Phys: mad.PhysStateLinkUp, Port: mad.PortStateInit}
	linkUpArmed  = port.State{Phys: mad.PhysStateLinkUp, Port: mad.PortStateArmed}
	linkUpActive = port.State{Phys: mad.PhysStateLinkUp, Port: mad.PortStateActive}
	pollingDown  = port.State{Phys: mad.PhysStatePolling, Port: mad.PortStateDown}
	disabledDown = port.State{Phys: mad.PhysStateDisabled, Port: mad.PortStateDown}
)

func TestTrainAndExchange(t *testing.T) {
	e := newEnv(t, port.Config{RxBlocks: 3000}, nil)
	e.settle()
	for _, p := range []*port.Port{e.a, e.b} {
		if got := p.State(); got != linkUpInit {
			t.Errorf("%s: State() = %v, want %v", p.Name(), got, linkUpInit)
		}
		if lc := p.LinkCounters(); lc.FCInitReceived == 0 {
			t.Errorf("%s: LinkCounters() = %+v, want Init flow-control packets received", p.Name(), lc)
		}
		// 3000 free blocks, of which 2048 may be advertised.
		if c := p.Credits(0); c.FCCL != 2048 || c.Available != 2048 || c.FCTBS != 0 {
			t.Errorf("%s: Credits(0) = %+v, want FCCL 2048, 2048 available", p.Name(), c)
		}
	}
	for _, l := range []*stateLog{e.la, e.lb} {
		if got := l.states(); len(got) != 1 || got[0] != linkUpInit {
			t.Errorf("state changes = %v, want [%v]", got, linkUpInit)
		}
	}

	// In Init, SMPs pass both ways.
	send(t, e.a, porttest.SMP(1, 1))
	send(t, e.b, porttest.SMP(2, 2))
	e.settle()
	if e.ra.count() != 1 || e.rb.count() != 1 {
		t.Fatalf("SMPs received in Init: a %d, b %d, want 1 each", e.ra.count(), e.rb.count())
	}

	e.activate(t)
	const n = 50
	for i := range n {
		send(t, e.a, porttest.UD(uint8(i%4), 7, 200, byte(i)))
		send(t, e.b, porttest.UD(0, 8, 1000, byte(i)))
	}
	e.run(t, func() bool { return e.rb.count() == n+1 && e.ra.count() == n+1 })
	got := e.rb.arrivals()[1:]
	// Arbitration interleaves the VLs; each VL keeps its order.
	next := map[uint8]int{0: 0, 1: 1, 2: 2, 3: 3}
	for i, a := range got {
		if a.seq != byte(next[a.vl]) || a.dlid != 7 || a.lvl != a.vl {
			t.Errorf("b packet %d: VL %d (LRH %d) seq %d DLID %d, want seq %d DLID 7", i, a.vl, a.lvl, a.seq, a.dlid, next[a.vl])
		}
		next[a.vl] += 4
	}
	if e.ra.count() != n+1 {
		t.Errorf("a received %d packets, want %d", e.ra.count(), n+1)
	}
	size := uint64(porttest.UDSize(200))
	ca, cb := e.a.Counters(), e.b.Counters()
	if ca.PortXmitPkts != n+1 || cb.PortRcvPkts != n+1 {
		t.Errorf("a PortXmitPkts %d, b PortRcvPkts %d, want %d", ca.PortXmitPkts, cb.PortRcvPkts, n+1)
	}
	smp := uint64(porttest.UDSize(256))
	if want := uint32((n*size + smp) / 4); ca.PortXmitData != want || cb.PortRcvData != want {
		t.Errorf("a PortXmitData %d, b PortRcvData %d, want %d words", ca.PortXmitData, cb.PortRcvData, want)
	}
	if ext := e.a.CountersExtended(); ext.PortXmitPkts != n+1 || ext.PortUnicastXmitPkts != n+1 {
		t.Errorf("a CountersExtended() = %+v, want %d packets, all unicast", ext, n+1)
	}
	noDrops(t, e.a, e.b)
}

func TestSetState(t *testing.T) {
	tests := []struct {
		name    string
		steps   []mad.PortState
		want    port.State
		wantErr bool // of the last step
	}{
		{name: "init to armed", steps: []mad.PortState{mad.PortStateArmed}, want: linkUpArmed},
		{name: "armed to active", steps: []mad.PortState{mad.PortStateArmed, mad.PortStateActive}, want: linkUpActive},
		{name: "init to active", steps: []mad.PortState{mad.PortStateActive}, want: linkUpInit, wantErr: true},
		{name: "set init", steps: []mad.PortState{mad.PortStateArmed, mad.PortStateInit}, want: linkUpArmed, wantErr: true},
		{name: "no change", steps: []mad.PortState{mad.PortStateNoChange}, want: linkUpInit},
		{name: "active to armed", steps: []mad.PortState{mad.PortStateArmed, mad.PortStateActive, mad.PortStateArmed}, want: linkUpActive, wantErr: true},
		{name: "down retrains", steps: []mad.PortState{mad.PortStateArmed, mad.PortStateActive, mad.PortStateDown}, want: pollingDown},
		{name: "reserved", steps: []mad.PortState{7}, want: linkUpInit, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, port.Config{}, nil)
			e.settle()
			var err error
			for _, s := range tt.steps {
				err = e.a.SetState(s)
			}
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, port.ErrTransition)) {
				t.Errorf("SetState(%v) = %v, want error %v", tt.steps[len(tt.steps)-1], err, tt.wantErr)
			}
			if got := e.a.State(); got != tt.want {
				t.Errorf("State() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSetStateDownDropsQueued(t *testing.T) {
	e := newEnv(t, port.Config{}, nil)
	e.activate(t)
	e.rb.setHold(true)
	// Fill b's VL0 buffer so that a's packets stay queued.
	for i := range 100 {
		send(t, e.a, porttest.UD(0, 1, 2000, byte(i)))
	}
	blocks := port.Blocks(porttest.UDSize(2000))
	e.run(t, func() bool { return e.a.Credits(0).Available < blocks })
	queued := e.a.Credits(0).Queued
	if queued == 0 {
		t.Fatal("nothing queued behind the full buffer")
	}
	if err := e.a.SetState(mad.PortStateDown); err != nil {
		t.Fatalf("SetState(Down): %v", err)
	}
	if got := e.a.Drops()[port.DropLinkDown]; got != uint64(queued) {
		t.Errorf("Drops()[link down while queued] = %d, want %d", got, queued)
	}
	if got := e.a.Counters().PortXmitDiscards; got != uint16(queued) {
		t.Errorf("PortXmitDiscards = %d, want %d", got, queued)
	}
	want := []port.State{linkUpInit, linkUpArmed, linkUpActive, pollingDown}
	if got := e.la.states(); !equalStates(got, want) {
		t.Errorf("state changes = %v, want %v", got, want)
	}
	// The SM took the port down, the link did not fail: no LinkDowned.
	if got := e.a.Counters().LinkDownedCounter; got != 0 {
		t.Errorf("LinkDownedCounter = %d, want 0", got)
	}
	e.rb.release(-1)
}

func TestStateGating(t *testing.T) {
	tests := []struct {
		name      string
		a, b      []mad.PortState // Sets applied after training
		vl        uint8
		wantErr   error // of a.Send
		wantRcv   int   // packets b receives
		wantDropB port.DropCause
		wantB     port.State
	}{
		{name: "data from init", vl: 0, wantErr: port.ErrNotActive, wantB: linkUpInit},
		{name: "smp from init", vl: port.VL15, wantRcv: 1, wantB: linkUpInit},
		{name: "data from armed", a: []mad.PortState{mad.PortStateArmed}, vl: 0, wantErr: port.ErrNotActive, wantB: linkUpInit},
		{name: "data to init", a: []mad.PortState{mad.PortStateArmed, mad.PortStateActive}, vl: 0,
			wantDropB: port.DropNotActive, wantB: linkUpInit},
		{name: "data to armed activates", a: []mad.PortState{mad.PortStateArmed, mad.PortStateActive},
			b: []mad.PortState{mad.PortStateArmed}, vl: 1, wantRcv: 1, wantB: linkUpActive},
		{name: "vl not operational", a: []mad.PortState{mad.PortStateArmed, mad.PortStateActive}, vl: 9,
			wantErr: port.ErrVL, wantB: linkUpInit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, port.Config{}, nil)
			e.settle()
			for _, s := range tt.a {
				if err := e.a.SetState(s); err != nil {
					t.Fatalf("a.SetState(%v): %v", s, err)
				}
			}
			for _, s := range tt.b {
				if err := e.b.SetState(s); err != nil {
					t.Fatalf("b.SetState(%v): %v", s, err)
				}
			}
			err := e.a.Send(port.NewPacket(porttest.UD(tt.vl, 1, 100, 0)))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("a.Send(VL%d) = %v, want %v", tt.vl, err, tt.wantErr)
			}
			e.settle()
			if got := e.rb.count(); got != tt.wantRcv {
				t.Errorf("b received %d packets, want %d", got, tt.wantRcv)
			}
			if got := e.b.State(); got != tt.wantB {
				t.Errorf("b.State() = %v, want %v", got, tt.wantB)
			}
			if tt.wantRcv == 0 && tt.wantErr == nil {
				if got := e.b.Drops()[tt.wantDropB]; got != 1 {
					t.Errorf("b.Drops()[%v] = %d, want 1", tt.wantDropB, got)
				}
			}
			if tt.wantErr != nil {
				if got := e.a.Counters().PortXmitDiscards; got != 1 {
					t.Errorf("a PortXmitDiscards = %d, want 1", got)
				}
			}
		})
	}
}

func equalStates(a, b []port.State) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDiscardedDataKeepsCredits: a port the SM sets Down whose endpoint
// cannot go dark comes back in Init with its link up, so its peer stays Active and keeps sending data,
// which the port discards. The peer counts those blocks as sent; unless the
// port counts them as received, the credit they took never comes back
// before the peer's next flow-control packet for the VL (a keepalive, which
// this test never lets fire), and the link stays blocked once the port is
// Active again.
func TestDiscardedDataKeepsCredits(t *testing.T) {
	e := newEnvOver(t, port.Config{RxBlocks: 100}, nil, func(ep link.Endpoint) link.Endpoint { return darkless{ep} })
	e.activate(t)
	if err := e.b.SetState(mad.PortStateDown); err != nil {
		t.Fatalf("b.SetState(Down): %v", err)
	}
	e.settle()
	if got := e.b.State(); got != linkUpInit {
		t.Fatalf("b.State() = %v after Set Down, want %v", got, linkUpInit)
	}
	// Three buffers' worth: without the credit coming back, a stalls
	// after the first.
	const n = 60
	size := porttest.UDSize(300)
	for i := range n {
		send(t, e.a, porttest.UD(0, 1, 300, byte(i)))
	}
	e.settle()
	if got := e.b.Drops()[port.DropNotActive]; got != n {
		t.Errorf("b.Drops()[not active] = %d, want %d (a's queue holds %d)", got, n, e.a.Credits(0).Queued)
	}
	ca, cb := e.a.Credits(0), e.b.Credits(0)
	if want := uint16(n * port.Blocks(size) % 4096); ca.FCTBS != want || cb.ABR != want {
		t.Errorf("a FCTBS %d, b ABR %d, want both %d", ca.FCTBS, cb.ABR, want)
	}
	for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		if err := e.b.SetState(s); err != nil {
			t.Fatalf("b.SetState(%v): %v", s, err)
		}
	}
	for i := range 5 {
		send(t, e.a, porttest.UD(0, 1, 300, byte(100+i)))
	}
	e.settle()
	if got := e.rb.count(); got != 5 {
		t.Errorf("b received %d packets once Active again, want 5 (a credit %+v)", got, e.a.Credits(0))
	}
}

// TestStateSetReachesPeer: what the SM does to one end of a link, the
// other end sees at once, as on silicon, where the peer loses the signal:
// Set Down and a reset (Polling) retrain both ends, back in Init after the
// transmitter's dark period; Disabled keeps the peer Down until the port
// is enabled (Polling) again.
func TestStateSetReachesPeer(t *testing.T) {
	tests := []struct {
		name    string
		set     func(p *port.Port) error
		wantA   port.State // right after the Set
		enable  bool       // the link comes back only after SetPhysState(Polling)
		retrain bool       // the link comes back by itself after RetrainDelay
	}{
		{name: "Set Down", set: func(p *port.Port) error { return p.SetState(mad.PortStateDown) }, wantA: pollingDown, retrain: true},
		{name: "reset", set: func(p *port.Port) error { return p.SetPhysState(mad.PhysStatePolling) }, wantA: pollingDown, retrain: true},
		{name: "disable", set: func(p *port.Port) error { return p.SetPhysState(mad.PhysStateDisabled) }, wantA: disabledDown, enable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, port.Config{}, nil)
			e.activate(t)
			if err := tt.set(e.a); err != nil {
				t.Fatalf("Set: %v", err)
			}
			e.settle()
			if got := e.a.State(); got != tt.wantA {
				t.Errorf("a.State() = %v after the Set, want %v", got, tt.wantA)
			}
			// VL15 may still leave for DrainTime (the SMA's answer), then
			// the transmitter goes dark and the peer loses the carrier.
			if err := e.a.Send(port.NewPacket(porttest.UD(port.VL15, 1, 100, 0))); err != nil {
				t.Errorf("a.Send(VL15) while draining: %v", err)
			}
			e.settle()
			if got := e.rb.count(); got != 1 {
				t.Errorf("b received %d packets, want the SMP sent while draining", got)
			}
			e.clk.Advance(port.DefaultDrainTime)
			e.settle() // the peer learns from the carrier, no timeout
			if got := e.b.State(); got != pollingDown {
				t.Errorf("b.State() = %v after the Set, want %v at once", got, pollingDown)
			}
			if got := e.b.Counters().LinkDownedCounter; got != 1 {
				t.Errorf("b LinkDownedCounter = %d, want 1", got)
			}
			e.clk.Advance(port.DefaultRetrainDelay)
			e.settle()
			if tt.enable {
				e.clk.Advance(time.Second)
				e.settle()
				if got := e.b.State(); got != pollingDown {
					t.Errorf("b.State() = %v with a Disabled, want %v", got, pollingDown)
				}
				if err := e.a.SetPhysState(mad.PhysStatePolling); err != nil {
					t.Fatalf("enable: %v", err)
				}
				e.settle()
			}
			for _, p := range []*port.Port{e.a, e.b} {
				if got := p.State(); got != linkUpInit {
					t.Errorf("%s: State() = %v after retraining, want %v", p.Name(), got, linkUpInit)
				}
			}
		})
	}
}
