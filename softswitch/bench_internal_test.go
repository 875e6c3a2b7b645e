package softswitch

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/link"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire"
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
// switch: the port logic of two links and the crossbar between them, in
// each architecture (IQ: one packet of the input's VL in the crossbar at
// a time).
func BenchmarkSwitchForward(b *testing.B) {
	for _, arch := range []Arch{ArchVOQ, ArchIQ} {
		b.Run(arch.String(), func(b *testing.B) {
			_, src, dst := benchLine(b, Config{Arch: arch})
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
		})
	}
}

// benchStar is a switch with ports 1-4 each cabled to an Active port on
// pipes, the switch routing LID 2 to port 2.
func benchStar(b *testing.B) *Switch {
	pc := port.Config{Unpaced: true}
	eps := []link.Endpoint{nil}
	var ports []*port.Port
	var ends []*pipe.Endpoint
	for range 4 {
		sw, peer := pipe.NewPair()
		eps = append(eps, sw)
		p, err := port.New(peer, pc, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		ports = append(ports, p)
		ends = append(ends, peer)
	}
	s, err := New(Config{Name: "bench", NumPorts: 4, NodeGUID: 1, Ports: eps, PortConfig: pc})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	for n := uint8(1); n <= 4; n++ {
		ports = append(ports, s.Port(n))
	}
	porttest.Settle(ports, ends...)
	for _, p := range ports {
		activate(b, p)
	}
	setLFT(b, s, map[uint16]uint8{1: 1, 2: 2})
	return s
}

// BenchmarkRouteDecision is the routing decision of a unicast packet
// (unicastOutput: LFT, adaptive routing, the output's checks) per mode,
// with three alternatives for the DLID. The outputs are idle: T = 75
// keeps adaptive-th and AFI on the LFT port after one look at it, T = 0
// makes them adapt every packet, the worst case.
func BenchmarkRouteDecision(b *testing.B) {
	s := benchStar(b)
	pkt := port.NewPacket(porttest.UD(0, 2, 256, 0))
	b.Cleanup(pkt.Release)
	lrh := wire.LRH(pkt.Bytes)
	group := []uint16{0, 0, 1}
	for _, tc := range []struct {
		mode mad.ARMode
		thr  uint8
	}{{mad.AROff, 75}, {mad.ARAdaptive, 75}, {mad.ARAdaptiveTh, 75}, {mad.ARAdaptiveTh, 0}, {mad.ARAFI, 75}, {mad.ARAFI, 0}} {
		b.Run(fmt.Sprintf("%v/T=%d", tc.mode, tc.thr), func(b *testing.B) {
			s.agent.SetARTable(agent.NewARTable(tc.mode, tc.thr, 1, group, [][]uint8{nil, {2, 3, 4}}))
			b.ReportAllocs()
			for b.Loop() {
				if _, op, _, _, _ := s.unicastOutput(1, 2, pkt, lrh); op == nil {
					b.Fatal("no output")
				}
			}
		})
	}
}
