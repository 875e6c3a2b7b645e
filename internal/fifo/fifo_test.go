package fifo_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"ibfab/internal/fifo"
	"ibfab/internal/testsupport"
)

func TestMain(m *testing.M) { testsupport.VerifyTestMain(m) }

func TestOrderAndLimit(t *testing.T) {
	tests := []struct {
		name         string
		limit, push  int
		wantAccepted int
	}{
		{"no limit", 0, 5000, 5000},
		{"under the limit", 10, 7, 7},
		{"at the limit", 10, 25, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := fifo.New[int](tt.limit)
			accepted := 0
			for i := range tt.push {
				if q.Push(i) {
					accepted++
				}
			}
			assert.Equal(t, tt.wantAccepted, accepted)
			assert.Equal(t, tt.wantAccepted, q.Len())
			for i := range tt.wantAccepted {
				v, ok := q.Pop()
				require.True(t, ok)
				require.Equal(t, i, v, "first in, first out")
			}
			_, ok := q.Pop()
			assert.False(t, ok, "empty")
		})
	}
}

// TestInterleaved pushes and pops past the point where the queue moves
// its live items down, in order throughout.
func TestInterleaved(t *testing.T) {
	q := fifo.New[int](0)
	next, want := 0, 0
	for round := range 50 {
		for range 300 + round {
			q.Push(next)
			next++
		}
		for range 250 {
			v, ok := q.Pop()
			require.True(t, ok)
			require.Equal(t, want, v)
			want++
		}
	}
	assert.Equal(t, next-want, q.Len())
}

// TestServe: a consumer Serving the queue gets every item of concurrent
// producers exactly once.
func TestServe(t *testing.T) {
	const producers, each = 4, 5000
	q := fifo.New[int](0)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				q.Push(p*each + i)
			}
		}()
	}
	seen := make(map[int]bool)
	twice := -1
	q.Serve(nil, func(v int) bool {
		if seen[v] {
			twice = v
		}
		seen[v] = true
		return len(seen) < producers*each
	})
	wg.Wait()
	assert.Equal(t, -1, twice, "an item served twice")
	assert.Len(t, seen, producers*each)
	assert.Zero(t, q.Len())

	// A closed done ends Serve while the queue is empty.
	done := make(chan struct{})
	close(done)
	q.Serve(done, func(int) bool { t.Error("served from an empty queue"); return true })
}
