package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"ibfab/bpf"
	"ibfab/fabricnet"
	"ibfab/internal/ctl"
	"ibfab/internal/enum"
	"ibfab/mgmtplane"
	"ibfab/nodeproc"
	"ibfab/simproto"
	"ibfab/topologies"
	"ibfab/umadproto"
)

//go:generate go tool stringer -type=Plane -linecomment

// Plane is what a fabric runs: a process per node with the data plane,
// or every node in one process, management plane only (package
// mgmtplane), at sizes processes cannot reach.
type Plane uint8

// Planes.
const (
	PlaneProcess Plane = iota // process
	PlaneMgmt                 // mgmt
)

var planes = enum.New("plane", PlaneProcess, PlaneMgmt)

// MarshalText implements encoding.TextMarshaler.
func (p Plane) MarshalText() ([]byte, error) { return planes.Marshal(p) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Plane) UnmarshalText(b []byte) error { return planes.Unmarshal(p, b) }

const (
	// mgmtNode is the namespace suffix of a management-plane fabric's one
	// namespace, ibf-<fabric>-mgmt (no node has a namespace there).
	mgmtNode = "mgmt"
	// mgmtSocket is its process's control socket in the fabric's run
	// directory.
	mgmtSocket = "mgmt.sock"
)

// mgmtSocketPath is the control socket of fabric's management plane.
func mgmtSocketPath(fabric string) string { return filepath.Join(fabricDir(fabric), mgmtSocket) }

// mgmtPrefix starts the CAs' socket names of fabric's plane, which no
// other fabric's share.
func mgmtPrefix(fabric string) string { return "ibfab-" + fabric + "-" }

