package peerwatch

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"ibfab/link"
)

// Endpoint wraps a link.Endpoint; its carrier is the wrapped endpoint's
// and-ed with the watched peer process being alive.
type Endpoint struct {
	inner    link.Endpoint
	peerDead atomic.Bool

	// reportMu serializes carrier reports to the dispatcher and guards
	// d, reported and the watch state. It is never held while the inner
	// endpoint is called for a write, so a port that writes under its own
	// lock cannot deadlock with a report that takes that lock.
	reportMu sync.Mutex
	d        link.Dispatcher
	reported bool // the last level given to d
	watch    *os.File
	pid      int // watched
	gen      uint64
	closed   bool
	wg       sync.WaitGroup
}

var (
	_ link.Endpoint    = (*Endpoint)(nil)
	_ link.Transmitter = (*Endpoint)(nil)
)

// New wraps inner. Until Watch is called the carrier is inner's.
func New(inner link.Endpoint) *Endpoint { return &Endpoint{inner: inner} }

// Watch makes the carrier depend on process pid being alive, replacing the
// process watched before. A pid that is already gone takes the carrier
// down at once. A different process replacing a live one is a new peer
// behind the cable (a restarted neighbour): the carrier drops and comes
// back, so the link trains afresh even when the old process's death has
// not been seen yet. Watching the same pid again changes nothing.
func (e *Endpoint) Watch(pid int) error {
	e.reportMu.Lock()
	same := e.watch != nil && e.pid == pid
	replaced := e.watch != nil && e.pid != pid
	e.reportMu.Unlock()
	if same {
		return nil
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		e.setDead(true)
		return fmt.Errorf("peerwatch: pid %d: %w", pid, err)
	}
	f := os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", pid))
	e.reportMu.Lock()
	if e.closed {
		e.reportMu.Unlock()
		f.Close()
		return nil
	}
	if e.watch != nil {
		e.watch.Close() // ends the old waiter
	}
	e.watch, e.pid = f, pid
	e.gen++
	gen := e.gen
	e.wg.Add(1)
	e.reportMu.Unlock()
	if replaced {
		e.setDead(true)
	}
	e.setDead(false)
	go e.wait(f, gen)
	return nil
}

// wait blocks in the poller until the process behind f exits.
func (e *Endpoint) wait(f *os.File, gen uint64) {
	defer e.wg.Done()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	exited := false
	err = rc.Read(func(fd uintptr) bool {
		// A pidfd polls readable once its process has exited.
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(pfd, 0)
		exited = n > 0 && pfd[0].Revents&unix.POLLIN != 0
		return exited
	})
	if err != nil || !exited {
		return // closed: replaced by a newer watch, or the endpoint closed
	}
	e.reportMu.Lock()
	current := e.gen == gen && !e.closed
	e.reportMu.Unlock()
	if current {
		e.setDead(true)
	}
}

func (e *Endpoint) setDead(dead bool) {
	e.peerDead.Store(dead)
	e.report()
}

// report gives the dispatcher the current level if it changed.
func (e *Endpoint) report() {
	e.reportMu.Lock()
	defer e.reportMu.Unlock()
	if e.d == nil || e.closed {
		return
	}
	if up := e.Carrier(); up != e.reported {
		e.reported = up
		e.d.CarrierChanged(up)
	}
}

// PeerDead reports whether the watched peer process has exited.
func (e *Endpoint) PeerDead() bool { return e.peerDead.Load() }

// WritePacket implements link.Endpoint: nothing leaves toward a dead peer.
func (e *Endpoint) WritePacket(k link.Kind, pkt []byte) error {
	if e.peerDead.Load() {
		if err := link.CheckPacket(k, len(pkt)); err != nil {
			return err
		}
		return link.ErrNoCarrier
	}
	return e.inner.WritePacket(k, pkt)
}

// Attach implements link.Endpoint.
func (e *Endpoint) Attach(d link.Dispatcher) {
	e.reportMu.Lock()
	if e.d != nil {
		e.reportMu.Unlock()
		return
	}
	e.d = d
	e.reported = e.Carrier()
	e.reportMu.Unlock()
	e.inner.Attach(dispatcher{e, d})
}

// Carrier implements link.Endpoint.
func (e *Endpoint) Carrier() bool { return e.inner.Carrier() && !e.peerDead.Load() }

// Name implements link.Endpoint.
func (e *Endpoint) Name() string { return e.inner.Name() }

// SetTransmitter implements link.Transmitter with inner's, and fails when
// inner has none.
func (e *Endpoint) SetTransmitter(on bool) error {
	tr, ok := e.inner.(link.Transmitter)
	if !ok {
		return fmt.Errorf("peerwatch %s: %w", e.inner.Name(), link.ErrNoTransmitter)
	}
	return tr.SetTransmitter(on)
}

// Inner returns the wrapped endpoint.
func (e *Endpoint) Inner() link.Endpoint { return e.inner }

// Close implements link.Endpoint: it stops the watch and closes inner.
func (e *Endpoint) Close() error {
	e.reportMu.Lock()
	if !e.closed {
		e.closed = true
		if e.watch != nil {
			e.watch.Close()
		}
	}
	e.reportMu.Unlock()
	e.wg.Wait()
	return e.inner.Close()
}

// dispatcher passes packets through and folds the inner carrier into the
// combined level.
type dispatcher struct {
	e *Endpoint
	d link.Dispatcher
}

func (x dispatcher) DeliverPacket(k link.Kind, pkt []byte) {
	if x.e.peerDead.Load() {
		return // sent before the peer died; the cable is cut now
	}
	x.d.DeliverPacket(k, pkt)
}

func (x dispatcher) CarrierChanged(bool) { x.e.report() }
