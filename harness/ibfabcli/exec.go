package ibfabcli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"

	"ibfab/harness"
	"ibfab/internal/cli"
	"ibfab/simproto"
	"ibfab/umadproto"
)

const (
	execSynopsis = "exec [--umad[=sim] [--sim NAME] [--umad-socket NAME]] N NODE -- CMD [ARG...]"
	execDesc     = `
Runs CMD in the network namespace of NODE of fabric N, with the terminal's
standard input and output, and exits with CMD's status; SIGINT, SIGTERM,
SIGHUP and SIGQUIT sent to ibfab exec go to CMD. The node's ports are the
interfaces p1..pN there: tcpdump -i p1 sees the frames arriving
at port 1 (ibfab capture sees both directions).
IBFAB_FABRIC and IBFAB_NODE are set in CMD's environment.

With --umad (NODE an HCA) CMD also gets LD_PRELOAD=libibfabumad.so, ibfab's
umad shim (make shim; found next to ibfab, or at $IBFAB_UMAD_SHIM), and
IBFAB_UMAD_SOCKET, so that unmodified OpenSM, infiniband-diags and ibping
talk to the HCA's MAD endpoint as they would to the kernel's umad: agents
by class and method (ibping -S gets its pings), RMPP (saquery gets whole
tables), P_Key index, timeouts and retries. --umad=sim preloads Debian's
libumad2sim instead, with IBSIM_SOCKNAME: the ibsim protocol, one 256-byte
MAD per transfer, as against ibsim itself:
  ibfab exec --umad default ca4 -- opensm --once -f /tmp/opensm.log
  ibfab exec --umad default ca7 -- saquery NR
  ibfab exec --umad default ca7 -- ibping -S
  ibfab exec --umad=sim default ca7 -- smpquery nodeinfo 1`
	killSynopsis = "kill N NODE"
	killDesc     = `
Kills NODE's process of fabric N with SIGKILL, as a crash would: its links
stay cabled but go dark at once, and its neighbours take them Down.`
)

func runExec(env *Env, args []string) error {
	const cmd = "exec"
	fs := flagSet(cmd)
	var mode harness.UMADMode
	fs.Var(umadFlag{&mode}, "umad", "preload ibfab's umad shim (or with =sim libumad2sim): OpenSM and infiniband-diags use NODE's MAD endpoint")
	sim := fs.String("sim", simproto.BaseFromEnv(), "base `NAME` of the HCA's ibsim-protocol attach point (ibhca --sim), for --umad=sim")
	socket := fs.String("umad-socket", umadproto.SocketFromEnv(), "abstract socket `NAME` of the HCA's MAD endpoint (ibhca --umad), for --umad")
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
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, env.Stdout, env.Stderr
	err := harness.Exec(name, node, c, harness.ExecOptions{UMAD: mode, Socket: *socket, Sim: *sim})
	if err == nil {
		return nil
	}
	if code, ok := harness.ExitStatus(err); ok {
		return &cli.ExitCodeError{Code: code}
	}
	return &CommandError{Cmd: cmd, Err: err}
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
	if err := harness.Kill(fs.Arg(0), fs.Arg(1)); err != nil {
		return &CommandError{Cmd: cmd, Err: err}
	}
	fmt.Fprintf(env.Stdout, "killed %s of fabric %s\n", fs.Arg(1), fs.Arg(0))
	return nil
}

// umadFlag is exec's --umad: a bool flag, so bare it means the shim;
// --umad=sim picks libumad2sim. It is the one enum flag that is not a
// flag.TextVar (which cannot be bare).
type umadFlag struct{ m *harness.UMADMode }

func (f umadFlag) String() string {
	if f.m == nil || *f.m == harness.UMADOff {
		return ""
	}
	return f.m.String()
}

func (f umadFlag) IsBoolFlag() bool { return true }

func (f umadFlag) Set(v string) error {
	if err := f.m.UnmarshalText([]byte(v)); err != nil {
		return fmt.Errorf("--umad: %w", err)
	}
	return nil
}
