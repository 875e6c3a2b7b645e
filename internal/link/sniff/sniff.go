package sniff

import (
	"net"
	"sync"
	"sync/atomic"

	"ibfab/capture"
	"ibfab/internal/clock"
	"ibfab/internal/link"
)

// Endpoint wraps a link.Endpoint and captures its packets.
type Endpoint struct {
	inner  link.Endpoint
	clock  clock.Clock
	closed atomic.Bool

	// mu protects w, err and records: capture.Writer is not safe for
	// concurrent use, and the send and receive paths run on different
	// goroutines.
	mu      sync.Mutex
	w       *capture.Writer
	err     error
	records uint64
}

var _ link.Endpoint = (*Endpoint)(nil)

// New returns inner wrapped so that every packet it sends or receives is
// written to w, stamped by c (nil means clock.Real()). The caller keeps
// ownership of w's underlying file and closes it after Close.
func New(inner link.Endpoint, w *capture.Writer, c clock.Clock) *Endpoint {
	if c == nil {
		c = clock.Real()
	}
	return &Endpoint{inner: inner, clock: c, w: w}
}

// record writes one capture record, unless an earlier write failed.
// Training frames are physical-layer signalling, not IBA packets: they are
// not captured, as ibdump does not see TS1/TS2 either.
func (e *Endpoint) record(k link.Kind, pkt []byte) {
	if k == link.KindTraining {
		return
	}
	t := capture.TypeInfiniBand
	if k == link.KindLink {
		t = capture.TypeInfiniBandLink
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return
	}
	if e.err = e.w.WritePacket(t, e.clock.Now(), pkt); e.err == nil {
		e.records++
	}
}

// WritePacket implements link.Endpoint. A packet is captured as it leaves,
// before the wrapped endpoint writes it, so a reply can never precede it in
// the capture; packets the endpoint will refuse (closed, bad kind or size,
// no carrier) are not captured.
func (e *Endpoint) WritePacket(k link.Kind, pkt []byte) error {
	if e.closed.Load() {
		return net.ErrClosed
	}
	if link.CheckPacket(k, len(pkt)) == nil && e.inner.Carrier() {
		e.record(k, pkt)
	}
	return e.inner.WritePacket(k, pkt)
}

// Attach implements link.Endpoint.
func (e *Endpoint) Attach(d link.Dispatcher) { e.inner.Attach(&dispatcher{e, d}) }

// Carrier implements link.Endpoint.
func (e *Endpoint) Carrier() bool { return e.inner.Carrier() }

// Name implements link.Endpoint.
func (e *Endpoint) Name() string { return e.inner.Name() }

// Close implements link.Endpoint. It closes the wrapped endpoint; the
// capture's file stays open for the caller to close.
func (e *Endpoint) Close() error {
	e.closed.Store(true)
	return e.inner.Close()
}

// Err returns the capture write error that stopped the capture, or nil.
func (e *Endpoint) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Records returns the number of packets captured so far.
func (e *Endpoint) Records() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.records
}

// dispatcher captures received packets on their way to the real one.
type dispatcher struct {
	e *Endpoint
	d link.Dispatcher
}

func (s *dispatcher) DeliverPacket(k link.Kind, pkt []byte) {
	s.e.record(k, pkt)
	s.d.DeliverPacket(k, pkt)
}

func (s *dispatcher) CarrierChanged(up bool) { s.d.CarrierChanged(up) }
