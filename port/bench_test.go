package port_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"ibfab/internal/clock"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire/mad"
)

// counter is a Receiver that releases at once and tells when the n-th
// packet since the last reset has arrived, and when the first and last
// did.
type counter struct {
	mu          sync.Mutex
	n, want     int
	first, last time.Time
	done        chan struct{}
}

func (c *counter) Receive(_ *port.Port, pkt *port.Packet) {
	at := pkt.Arrival()
	pkt.Release()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.first = at
	}
	c.last = at
	c.n++
	if c.n == c.want {
		close(c.done)
	}
}

// expect resets the counter to wait for n packets.
func (c *counter) expect(n int) {
	c.mu.Lock()
	c.n, c.want, c.done = 0, n, make(chan struct{})
	c.mu.Unlock()
}

// benchPair returns two Active ports on the real clock joined by a pipe;
// b counts what it receives.
func benchPair(b *testing.B, cfg port.Config) (*port.Port, *counter) {
	b.Helper()
	ea, eb := pipe.NewPair()
	cfg.TxQueueLimit = 256 // Send blocks instead of queueing b.N packets
	rcv := &counter{}
	pa, err := port.New(ea, cfg, nil)
	if err != nil {
		b.Fatalf("port.New: %v", err)
	}
	b.Cleanup(func() { pa.Close() })
	pb, err := port.New(eb, cfg, rcv)
	if err != nil {
		b.Fatalf("port.New: %v", err)
	}
	b.Cleanup(func() { pb.Close() })
	porttest.Settle([]*port.Port{pa, pb}, ea)
	for _, p := range []*port.Port{pa, pb} {
		for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
			if err := p.SetState(s); err != nil {
				b.Fatalf("SetState(%v): %v (state %v)", s, err, p.State())
			}
		}
	}
	return pa, rcv
}

// sendBatch sends n copies of pkt from p and waits for rcv to have them.
func sendBatch(b *testing.B, p *port.Port, rcv *counter, pkt []byte, n int) {
	rcv.expect(n)
	for range n {
		if err := p.Send(port.NewPacket(pkt)); err != nil {
			b.Fatalf("Send: %v", err)
		}
	}
	select {
	case <-rcv.done:
	case <-time.After(time.Minute):
		b.Fatalf("%d of %d packets arrived", rcv.n, n)
	}
}

// BenchmarkUnpaced is the unpaced maximum of one link between two ports
// over the in-memory pipe: what the machine can push through the port
// logic, credits and CRC checks included.
func BenchmarkUnpaced(b *testing.B) {
	for _, size := range []int{256, 2048} {
		b.Run(fmt.Sprintf("payload=%d", size), func(b *testing.B) {
			p, rcv := benchPair(b, port.Config{Unpaced: true, RxBlocks: 2048})
			pkt := porttest.UD(0, 1, size, 0)
			b.SetBytes(int64(len(pkt)))
			b.ResetTimer()
			start := time.Now()
			sendBatch(b, p, rcv, pkt, b.N)
			el := time.Since(start)
			b.ReportMetric(float64(b.N)/el.Seconds(), "pkts/s")
			b.ReportMetric(float64(b.N*len(pkt)*8)/el.Seconds()/1e9, "Gb/s")
		})
	}
}

// BenchmarkPacedGoodput measures a paced 4x SDR link with MTU 2048 on the
// real clock: the ratio of the bits the receiver saw per emulated second
// to the 8 Gb/s target (goal: within 1 %). Reported, not asserted. At
// scale 1 the ratio is capped by the machine (BenchmarkUnpaced); a time
// scale that brings the target under that cap shows the pacer's own
// precision.
func BenchmarkPacedGoodput(b *testing.B) {
	for _, scale := range []float64{1, 2, 4} {
		b.Run(fmt.Sprintf("scale=%g", scale), func(b *testing.B) {
			const batch = 20000 // about 42 ms of link time
			cfg := port.Config{MTU: 2048, RxBlocks: 2048, Clock: clock.Scaled(clock.Real(), scale)}
			p, rcv := benchPair(b, cfg)
			pkt := porttest.UD(0, 1, 2048, 0)
			var bits float64
			var busy time.Duration
			b.ResetTimer()
			for range b.N {
				sendBatch(b, p, rcv, pkt, batch)
				bits += float64((batch - 1) * len(pkt) * 8)
				busy += rcv.last.Sub(rcv.first)
			}
			rate := bits / busy.Seconds()
			b.ReportMetric(rate/1e9, "Gb/s")
			b.ReportMetric(rate/float64(p.Rate()), "ratio")
			b.ReportMetric(rate/float64(p.Rate())*2048/float64(len(pkt)), "payload_ratio")
		})
	}
}
