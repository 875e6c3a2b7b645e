package pipe

import (
	"net"
	"sync"
	"sync/atomic"

	"ibfab/link"
)

// DefaultQueueLen is the receive queue length of NewPair's endpoints:
// enough for a port's whole buffer of small packets, small enough that a
// runaway sender is noticed.
const DefaultQueueLen = 1024

// Options configure NewPairWith.
type Options struct {
	// QueueLen is each endpoint's receive queue length in packets;
	// 0 means DefaultQueueLen.
	QueueLen int
	// NameA and NameB name the endpoints; empty means "pipe-a", "pipe-b".
	NameA, NameB string
}

// Mutate sees every packet an endpoint writes, as a private copy it may
// change in place (to corrupt it) before the peer receives it, and drops it
// by returning true.
type Mutate func(k link.Kind, pkt []byte) (drop bool)

// Stats counts what happened to the packets written to an endpoint (its
// receive side).
type Stats struct {
	Delivered     uint64 // passed to the Dispatcher
	DroppedFull   uint64 // receive queue full
	DroppedMutate uint64 // dropped by the peer's Mutate hook
	DroppedClosed uint64 // this endpoint was closed
}

// Endpoint is one end of a pipe.
type Endpoint struct {
	name   string
	pair   *pair
	peer   *Endpoint
	mutate atomic.Pointer[Mutate] // applied to packets this end writes

	// mu protects attached, closed and the right to send into queue:
	// writers hold it shared while they enqueue, Close exclusively while it
	// marks the end closed, so nothing is enqueued after Close has drained
	// the queue.
	mu       sync.RWMutex
	attached bool
	closed   bool
	queue    chan *frame

	// evMu protects events, the carrier changes not yet delivered; notify
	// (capacity 1) wakes the delivery goroutine for them.
	evMu   sync.Mutex
	events []bool
	notify chan struct{}

	// txOff is set while this end's transmitter is off (SetTransmitter);
	// written under pair.carrierMu.
	txOff bool

	closing   chan struct{} // closed by Close: the delivery goroutine ends
	done      chan struct{} // closed when the delivery goroutine has ended
	closeOnce sync.Once

	delivered, droppedFull, droppedMutate, droppedClosed atomic.Uint64
}

var (
	_ link.Endpoint    = (*Endpoint)(nil)
	_ link.Transmitter = (*Endpoint)(nil)
)

// pair is what both ends share: the carrier, and the count of packets and
// carrier events in flight, for Idle.
type pair struct {
	// carrier is up while the cable is in and both transmitters are on.
	carrier atomic.Bool
	// carrierMu serializes SetCarrier and SetTransmitter, so both ends
	// see changes in the same order, and protects cable.
	carrierMu sync.Mutex
	cable     bool

	// mu protects inflight; idle is signalled when it drops to zero.
	mu       sync.Mutex
	idle     sync.Cond
	inflight int
}

func (p *pair) add(n int) {
	p.mu.Lock()
	p.inflight += n
	if p.inflight == 0 {
		p.idle.Broadcast()
	}
	p.mu.Unlock()
}

// frame is a queued packet; frames are pooled so that steady traffic does
// not allocate.
type frame struct {
	kind link.Kind
	buf  []byte
}

var framePool = sync.Pool{New: func() any { return &frame{buf: make([]byte, 0, 4352)} }}

// NewPair returns two endpoints wired to each other with the default
// options, carrier up.
func NewPair() (a, b *Endpoint) { return NewPairWith(Options{}) }

// NewPairWith returns two endpoints wired to each other, carrier up.
func NewPairWith(o Options) (a, b *Endpoint) {
	if o.QueueLen <= 0 {
		o.QueueLen = DefaultQueueLen
	}
	if o.NameA == "" {
		o.NameA = "pipe-a"
	}
	if o.NameB == "" {
		o.NameB = "pipe-b"
	}
	p := &pair{}
	p.idle.L = &p.mu
	p.carrier.Store(true)
	p.cable = true
	a, b = newEndpoint(o.NameA, p, o.QueueLen), newEndpoint(o.NameB, p, o.QueueLen)
	a.peer, b.peer = b, a
	return a, b
}

func newEndpoint(name string, p *pair, qlen int) *Endpoint {
	return &Endpoint{
		name:    name,
		pair:    p,
		queue:   make(chan *frame, qlen),
		notify:  make(chan struct{}, 1),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// WritePacket implements link.Endpoint.
func (e *Endpoint) WritePacket(k link.Kind, pkt []byte) error {
	if e.isClosed() {
		return net.ErrClosed
	}
	if err := link.CheckPacket(k, len(pkt)); err != nil {
		return err
	}
	if !e.pair.carrier.Load() {
		return link.ErrNoCarrier
	}
	f := framePool.Get().(*frame)
	f.kind, f.buf = k, append(f.buf[:0], pkt...)
	if m := e.mutate.Load(); m != nil && (*m)(k, f.buf) {
		e.peer.droppedMutate.Add(1)
		framePool.Put(f)
		return nil
	}
	e.peer.enqueue(f)
	return nil
}

// enqueue puts f on e's receive queue, or drops and counts it.
func (e *Endpoint) enqueue(f *frame) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		e.droppedClosed.Add(1)
		framePool.Put(f)
		return
	}
	e.pair.add(1)
	select {
	case e.queue <- f:
	default:
		e.pair.add(-1)
		e.droppedFull.Add(1)
		framePool.Put(f)
	}
}

