package tidmemo

import "sync"

// Memo maps the low bits of the TIDs of the last Size requests to the
// upper bits their callers gave them. It is safe for concurrent use.
type Memo struct {
	lowMask uint64

	mu   sync.Mutex
	hi   map[uint64]entry // by TID & lowMask
	ring []entry          // the records in order, oldest at next
	next int
	seq  uint64
}

type entry struct {
	key, seq, hi uint64
}

// New returns a Memo for TIDs whose lowBits low bits survive the stack,
// remembering the last size requests.
func New(lowBits uint, size int) *Memo {
	return &Memo{lowMask: 1<<lowBits - 1, hi: make(map[uint64]entry, size), ring: make([]entry, size)}
}

// Remember records the upper bits of a request's TID, forgetting the
// oldest record when full.
func (m *Memo) Remember(tid uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	e := entry{key: tid & m.lowMask, seq: m.seq, hi: tid &^ m.lowMask}
	if old := m.ring[m.next]; old.seq != 0 && m.hi[old.key].seq == old.seq {
		delete(m.hi, old.key)
	}
	m.ring[m.next] = e
	m.next = (m.next + 1) % len(m.ring)
	m.hi[e.key] = e
}

// Restore returns tid with the upper bits recorded for its low bits put
// back, and whether there was a record; forget drops the record, for a
// transaction that is over.
func (m *Memo) Restore(tid uint64, forget bool) (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.hi[tid&m.lowMask]
	if !ok {
		return tid, false
	}
	if forget {
		delete(m.hi, e.key)
	}
	return tid&m.lowMask | e.hi, true
}
