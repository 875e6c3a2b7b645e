package clock

import (
	"container/heap"
	"sync"
	"time"
)

// Manual is a fake Clock for tests: time moves only by Advance, which runs
// the timers that come due in time order (ties in the order they were
// scheduled), each on the goroutine calling Advance with no lock held, with
// Now reading the timer's due time during the call. A callback may schedule,
// stop or reset timers, also ones due before the Advance target; those run
// in the same Advance.
//
// Manual is safe for concurrent use, but Advance itself is meant to be
// called by one goroutine (the test's) at a time.
type Manual struct {
	// mu protects now, seq and pending; changed is signalled (Broadcast)
	// whenever a timer is scheduled, for BlockUntil.
	mu      sync.Mutex
	changed sync.Cond
	now     time.Time
	seq     uint64 // scheduling order, breaks ties between equal due times
	pending timerHeap
}

var _ Clock = (*Manual)(nil)

// NewManual returns a Manual clock reading start.
func NewManual(start time.Time) *Manual {
	m := &Manual{now: start}
	m.changed.L = &m.mu
	return m
}

// Now returns the clock's current time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// AfterFunc schedules f at Now()+d. A d <= 0 makes f due now: it runs on the
// next Advance (Advance(0) included), never inside AfterFunc, so callers may
// hold their locks while scheduling.
func (m *Manual) AfterFunc(d time.Duration, f func()) Timer {
	t := &manualTimer{m: m, timerEntry: timerEntry{f: f, index: -1}}
	m.mu.Lock()
	m.schedule(t, d)
	m.mu.Unlock()
	return t
}

// schedule (re)inserts t at now+d; m.mu must be held.
func (m *Manual) schedule(t *manualTimer, d time.Duration) {
	if d < 0 {
		d = 0
	}
	m.seq++
	t.when, t.seq = m.now.Add(d), m.seq
	if t.index >= 0 {
		heap.Fix(&m.pending, t.index)
	} else {
		heap.Push(&m.pending, &t.timerEntry)
	}
	m.changed.Broadcast()
}

// Advance moves the clock forward by d (a negative d counts as 0), running
// every timer due up to the new time.
func (m *Manual) Advance(d time.Duration) {
	if d < 0 {
		d = 0
	}
	m.mu.Lock()
	m.runUntil(m.now.Add(d))
	m.mu.Unlock()
}

// AdvanceToNext moves the clock to the earliest pending timer's due time
// (not backwards if it is overdue) and runs every timer due then. It
// reports false, doing nothing, when no timer is pending.
func (m *Manual) AdvanceToNext() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return false
	}
	target := m.pending[0].when
	if target.Before(m.now) {
		target = m.now
	}
	m.runUntil(target)
	return true
}

// runUntil runs the timers due up to target and leaves now at target; m.mu
// must be held and is released around each callback.
func (m *Manual) runUntil(target time.Time) {
	for len(m.pending) > 0 && !m.pending[0].when.After(target) {
		t := heap.Pop(&m.pending).(*timerEntry)
		if t.when.After(m.now) {
			m.now = t.when
		}
		m.mu.Unlock()
		t.f()
		m.mu.Lock()
	}
	if target.After(m.now) {
		m.now = target
	}
}

// Next returns the due time of the earliest pending timer, and false when
// none is pending.
func (m *Manual) Next() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return time.Time{}, false
	}
	return m.pending[0].when, true
}

// Pending returns the number of timers scheduled and not yet run or
// stopped.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

// BlockUntil waits until at least n timers are pending. A test uses it to
// wait for a goroutine under test to arm its timer before calling Advance,
// without sleeping.
func (m *Manual) BlockUntil(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.pending) < n {
		m.changed.Wait()
	}
}

// manualTimer is a Timer of a Manual clock. index is its place in the
// pending heap, -1 when it is not pending; it and when/seq are guarded by
// m.mu.
type manualTimer struct {
	m *Manual
	timerEntry
}

var _ Timer = (*manualTimer)(nil)

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.m.pending, t.index)
	return true
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	was := t.index >= 0
	t.m.schedule(t, d)
	return was
}
