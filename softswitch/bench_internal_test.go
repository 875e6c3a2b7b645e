package softswitch

import (
	"sync/atomic"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/link"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

// setLocal applies a directed-route Set of attr to the switch's own agent,
// as an SM next to it would, and fails b unless it answers OK.
func setLocal(tb testing.TB, s *Switch, attr mad.AttrID, mod uint32, data []byte) {
	tb.Helper()
	m, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, TransactionID: 1, AttrID: attr,
		AttrModifier: mod, Data: data})
	if err != nil {
		tb.Fatal(err)
	}
	// From the management port, as a local SM's SMP: the answer is Local.
	outs := s.agent.Send(agent.Request{Port: 0, MAD: m})
	if len(outs) != 1 || mad.DRSMP(outs[0].MAD).Status() != mad.StatusOK {
		tb.Fatalf("Set %v: %d answers (%+v)", attr, len(outs), outs)
	}
}

// setLFT programs LinearFDBTop 63 and LFT block 0 from lft (LID → port).
func setLFT(tb testing.TB, s *Switch, lft map[uint16]uint8) {
	tb.Helper()
	setLocal(tb, s, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{LinearFDBTop: 63}))
	var blk mad.LinearForwardingTableFields
	for i := range blk.Ports {
		blk.Ports[i] = mad.LFTNoPort
	}
	for l, p := range lft {
		blk.Ports[l] = p
	}
	setLocal(tb, s, mad.AttrLinearFwdTbl, 0, mad.AppendLinearForwardingTable(nil, &blk))
}

// benchSink counts the packets it receives and releases them at once.
type benchSink struct {
	n    atomic.Int64
	want atomic.Int64
	done chan struct{}
}

func (c *benchSink) Receive(_ *port.Port, pkt *port.Packet) {
	pkt.Release()
	if c.n.Add(1) == c.want.Load() {
		close(c.done)
	}
}

// activate moves p to Active as an SM would.
func activate(tb testing.TB, p *port.Port) {
	tb.Helper()
	for _, st := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		if err := p.SetState(st); err != nil {
			tb.Fatalf("%s: SetState(%v): %v (state %v)", p.Name(), st, err, p.State())
		}
	}
}

// benchLine is src - sw[1], sw[2] - dst on pipes, on the real clock and
// unpaced, every port Active, the switch routing LID 2 to port 2: what
// the crossbar adds to a forwarded packet, with two links of port logic.
func benchLine(b *testing.B, cfg Config) (s *Switch, src *port.Port, dst *benchSink) {
	pc := port.Config{Unpaced: true, RxBlocks: 2048}
	a1, s1 := pipe.NewPair()
	s2, b2 := pipe.NewPair()
	cfg.Name, cfg.NumPorts, cfg.NodeGUID = "bench", 4, 1
	cfg.Ports = []link.Endpoint{nil, s1, s2}
	cfg.PortConfig = pc
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	srcCfg := pc
	srcCfg.TxQueueLimit = 256 // Send blocks instead of queueing b.N packets
	src, err = port.New(a1, srcCfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { src.Close() })
	dst = &benchSink{}
	dp, err := port.New(b2, pc, dst)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { dp.Close() })
	ports := []*port.Port{src, s.Port(1), s.Port(2), dp}
	porttest.Settle(ports, a1, b2)
	for _, p := range ports {
		activate(b, p)
	}
	setLFT(b, s, map[uint16]uint8{1: 1, 2: 2})
	return s, src, dst
}

// BenchmarkSwitchForward pushes unpaced 256-byte packets through one
// switch: the port logic of two links and the crossbar between them.
func BenchmarkSwitchForward(b *testing.B) {
	_, src, dst := benchLine(b, Config{})
	pkt := porttest.UD(0, 2, 256, 0)
	dst.done = make(chan struct{})
	dst.want.Store(int64(b.N))
	b.SetBytes(int64(len(pkt)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := src.Send(port.NewPacket(pkt)); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-dst.done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d packets arrived", dst.n.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pkts/s")
}
