package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"

	"ibfab/internal/fabricnet"
)

const (
	linkSynopsis = "link N NODE[PORT] down|up|flap [--period D] [--count K]"
	linkDesc     = `
Sets the veth of NODE's port (every cabled port without [PORT]) down or up,
as pulling and plugging a cable would: both ends lose their carrier and
their ports go Down; up, they train again (LinkUp, Init) and wait for the
SM. flap takes the link down for D, then up for D, K times (default once).`
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
	targets, err := linkTargets(fabric, node, port)
	if err != nil {
		return err
	}
	return setLinks(targets, up)
}

func setLinks(targets []sender, up bool) error {
	var errs []error
	for _, s := range targets {
		err := fabricnet.Do(s.node.Namespace, func() error {
			l, err := netlink.LinkByName(fabricnet.PortIface(s.port))
			if err != nil {
				return err
			}
			if up {
				return netlink.LinkSetUp(l)
			}
			return netlink.LinkSetDown(l)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.from(), err))
		}
	}
	return errors.Join(errs...)
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

func runLink(env *Env, args []string) error {
	const cmd = "link"
	fs := flagSet(cmd)
	period := fs.Duration("period", time.Second, "flap: how long the link stays down, then up")
	count := fs.Int("count", 1, "flap: how many times")
	pos, help, err := parseInterspersed(env, fs, cmd, linkSynopsis, linkDesc, args)
	if help || err != nil {
		return err
	}
	usageErr := func(err error) error { return &UsageError{Cmd: cmd, Usage: linkSynopsis, Err: err} }
	if len(pos) != 3 {
		return usageErr(errors.New("want a fabric name, NODE[PORT] and down, up or flap"))
	}
	node, port, err := parsePortArg(pos[1])
	if err != nil {
		return usageErr(err)
	}
	what := pos[1]
	switch pos[2] {
	case "down", "up":
		if err := SetLink(pos[0], node, port, pos[2] == "up"); err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
		fmt.Fprintf(env.Stdout, "%s %s\n", what, pos[2])
	case "flap":
		if *period <= 0 || *count < 1 {
			return usageErr(fmt.Errorf("--period %v --count %d: want both positive", *period, *count))
		}
		err := FlapLink(context.Background(), pos[0], node, port, *period, *count, func(i int, up bool) {
			state := "down"
			if up {
				state = "up"
			}
			fmt.Fprintf(env.Stdout, "%s %s (%s/%d)\n", what, state, strconv.Itoa(i+1), *count)
		})
		if err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
	default:
		return usageErr(fmt.Errorf("%q: want down, up or flap", pos[2]))
	}
	return nil
}
