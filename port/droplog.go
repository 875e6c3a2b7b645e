package port

import (
	"sync"

	"ibfab/wire"
)

// DropRecord is one dropped data packet, as a DropLog keeps it: when (the
// node's clock, Unix ns: at time scale 1 the fabric's real time, scaled
// the fabric's shared emulated time line), at which port and why, and
// the packet's LRH: who sent it to whom on which VL and SL. Sending tells
// a drop on the transmit side (queued when the link went down, refused by
// the port's state) from one on the receive side (unroutable, P_Key, …).
type DropRecord struct {
	At      int64
	SLID    uint16
	DLID    uint16
	Port    uint8
	Out     uint8 // a switch's output port the packet was routed to; 0: none or not known
	Cause   DropCause
	VL      uint8
	SL      uint8
	Sending bool
}

// DefaultDropLogSize is the ring a node process keeps: enough for the
// seconds of a fault's reaction under probe traffic (a few hundred
// packets a second cross a switch), small enough to read in one reply.
const DefaultDropLogSize = 4096

// DropLog is a fixed ring of a node's most recent data-packet drops,
// shared by its ports (Config.DropLog). Recording takes a mutex and writes
// one slot: no allocation, whatever the rate of drops; the oldest records
// are overwritten. Only data packets whose LRH is readable are recorded,
// not VL15's SMPs (the SM's own traffic, whose losses its retries report)
// nor link packets.
type DropLog struct {
	mu   sync.Mutex
	ring []DropRecord
	next uint64 // records ever written; the next goes to ring[next%len]
}

// NewDropLog returns a ring of n records (DefaultDropLogSize for n ≤ 0).
func NewDropLog(n int) *DropLog {
	if n <= 0 {
		n = DefaultDropLogSize
	}
	return &DropLog{ring: make([]DropRecord, n)}
}

// Record adds a drop; a nil log records nothing.
func (l *DropLog) Record(r DropRecord) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.ring[l.next%uint64(len(l.ring))] = r
	l.next++
	l.mu.Unlock()
}

// recordPacket records the drop of packet b at port num for cause c at
// ns, when b is a data packet with a readable LRH off VL15.
func (l *DropLog) recordPacket(ns int64, num uint8, c DropCause, sending bool, b []byte) {
	if l == nil {
		return
	}
	lrh := wire.LRH(b)
	if !lrh.IsValid() || lrh.VL() == VL15 {
		return
	}
	l.Record(DropRecord{At: ns, SLID: lrh.SLID(), DLID: lrh.DLID(), Port: num, Cause: c,
		VL: lrh.VL(), SL: lrh.SL(), Sending: sending})
}

// Since appends to dst the records kept whose time is at or after ns,
// oldest first, and returns it with the number of records ever written
// (a reader that sees it grow by more than the ring's size between two
// reads lost some).
func (l *DropLog) Since(ns int64, dst []DropRecord) ([]DropRecord, uint64) {
	if l == nil {
		return dst, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := uint64(len(l.ring))
	first := uint64(0)
	if l.next > n {
		first = l.next - n
	}
	for i := first; i < l.next; i++ {
		if r := l.ring[i%n]; r.At >= ns {
			dst = append(dst, r)
		}
	}
	return dst, l.next
}

// Size returns the ring's capacity.
func (l *DropLog) Size() int {
	if l == nil {
		return 0
	}
	return len(l.ring)
}
