package simclient

import "sync"

// The server owns bits 63-48 of the TID of every request (ibsim writes the
// client's slot there); tidMemo remembers what the caller had in them, by
// the other 48 bits, for the last tidMemoSize requests.
const (
	tidLowMask  = 1<<48 - 1
	tidMemoSize = 4096
)

type tidMemo struct {
	mu   sync.Mutex
	hi   map[uint64]tidEntry // by TID & tidLowMask
	ring [tidMemoSize]tidEntry
	next int
	seq  uint64
}

type tidEntry struct {
	key, seq uint64
	hi       uint16
}

func (m *tidMemo) init() { m.hi = make(map[uint64]tidEntry, tidMemoSize) }

// remember records the high bits of a request's TID, forgetting the oldest
// record when full.
func (m *tidMemo) remember(tid uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	e := tidEntry{key: tid & tidLowMask, seq: m.seq, hi: uint16(tid >> 48)}
	if old := m.ring[m.next]; old.seq != 0 && m.hi[old.key].seq == old.seq {
		delete(m.hi, old.key)
	}
	m.ring[m.next] = e
	m.next = (m.next + 1) % tidMemoSize
	m.hi[e.key] = e
}

// recall returns the high bits recorded for tid, and forgets them when the
// transaction is over.
func (m *tidMemo) recall(tid uint64, forget bool) (uint16, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.hi[tid&tidLowMask]
	if ok && forget {
		delete(m.hi, e.key)
	}
	return e.hi, ok
}