// upMgmt brings fabric name's management plane up: one namespace, one
// ibmgmt process holding every node of t, ready when its control socket
// answers.
func upMgmt(st *fabricState, t *topologies.Topology, timeout time.Duration) error {
	ns := fabricnet.Namespace(st.Fabric, mgmtNode)
	h, err := fabricnet.NewNamespace(ns)
	if err != nil {
		return err
	}
	h.Close()
	st.Namespaces = []string{ns}
	for i := range st.Nodes {
		st.Nodes[i].Namespace = ns
	}
	if err := writeState(fabricDir(st.Fabric), st); err != nil {
		return err
	}
	pid, err := startMgmt(st.Fabric, ns)
	if err != nil {
		return err
	}
	for i := range st.Nodes {
		st.Nodes[i].PID = pid
	}
	if err := writeState(fabricDir(st.Fabric), st); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		var s mgmtplane.Stats
		err := ctl.Call(ctx, mgmtSocketPath(st.Fabric), mgmtplane.OpStats, nil, &s)
		if err == nil {
			return nil
		}
		if !alive(pid) {
			return fmt.Errorf("ibmgmt exited (see %s)", filepath.Join(fabricDir(st.Fabric), "mgmt.log"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ibmgmt did not answer within %v: %w", timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// startMgmt starts ibmgmt in namespace ns, detached, its output in the
// fabric's mgmt.log.
func startMgmt(fabric, ns string) (int, error) {
	bin, err := Binary("ibmgmt")
	if err != nil {
		return 0, err
	}
	dir := fabricDir(fabric)
	logf, err := os.OpenFile(filepath.Join(dir, "mgmt.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--fabric", fabric, "--topology", filepath.Join(dir, topologyFile),
		"--socket", mgmtSocketPath(fabric), "--prefix", mgmtPrefix(fabric))
	cmd.Stdout, cmd.Stderr, cmd.Dir = logf, logf, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := fabricnet.Do(ns, cmd.Start); err != nil {
		return 0, fmt.Errorf("starting ibmgmt: %w", err)
	}
	go cmd.Wait()
	return cmd.Process.Pid, nil
}

// isMgmtProcess reports whether pid is fabric's ibmgmt.
func isMgmtProcess(pid int, fabric string) bool {
	argv, ok := cmdline(pid)
	return ok && flagValue(argv, "--fabric") == fabric && filepath.Base(argv[0]) == "ibmgmt"
}

// queryMgmt is queryAll for a management plane: one call for every
// node, in st's order.
func queryMgmt(ctx context.Context, st *fabricState) ([]*nodeproc.Status, []error) {
	out := make([]*nodeproc.Status, len(st.Nodes))
	errs := make([]error, len(st.Nodes))
	var all []nodeproc.Status
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := ctl.Call(cctx, mgmtSocketPath(st.Fabric), mgmtplane.OpStatus, nil, &all)
	byName := map[string]*nodeproc.Status{}
	for i := range all {
		byName[all[i].Name] = &all[i]
	}
	for i, n := range st.Nodes {
		switch s, ok := byName[n.Name]; {
		case err != nil:
			errs[i] = err
		case !ok:
			errs[i] = fmt.Errorf("the management plane has no node %q", n.Name)
		default:
			out[i] = s
		}
	}
	return out, errs
}

// openMgmtCA opens the client side of CA node of fabric's management
// plane and returns its sockets' names.
func openMgmtCA(fabric, node string) (mgmtplane.Names, error) {
	var n mgmtplane.Names
	err := mgmtCall(fabric, mgmtplane.OpOpen, mgmtplane.OpenArgs{Node: node}, &n)
	return n, err
}

// mgmtEndpoints opens CA node's client side in fabric's management plane
// and points o at its sockets, unless o names others.
func mgmtEndpoints(fabric, node string, o ExecOptions) (ExecOptions, error) {
	names, err := openMgmtCA(fabric, node)
	if err != nil {
		return o, fmt.Errorf("opening %s's endpoints: %w", node, err)
	}
	if o.Socket == "" || o.Socket == umadproto.DefaultSocket {
		o.Socket = names.UMAD
	}
	if o.Sim == "" || o.Sim == simproto.DefaultBase {
		o.Sim = names.Sim
	}
	return o, nil
}

// mgmtCall makes one control call to fabric's management plane.
func mgmtCall(fabric, op string, args, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return ctl.Call(ctx, mgmtSocketPath(fabric), op, args, result)
}

// needProcesses returns an error when fabric runs the management plane
// only, which has no node processes, veths or data plane for what to
// work on.
func needProcesses(fabric, what string) error {
	if st, err := openState(fabric); err == nil && st.Plane == PlaneMgmt {
		return fmt.Errorf("%s needs a process per node: fabric %s runs the management plane only (up --plane mgmt)", what, fabric)
	}
	return nil
}

// addMgmtFaults installs r on the management plane at each sending port.
func addMgmtFaults(fabric string, senders []sender, r bpf.Rule) ([]Fault, error) {
	var out []Fault
	for _, s := range senders {
		var e mgmtplane.FaultEntry
		err := mgmtCall(fabric, mgmtplane.OpFaultAdd, mgmtplane.FaultArgs{Node: s.node.Name, Port: uint8(s.port), Rule: r}, &e)
		if err != nil {
			return out, fmt.Errorf("%s: %w", s.from(), err)
		}
		out = append(out, Fault{From: s.from(), To: s.to(), Slot: e.Slot, Action: r.Action, Rule: r.String(), Spec: r})
	}
	return out, nil
}

// listMgmtFaults lists the management plane's faults as ListFaults does.
func listMgmtFaults(fabric string, t *topologies.Topology) ([]Fault, error) {
	var entries []mgmtplane.FaultEntry
	if err := mgmtCall(fabric, mgmtplane.OpFaultList, nil, &entries); err != nil {
		return nil, err
	}
	var out []Fault
	for _, e := range entries {
		f := Fault{From: fmt.Sprintf("%s[%d]", e.Node, e.Port), Slot: e.Slot, Action: e.Rule.Action,
			Rule: e.Rule.String(), Counters: e.Counters, Spec: e.Rule}
		if i, ok := t.Lookup(e.Node); ok {
			if peer, ok := t.Peer(topologies.PortRef{Node: i, Port: int(e.Port)}); ok {
				f.To = fmt.Sprintf("%s[%d]", t.Node(peer.Node).Name, peer.Port)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// clearMgmtFaults removes the management plane's faults on both
// directions of node's port (port 0: all; node "": every fault).
func clearMgmtFaults(fabric string, st *fabricState, t *topologies.Topology, node string, port int) (int, error) {
	if node == "" {
		var n int
		err := mgmtCall(fabric, mgmtplane.OpFaultClear, mgmtplane.ClearArgs{}, &n)
		return n, err
	}
	out, err := portSenders(st, t, node, port, false)
	if err != nil {
		return 0, err
	}
	in, _ := portSenders(st, t, node, port, true)
	removed := 0
	for _, s := range append(out, in...) {
		var n int
		if err := mgmtCall(fabric, mgmtplane.OpFaultClear, mgmtplane.ClearArgs{Node: s.node.Name, Port: uint8(s.port)}, &n); err != nil {
			return removed, err
		}
		removed += n
	}
	return removed, nil
}
