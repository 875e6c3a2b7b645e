package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"ibfab/internal/fabricnet"
)

// ExitCodeError carries the exit status of a command ibfab ran for the
// user (exec): Main exits with it and prints nothing more.
type ExitCodeError struct{ Code int }

func (e *ExitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

const (
	execSynopsis = "exec N NODE -- CMD [ARG...]"
	execDesc     = `
Runs CMD in the network namespace of NODE of fabric N, with the terminal's
standard input and output, and exits with CMD's status. The node's ports
are the interfaces p1..pN there: tcpdump -i p1 sees its frames.
IBFAB_FABRIC and IBFAB_NODE are set in CMD's environment.`
	killSynopsis = "kill N NODE"
	killDesc     = `
Kills NODE's process of fabric N with SIGKILL, as a crash would: its links
stay cabled but fall silent, and its neighbours take them Down.`
)

func runExec(env *Env, args []string) error {
	const cmd = "exec"
	fs := flagSet(cmd)
	if help, err := parseFlags(env, fs, cmd, execSynopsis, execDesc, args, -1); help || err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) < 2 {
		return &UsageError{Cmd: cmd, Usage: execSynopsis, Err: errors.New("want a fabric name and a node")}
	}
	name, node, argv := rest[0], rest[1], rest[2:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return &UsageError{Cmd: cmd, Usage: execSynopsis, Err: errors.New("missing command")}
	}
	_, n, err := lookupNode(name, node)
	if err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, env.Stdout, env.Stderr
	c.Env = append(os.Environ(), "IBFAB_FABRIC="+name, "IBFAB_NODE="+node)
	if err := fabricnet.Do(n.Namespace, c.Start); err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	err = c.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		code := ee.ExitCode()
		if code < 0 { // killed by a signal: the shell's convention
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
		return &ExitCodeError{Code: code}
	}
	return &CommandError{Cmd: cmd, Err: err}
}

// Kill sends SIGKILL to node's process of fabric name and waits until it
// is gone.
func Kill(name, node string) error {
	_, n, err := lookupNode(name, node)
	if err != nil {
		return err
	}
	if n.PID == 0 || !alive(n.PID) || !isNodeProcess(n.PID, name, node) {
		return fmt.Errorf("node %s of fabric %s is not running", node, name)
	}
	if err := syscall.Kill(n.PID, syscall.SIGKILL); err != nil {
		return err
	}
	for range 200 {
		if !alive(n.PID) {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("node %s (pid %d) still there 1 s after SIGKILL", node, n.PID)
}

func runKill(env *Env, args []string) error {
	const cmd = "kill"
	fs := flagSet(cmd)
	if help, err := parseFlags(env, fs, cmd, killSynopsis, killDesc, args, 2); help || err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return &UsageError{Cmd: cmd, Usage: killSynopsis, Err: errors.New("want a fabric name and a node")}
	}
	if err := Kill(fs.Arg(0), fs.Arg(1)); err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	fmt.Fprintf(env.Stdout, "killed %s of fabric %s\n", fs.Arg(1), fs.Arg(0))
	return nil
}
