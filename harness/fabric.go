package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"ibfab/fabricnet"
	"ibfab/harness/clab"
	"ibfab/internal/ctl"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// RunDir holds one directory per running fabric: its state, its topology,
// the node processes' control sockets and logs.
const RunDir = nodeproc.RunDir

const (
	stateFile    = "state.json"
	topologyFile = "topology.net"
)

// fabricState is what `ibfab up` records so that `down` and `status` work
// from any shell, also after the harness that brought the fabric up died.
type fabricState struct {
	Fabric     string    `json:"fabric"`
	Created    time.Time `json:"created"`
	TimeScale  float64   `json:"time_scale"`
	Plane      Plane     `json:"plane,omitempty"` // process (omitted) or mgmt
	Epoch      int64     `json:"epoch_ns"`        // the node clocks' shared origin
	CPUs       []int     `json:"cpus,omitempty"`  // UpOptions.CPUs, kept for restarts and additions
	Namespaces []string  `json:"namespaces"`
	// Hosts are the host namespaces of a fabric over hosts (UpOptions.Hosts),
	// by host.
	Hosts []string    `json:"hosts,omitempty"`
	Nodes []nodeState `json:"nodes"`

	// given lists the topology indices of Nodes in the order the fabric
	// was brought up in, when loadFabric has put Nodes in the topology
	// file's order.
	given []int
}

type nodeState struct {
	Name      string `json:"name"`
	Type      string `json:"type"` // "switch", "hca" or "router"
	GUID      string `json:"guid"`
	Namespace string `json:"namespace"`
	PID       int    `json:"pid,omitempty"`
	Host      int    `json:"host,omitempty"` // 1-based, on a fabric over hosts
}

// UpOptions tune Up. The zero value brings a fabric up at real time and
// waits for its links.
type UpOptions struct {
	// TimeScale runs emulated time this many times slower (0 means 1).
	TimeScale float64
	// NodeArgs are extra flags for every node process (see ibswitch -h);
	// NodeArgsFor adds flags for single nodes by name.
	NodeArgs    []string
	NodeArgsFor map[string][]string
	// NoProcesses creates only the namespaces and links.
	NoProcesses bool
	// Plane PlaneMgmt runs every node in one process, management plane
	// only (package mgmtplane): no links, namespaces per node, time scale
	// or node flags.
	Plane Plane
	// Timeout bounds the wait for every link to train; 0 means 30 s plus
	// 100 ms per node.
	Timeout time.Duration
	// Progress, when set, sees each step: a phase name and counts.
	Progress func(phase string, done, total int)
	// CPUs, when set, are the CPUs every node process may run on (its
	// affinity; nodes restarted or added later get the same). On a
	// machine whose idle CPUs are slow to wake (a virtual machine
	// without halt polling: docs/DESIGN.md §3a), processes that pass
	// packets to each other wake each other fastest on one CPU, at the
	// price of the parallelism of the others.
	CPUs []int
	// Hosts, when 2 or more, spreads the fabric over that many hosts, each
	// a namespace, every pair joined by an underlay veth: the links inside
	// a host are veth pairs, the links between hosts VXLAN devices over
	// the underlay (fabricnet.CreateOnHosts), every port device named as
	// on one host, so that status, links, kills and faults work alike.
	// 0 and 1 mean one host, no host namespaces.
	Hosts int
	// Placement is the host (0-based) of each node by topology index, with
	// Hosts; nil places them with clab.Place (few links between hosts).
	Placement []int

	epoch time.Time
}

func fabricDir(name string) string { return filepath.Join(RunDir, name) }

