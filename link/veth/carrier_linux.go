package veth

import (
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// maxResubscribe bounds how often the carrier watch subscribes again after
// its subscription failed, so a netlink socket that keeps failing cannot
// make it spin.
const maxResubscribe = 100

// subscribe starts an rtnetlink link subscription in the endpoint's
// namespace; it ends when nlDone is closed, and then closes the channel.
// A thread already in it subscribes without entering it (setns(2) needs
// CAP_SYS_ADMIN, which a node in a container may lack).
func (e *Endpoint) subscribe() (<-chan netlink.LinkUpdate, error) {
	ch := make(chan netlink.LinkUpdate, 16)
	var o netlink.LinkSubscribeOptions
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cur, err := netns.Get(); err != nil || !cur.Equal(e.ns) {
		o.Namespace = &e.ns
		if err == nil {
			cur.Close()
		}
	} else {
		cur.Close()
	}
	err := netlink.LinkSubscribeWithOptions(ch, e.nlDone, o)
	return ch, err
}

// watch follows the interface's IFF_LOWER_UP flag through link updates
// until Close. It always drains a subscription to its end, so the netlink
// library's goroutines never block sending to it.
func (e *Endpoint) watch(updates <-chan netlink.LinkUpdate) {
	defer close(e.watchDone)
	for range maxResubscribe {
		for u := range updates {
			if int(u.Index) != e.ifindex {
				continue
			}
			e.setCarrier(u.Header.Type == unix.RTM_NEWLINK && u.Flags&unix.IFF_LOWER_UP != 0)
		}
		select {
		case <-e.nlDone:
			return
		default:
		}
		// The subscription failed (a receive buffer overrun, say) and
		// updates may be lost: subscribe again and re-read the flag.
		var err error
		if updates, err = e.subscribe(); err != nil {
			return
		}
		e.nlMu.Lock()
		l, err := e.nlh.LinkByIndex(e.ifindex)
		e.nlMu.Unlock()
		e.setCarrier(err == nil && l.Attrs().RawFlags&unix.IFF_LOWER_UP != 0)
	}
	for range updates {
	}
}

// setCarrier records the carrier state and reports a change to the
// Dispatcher, if attached and not closing.
func (e *Endpoint) setCarrier(up bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.carrier.Swap(up) == up {
		return
	}
	if e.d != nil && !e.down {
		e.d.CarrierChanged(up)
	}
}
