package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"ibfab/internal/ctl"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// argsFile keeps a node's extra flags (those after the ones every node
// gets), so that a node can be restarted after it died.
func argsFile(fabric, node string) string {
	return filepath.Join(fabricDir(fabric), node+".args.json")
}

// nodeExtraArgs returns the flags a node process was started with beyond
// --fabric, --node, --epoch and --time-scale: from the running process, or
// from argsFile when it is gone; known reports whether either had them.
func nodeExtraArgs(fabric string, n nodeState) (args []string, known bool, err error) {
	if n.PID != 0 && alive(n.PID) && IsNodeProcess(n.PID, fabric, n.Name) {
		if argv, ok := cmdline(n.PID); ok {
			extra, err := splitNodeArgs(argv, fabric, n.Name)
			return extra, err == nil, err
		}
	}
	b, err := os.ReadFile(argsFile(fabric, n.Name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(b, &args); err != nil {
		return nil, false, fmt.Errorf("%s: %w", argsFile(fabric, n.Name), err)
	}
	return args, true, nil
}

// splitNodeArgs checks that argv starts the way startNode starts a node
// and returns the rest.
func splitNodeArgs(argv []string, fabric, node string) ([]string, error) {
	const fixed = 9 // program, then four flags with values
	if len(argv) < fixed || argv[1] != "--fabric" || argv[2] != fabric || argv[3] != "--node" || argv[4] != node ||
		argv[5] != "--epoch" || argv[7] != "--time-scale" {
		return nil, fmt.Errorf("unexpected command line %q", argv)
	}
	return append([]string{}, argv[fixed:]...), nil
}

// Restart kills node's process in fabric if it runs and starts it again
// with the arguments it had, then exchanges PIDs with its neighbours and
// waits up to timeout (0: 30 s) for its cabled ports to train. It returns
// the new PID and, when the node's extra flags were unknown (it had died
// before any restart), a note saying so.
func Restart(fabric, node string, timeout time.Duration) (pid int, note string, err error) {
	if err := needProcesses(fabric, "restart"); err != nil {
		return 0, "", err
	}
	st, t, err := loadFabric(fabric)
	if err != nil {
		return 0, "", err
	}
	i, ok := t.Lookup(node)
	if !ok {
		return 0, "", fmt.Errorf("fabric %s has no node %q", fabric, node)
	}
	nodes, err := nodesByTopo(st, t)
	if err != nil {
		return 0, "", err
	}
	n := nodes[i]
	extra, known, err := nodeExtraArgs(fabric, n)
	if err != nil {
		return 0, "", err
	}
	if !known {
		note = fmt.Sprintf("%s had died and its flags beyond the standard ones are unknown: restarted without any", node)
	}
	if err := stopNode(fabric, n); err != nil {
		return 0, "", err
	}
	b, err := json.Marshal(extra)
	if err == nil {
		err = os.WriteFile(argsFile(fabric, node), b, 0o644)
	}
	if err != nil {
		return 0, "", err
	}
	o := UpOptions{TimeScale: st.TimeScale, NodeArgs: extra, CPUs: st.CPUs, epoch: time.Unix(0, st.Epoch)}
	if pid, err = startNode(fabric, t, n, o); err != nil {
		return 0, "", err
	}
	// Re-read the state: another command may have written it meanwhile.
	if cur, err := openState(fabric); err == nil {
		st = cur
	}
	for j := range st.Nodes {
		if st.Nodes[j].Name == node {
			st.Nodes[j].PID = pid
		}
	}
	if err := writeState(fabricDir(fabric), st); err != nil {
		return pid, note, err
	}
	nodes[i].PID = pid
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := repeer(ctx, fabric, nodes, t, i); err != nil {
		return pid, note, err
	}
	return pid, note, waitNodeTrained(ctx, fabric, nodes, t, i)
}

// stopNode kills n's process, if it runs, and waits until it is gone.
func stopNode(fabric string, n nodeState) error {
	if n.PID == 0 || !alive(n.PID) || !IsNodeProcess(n.PID, fabric, n.Name) {
		return nil
	}
	if err := syscall.Kill(n.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	for range 400 {
		if !alive(n.PID) {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("node %s (pid %d) still there 2 s after SIGKILL", n.Name, n.PID)
}

// repeer tells node i the PIDs of its neighbours and each neighbour node
// i's new PID on the port facing it, so that the links come back (a dead
// peer is loss of signal) and a later death is noticed again.
func repeer(ctx context.Context, fabric string, nodes []nodeState, t *topologies.Topology, i int) error {
	mine := map[int]int{}
	theirs := map[int]map[int]int{}
	for p := 1; p <= t.Node(i).NumPorts; p++ {
		peer, ok := t.Peer(topologies.PortRef{Node: i, Port: p})
		if !ok {
			continue
		}
		mine[p] = nodes[peer.Node].PID
		if theirs[peer.Node] == nil {
			theirs[peer.Node] = map[int]int{}
		}
		theirs[peer.Node][peer.Port] = nodes[i].PID
	}
	if len(mine) == 0 {
		return nil
	}
	if err := callUntilUp(ctx, fabric, nodes[i], "peers", nodeproc.PeersArgs{PIDs: mine}); err != nil {
		return err
	}
	var errs []error
	for j, pids := range theirs {
		if !alive(nodes[j].PID) {
			continue // a dead neighbour learns when it is restarted
		}
		if err := callUntilUp(ctx, fabric, nodes[j], "peers", nodeproc.PeersArgs{PIDs: pids}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// callUntilUp makes a control call to node n, retrying while its socket
// is not up yet and the process lives.
func callUntilUp(ctx context.Context, fabric string, n nodeState, op string, args any) error {
	sock := nodeproc.SocketPath(fabric, n.Name)
	for {
		err := ctl.Call(ctx, sock, op, args, nil)
		if err == nil {
			return nil
		}
		var re *ctl.RemoteError
		if errors.As(err, &re) {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
		if !alive(n.PID) {
			return fmt.Errorf("node %s (pid %d) died: see %s", n.Name, n.PID, filepath.Join(fabricDir(fabric), n.Name+".log"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: control socket: %w", n.Name, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitNodeTrained polls node i until its cabled ports whose neighbours
// live have trained.
func waitNodeTrained(ctx context.Context, fabric string, nodes []nodeState, t *topologies.Topology, i int) error {
	cabled := map[int]bool{}
	for p := 1; p <= t.Node(i).NumPorts; p++ {
		if peer, ok := t.Peer(topologies.PortRef{Node: i, Port: p}); ok && alive(nodes[peer.Node].PID) {
			cabled[p] = true
		}
	}
	sock := nodeproc.SocketPath(fabric, nodes[i].Name)
	for {
		var s nodeproc.Status
		err := ctl.Call(ctx, sock, "status", nil, &s)
		if err == nil && trained(&s, cabled) {
			return nil
		}
		select {
		case <-ctx.Done():
			why := "ports not trained"
			if err != nil {
				why = err.Error()
			}
			return fmt.Errorf("%w: %s: %s", errNotTrained, nodes[i].Name, why)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
