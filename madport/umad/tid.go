package umad

import "sync"

// The kernel owns the upper 32 bits of the TID of every request (it writes
// the agent's hi_tid there, to route the response back); tidMemo
// remembers what the caller had in them, by the lower 32 bits, for the
// last tidMemoSize requests.
const (
	tidLowMask  = 1<<32 - 1
	tidMemoSize = 8192
)

type tidMemo struct {
	mu   sync.Mutex
	hi   map[uint32]tidEntry // by TID & tidLowMask
	ring [tidMemoSize]tidEntry
	next int
	seq  uint64
}

type tidEntry struct {
	seq uint64
	key uint32
	hi  uint32
}

func (m *tidMemo) init() { m.hi = make(map[uint32]tidEntry, tidMemoSize) }

// remember records the upper bits of a request's TID, forgetting the
// oldest record when full.
func (m *tidMemo) remember(tid uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	e := tidEntry{seq: m.seq, key: uint32(tid), hi: uint32(tid >> 32)}
	if old := m.ring[m.next]; old.seq != 0 && m.hi[old.key].seq == old.seq {
		delete(m.hi, old.key)
	}
	m.ring[m.next] = e
	m.next = (m.next + 1) % tidMemoSize
	m.hi[e.key] = e
}

// recall returns the upper bits recorded for tid, and forgets them when
// the transaction is over.
func (m *tidMemo) recall(tid uint64, forget bool) (uint32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.hi[uint32(tid)]
	if ok && forget {
		delete(m.hi, e.key)
	}
	return e.hi, ok
}
