package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vishvananda/netlink"

	"ibfab/fabricnet"
	"ibfab/mgmtplane"
)

// linkTargets returns both ends of the links at node's cabled ports (port
// 0: all of them). Both ends are set down: the far end of a veth whose
// near end goes down loses its carrier through the kernel's link watch,
// which handles a device's events at most once a second unless urgent,
// and a veth's are not when its peer's index in the other namespace
// happens to equal its own. A cut soon after the link came up then
// reached the far end's port up to a second late, and its trap with it.
func linkTargets(fabric, node string, port int) ([]sender, error) {
	st, t, err := loadFabric(fabric)
	if err != nil {
		return nil, err
	}
	near, err := portSenders(st, t, node, port, false)
	if err != nil {
		return nil, err
	}
	both := near
	for _, s := range near {
		both = append(both, sender{node: s.peer, port: s.peerPort, peer: s.node, peerPort: s.port})
	}
	return both, nil
}

// SetLink sets the veth of node's port in fabric down or up (port 0: every
// cabled port of the node).
func SetLink(fabric, node string, port int, up bool) error {
	if st, err := openState(fabric); err == nil && st.Plane == PlaneMgmt {
		return mgmtCall(fabric, mgmtplane.OpLink, mgmtplane.LinkArgs{Node: node, Port: uint8(port), Up: up}, nil)
	}
	targets, err := linkTargets(fabric, node, port)
	if err != nil {
		return err
	}
	return setLinks(targets, up)
}

func setLinks(targets []sender, up bool) error {
	_, err := inNamespaces(targets, func(s sender, l netlink.Link) (bool, error) {
		if up {
			return true, netlink.LinkSetUp(l)
		}
		return true, netlink.LinkSetDown(l)
	})
	return err
}

// inNamespaces calls f with the veth of every target, the targets of one
// namespace in one visit to it and the namespaces all at once, and
// returns the targets f reported done and every error. The ends of a
// cable, or of all a dead device's links, change together, as they would
// in silicon: one visit after another (each a fresh thread and a netlink
// request or two) spread a switch kill's link losses over 12-40 ms, and
// an SM that met a neighbour still up probed the dead switch through it.
func inNamespaces(targets []sender, f func(s sender, l netlink.Link) (bool, error)) ([]sender, error) {
	groups := map[string][]sender{}
	var order []string
	for _, s := range targets {
		ns := s.node.Namespace
		if _, ok := groups[ns]; !ok {
			order = append(order, ns)
		}
		groups[ns] = append(groups[ns], s)
	}
	var (
		mu   sync.Mutex
		done []sender
		errs []error
		wg   sync.WaitGroup
	)
	for _, ns := range order {
		wg.Add(1)
		go func(group []sender) {
			defer wg.Done()
			err := fabricnet.Do(ns, func() error {
				for _, s := range group {
					l, err := netlink.LinkByName(fabricnet.PortIface(s.port))
					ok := false
					if err == nil {
						ok, err = f(s, l)
					}
					mu.Lock()
					if ok {
						done = append(done, s)
					}
					if err != nil {
						errs = append(errs, fmt.Errorf("%s: %w", s.from(), err))
					}
					mu.Unlock()
				}
				return nil
			})
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(groups[ns])
	}
	wg.Wait()
	return done, errors.Join(errs...)
}

// FlapLink takes node's port down for period and up for period, count
// times, ending up. progress, when set, sees each change. It stops early,
// with the link up, when ctx ends.
func FlapLink(ctx context.Context, fabric, node string, port int, period time.Duration, count int, progress func(i int, up bool)) error {
	if period <= 0 || count < 1 {
		return fmt.Errorf("flap: want a positive period and count, not %v and %d", period, count)
	}
	targets, err := linkTargets(fabric, node, port)
	if err != nil {
		return err
	}
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(period):
			return true
		}
	}
	for i := range count {
		if err := setLinks(targets, false); err != nil {
			return errors.Join(err, setLinks(targets, true))
		}
		if progress != nil {
			progress(i, false)
		}
		ok := wait()
		if err := setLinks(targets, true); err != nil {
			return err
		}
		if progress != nil {
			progress(i, true)
		}
		if !ok {
			return ctx.Err()
		}
		if i < count-1 && !wait() {
			return ctx.Err()
		}
	}
	return nil
}
