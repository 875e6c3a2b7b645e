package fifo

import "sync"

// Queue is a FIFO of up to Limit items (0: no limit). Its methods are
// safe for concurrent use; one consumer waits on Ready and then Pops
// until Pop reports empty.
type Queue[T any] struct {
	limit int
	ready chan struct{}

	mu    sync.Mutex
	items []T
	head  int
}

// New returns a queue of at most limit items (0: no limit).
func New[T any](limit int) *Queue[T] {
	return &Queue[T]{limit: limit, ready: make(chan struct{}, 1)}
}

// Push appends v and reports whether it fit: false, and v not queued,
// when the queue holds Limit items.
func (q *Queue[T]) Push(v T) bool {
	q.mu.Lock()
	if q.limit > 0 && len(q.items)-q.head >= q.limit {
		q.mu.Unlock()
		return false
	}
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// Pop removes and returns the oldest item; ok is false when the queue is
// empty.
func (q *Queue[T]) Pop() (v T, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.items) {
		return v, false
	}
	v = q.items[q.head]
	var zero T
	q.items[q.head] = zero // let the item go
	q.head++
	switch {
	case q.head == len(q.items):
		q.items, q.head = q.items[:0], 0
	case q.head >= 1024 && q.head*2 >= len(q.items):
		// Move the live half down rather than let a queue that never
		// empties keep every slot it ever used.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return v, true
}

// Len returns how many items are queued.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) - q.head
}

// Ready receives a value after a Push into the queue; a consumer that
// woke on it Pops until the queue is empty, as several Pushes may share
// one signal.
func (q *Queue[T]) Ready() <-chan struct{} { return q.ready }
