package softswitch_test

import (
	"errors"
	"net"
	"testing"

	"ibfab/link"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/softswitch"
	"ibfab/wire/mad"
)

// TestAddPort cables a free port of a running, configured switch: the new
// port trains to Init with its peer, the switch sets PortStateChange and
// sends the SM a Trap 128, and the SM can then make the port Active.
// Ports that exist or are cabled are refused, and the endpoint is closed.
func TestAddPort(t *testing.T) {
	f := newFabric(t, line(t), port.Config{})
	f.configure(t, true)
	sm := f.ca["ca1"]
	isTrap := func(m mad.MAD) bool { return m.Method() == mad.MethodTrap && m.AttrID() == mad.AttrNotice }
	// Clear what the links' own training raised.
	f.run(t, func() bool { return len(sm.take(isTrap)) > 0 })
	si := mad.SwitchInfo(f.dr(t, mad.MethodGet, mad.AttrSwitchInfo, 0, nil, toSW2...)).Fields()
	si.PortStateChange = true // writing 1 clears it
	f.dr(t, mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &si), toSW2...)
	f.settle()
	sm.take(isTrap)

	sw := f.sw["sw2"]
	mine, theirs := pipe.NewPairWith(pipe.Options{QueueLen: 8192, NameA: "sw2/3", NameB: "new/1"})
	peer, err := port.New(theirs, port.Config{Clock: f.clk}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	if err := sw.AddPort(3, mine, mad.LinkWidth4X, mad.LinkSpeedSDR); err != nil {
		t.Fatal(err)
	}
	f.extra = append(f.extra, mine)
	f.ports = append(f.ports, sw.Port(3), peer)
	f.run(t, func() bool { return sw.Port(3).State().Port == mad.PortStateInit })
	if st := peer.State(); st.Port != mad.PortStateInit {
		t.Errorf("peer: %v, want Init", st)
	}
	if !mad.SwitchInfo(f.dr(t, mad.MethodGet, mad.AttrSwitchInfo, 0, nil, toSW2...)).PortStateChange() {
		t.Error("sw2's SwitchInfo.PortStateChange not set after a port was added")
	}
	var traps int
	f.run(t, func() bool {
		for _, o := range sm.take(isTrap) {
			if n, err := mad.DecodeNotice(mad.SMP(o.MAD).Data()); err == nil && n.IssuerLID == lidSW2 && n.TrapNumber == mad.TrapLinkStateChange {
				traps++
			}
		}
		return traps > 0
	})
	pi := mad.PortInfo(f.dr(t, mad.MethodGet, mad.AttrPortInfo, 3, nil, toSW2...)).Fields()
	if pi.PortState != mad.PortStateInit || pi.PortPhysicalState != mad.PhysStateLinkUp {
		t.Errorf("sw2 PortInfo 3: %v/%v, want Init/LinkUp", pi.PortState, pi.PortPhysicalState)
	}
	f.setState(t, 3, mad.PortStateArmed, toSW2...)
	f.setState(t, 3, mad.PortStateActive, toSW2...)
	if st := sw.Port(3).State(); st.Port != mad.PortStateActive {
		t.Errorf("sw2 port 3 after the SM's Sets: %v, want Active", st)
	}

	for _, tc := range []struct {
		name  string
		port  uint8
		inUse bool
	}{
		{name: "cabled at start", port: 1, inUse: true},
		{name: "added before", port: 3, inUse: true},
		{name: "management port", port: 0},
		{name: "beyond the last", port: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pipe.NewPair()
			defer b.Close()
			err := sw.AddPort(tc.port, a, mad.LinkWidth4X, mad.LinkSpeedSDR)
			if err == nil {
				t.Fatalf("AddPort(%d) succeeded", tc.port)
			}
			if got := errors.Is(err, softswitch.ErrPortInUse); got != tc.inUse {
				t.Errorf("AddPort(%d): %v; ErrPortInUse %v, want %v", tc.port, err, got, tc.inUse)
			}
			if err := a.WritePacket(link.KindLink, make([]byte, 6)); !errors.Is(err, net.ErrClosed) {
				t.Errorf("AddPort(%d) failed but left its endpoint open: write: %v", tc.port, err)
			}
		})
	}

	// A closed switch takes no new port (Close may run again at cleanup).
	sw.Close()
	a, b := pipe.NewPair()
	defer b.Close()
	if err := sw.AddPort(4, a, mad.LinkWidth4X, mad.LinkSpeedSDR); err == nil {
		t.Error("AddPort on a closed switch succeeded")
	}
	if sw.Port(4) != nil {
		t.Error("a closed switch has a port 4")
	}
}
