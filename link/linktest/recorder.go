package linktest

import (
	"sync/atomic"
	"testing"
	"time"

	"ibfab/link"
)

// Wait bounds how long the Expect helpers wait for something that should
// happen promptly. It is a failure deadline, never a pacing delay: tests
// that pass do not wait for it.
var Wait = 10 * time.Second

// Packet is a received packet, copied out of the Dispatcher call.
type Packet struct {
	Kind link.Kind
	Data []byte
}

// Recorder is a link.Dispatcher that copies every packet and carrier change
// onto buffered channels a test reads. When a channel is full the item is
// dropped and counted (Overflow), so a test that stops reading can still
// Close its endpoint.
type Recorder struct {
	Packets  chan Packet
	Carrier  chan bool
	overflow atomic.Uint64
}

var _ link.Dispatcher = (*Recorder)(nil)

// NewRecorder returns a Recorder whose channels hold n items each.
func NewRecorder(n int) *Recorder {
	return &Recorder{Packets: make(chan Packet, n), Carrier: make(chan bool, n)}
}

// DeliverPacket implements link.Dispatcher.
func (r *Recorder) DeliverPacket(k link.Kind, pkt []byte) {
	select {
	case r.Packets <- Packet{k, append([]byte(nil), pkt...)}:
	default:
		r.overflow.Add(1)
	}
}

// CarrierChanged implements link.Dispatcher.
func (r *Recorder) CarrierChanged(up bool) {
	select {
	case r.Carrier <- up:
	default:
		r.overflow.Add(1)
	}
}

// Overflow returns the number of items dropped because a channel was full.
func (r *Recorder) Overflow() uint64 { return r.overflow.Load() }

// Expect returns the next packet, failing t if none comes within Wait.
func (r *Recorder) Expect(t testing.TB) Packet {
	t.Helper()
	select {
	case p := <-r.Packets:
		return p
	case <-time.After(Wait):
		t.Fatalf("no packet within %v", Wait)
		return Packet{}
	}
}

// ExpectCarrier reads carrier changes until one reports want, failing t if
// none does within Wait. Repeats of the other state are skipped: carrier
// changes are levels, and a medium may report one twice.
func (r *Recorder) ExpectCarrier(t testing.TB, want bool) {
	t.Helper()
	deadline := time.After(Wait)
	for {
		select {
		case up := <-r.Carrier:
			if up == want {
				return
			}
		case <-deadline:
			t.Fatalf("no CarrierChanged(%v) within %v", want, Wait)
		}
	}
}
