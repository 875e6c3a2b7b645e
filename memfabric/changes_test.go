package memfabric_test

import (
	"testing"

	"ibfab/agent"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

func TestPowerOffOn(t *testing.T) {
	f := newFabric(t, topologies.Thesis8())
	sw2, _ := f.Lookup("sw2")
	sw1, _ := f.Lookup("sw1")
	ca7, _ := f.Lookup("ca7")
	if err := f.PowerOff(sw2.Index); err != nil {
		t.Fatal(err)
	}
	if f.IsOn(sw2.Index) {
		t.Fatal("sw2 still on")
	}
	if err := f.PowerOff(sw2.Index); err == nil {
		t.Error("PowerOff twice: no error")
	}
	for _, end := range []struct {
		n    string
		port uint8
	}{{"sw1", 1}, {"sw5", 2}, {"sw6", 1}, {"ca7", 1}, {"sw2", 3}} {
		n, _ := f.Lookup(end.n)
		if ls := n.Ports.Link(end.port); ls.State != mad.PortStateDown || ls.Phys == mad.PhysStateLinkUp {
			t.Errorf("%s port %d: %v %v after sw2 went off", end.n, end.port, ls.Phys, ls.State)
		}
	}
	if ls := sw1.Ports.Link(2); ls.Phys != mad.PhysStateLinkUp {
		t.Errorf("sw1 port 2 (to sw3): %v", ls.Phys)
	}
	old := sw2.Agent
	if err := f.PowerOn(sw2.Index); err != nil {
		t.Fatal(err)
	}
	if sw2.Agent == old {
		t.Error("PowerOn kept the old agent")
	}
	if err := f.PowerOn(sw2.Index); err == nil {
		t.Error("PowerOn of a node that is on: no error")
	}
	for _, p := range []uint8{1, 2, 3, 4} {
		if ls := sw2.Ports.Link(p); ls.State != mad.PortStateInit || ls.Phys != mad.PhysStateLinkUp {
			t.Errorf("sw2 port %d: %v %v after power on", p, ls.Phys, ls.State)
		}
	}
	if ls := ca7.Ports.Link(1); ls.State != mad.PortStateInit {
		t.Errorf("ca7: %v", ls.State)
	}
	if !sw1.Agent.PortStateChange() || !sw2.Agent.PortStateChange() {
		t.Error("PortStateChange clear after the links came back")
	}
	if err := f.PowerOff(99); err == nil {
		t.Error("PowerOff(99): no error")
	}
}

func TestAddPiece(t *testing.T) {
	f := newFabric(t, topologies.Thesis8())
	idx, err := f.AddPiece(topologies.Thesis8AddPiece())
	if err != nil {
		t.Fatal(err)
	}
	if len(idx) != 3 || f.Topology().NumNodes() != 18 || len(f.Nodes()) != 18 {
		t.Fatalf("new nodes %v, %d nodes", idx, f.Topology().NumNodes())
	}
	sw16, ok := f.Lookup("sw16")
	if !ok || sw16.Index != idx[0] || sw16.Agent.NodeGUID() != topologies.GeneratedGUID(16) {
		t.Fatalf("sw16: %v", sw16)
	}
	for _, end := range []struct {
		n    string
		port uint8
	}{{"sw8", 3}, {"sw9", 3}, {"sw16", 1}, {"sw16", 2}, {"sw16", 3}, {"sw16", 4}, {"ca17", 1}} {
		n, _ := f.Lookup(end.n)
		if ls := n.Ports.Link(end.port); ls.State != mad.PortStateInit || ls.Phys != mad.PhysStateLinkUp {
			t.Errorf("%s port %d: %v %v", end.n, end.port, ls.Phys, ls.State)
		}
	}
	// A directed route from ca4 reaches the new switch.
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1, 2, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	f.Send(0, agent.Request{Port: 1, DLID: mad.PermissiveLID, MAD: b})
	f.Run()
	got := f.Received(0)
	if len(got) != 1 || mad.NodeInfo(mad.DRSMP(got[0].MAD).Data()).NodeGUID() != topologies.GeneratedGUID(16) {
		t.Errorf("NodeInfo through sw8 port 3: %v", got)
	}
	if _, err := f.AddPiece(topologies.Thesis8AddPiece()); err == nil {
		t.Error("the same piece twice: no error")
	}
}
