package pipe_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/link"
	"ibfab/link/linktest"
	"ibfab/link/pipe"
)

func newPair(t *testing.T) linktest.Pair {
	a, b := pipe.NewPair()
	t.Cleanup(func() { a.Close(); b.Close() })
	return linktest.Pair{A: a, B: b, SetCarrier: a.SetCarrier}
}

func TestConformance(t *testing.T) { linktest.Run(t, newPair) }

func TestMutate(t *testing.T) {
	tests := []struct {
		name     string
		mutate   pipe.Mutate
		wantData []byte // nil: dropped
	}{
		{"pass", func(link.Kind, []byte) bool { return false }, []byte{1, 2, 3}},
		{"corrupt", func(_ link.Kind, p []byte) bool { p[0] ^= 0xff; return false }, []byte{0xfe, 2, 3}},
		{"drop", func(link.Kind, []byte) bool { return true }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			linktest.LeakCheck(t)
			a, b := pipe.NewPair()
			t.Cleanup(func() { a.Close(); b.Close() })
			rb := linktest.NewRecorder(4)
			b.Attach(rb)
			a.SetMutate(tt.mutate)
			sent := []byte{1, 2, 3}
			require.NoError(t, a.WritePacket(link.KindData, sent))
			assert.Equal(t, []byte{1, 2, 3}, sent, "Mutate must see a copy")
			a.SetMutate(nil)
			require.NoError(t, a.WritePacket(link.KindData, []byte{9}))
			if tt.wantData != nil {
				assert.Equal(t, tt.wantData, rb.Expect(t).Data)
			}
			assert.Equal(t, []byte{9}, rb.Expect(t).Data)
			want := pipe.Stats{Delivered: 2}
			if tt.wantData == nil {
				want = pipe.Stats{Delivered: 1, DroppedMutate: 1}
			}
			a.Idle()
			assert.Equal(t, want, b.Stats())
		})
	}
}

// blocker is a Dispatcher that holds up delivery until released.
type blocker struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blocker) DeliverPacket(link.Kind, []byte) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
}

func (b *blocker) CarrierChanged(bool) {}

func TestQueueFull(t *testing.T) {
	linktest.LeakCheck(t)
	a, b := pipe.NewPairWith(pipe.Options{QueueLen: 4, NameA: "x", NameB: "y"})
	t.Cleanup(func() { a.Close(); b.Close() })
	assert.Equal(t, "x", a.Name())
	assert.Equal(t, "y", b.Name())
	assert.Same(t, b, a.Peer())
	bl := &blocker{entered: make(chan struct{}), release: make(chan struct{})}
	b.Attach(bl)
	require.NoError(t, a.WritePacket(link.KindData, []byte{0}))
	<-bl.entered // the first packet is out of the queue, in delivery
	for i := range 10 {
		require.NoError(t, a.WritePacket(link.KindData, []byte{byte(i)}), "a full queue drops silently")
	}
	close(bl.release)
	a.Idle()
	assert.Equal(t, pipe.Stats{Delivered: 5, DroppedFull: 6}, b.Stats())
}

func TestCloseDiscardsQueued(t *testing.T) {
	linktest.LeakCheck(t)
	a, b := pipe.NewPair()
	t.Cleanup(func() { a.Close() })
	for range 3 {
		require.NoError(t, a.WritePacket(link.KindLink, make([]byte, 6)))
	}
	require.NoError(t, b.Close())
	require.NoError(t, a.WritePacket(link.KindLink, make([]byte, 6)))
	assert.Equal(t, pipe.Stats{DroppedClosed: 4}, b.Stats())
	a.Idle() // nothing in flight any more
}

// echo writes every packet it receives back, until it has seen n.
type echo struct {
	ep *pipe.Endpoint
	n  int
}

func (e *echo) DeliverPacket(k link.Kind, pkt []byte) {
	if pkt[0] < byte(e.n) {
		pkt[0]++
		e.ep.WritePacket(k, pkt)
	}
}

func (e *echo) CarrierChanged(bool) {}

func TestIdleFollowsReplies(t *testing.T) {
	linktest.LeakCheck(t)
	a, b := pipe.NewPair()
	t.Cleanup(func() { a.Close(); b.Close() })
	a.Attach(&echo{a, 100})
	b.Attach(&echo{b, 100})
	require.NoError(t, a.WritePacket(link.KindData, []byte{0}))
	a.Idle()
	assert.Equal(t, uint64(50), a.Stats().Delivered)
	assert.Equal(t, uint64(51), b.Stats().Delivered)
}

func TestCarrierEventsNotCoalesced(t *testing.T) {
	linktest.LeakCheck(t)
	a, b := pipe.NewPair()
	t.Cleanup(func() { a.Close(); b.Close() })
	ra := linktest.NewRecorder(16)
	a.Attach(ra)
	b.SetCarrier(true) // no change, no event
	for range 3 {
		b.SetCarrier(false)
		b.SetCarrier(true)
	}
	a.Idle()
	require.Len(t, ra.Carrier, 6)
	for i := range 6 {
		assert.Equal(t, i%2 == 1, <-ra.Carrier, "event %d", i)
	}
}

func BenchmarkThroughput(b *testing.B) {
	for _, size := range []int{6, 256, 2048 + 36} {
		b.Run(sizeName(size), func(b *testing.B) {
			x, y := pipe.NewPair()
			b.Cleanup(func() { x.Close(); y.Close() })
			var n counter
			y.Attach(&n)
			pkt := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if err := x.WritePacket(link.KindData, pkt); err != nil {
					b.Fatal(err)
				}
				// Let the receiver catch up before the queue can overflow.
				if i++; i%(pipe.DefaultQueueLen/2) == 0 {
					x.Idle()
				}
			}
			x.Idle()
			b.ReportMetric(float64(y.Stats().DroppedFull)/float64(b.N), "drops/op")
		})
	}
}

type counter struct{ n int }

func (c *counter) DeliverPacket(link.Kind, []byte) { c.n++ }
func (c *counter) CarrierChanged(bool)             {}

func sizeName(n int) string {
	switch {
	case n < 64:
		return "link"
	case n < 1024:
		return "256B"
	}
	return "2KiB"
}
