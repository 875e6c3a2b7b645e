package fifo

import "sync"

// Queue is a FIFO of up to Limit items (0: no limit). Its methods are
// safe for concurrent use; one consumer Serves it (or Pops).
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

// Serve hands the queue's items to handle in order, waiting for more
// while it is empty, until done is closed or handle returns false. One
// goroutine serves a queue.
func (q *Queue[T]) Serve(done <-chan struct{}, handle func(T) bool) {
	for {
		select {
		case <-done:
			return
		case <-q.ready:
		}
		// Several Pushes may share one signal: empty the queue.
		for v, ok := q.Pop(); ok; v, ok = q.Pop() {
			if !handle(v) {
				return
			}
		}
	}
}
