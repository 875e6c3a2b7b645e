package peerwatch_test

import (
	"errors"
	"os/exec"
	"testing"

	"ibfab/link"
	"ibfab/link/linktest"
	"ibfab/link/peerwatch"
	"ibfab/link/pipe"
)

// TestConformance: a wrapped pair with no watch is a plain link.
func TestConformance(t *testing.T) {
	linktest.Run(t, func(t *testing.T) linktest.Pair {
		a, b := pipe.NewPair()
		pa, pb := peerwatch.New(a), peerwatch.New(b)
		t.Cleanup(func() { pa.Close(); pb.Close() })
		return linktest.Pair{A: pa, B: pb, SetCarrier: a.SetCarrier}
	})
}

// startPeer starts a stand-in peer process and returns it; cleanup kills it.
func startPeer(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// TestPeerDeath: the peer process's death is loss of signal, at once and
// without traffic; watching its replacement brings the carrier back.
func TestPeerDeath(t *testing.T) {
	linktest.LeakCheck(t)
	a, b := pipe.NewPair()
	e := peerwatch.New(a)
	defer b.Close()
	defer e.Close()
	r := linktest.NewRecorder(16)
	e.Attach(r)

	peer := startPeer(t)
	if err := e.Watch(peer.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if !e.Carrier() {
		t.Fatal("Carrier() = false with the peer alive")
	}
	peer.Process.Kill()
	peer.Wait()
	r.ExpectCarrier(t, false)
	if e.Carrier() || !e.PeerDead() {
		t.Errorf("Carrier() = %v, PeerDead() = %v after the peer died", e.Carrier(), e.PeerDead())
	}
	if err := e.WritePacket(link.KindLink, make([]byte, 6)); !errors.Is(err, link.ErrNoCarrier) {
		t.Errorf("WritePacket to a dead peer = %v, want ErrNoCarrier", err)
	}

	// The medium's own carrier still counts: down and up while dead stays
	// down.
	a.SetCarrier(false)
	a.SetCarrier(true)

	next := startPeer(t)
	if err := e.Watch(next.Process.Pid); err != nil {
		t.Fatal(err)
	}
	r.ExpectCarrier(t, true)
	if err := e.WritePacket(link.KindLink, make([]byte, 6)); err != nil {
		t.Errorf("WritePacket after a new peer = %v", err)
	}

	// Watching the same process again reports nothing.
	if err := e.Watch(next.Process.Pid); err != nil {
		t.Fatal(err)
	}
	// Another process replacing a live one is a new peer: the carrier
	// drops and comes back, so the link trains afresh. The replaced
	// process's later death is not reported.
	third := startPeer(t)
	if err := e.Watch(third.Process.Pid); err != nil {
		t.Fatal(err)
	}
	r.ExpectCarrier(t, false)
	r.ExpectCarrier(t, true)
	next.Process.Kill()
	next.Wait()
	if !e.Carrier() {
		t.Error("the death of a peer no longer watched took the carrier down")
	}
}

func TestWatchGonePID(t *testing.T) {
	a, b := pipe.NewPair()
	e := peerwatch.New(a)
	defer b.Close()
	defer e.Close()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if err := e.Watch(c.Process.Pid); err == nil {
		t.Error("Watch of a reaped PID succeeded")
	}
	if e.Carrier() {
		t.Error("Carrier() = true watching a PID that is gone")
	}
}
