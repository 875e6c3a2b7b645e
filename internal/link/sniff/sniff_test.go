package sniff_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/internal/clock"
	"ibfab/internal/link"
	"ibfab/internal/link/linktest"
	"ibfab/internal/link/pipe"
	"ibfab/internal/link/sniff"
	"ibfab/internal/tsharktest"
	"ibfab/wire"
	"ibfab/wire/mad"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func newCapture(t *testing.T) (*capture.Writer, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	require.NoError(t, err)
	return w, &buf
}

func readAll(t *testing.T, buf *bytes.Buffer) []capture.Record {
	t.Helper()
	r, err := capture.NewReader(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	var recs []capture.Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return recs
		}
		require.NoError(t, err)
		rec.Data = append([]byte(nil), rec.Data...)
		recs = append(recs, rec)
	}
}

func TestConformance(t *testing.T) {
	linktest.Run(t, func(t *testing.T) linktest.Pair {
		a, b := pipe.NewPair()
		wa, _ := newCapture(t)
		wb, _ := newCapture(t)
		sa, sb := sniff.New(a, wa, nil), sniff.New(b, wb, nil)
		t.Cleanup(func() { sa.Close(); sb.Close() })
		return linktest.Pair{A: sa, B: sb, SetCarrier: a.SetCarrier}
	})
}

// smp returns a directed-route NodeInfo Get as an SM would send it.
func smp(t *testing.T) []byte {
	t.Helper()
	m, err := mad.AppendDRRequest(nil, &mad.DRRequest{
		Method: mad.MethodGet, TransactionID: 0x1234, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1, 3},
	})
	require.NoError(t, err)
	return wire.AppendUD(nil, &wire.UDFields{VL: 15, DLID: 0xffff, SLID: 0xffff, PKey: 0xffff, Payload: m})
}

func TestCapture(t *testing.T) {
	linktest.LeakCheck(t)
	c := clock.NewManual(t0)
	a, b := pipe.NewPair()
	w, buf := newCapture(t)
	s := sniff.New(a, w, c)
	t.Cleanup(func() { s.Close(); b.Close() })
	ra, rb := linktest.NewRecorder(8), linktest.NewRecorder(8)
	s.Attach(ra)
	b.Attach(rb)
	assert.Equal(t, "pipe-a", s.Name())
	assert.True(t, s.Carrier())

	data := smp(t)
	fc := wire.AppendFlowControl(nil, &wire.FlowControlFields{VL: 2, FCTBS: 7, FCCL: 99})
	reply := append([]byte(nil), data...)
	reply[0] ^= 0x10 // any bytes: the sniffer does not judge them

	require.NoError(t, s.WritePacket(link.KindData, data))
	rb.Expect(t)
	c.Advance(time.Microsecond)
	require.NoError(t, s.WritePacket(link.KindLink, fc))
	rb.Expect(t)
	c.Advance(time.Microsecond)
	require.NoError(t, b.WritePacket(link.KindData, reply))
	ra.Expect(t)
	// Refused writes are not captured.
	assert.ErrorIs(t, s.WritePacket(0, data), link.ErrKind)
	a.SetCarrier(false)
	ra.ExpectCarrier(t, false)
	assert.ErrorIs(t, s.WritePacket(link.KindData, data), link.ErrNoCarrier)

	require.NoError(t, s.Err())
	assert.Equal(t, uint64(3), s.Records())
	recs := readAll(t, buf)
	want := []capture.Record{
		{Type: capture.TypeInfiniBand, Time: t0, Data: data},
		{Type: capture.TypeInfiniBandLink, Time: t0.Add(time.Microsecond), Data: fc},
		{Type: capture.TypeInfiniBand, Time: t0.Add(2 * time.Microsecond), Data: reply},
	}
	require.Len(t, recs, len(want))
	for i := range want {
		assert.Equal(t, want[i].Type, recs[i].Type, "record %d type", i)
		// ERF stamps are 32.32 fixed-point seconds: within a nanosecond.
		assert.WithinDuration(t, want[i].Time, recs[i].Time, time.Nanosecond, "record %d time", i)
		assert.Equal(t, want[i].Data, recs[i].Data, "record %d data", i)
	}

	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.WritePacket(link.KindData, data), net.ErrClosed)
}

func TestCaptureDecodesInTshark(t *testing.T) {
	a, b := pipe.NewPair()
	w, buf := newCapture(t)
	s := sniff.New(a, w, clock.NewManual(t0))
	t.Cleanup(func() { s.Close(); b.Close() })
	rb := linktest.NewRecorder(8)
	b.Attach(rb)
	require.NoError(t, s.WritePacket(link.KindData, smp(t)))
	require.NoError(t, s.WritePacket(link.KindLink, wire.AppendFlowControl(nil, &wire.FlowControlFields{VL: 1, FCCL: 64})))
	pkts := tsharktest.Decode(t, readAll(t, buf))
	require.Len(t, pkts, 2)
	for i, p := range pkts {
		assert.Empty(t, p.Problems(), "packet %d: %v", i, p.Protocols)
	}
	assert.Contains(t, pkts[0].Protocols, "infiniband")
	assert.Contains(t, pkts[1].Protocols, "infiniband_link")
	assert.Equal(t, uint64(15), pkts[0].Uint(t, "infiniband.lrh.vl"))
}

// failAfter is an io.Writer that fails once n bytes have been written.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n < len(p) {
		return 0, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriteErrorStopsCaptureNotLink(t *testing.T) {
	linktest.LeakCheck(t)
	a, b := pipe.NewPair()
	w, err := capture.NewWriter(&failAfter{n: 24 + 16 + 100}) // pcap header and one small record
	require.NoError(t, err)
	s := sniff.New(a, w, nil)
	t.Cleanup(func() { s.Close(); b.Close() })
	rb := linktest.NewRecorder(8)
	b.Attach(rb)
	for i := range 3 {
		require.NoError(t, s.WritePacket(link.KindData, make([]byte, 64)), "write %d", i)
		rb.Expect(t)
	}
	assert.ErrorContains(t, s.Err(), "disk full")
	assert.Equal(t, uint64(1), s.Records())
}

func TestConcurrent(t *testing.T) {
	linktest.LeakCheck(t)
	a, b := pipe.NewPair()
	wa, bufA := newCapture(t)
	wb, _ := newCapture(t)
	sa, sb := sniff.New(a, wa, nil), sniff.New(b, wb, nil)
	t.Cleanup(func() { sa.Close(); sb.Close() })
	var n counter
	sa.Attach(&n)
	sb.Attach(&n)
	const writers, each = 4, 100
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(2)
		for _, ep := range []*sniff.Endpoint{sa, sb} {
			go func() {
				defer wg.Done()
				for j := range each {
					assert.NoError(t, ep.WritePacket(link.KindData, []byte{byte(i), byte(j)}))
				}
			}()
		}
	}
	wg.Wait()
	a.Idle()
	// A saw its own sends and B's.
	assert.Equal(t, uint64(2*writers*each), sa.Records())
	assert.Len(t, readAll(t, bufA), 2*writers*each)
}

type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) DeliverPacket(link.Kind, []byte) { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *counter) CarrierChanged(bool)             {}
