package arbbench

import (
	"strings"
	"time"

	"ibfab/sm/arbtable"
)

// maxDepth bounds task nesting: deletion / defragmentation / exchange /
// update is the deepest the table goes.
const maxDepth = 8

// path is a task with the tasks it runs inside, one 4-bit digit each,
// innermost lowest: the key of a series of samples.
type path uint32

// timer is an arbtable.Tracer that times every task with the monotonic
// clock and files the sample under its path. The clock is read last in
// Begin and first in End, so a task's time includes the bookkeeping of
// the tasks nested in it but not its own.
type timer struct {
	stack  [maxDepth]frame
	depth  int
	series map[path]*[]int32
}

type frame struct {
	task  arbtable.Task
	start time.Time
}

func newTimer() *timer { return &timer{series: map[path]*[]int32{}} }

// Begin implements arbtable.Tracer.
func (tm *timer) Begin(k arbtable.Task) {
	if tm.depth == maxDepth {
		tm.depth++ // too deep to time: count it so End pairs up
		return
	}
	tm.stack[tm.depth].task = k
	tm.depth++
	tm.stack[tm.depth-1].start = time.Now()
}

// End implements arbtable.Tracer. An insertion that fails ends as
// FailedInsertion and is filed under that name.
func (tm *timer) End(k arbtable.Task, _ int) {
	now := time.Now()
	tm.depth--
	if tm.depth >= maxDepth {
		return
	}
	d := now.Sub(tm.stack[tm.depth].start)
	tm.stack[tm.depth].task = k
	key := tm.key()
	s := tm.series[key]
	if s == nil {
		s = new([]int32)
		tm.series[key] = s
	}
	*s = append(*s, int32(min(d, time.Duration(1<<31-1))))
}

// key is the path of the task at the top of the stack.
func (tm *timer) key() path {
	var p path
	for i := 0; i <= tm.depth; i++ {
		p = p<<4 | path(tm.stack[i].task+1)
	}
	return p
}

// name is the path as "deletion/defragmentation/exchange".
func (p path) name() string {
	var parts []string
	for ; p != 0; p >>= 4 {
		parts = append(parts, arbtable.Task(p&15-1).String())
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "/")
}