// Up brings fabric name up from t: its namespaces and veth pairs, then one
// process per switch and HCA, and waits until every cabled port has
// trained (phys LinkUp, state Init). The state goes under RunDir, so that
// Down works from any shell, also after this process dies. On failure,
// everything created is removed again.
func Up(name string, t *topologies.Topology, o UpOptions) (*fabricState, error) {
	if o.TimeScale == 0 {
		o.TimeScale = 1
	}
	if !(o.TimeScale > 0) || o.TimeScale > 1e6 {
		return nil, fmt.Errorf("time scale %v: want a positive number", o.TimeScale)
	}
	if t.Count(topologies.Router) > 0 {
		return nil, errors.New("the topology has routers, which ibfab does not emulate")
	}
	if err := checkCPUs(o.CPUs); err != nil {
		return nil, err
	}
	if err := checkMemory(t, o.Plane); err != nil {
		return nil, err
	}
	o.epoch = time.Now()
	progress := func(phase string) func(done, total int) {
		return func(done, total int) {
			if o.Progress != nil {
				o.Progress(phase, done, total)
			}
		}
	}
	if err := fabricnet.CheckFabricName(name); err != nil {
		return nil, err
	}
	host, err := placement(t, o)
	if err != nil {
		return nil, err
	}
	dir := fabricDir(name)
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err == nil {
		return nil, fmt.Errorf("fabric %q is up (state in %s); take it down first with ibfab down --name %s", name, dir, name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if o.Plane == PlaneMgmt {
		return upPlane(name, t, o)
	}
	var f *fabricnet.Fabric
	if host == nil {
		f, err = fabricnet.Create(name, t, progress("namespaces and links"))
	} else {
		f, err = fabricnet.CreateOnHosts(name, t, host, o.Hosts, progress("namespaces and links"))
	}
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	st := &fabricState{Fabric: name, Created: time.Now().UTC(), TimeScale: o.TimeScale,
		Epoch: o.epoch.UnixNano(), CPUs: o.CPUs, Namespaces: f.Namespaces, Hosts: f.Hosts}
	for i, n := range t.Nodes() {
		st.Nodes = append(st.Nodes, nodeState{Name: n.Name, Type: nodeTypeName(n.Type),
			GUID: fmt.Sprintf("%#016x", n.GUID), Namespace: f.Namespaces[i]})
		if host != nil {
			st.Nodes[i].Host = host[i] + 1
		}
	}
	if err := topologies.WriteFile(filepath.Join(dir, topologyFile), t); err != nil {
		return nil, errors.Join(err, Down(name))
	}
	if err := writeState(dir, st); err != nil {
		return nil, errors.Join(err, Down(name))
	}
	if o.NoProcesses {
		return st, nil
	}
	if err := startAll(st, t, o, progress("processes")); err != nil {
		return nil, errors.Join(err, Down(name))
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 30*time.Second + time.Duration(len(st.Nodes))*100*time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tellPeers(ctx, st, t); err != nil {
		return nil, errors.Join(err, Down(name))
	}
	if err := waitTrained(ctx, st, t, progress("links trained")); err != nil {
		return nil, errors.Join(err, Down(name))
	}
	return st, nil
}

// placement returns the host of each node for UpOptions.Hosts, nil on one
// host.
func placement(t *topologies.Topology, o UpOptions) ([]int, error) {
	switch {
	case o.Hosts < 0:
		return nil, fmt.Errorf("%d hosts: want 1 or more", o.Hosts)
	case o.Hosts > 1 && o.Plane == PlaneMgmt:
		return nil, errors.New("the management plane has no links to spread over hosts")
	case o.Hosts <= 1 && o.Placement != nil:
		return nil, errors.New("a placement goes with 2 or more hosts")
	case o.Hosts <= 1:
		return nil, nil
	case o.Placement != nil:
		if len(o.Placement) != t.NumNodes() {
			return nil, fmt.Errorf("a placement of %d nodes for the topology's %d", len(o.Placement), t.NumNodes())
		}
		return o.Placement, nil
	}
	host, err := clab.Place(t, o.Hosts, clab.Capacity(t.NumNodes(), o.Hosts))
	if err != nil {
		return nil, err
	}
	return host, nil
}

// upPlane is Up for a management-plane fabric (UpOptions.Plane).
func upPlane(name string, t *topologies.Topology, o UpOptions) (*fabricState, error) {
	if o.NoProcesses || len(o.NodeArgs) > 0 || len(o.NodeArgsFor) > 0 || len(o.CPUs) > 0 || o.TimeScale != 1 {
		return nil, errors.New("--plane mgmt runs no node processes: it takes no node flags, CPUs or time scale")
	}
	dir := fabricDir(name)
	st := &fabricState{Fabric: name, Created: time.Now().UTC(), TimeScale: 1, Plane: PlaneMgmt, Epoch: o.epoch.UnixNano()}
	for _, n := range t.Nodes() {
		st.Nodes = append(st.Nodes, nodeState{Name: n.Name, Type: nodeTypeName(n.Type), GUID: fmt.Sprintf("%#016x", n.GUID)})
	}
	if err := topologies.WriteFile(filepath.Join(dir, topologyFile), t); err != nil {
		return nil, errors.Join(err, Down(name))
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 30*time.Second + time.Duration(len(st.Nodes))*time.Millisecond
	}
	if err := upMgmt(st, t, timeout); err != nil {
		return nil, errors.Join(err, Down(name))
	}
	return st, nil
}

// startAll starts every node's process and records the PIDs.
func startAll(st *fabricState, t *topologies.Topology, o UpOptions, progress func(done, total int)) error {
	for i := range st.Nodes {
		pid, err := startNode(st.Fabric, t, st.Nodes[i], o)
		if err != nil {
			return err
		}
		st.Nodes[i].PID = pid
		progress(i+1, len(st.Nodes))
	}
	return writeState(fabricDir(st.Fabric), st)
}

// tellPeers gives every node the PIDs of the processes at the other ends of
// its links, so that a node's death is loss of signal to its neighbours.
// It waits for each control socket to come up.
func tellPeers(ctx context.Context, st *fabricState, t *topologies.Topology) error {
	for i, n := range st.Nodes {
		pids := map[int]int{}
		for p := 1; p <= t.Node(i).NumPorts; p++ {
			if peer, ok := t.Peer(topologies.PortRef{Node: i, Port: p}); ok {
				pids[p] = st.Nodes[peer.Node].PID
			}
		}
		if len(pids) == 0 {
			continue
		}
		sock := nodeproc.SocketPath(st.Fabric, n.Name)
		for {
			err := ctl.Call(ctx, sock, "peers", nodeproc.PeersArgs{PIDs: pids}, nil)
			if err == nil {
				break
			}
			var re *ctl.RemoteError
			if errors.As(err, &re) {
				return fmt.Errorf("node %s: %w", n.Name, err)
			}
			if !alive(n.PID) {
				return fmt.Errorf("node %s (pid %d) died: see %s", n.Name, n.PID,
					filepath.Join(fabricDir(st.Fabric), n.Name+".log"))
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("node %s: control socket: %w", n.Name, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// waitTrained polls the nodes until every cabled port has trained.
func waitTrained(ctx context.Context, st *fabricState, t *topologies.Topology, progress func(done, total int)) error {
	start := time.Now()
	cabled := make([]map[int]bool, len(st.Nodes))
	for i := range st.Nodes {
		cabled[i] = map[int]bool{}
		for p := 1; p <= t.Node(i).NumPorts; p++ {
			if _, ok := t.LinkAt(topologies.PortRef{Node: i, Port: p}); ok {
				cabled[i][p] = true
			}
		}
	}
	last := -1
	for {
		statuses, errs := queryAll(ctx, st)
		done := 0
		var pending []string
		for i, s := range statuses {
			if s != nil && trained(s, cabled[i]) {
				done++
				continue
			}
			if !alive(st.Nodes[i].PID) {
				return fmt.Errorf("node %s (pid %d) died: see %s", st.Nodes[i].Name, st.Nodes[i].PID,
					filepath.Join(fabricDir(st.Fabric), st.Nodes[i].Name+".log"))
			}
			why := "ports not trained"
			if errs[i] != nil {
				why = errs[i].Error()
			}
			pending = append(pending, st.Nodes[i].Name+": "+why)
		}
		if done != last {
			progress(done, len(st.Nodes))
			last = done
		}
		if done == len(st.Nodes) {
			return nil
		}
		select {
		case <-ctx.Done():
			if len(pending) > 5 {
				pending = append(pending[:5], fmt.Sprintf("and %d more", len(pending)-5))
			}
			return fmt.Errorf("%w after %v: %s", errNotTrained, time.Since(start).Round(time.Millisecond), strings.Join(pending, "; "))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Down removes everything Up created for the fabric: with its state when
// there is one, by the namespace prefix when there is not. A fabric that is
// not up is not an error.
func Down(name string) error {
	if err := fabricnet.CheckFabricName(name); err != nil {
		return err
	}
	dir := fabricDir(name)
	var namespaces []string
	st, err := readState(dir)
	switch {
	case err == nil:
		// The host namespaces go too, and with them the underlay.
		namespaces = append(slices.Clone(st.Namespaces), st.Hosts...)
	case errors.Is(err, os.ErrNotExist):
	default:
		return err
	}
	// Also what a crashed Up created after its last state write.
	found, err := fabricnet.Namespaces(name)
	if err != nil {
		return err
	}
	for _, ns := range found {
		if !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	if err := stopProcesses(namespaces, 2*time.Second); err != nil {
		return err
	}
	if err := fabricnet.Remove(name, namespaces); err != nil {
		return err
	}
	if err := removeFaults(name); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

func writeState(dir string, st *fabricState) error {
	if st.given != nil { // back to the order the fabric was given in
		out := *st
		out.Nodes = make([]nodeState, len(st.Nodes))
		for k, i := range st.given {
			out.Nodes[k] = st.Nodes[i]
		}
		st = &out
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

func readState(dir string) (*fabricState, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	var st fabricState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return &st, nil
}

func nodeTypeName(t topologies.NodeType) string {
	switch t {
	case topologies.Switch:
		return "switch"
	case topologies.CA:
		return "hca"
	}
	return "router"
}
