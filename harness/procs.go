package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"ibfab/fabricnet"
	"ibfab/internal/cli"
	"ibfab/internal/ctl"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// BinEnv names the directory holding ibswitch, ibhca and ibsm when they
// are neither next to the running executable nor on PATH.
const BinEnv = "IBFAB_BIN"

// nodeBinary returns the path of the node program for a node type.
func nodeBinary(typ string) (string, error) { return Binary("ib" + typ) }

// Binary returns the path of the program name (ibswitch, ibhca, ibsm): in
// $IBFAB_BIN, next to the running executable, or on PATH.
func Binary(name string) (string, error) {
	var dirs []string
	if d := os.Getenv(BinEnv); d != "" {
		dirs = append(dirs, d)
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found next to %s, in $%s or on PATH (make build puts it in bin/)", name, "ibfab", BinEnv)
}

// startNode starts the process of node n inside its namespace, detached
// from the harness (own session, output to a log file in the fabric's
// directory), and returns its PID.
func startNode(fabric string, t *topologies.Topology, n nodeState, o UpOptions) (int, error) {
	bin, err := nodeBinary(n.Type)
	if err != nil {
		return 0, err
	}
	if err := writeNeighbourhood(fabric, t, n.Name); err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(filepath.Join(fabricDir(fabric), n.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	args := []string{"--fabric", fabric, "--node", n.Name,
		"--epoch", strconv.FormatInt(o.epoch.UnixNano(), 10),
		"--time-scale", strconv.FormatFloat(o.TimeScale, 'g', -1, 64)}
	args = append(args, o.NodeArgs...)
	args = append(args, o.NodeArgsFor[n.Name]...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := fabricnet.Do(n.Namespace, startOn(o.CPUs, cmd)); err != nil {
		return 0, fmt.Errorf("starting %s: %w", n.Name, err)
	}
	// Reap it if it dies while this process lives (tests, long commands);
	// once the harness exits, init does.
	go cmd.Wait()
	return cmd.Process.Pid, nil
}

// writeNeighbourhood writes the part of t that node needs where its
// process reads it (nodeproc.NeighbourhoodPath): the node, its peers and
// its links, so that a node's start-up does not parse the whole fabric
// and its memory does not hold it.
func writeNeighbourhood(fabric string, t *topologies.Topology, node string) error {
	i, ok := t.Lookup(node)
	if !ok {
		return fmt.Errorf("node %q is not in the fabric's topology", node)
	}
	u, err := t.Neighbourhood(i)
	if err != nil {
		return fmt.Errorf("%s's neighbourhood: %w", node, err)
	}
	f := nodeproc.NeighbourhoodPath(fabric, node)
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return err
	}
	return topologies.WriteFile(f, u)
}

// startOn returns c.Start, run with the calling thread's CPU affinity
// set to cpus when there are any: the child inherits the namespace and
// the affinity of the thread that forks it. The thread gets its own
// affinity back afterwards, since fabricnet.Do hands it back to the
// runtime, which would otherwise run this process's goroutines on cpus.
func startOn(cpus []int, c *exec.Cmd) func() error {
	if len(cpus) == 0 {
		return c.Start
	}
	return func() error {
		var own, set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &own); err != nil {
			return fmt.Errorf("CPUs: %w", err)
		}
		for _, cpu := range cpus {
			set.Set(cpu)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("CPUs %v: %w", cpus, err)
		}
		err := c.Start()
		// Failing, the thread keeps cpus: slower goroutines here, but the
		// child started, and an error would hide it.
		_ = unix.SchedSetaffinity(0, &own)
		return err
	}
}

// checkCPUs refuses CPUs the process may not run on (offline, or outside
// its own affinity, which a child could not widen).
func checkCPUs(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	own, err := AllowedCPUs()
	if err != nil {
		return err
	}
	for _, c := range cpus {
		if !slices.Contains(own, c) {
			return fmt.Errorf("CPU %d: not one this process may run on (%s)", c, own.String())
		}
	}
	return nil
}

// AllowedCPUs returns the CPUs this process may run on, lowest first.
func AllowedCPUs() (cli.CPUList, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("CPUs: %w", err)
	}
	var out cli.CPUList
	for c := range 8 * int(unsafe.Sizeof(set)) {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// IsNodeProcess reports whether pid runs the node process of fabric/node,
// so that a stale PID reused by another program is never signalled.
func IsNodeProcess(pid int, fabric, node string) bool {
	argv, ok := cmdline(pid)
	return ok && flagValue(argv, "--fabric") == fabric && flagValue(argv, "--node") == node &&
		strings.HasPrefix(filepath.Base(argv[0]), "ib")
}

// cmdline returns the command line of process pid; false when it is gone.
func cmdline(pid int) ([]string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, false
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), true
}

// flagValue returns the value argv gives flag (its last), "" for none.
func flagValue(argv []string, flag string) string {
	v := ""
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == flag {
			v = argv[i+1]
		}
	}
	return v
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// stopProcesses ends every process in the fabric's namespaces: SIGTERM,
// then SIGKILL for those still there after grace.
func stopProcesses(namespaces []string, grace time.Duration) error {
	if _, err := fabricnet.Kill(namespaces, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(grace)
	for {
		pids, err := fabricnet.Processes(namespaces)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return killAll(namespaces, killWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killWait bounds how long killAll waits for killed processes to go. A
// process can't survive SIGKILL, but it must still be scheduled to run its
// exit, on a CPU it may use: on a loaded or pinned CPU (--cpus) that took
// longer than the 50 ms once waited here, and down failed.
const killWait = 5 * time.Second

// killAll sends SIGKILL to every process in the namespaces until none is
// left, and reports those still there after wait.
func killAll(namespaces []string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		n, err := fabricnet.Kill(namespaces, syscall.SIGKILL)
		if err != nil || n == 0 {
			return err
		}
		if time.Now().After(deadline) {
			if pids, _ := fabricnet.Processes(namespaces); len(pids) > 0 {
				return fmt.Errorf("processes %v survive SIGKILL", pids)
			}
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// queryAll asks every node of st for its status, a few at a time. A node
// that does not answer gets a nil status and its error.
func queryAll(ctx context.Context, st *fabricState) ([]*nodeproc.Status, []error) {
	out := make([]*nodeproc.Status, len(st.Nodes))
	errs := make([]error, len(st.Nodes))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, n := range st.Nodes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var s nodeproc.Status
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := ctl.Call(cctx, nodeproc.SocketPath(st.Fabric, n.Name), "status", nil, &s); err != nil {
				errs[i] = err
				return
			}
			out[i] = &s
		}()
	}
	wg.Wait()
	return out, errs
}

// trained reports whether every cabled port of s has trained (is LinkUp
// and past Down).
func trained(s *nodeproc.Status, cabled map[int]bool) bool {
	for _, p := range s.Ports {
		if cabled[p.Port] && (p.Phys != "LinkUp" || p.State == "Down") {
			return false
		}
	}
	return true
}

// errNotTrained is wrapped by the error of waitTrained on timeout.
var errNotTrained = errors.New("links not trained")
