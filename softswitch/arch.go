package softswitch

import (
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"ibfab/internal/enum"
	"ibfab/port"
)

//go:generate go tool stringer -type=Arch -linecomment

// Arch is the switch architecture: how the packets an input port holds
// reach their outputs. Credits stay per VL in both (seed 003 §2.4).
type Arch uint8

const (
	// ArchVOQ routes each packet the moment it arrives and queues it at
	// its output port at once: every input buffer holds, in effect, one
	// queue per output port and VL (virtual output queues), so a packet
	// waits only for its own output. This is the switch's behaviour since
	// the start and the default.
	ArchVOQ Arch = iota // voq
	// ArchIQ is input queued without VOQs: each input port holds one FIFO
	// per data VL, and only the head of each FIFO is routed and handed to
	// its output; the next packet is routed when the head has left (its
	// output sent it, or it was dropped). A head waiting for a congested
	// output blocks the packets behind it on the same VL of the same
	// input (head-of-line blocking), not other VLs nor other inputs. VL15
	// and MADs for the switch's agent bypass the FIFOs.
	ArchIQ // iq
)

// archs are the architectures, named as --switch-arch spells them.
var archs = enum.New("switch architecture", ArchVOQ, ArchIQ)

// ParseArch reads "voq" or "iq".
func ParseArch(s string) (Arch, error) { return archs.Parse(s) }

// MarshalText implements encoding.TextMarshaler.
func (a Arch) MarshalText() ([]byte, error) { return archs.Marshal(a) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Arch) UnmarshalText(b []byte) error { return archs.Unmarshal(a, b) }

// Arch returns the switch's architecture.
func (s *Switch) Arch() Arch { return Arch(s.arch.Load()) }

// SetArch changes the switch's architecture at run time, for the packets
// received from now on. Packets already in an input FIFO still leave
// through it, and while a VL's FIFO holds any, the VL's new packets queue
// behind them even in ArchVOQ: the change never reorders a VL's packets,
// and takes effect on each input VL once its FIFO is empty (at once on an
// idle switch).
func (s *Switch) SetArch(a Arch) error {
	if !archs.Valid(a) {
		return fmt.Errorf("%w: switch architecture %v", ErrConfig, a)
	}
	s.arch.Store(uint32(a))
	return nil
}

// inQueue is one input port's FIFOs in the IQ architecture.
//
// head[vl] is the packet of VL vl that has been (or is about to be)
// routed and handed on; wait[vl] the packets behind it. The release hook
// (released) learns that a head left by comparing pointers, and makes
// the next packet the head. ready marks heads not routed yet; running
// says a goroutine is routing them (drain). Whoever makes a head ready
// routes it only if no other goroutine is at it, so a head that is
// dropped while being routed (its release making the next one ready, on
// the same goroutine) never recurses: the loop already running picks it
// up.
type inQueue struct {
	// heads counts the VLs with a head, so that the hook, called on
	// every release, costs one atomic load while the FIFOs are empty.
	heads atomic.Int32

	mu      sync.Mutex
	head    [port.MaxDataVLs]*port.Packet
	wait    [port.MaxDataVLs]pktRing
	ready   uint16
	running bool
}

// queueInput takes pkt, a data packet to switch that came in on port in,
// into the input's FIFO of its VL when the architecture or the FIFO asks
// for it, and reports whether it did; the packet is then routed when it
// reaches the head. False leaves the packet to be routed at once.
func (s *Switch) queueInput(in uint8, pkt *port.Packet) bool {
	q := &s.iq[in]
	iq := s.Arch() == ArchIQ
	if !iq && q.heads.Load() == 0 {
		return false
	}
	vl := pkt.VL()
	q.mu.Lock()
	if q.head[vl] != nil {
		q.wait[vl].push(pkt)
		q.mu.Unlock()
		return true
	}
	if !iq {
		q.mu.Unlock() // VOQ, and this VL's FIFO has drained
		return false
	}
	q.head[vl] = pkt
	q.heads.Add(1)
	q.ready |= 1 << vl
	s.drain(in, q)
	return true
}

// released is port in's release hook (port.Config.OnRelease): when pkt
// was the head of its VL's FIFO, it has left, and the next packet is
// routed.
func (s *Switch) released(in uint8, pkt *port.Packet) {
	q := &s.iq[in]
	vl := pkt.VL()
	if q.heads.Load() == 0 || vl >= port.MaxDataVLs {
		return
	}
	q.mu.Lock()
	if q.head[vl] != pkt {
		q.mu.Unlock()
		return
	}
	next, ok := q.wait[vl].pop()
	q.head[vl] = next
	if !ok {
		q.heads.Add(-1)
		q.mu.Unlock()
		return
	}
	q.ready |= 1 << vl
	s.drain(in, q)
}

// drain routes the ready heads of input in, unless another goroutine is
// doing so already. It is called with q.mu held and returns with it
// released; it routes without holding it.
func (s *Switch) drain(in uint8, q *inQueue) {
	if q.running {
		q.mu.Unlock()
		return
	}
	q.running = true
	p := s.Port(in)
	for q.ready != 0 {
		vl := bits.TrailingZeros16(q.ready)
		q.ready &^= 1 << vl
		pkt := q.head[vl]
		q.mu.Unlock()
		s.route(in, p, pkt)
		q.mu.Lock()
	}
	q.running = false
	q.mu.Unlock()
}

// dropInput drops the packets waiting in port n's FIFOs, its input buffer
// being gone with the port Down; each counts as DropInputDown on it, as
// the orphans at the outputs do. A head already handed on is an orphan
// there, and its release finds its FIFO empty.
func (s *Switch) dropInput(n uint8) {
	q := &s.iq[n]
	if q.heads.Load() == 0 {
		return
	}
	var gone []*port.Packet
	q.mu.Lock()
	for vl := range q.wait {
		for {
			pkt, ok := q.wait[vl].pop()
			if !ok {
				break
			}
			gone = append(gone, pkt)
		}
	}
	q.mu.Unlock()
	p := s.Port(n)
	for _, pkt := range gone {
		if p != nil {
			p.CountDropPacket(port.DropInputDown, pkt.Bytes)
		}
		pkt.Release()
	}
}

// InputQueued returns how many packets wait in port n's FIFO of data VL
// vl behind its head (IQ architecture), and whether the VL has a head out.
func (s *Switch) InputQueued(n uint8, vl int) (waiting int, head bool) {
	if int(n) >= len(s.iq) || vl < 0 || vl >= port.MaxDataVLs {
		return 0, false
	}
	q := &s.iq[n]
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.wait[vl].n, q.head[vl] != nil
}

// pktRing is a growable ring of packets; it allocates only to grow.
type pktRing struct {
	buf  []*port.Packet
	head int
	n    int
}

func (r *pktRing) push(pkt *port.Packet) {
	if r.n == len(r.buf) {
		nb := make([]*port.Packet, max(2*len(r.buf), 8))
		for i := range r.n {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = pkt
	r.n++
}

func (r *pktRing) pop() (*port.Packet, bool) {
	if r.n == 0 {
		return nil, false
	}
	pkt := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return pkt, true
}
