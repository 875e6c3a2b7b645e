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
	"ibfab/internal/ibsimrun"
	"ibfab/mgmtplane"
	"ibfab/simproto"
	"ibfab/umadproto"
)

// ExecOptions tune Exec. The zero value runs a program as it is.
type ExecOptions struct {
	// UMAD, other than UMADOff, preloads the umad shim or libumad2sim
	// (ModeEnv) so that the program talks to the node's MAD endpoint or
	// attach point through Socket or Sim ("" are the defaults).
	UMAD        UMADMode
	Socket, Sim string
}

// Exec runs c in the network namespace of node of fabric and waits for
// it, passing it the SIGINT, SIGTERM, SIGHUP and SIGQUIT this process
// gets meanwhile, with ExecEnv's environment added to c.Env (or to this
// process's when nil); with o.UMAD the node must be an HCA, and the
// sysfs tree the preloaded library leaves is removed afterwards. A
// program that ran and failed returns c.Wait's *exec.ExitError.
func Exec(fabric, node string, c *exec.Cmd, o ExecOptions) error {
	ns, env, err := ExecEnv(fabric, node, o)
	if err != nil {
		return err
	}
	if c.Env == nil {
		c.Env = os.Environ()
	}
	c.Env = append(c.Env, env...)
	fwd := newForwarder()
	if err := fabricnet.Do(ns, c.Start); err != nil {
		fwd.stop()
		return err
	}
	err = fwd.wait(c)
	switch o.UMAD {
	case UMADSim:
		RemoveUMADSysfs("", c.Process.Pid)
	case UMADShim:
		RemoveShimSysfs(c.Process.Pid)
	}
	return err
}

// ExecEnv returns the namespace a program for node of fabric runs in and
// what Exec adds to its environment: IBFAB_FABRIC and IBFAB_NODE, and
// with o.UMAD the preload and socket of its mode (ModeEnv). On a
// management-plane fabric it opens the HCA's endpoints and names their
// sockets, both, whichever the mode: they are not the defaults, and a Go
// client (ibsm --port sim or softumad) reads the variable of its own
// protocol.
func ExecEnv(fabric, node string, o ExecOptions) (ns string, env []string, err error) {
	st, n, err := lookupNode(fabric, node)
	if err != nil {
		return "", nil, err
	}
	env = []string{"IBFAB_FABRIC=" + fabric, "IBFAB_NODE=" + node}
	if o.UMAD == UMADOff {
		return n.Namespace, env, nil
	}
	if n.Type != "hca" {
		return "", nil, fmt.Errorf("--umad: %s is a %s; only an HCA has an attach point", node, n.Type)
	}
	if st.Plane == PlaneMgmt {
		if o, err = mgmtEndpoints(fabric, node, o); err != nil {
			return "", nil, err
		}
		env = append(env, simproto.EnvSockName+"="+o.Sim, umadproto.EnvSocket+"="+o.Socket)
	}
	extra, err := ModeEnv(o.UMAD, o.Socket, o.Sim)
	if err != nil {
		return "", nil, err
	}
	return n.Namespace, append(env, extra...), nil
}

// ExitStatus returns the exit status of a program Exec ran that failed
// (err an *exec.ExitError): its code, or 128 plus the signal that killed
// it, as a shell gives it; ok is false for any other error.
func ExitStatus(err error) (code int, ok bool) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, false
	}
	code = ee.ExitCode()
	if code < 0 { // killed by a signal: the shell's convention
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	}
	return code, true
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
	st, n, err := lookupNode(name, node)
	if err != nil {
		return err
	}
	if st.Plane == PlaneMgmt {
		// Every node is one process: the node is powered off in it.
		return mgmtCall(name, mgmtplane.OpKill, mgmtplane.NodeArgs{Node: node}, nil)
	}
	if n.PID == 0 || !alive(n.PID) || !IsNodeProcess(n.PID, name, node) {
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
