package hca_test

import (
	"encoding/json"
	"testing"
	"time"

	"ibfab/hca"
	"ibfab/wire/mad"
)

// activate is the SM's part, done by hand through a's attach point: it sets
// LID lid and state Armed then Active on the port path reaches.
func activate(t *testing.T, p *pair, path []uint8, lid uint16) {
	t.Helper()
	get := sm(t, p, p.a, p.ia, drRequest(t, mad.DRRequest{Method: mad.MethodGet, TransactionID: 10, AttrID: mad.AttrPortInfo, AttrModifier: 1, Path: path}))
	pi, err := mad.DecodePortInfo(get.Data())
	if err != nil {
		t.Fatalf("DecodePortInfo: %v", err)
	}
	if pi.PortState != mad.PortStateInit {
		t.Fatalf("path %v: PortState %v before Set, want Init", path, pi.PortState)
	}
	for i, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		pi.LID, pi.PortState, pi.PortPhysicalState = lid, s, mad.PhysStateNoChange
		set := sm(t, p, p.a, p.ia, drRequest(t, mad.DRRequest{Method: mad.MethodSet, TransactionID: 11 + uint64(i), AttrID: mad.AttrPortInfo, AttrModifier: 1, Path: path, Data: mad.AppendPortInfo(nil, &pi)}))
		got, err := mad.DecodePortInfo(set.Data())
		if err != nil {
			t.Fatalf("DecodePortInfo: %v", err)
		}
		if got.PortState != s || got.LID != lid {
			t.Fatalf("path %v: after Set, PortState %v LID %d, want %v %d", path, got.PortState, got.LID, s, lid)
		}
	}
}

func TestBackToBack(t *testing.T) {
	p := newPair(t)
	p.settle()
	for name, h := range map[string]*hca.HCA{"a": p.a, "b": p.b} {
		if s := h.Port(1).State(); s.Port != mad.PortStateInit || s.Phys != mad.PhysStateLinkUp {
			t.Fatalf("%s: state %v after training, want LinkUp/Init", name, s)
		}
	}

	// Directed-route NodeInfo Get one hop out reaches b.
	ni := sm(t, p, p.a, p.ia, drRequest(t, mad.DRRequest{Method: mad.MethodGet, TransactionID: 1, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1}}))
	if ni.HopCount() != 1 {
		t.Errorf("hop count %d, want 1", ni.HopCount())
	}
	info, err := mad.DecodeNodeInfo(ni.Data())
	if err != nil {
		t.Fatalf("DecodeNodeInfo: %v", err)
	}
	if info.NodeGUID != guidB || info.NodeType != mad.NodeTypeCA {
		t.Fatalf("NodeInfo: GUID %#x type %v, want %#x CA", info.NodeGUID, info.NodeType, uint64(guidB))
	}

	activate(t, p, []uint8{0, 1}, 2) // b, one hop out
	activate(t, p, nil, 1)           // a itself, hop count 0
	if p.a.LID(1) != 1 || p.b.LID(1) != 2 {
		t.Fatalf("LIDs %d, %d; want 1, 2", p.a.LID(1), p.b.LID(1))
	}

	// UD traffic both ways at 20 % of 4X SDR.
	for _, g := range []struct {
		h    *hca.HCA
		dest uint16
		seed uint64
	}{{p.a, 2, 1}, {p.b, 1, 2}} {
		if _, err := g.h.StartTraffic(1, hca.TrafficConfig{GeneratorConfig: hca.GeneratorConfig{Load: 20, Payload: 256, Dests: []uint16{g.dest}, Seed: g.seed}}); err != nil {
			t.Fatalf("StartTraffic: %v", err)
		}
	}
	p.runFor(t, 200*time.Microsecond)
	ga, _ := p.a.StopTraffic(1)
	gb, _ := p.b.StopTraffic(1)
	p.runFor(t, 50*time.Microsecond) // drain

	sa, sb := p.a.Stats(), p.b.Stats()
	for _, c := range []struct {
		name string
		gen  hca.GeneratorStats
		tx   hca.PortStats
		rx   hca.PortStats
	}{{"a→b", ga, sa.Ports[0], sb.Ports[0]}, {"b→a", gb, sb.Ports[0], sa.Ports[0]}} {
		t.Run(c.name, func(t *testing.T) {
			if c.gen.Sent < 20 || c.gen.Backlogged != 0 || c.gen.Failed != 0 {
				t.Fatalf("generator %+v: want ≥ 20 sent, none backlogged or failed", c.gen)
			}
			if c.rx.RxPackets != c.gen.Sent || c.rx.RxStamped != c.gen.Sent || c.tx.TxPackets != c.gen.Sent {
				t.Errorf("sent %d, tx %d, received %d (%d stamped)", c.gen.Sent, c.tx.TxPackets, c.rx.RxPackets, c.rx.RxStamped)
			}
			if c.rx.RxBytes != 256*c.gen.Sent {
				t.Errorf("rx bytes %d, want %d", c.rx.RxBytes, 256*c.gen.Sent)
			}
			if c.rx.DropTotal != 0 || c.tx.DropTotal != 0 {
				t.Errorf("drops tx %v rx %v, want none", c.tx.Drops, c.rx.Drops)
			}
			// On a manual clock with a zero-delay pipe only queueing shows
			// as latency, so zero is a right answer; the count is what moves.
			if c.rx.Latency.Count != c.gen.Sent || c.rx.Latency.P50Ns < 0 || c.rx.Latency.P99Ns < c.rx.Latency.P50Ns {
				t.Errorf("latency %+v", c.rx.Latency)
			}
			if c.rx.State != "Active" {
				t.Errorf("state %s, want Active", c.rx.State)
			}
		})
	}
	if _, err := json.Marshal(sa); err != nil {
		t.Errorf("json.Marshal(Stats): %v", err)
	}
	pc := p.b.Port(1).Counters()
	if pc.PortRcvPkts == 0 {
		t.Errorf("PMA PortRcvPkts 0 after traffic")
	}
}