func (e *Endpoint) isClosed() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.closed
}

// Attach implements link.Endpoint.
func (e *Endpoint) Attach(d link.Dispatcher) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.attached {
		return
	}
	e.attached = true
	go e.deliver(d)
}

// deliver is the endpoint's delivery goroutine: every Dispatcher call of
// the endpoint comes from here.
func (e *Endpoint) deliver(d link.Dispatcher) {
	defer close(e.done)
	for {
		select {
		case <-e.closing:
			return
		case f := <-e.queue:
			d.DeliverPacket(f.kind, f.buf)
			e.delivered.Add(1)
			framePool.Put(f)
			e.pair.add(-1)
		case <-e.notify:
			e.evMu.Lock()
			evs := e.events
			e.events = nil
			e.evMu.Unlock()
			for _, up := range evs {
				d.CarrierChanged(up)
			}
			e.pair.add(-len(evs))
		}
	}
}

// Carrier implements link.Endpoint.
func (e *Endpoint) Carrier() bool { return e.pair.carrier.Load() }

// Name implements link.Endpoint.
func (e *Endpoint) Name() string { return e.name }

// Close implements link.Endpoint. Packets still queued for e are discarded
// and counted in DroppedClosed.
func (e *Endpoint) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		attached := e.attached
		e.mu.Unlock()
		close(e.closing)
		if attached {
			<-e.done
		}
		// Nothing enqueues any more; what is left will never be delivered.
		for n := len(e.queue); n > 0; n-- {
			framePool.Put(<-e.queue)
			e.droppedClosed.Add(1)
			e.pair.add(-1)
		}
		e.evMu.Lock()
		n := len(e.events)
		e.events = nil
		e.evMu.Unlock()
		e.pair.add(-n)
	})
	return nil
}

// SetCarrier sets the carrier of the pair, as a cable pulled or plugged:
// both ends see it in Carrier at once, and each attached, open end gets a
// CarrierChanged call. Setting the state it already has does nothing.
func (e *Endpoint) SetCarrier(up bool) {
	p := e.pair
	p.carrierMu.Lock()
	defer p.carrierMu.Unlock()
	p.cable = up
	e.updateCarrierLocked()
}

// SetTransmitter implements link.Transmitter: with e's transmitter off the
// pair has no carrier, whatever the cable.
func (e *Endpoint) SetTransmitter(on bool) error {
	p := e.pair
	p.carrierMu.Lock()
	defer p.carrierMu.Unlock()
	e.txOff = !on
	e.updateCarrierLocked()
	return nil
}

// updateCarrierLocked sets the pair's carrier from the cable and both
// transmitters and, when it changed, tells both ends; carrierMu held.
func (e *Endpoint) updateCarrierLocked() {
	p := e.pair
	up := p.cable && !e.txOff && !e.peer.txOff
	if p.carrier.Load() == up {
		return
	}
	p.carrier.Store(up)
	for _, x := range []*Endpoint{e, e.peer} {
		x.postCarrier(up)
	}
}

// postCarrier queues a carrier event for x's Dispatcher. Lock order:
// carrierMu, then x.mu, then pair.mu (as enqueue: x.mu, then pair.mu).
func (x *Endpoint) postCarrier(up bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed || !x.attached {
		return
	}
	x.pair.add(1)
	x.evMu.Lock()
	x.events = append(x.events, up)
	x.evMu.Unlock()
	select {
	case x.notify <- struct{}{}:
	default: // a wake-up is already pending; it will see this event too
	}
}

// SetMutate installs (or, with nil, removes) the hook applied to every
// packet e writes from now on.
func (e *Endpoint) SetMutate(m Mutate) {
	if m == nil {
		e.mutate.Store(nil)
		return
	}
	e.mutate.Store(&m)
}

// Idle blocks until every packet written to either end and every carrier
// change has been delivered (or dropped), including the packets Dispatcher
// calls write in turn. Both open ends must be attached, or what waits for
// the unattached one keeps Idle waiting. It must not be called from a
// Dispatcher call.
func (e *Endpoint) Idle() {
	p := e.pair
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.inflight > 0 {
		p.idle.Wait()
	}
}

// Stats returns what happened to the packets written to e so far.
func (e *Endpoint) Stats() Stats {
	return Stats{
		Delivered:     e.delivered.Load(),
		DroppedFull:   e.droppedFull.Load(),
		DroppedMutate: e.droppedMutate.Load(),
		DroppedClosed: e.droppedClosed.Load(),
	}
}

// Peer returns the other end of the pipe.
func (e *Endpoint) Peer() *Endpoint { return e.peer }
