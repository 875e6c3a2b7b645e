package port

import (
	"sync"
	"sync/atomic"
	"time"
)

// Packet is one IBA data packet (LRH through VCRC) on its way through a
// node. Buffers are pooled and reference counted:
//
//	receive:  the port copies the bytes into a pooled Packet, takes the
//	          packet's blocks from the VL's receive buffer and hands it to
//	          the Receiver. The node owns it until Release.
//	forward:  a switch passes the same Packet to an output port's Send;
//	          that port releases it once the bytes have left, and only then
//	          does the input port get its blocks back and send the upstream
//	          peer a credit update. That is virtual cut-through with
//	          end-to-end backpressure: the input buffer stays taken while
//	          the packet waits for the output.
//	multicast: Ref once per extra Send; each Send releases one reference.
//	send:     an HCA builds a packet with NewPacket or AllocPacket and
//	          passes it to Send, which takes over its one reference.
//
// After its last Release a Packet must not be touched: it is back in the
// pool. Releasing more often than referenced corrupts whoever reuses it.
type Packet struct {
	// Bytes is the packet. The owner may change it in place (a switch
	// rewriting the VL and the VCRC) before passing it on.
	Bytes []byte

	buf     []byte // pooled backing array
	refs    atomic.Int32
	owner   *Port  // receiving port whose buffer the packet takes, or nil
	downs   uint64 // owner.downs when the packet arrived
	vl      uint8
	blocks  int
	arrival time.Time
}

// poolBufSize fits the largest packet of a 4096-byte MTU.
const poolBufSize = DefaultMTU + maxHeaderBytes

var packetPool = sync.Pool{New: func() any { return &Packet{buf: make([]byte, 0, poolBufSize)} }}

// AllocPacket returns a Packet with empty Bytes of at least the given
// capacity, for building a packet in place (wire.AppendUD(pkt.Bytes, …)).
func AllocPacket(capacity int) *Packet {
	pkt := packetPool.Get().(*Packet)
	if cap(pkt.buf) < capacity {
		pkt.buf = make([]byte, 0, capacity)
	}
	pkt.Bytes = pkt.buf[:0]
	pkt.refs.Store(1)
	return pkt
}

// NewPacket returns a Packet holding a copy of b.
func NewPacket(b []byte) *Packet {
	pkt := AllocPacket(len(b))
	pkt.Bytes = append(pkt.Bytes, b...)
	return pkt
}

// VL returns the VL the packet arrived on (0 for a packet the node made).
func (pkt *Packet) VL() uint8 { return pkt.vl }

// Arrival returns when the packet arrived, on the port's clock (zero for a
// packet the node made).
func (pkt *Packet) Arrival() time.Time { return pkt.arrival }

// Ref adds a reference, for passing the packet to one more Send.
func (pkt *Packet) Ref() { pkt.refs.Add(1) }

// Release drops a reference; the last one returns the buffer to the pool
// and, for a received packet, its blocks to the receiving port's VL buffer,
// which sends the peer the freed credit. Before that, the receiving port's
// Config.OnRelease, if any, is told.
func (pkt *Packet) Release() {
	if pkt.refs.Add(-1) != 0 {
		return
	}
	owner, vl, blocks := pkt.owner, pkt.vl, pkt.blocks
	if owner != nil && owner.cfg.OnRelease != nil {
		owner.cfg.OnRelease(pkt)
	}
	pkt.owner, pkt.downs, pkt.vl, pkt.blocks, pkt.arrival = nil, 0, 0, 0, time.Time{}
	if cap(pkt.Bytes) > cap(pkt.buf) && cap(pkt.Bytes) <= 2*poolBufSize {
		pkt.buf = pkt.Bytes[:0] // the node grew it: keep the larger array
	}
	pkt.Bytes = nil
	packetPool.Put(pkt)
	if owner != nil {
		owner.rxRelease(vl, blocks)
	}
}

// orphaned reports whether the port the packet arrived on has gone Down
// since: its input buffer, which the packet stands for, is gone.
func (pkt *Packet) orphaned() bool {
	return pkt.owner != nil && pkt.owner.downs.Load() != pkt.downs
}

// dropOrphan counts an orphan on its input port and releases it. The
// caller holds no port's lock.
func (pkt *Packet) dropOrphan() {
	pkt.owner.CountDropPacket(DropInputDown, pkt.Bytes)
	pkt.Release()
}

// Receiver is the node behind a port: the switch's crossbar, the HCA's
// queue pairs and agents.
type Receiver interface {
	// Receive is called for each packet the port accepts, from the
	// endpoint's delivery goroutine, without the port's lock held; it must
	// not block for long (the next packet waits). The receiver owns pkt
	// until it calls pkt.Release, which may be later and from any
	// goroutine.
	Receive(p *Port, pkt *Packet)
}

// ReceiverFunc adapts a function to Receiver.
type ReceiverFunc func(p *Port, pkt *Packet)

var _ Receiver = ReceiverFunc(nil)

// Receive implements Receiver.
func (f ReceiverFunc) Receive(p *Port, pkt *Packet) { f(p, pkt) }

// fifo is a growable ring of queued packets. blocks is the sum of the
// entries' blocks, kept on every change so that congestion detection reads
// it without a scan.
type fifo struct {
	buf    []txEntry
	head   int
	n      int
	blocks int
}

// txEntry is one queued packet with what the output port computed for it
// at Send (not stored in the Packet, which several ports may hold).
type txEntry struct {
	pkt    *Packet
	n      int // bytes, LRH through VCRC
	blocks int
	mcast  bool
}

func (q *fifo) len() int { return q.n }

func (q *fifo) push(e txEntry) {
	if q.n == len(q.buf) {
		nb := make([]txEntry, max(2*len(q.buf), 8))
		for i := range q.n {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = e
	q.n++
	q.blocks += e.blocks
}

// peek returns the head; the queue must not be empty.
func (q *fifo) peek() *txEntry { return &q.buf[q.head] }

// removeIf removes the entries whose packet drop reports, keeping the
// others in order, and returns dst with the removed packets appended.
func (q *fifo) removeIf(drop func(*Packet) bool, dst []*Packet) []*Packet {
	kept := 0
	for i := range q.n {
		e := q.buf[(q.head+i)%len(q.buf)]
		if drop(e.pkt) {
			dst = append(dst, e.pkt)
			q.blocks -= e.blocks
			continue
		}
		q.buf[(q.head+kept)%len(q.buf)] = e
		kept++
	}
	for i := kept; i < q.n; i++ {
		q.buf[(q.head+i)%len(q.buf)] = txEntry{}
	}
	q.n = kept
	return dst
}

func (q *fifo) pop() txEntry {
	e := q.buf[q.head]
	q.buf[q.head] = txEntry{}
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	q.blocks -= e.blocks
	return e
}
