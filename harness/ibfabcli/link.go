package ibfabcli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"ibfab/harness"
)

const (
	linkSynopsis = "link N NODE[PORT] down|up|flap [--period D] [--count K]"
	linkDesc     = `
Sets the veth of NODE's port (every cabled port without [PORT]) down or up,
as pulling and plugging a cable would: both ends lose their carrier and
their ports go Down; up, they train again (LinkUp, Init) and wait for the
SM. flap takes the link down for D, then up for D, K times (default once).`
)

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
		if err := harness.SetLink(pos[0], node, port, pos[2] == "up"); err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
		fmt.Fprintf(env.Stdout, "%s %s\n", what, pos[2])
	case "flap":
		if *period <= 0 || *count < 1 {
			return usageErr(fmt.Errorf("--period %v --count %d: want both positive", *period, *count))
		}
		err := harness.FlapLink(context.Background(), pos[0], node, port, *period, *count, func(i int, up bool) {
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
