package harness

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"ibfab/fabricnet"
	"ibfab/internal/cli"
	"ibfab/internal/ibsimrun"
	"ibfab/simproto"
	"ibfab/umadproto"
)

// ExitCodeError carries the exit status of a command ibfab ran for the
// user (exec): Main exits with it and prints nothing more.
type ExitCodeError = cli.ExitCodeError

const (
	execSynopsis = "exec [--umad[=sim] [--sim NAME] [--umad-socket NAME]] N NODE -- CMD [ARG...]"
	execDesc     = `
Runs CMD in the network namespace of NODE of fabric N, with the terminal's
standard input and output, and exits with CMD's status; SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to
ibfab exec go to CMD. The node's ports
are the interfaces p1..pN there: tcpdump -i p1 sees the frames arriving
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
	var mode UMADMode
	fs.Var(umadFlag{&mode}, "umad", "preload ibfab's umad shim (or with =sim libumad2sim): OpenSM and infiniband-diags use NODE's MAD endpoint")
	sim := fs.String("sim", simproto.BaseFromEnv(), "base `NAME` of the HCA's ibsim-protocol attach point (ibhca --sim), for --umad=sim")
	socket := fs.String("umad-socket", umadproto.SocketFromEnv(), "abstract socket `NAME` of the HCA's MAD endpoint (ibhca --umad), for --umad")
	if help, err := ParseFlags(env, fs, cmd, execSynopsis, execDesc, args, -1); help || err != nil {
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
	if mode != UMADOff {
		if n.Type != "hca" {
			return &CommandError{Cmd: cmd, Err: fmt.Errorf("--umad: %s is a %s; only an HCA has an attach point", node, n.Type)}
		}
		extra, err := ModeEnv(mode, *socket, *sim)
		if err != nil {
			return &CommandError{Cmd: cmd, Err: err}
		}
		c.Env = append(c.Env, extra...)
	}
	fwd := newForwarder()
	if err := fabricnet.Do(n.Namespace, c.Start); err != nil {
		fwd.stop()
		return &CommandError{Cmd: cmd, Err: err}
	}
	err = fwd.wait(c)
	switch mode {
	case UMADSim:
		RemoveUMADSysfs("", c.Process.Pid)
	case UMADShim:
		RemoveShimSysfs(c.Process.Pid)
	}
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

// RemoveUMADSysfs removes the sysfs tree libumad2sim made for process pid
// in directory dir ("" is the current one), ./sys-PID, which it leaves
// behind when the process is killed. Only a directory holding nothing but
// that tree's class/infiniband* directories is removed.
func RemoveUMADSysfs(dir string, pid int) {
	root := filepath.Join(dir, fmt.Sprintf("sys-%d", pid))
	ents, err := os.ReadDir(filepath.Join(root, "sys", "class"))
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "infiniband") {
			return
		}
	}
	os.RemoveAll(root)
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
	// A dead device's links go dark at once. A killed process's do only
	// once the kernel has torn it down, and closing each packet socket
	// waits for an RCU grace period: an 18-port switch's neighbours saw
	// carrier for another quarter second. So its links go down first
	// (both veth ends, see linkTargets), and come up again once it is
	// gone; its neighbours' ports stay Down all the same, watching a dead
	// peer (peerwatch), until a restart.
	// The process is stopped before: it must not see its own links go
	// (it would trap, and answer SMPs for a moment).
	if err := syscall.Kill(n.PID, syscall.SIGSTOP); err != nil {
		return err
	}
	dark, err := darken(name, node)
	if err != nil {
		return errors.Join(err, syscall.Kill(n.PID, syscall.SIGKILL), setLinks(dark, true))
	}
	killed := syscall.Kill(n.PID, syscall.SIGKILL)
	if killed == nil {
		killed = fmt.Errorf("node %s (pid %d) still there 1 s after SIGKILL", node, n.PID)
		for range 200 {
			if !alive(n.PID) {
				killed = nil
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return errors.Join(killed, setLinks(dark, true))
}

// darken sets down both veth ends of node's links that are up, each
// namespace in one visit and all at once (inNamespaces), and returns
// those it set down (on error too, so that they can be set up again).
func darken(fabric, node string) ([]sender, error) {
	targets, err := linkTargets(fabric, node, 0)
	if err != nil {
		return nil, err
	}
	return inNamespaces(targets, func(_ sender, l netlink.Link) (bool, error) {
		if l.Attrs().Flags&net.FlagUp == 0 {
			return false, nil
		}
		err := netlink.LinkSetDown(l)
		return err == nil, err
	})
}

func runKill(env *Env, args []string) error {
	const cmd = "kill"
	fs := flagSet(cmd)
	if help, err := ParseFlags(env, fs, cmd, killSynopsis, killDesc, args, 2); help || err != nil {
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

// UMADEnv returns what exec --umad adds to a command's environment:
// LD_PRELOAD with libumad2sim.so ahead of any library already preloaded,
// and IBSIM_SOCKNAME, the base name of the HCA's attach point ("" means
// ibsim's default, "sim").
func UMADEnv(base string) ([]string, error) {
	lib, err := ibsimrun.UMAD2Sim()
	if err != nil {
		return nil, err
	}
	if base == "" {
		base = simproto.DefaultBase
	}
	preload := lib
	if old := os.Getenv("LD_PRELOAD"); old != "" {
		preload += ":" + old
	}
	return []string{"LD_PRELOAD=" + preload, simproto.EnvSockName + "=" + base}, nil
}
