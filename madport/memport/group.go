package memport

import (
	"errors"
	"fmt"
	"sync"
)

// Group joins ports of one fabric that are each used by a goroutine of
// their own (two subnet managers on two CAs, say), so that they share the
// fabric's emulated time as processes on a real fabric share the wall
// clock:
//
//   - a MAD one of them sends is collected at once for whichever port of
//     the group it reaches, whose Recv wakes;
//   - the clock moves to its next timer only when every open port of the
//     group waits in Recv with nothing queued: while one SM still has work
//     at the present moment (an answer to handle, a table to compute), no
//     other SM's wait lets time pass, and no timeout fires early;
//   - once it has moved, every port's Recv looks again.
//
// A port of a group counts as waiting until its goroutine first sends; one
// that its goroutine no longer reads must be closed, or time stops for the
// others. The ports share one lock: the fabric is used
// by one of them at a time.
type Group struct {
	mu    sync.Mutex
	ports []*Port
}

// NewGroup joins ports, all of one fabric, none used yet and none in
// another group.
func NewGroup(ports ...*Port) (*Group, error) {
	if len(ports) == 0 {
		return nil, errors.New("memport: a group of no ports")
	}
	g := &Group{ports: ports}
	for i, p := range ports {
		switch {
		case p.f != ports[0].f:
			return nil, fmt.Errorf("memport: port %d of the group is on another fabric", i)
		case p.group != nil:
			return nil, fmt.Errorf("memport: port %d is in a group already", i)
		}
		for _, q := range ports[:i] {
			if q == p {
				return nil, fmt.Errorf("memport: port %d is in the group twice", i)
			}
		}
	}
	for _, p := range ports {
		// Not read yet: nothing holds time back until its goroutine
		// starts (with a Send).
		p.group, p.mu, p.idle = g, &g.mu, true
	}
	return g, nil
}

// wakeLocked makes every Recv waiting in the group look again before the
// clock may move once more (a timer of its may just have fired); mu held.
// A port nobody reads stays as it is.
func (g *Group) wakeLocked() {
	for _, p := range g.ports {
		if !p.closed && p.waiting {
			p.idle = false
			p.wakeLocked()
		}
	}
}

// mayAdvanceLocked reports whether Recv on p may move the clock: p alone,
// or every open port of its group waiting; mu held.
func (p *Port) mayAdvanceLocked() bool {
	if p.group == nil {
		return true
	}
	for _, q := range p.group.ports {
		if !q.closed && !q.idle {
			return false
		}
	}
	return true
}

// timePassedLocked follows a move of the clock: in a group, every port
// looks again (a timer of its may have fired); mu held.
func (p *Port) timePassedLocked() {
	if p.group == nil {
		p.idle = false
		return
	}
	p.group.wakeLocked()
}
