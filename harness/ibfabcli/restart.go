package ibfabcli

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"ibfab/harness"
)

const (
	restartSynopsis = "restart N NODE [--timeout D]"
	restartDesc     = `
Restarts NODE's process of fabric N: kills it (SIGKILL) if it runs, starts
it again in its namespace with the arguments it had, tells it and its
neighbours each other's processes, and waits until its cabled ports have
trained again (LinkUp, Init: the SM makes them Active).`
)

func runRestart(env *Env, args []string) error {
	const cmd = "restart"
	fs := flagSet(cmd)
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the node's links to train")
	pos, help, err := parseInterspersed(env, fs, cmd, restartSynopsis, restartDesc, args)
	if help || err != nil {
		return err
	}
	if len(pos) != 2 {
		return &UsageError{Cmd: cmd, Usage: restartSynopsis, Err: errors.New("want a fabric name and a node")}
	}
	pid, note, err := harness.Restart(pos[0], pos[1], *timeout)
	if note != "" {
		fmt.Fprintf(env.Stderr, "ibfab restart: %s\n", note)
	}
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	fmt.Fprintf(env.Stdout, "restarted %s of fabric %s: pid %s, links trained\n", pos[1], pos[0], strconv.Itoa(pid))
	return nil
}