// TestTrafficResumesWhenActive: a generator whose port refused its
// packets (the SM had it in Init, as during a reconfiguration) sends
// again as soon as the port is Active, not when its wait after the
// refusal ends (about bulkMin arrivals, up to 100 ms): a source whose
// route came back sends at once. The arrivals while the port refused
// count as failed.
func TestTrafficResumesWhenActive(t *testing.T) {
	p := newPair(t)
	p.settle()
	activate(t, p, []uint8{0, 1}, 2)
	// 0.1 % of the link with 256-byte payloads: an arrival about every
	// half millisecond, so the wait after a refusal (bulkMin arrivals) is
	// longer than the 6 ms the test allows once a is Active.
	if _, err := p.a.StartTraffic(1, hca.TrafficConfig{GeneratorConfig: hca.GeneratorConfig{Load: 0.1, Payload: 256, Dests: []uint16{2}, Seed: 5, Periodic: true}}); err != nil {
		t.Fatalf("StartTraffic: %v", err)
	}
	p.runFor(t, 10*time.Millisecond) // a is Init: every arrival refused
	if s := p.b.Stats().Ports[0]; s.RxPackets != 0 {
		t.Fatalf("b received %d packets from a port in Init", s.RxPackets)
	}
	activate(t, p, nil, 1)
	p.runFor(t, 6*time.Millisecond) // two arrivals' worth
	ga, _ := p.a.StopTraffic(1)
	if got := p.b.Stats().Ports[0].RxPackets; got == 0 || got != ga.Sent {
		t.Fatalf("b received %d packets within 6 ms of a going Active (generator %+v): want the arrivals since", got, ga)
	}
	if ga.Failed < 3 || ga.Sent+ga.Failed+ga.Backlogged != ga.Offered {
		t.Errorf("generator %+v: want the arrivals before Active failed, the counts adding up", ga)
	}
}
