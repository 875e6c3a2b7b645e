package clock

import (
	"container/heap"
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Precise returns a real clock whose timers fire within microseconds of
// their time, where time.AfterFunc's may fire up to a millisecond late:
// the Go runtime waits for its next timer in epoll_wait, whose timeout is
// in whole milliseconds, so a sub-millisecond timer in an idle process
// waits at least one. That lateness is what a paced link's next packet, a
// traffic generator's next arrival and a hop's latency would otherwise
// carry. Precise keeps its own timers in a heap and arms one timerfd (a
// kernel high-resolution timer) for the earliest; the runtime's poller
// wakes on it like on any socket. Every process shares one; if the timerfd
// cannot be made, Precise is Real.
func Precise() Clock { return sharedPrecise() }

var sharedPrecise = sync.OnceValue(func() Clock {
	c, err := newPrecise()
	if err != nil {
		return Real()
	}
	return c
})

type precise struct {
	// file is the timerfd in the runtime poller, fd its descriptor for
	// timerfd_settime: file.Fd() would put it in blocking mode, and the
	// loop's read would then hold a thread until the next expiry.
	file *os.File
	fd   int

	mu      sync.Mutex
	h       timerHeap
	seq     uint64
	armedAt time.Time // the timerfd's expiry; zero when disarmed
}

var _ Clock = (*precise)(nil)

func newPrecise() (*precise, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	c := &precise{file: os.NewFile(uintptr(fd), "timerfd"), fd: fd}
	rc, err := c.file.SyscallConn()
	if err != nil {
		c.file.Close()
		return nil, err
	}
	go c.loop(rc)
	return c, nil
}

func (c *precise) Now() time.Time { return time.Now() }

func (c *precise) AfterFunc(d time.Duration, f func()) Timer {
	t := &preciseTimer{c: c, timerEntry: timerEntry{f: f, index: -1}}
	t.Reset(d)
	return t
}

// loop waits for the timerfd and starts the callbacks that are due, each
// on its own goroutine as time.AfterFunc does (a callback may block).
func (c *precise) loop(rc interface {
	Read(func(fd uintptr) bool) error
}) {
	var buf [8]byte
	for {
		err := rc.Read(func(fd uintptr) bool {
			_, err := unix.Read(int(fd), buf[:])
			return !errors.Is(err, unix.EAGAIN)
		})
		if err != nil {
			return // the clock lives as long as the process
		}
		c.mu.Lock()
		c.armedAt = time.Time{}
		now := time.Now()
		for len(c.h) > 0 && !c.h[0].when.After(now) {
			t := heap.Pop(&c.h).(*timerEntry)
			go t.f()
		}
		c.armLocked()
		c.mu.Unlock()
	}
}

// armLocked sets the timerfd for the earliest timer, unless it is set for
// that or an earlier moment already (an early expiry with nothing due
// only re-arms).
func (c *precise) armLocked() {
	if len(c.h) == 0 {
		return
	}
	when := c.h[0].when
	if !c.armedAt.IsZero() && !when.Before(c.armedAt) {
		return
	}
	// Relative to now: time.Time's monotonic reading is the runtime's
	// CLOCK_MONOTONIC, but not exposed; a zero value would disarm.
	d := max(time.Until(when), 1)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if unix.TimerfdSettime(c.fd, 0, &spec, nil) == nil {
		c.armedAt = when
	}
}

type preciseTimer struct {
	c *precise
	timerEntry
}

func (t *preciseTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	first := t.index == 0
	heap.Remove(&c.h, t.index)
	if first {
		c.rearmLocked()
	}
	return true
}

func (t *preciseTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	pending := t.index >= 0
	first := t.index == 0
	c.seq++
	t.when, t.seq = time.Now().Add(d), c.seq
	if pending {
		heap.Fix(&c.h, t.index)
	} else {
		heap.Push(&c.h, &t.timerEntry)
	}
	if first {
		c.rearmLocked()
	} else {
		c.armLocked()
	}
	return pending
}

// rearmLocked follows the earliest timer when it moved later or went
// away. The timerfd left set for it would wake an idle process for
// nothing (a port that puts off its liveness deadline as packets arrive
// does that all the time), so it is set again — unless the new earliest
// is so close that the early wake-up costs less than the system call.
func (c *precise) rearmLocked() {
	switch {
	case c.armedAt.IsZero():
		c.armLocked()
	case len(c.h) == 0:
		if unix.TimerfdSettime(c.fd, 0, &unix.ItimerSpec{}, nil) == nil {
			c.armedAt = time.Time{}
		}
	case c.h[0].when.Sub(c.armedAt) > rearmGain:
		c.armedAt = time.Time{}
		c.armLocked()
	default:
		c.armLocked()
	}
}

// rearmGain is how much later the earliest timer must have moved for
// rearmLocked to set the timerfd again.
const rearmGain = time.Millisecond
