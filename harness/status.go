package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"ibfab/fabricnet"
	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// FabricStatus is `ibfab status --json`: a stable interface other tools
// read. Fields may be added, never renamed.
type FabricStatus struct {
	Fabric    string       `json:"fabric"`
	TimeScale float64      `json:"time_scale"`
	Plane     Plane        `json:"plane"`
	Nodes     []NodeStatus `json:"nodes"`
}

// NodeStatus is one node: what its process reports, with the cabling filled
// in, or, when the process does not answer, its identity and the reason.
type NodeStatus struct {
	nodeproc.Status
	Alive bool   `json:"alive"`
	Error string `json:"error,omitempty"`
	// Host is the node's host (1-based) on a fabric over hosts.
	Host int `json:"host,omitempty"`
}

// Status asks every node of fabric name for its state.
func Status(ctx context.Context, name string) (*FabricStatus, error) {
	st, t, err := loadFabric(name)
	if err != nil {
		return nil, err
	}
	query, isProcess := queryAll, IsNodeProcess
	if st.Plane == PlaneMgmt {
		query = queryMgmt
		isProcess = func(pid int, fabric, _ string) bool { return isMgmtProcess(pid, fabric) }
	}
	statuses, errs := query(ctx, st)
	fs := &FabricStatus{Fabric: name, TimeScale: st.TimeScale, Plane: st.Plane}
	for _, i := range st.given {
		n := st.Nodes[i]
		ns := NodeStatus{Alive: alive(n.PID) && isProcess(n.PID, name, n.Name), Host: n.Host}
		if s := statuses[i]; s != nil {
			ns.Status = *s
		} else {
			ns.Status = nodeproc.Status{Name: n.Name, Type: n.Type, GUID: n.GUID, PID: n.PID}
			ns.Error = errs[i].Error()
			if !ns.Alive {
				ns.Error = "process not running"
			}
			for p := 1; p <= t.Node(i).NumPorts; p++ {
				ns.Ports = append(ns.Ports, nodeproc.PortStatus{Port: p, Phys: "Unknown", State: "Unknown"})
			}
		}
		for j := range ns.Ports {
			if peer, ok := t.Peer(topologies.PortRef{Node: i, Port: ns.Ports[j].Port}); ok {
				ns.Ports[j].Peer = fmt.Sprintf("%s[%d]", t.Node(peer.Node).Name, peer.Port)
			}
		}
		fs.Nodes = append(fs.Nodes, ns)
	}
	return fs, nil
}

// Topology returns the topology of running fabric name as it was brought
// up (nodes added since included), with the error Status gives for a
// fabric that is not up: a live view draws its map from it.
func Topology(name string) (*topologies.Topology, error) {
	_, t, err := loadFabric(name)
	return t, err
}

// openState reads the state of running fabric name, with an error that
// says how to bring it up when it is not.
func openState(name string) (*fabricState, error) {
	if err := fabricnet.CheckFabricName(name); err != nil {
		return nil, err
	}
	dir := fabricDir(name)
	st, err := readState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("fabric %q is not up (no state in %s); bring it up with ibfab up --name %s", name, dir, name)
	}
	return st, err
}

// loadFabric reads a running fabric's state and topology.
func loadFabric(name string) (*fabricState, *topologies.Topology, error) {
	st, err := openState(name)
	if err != nil {
		return nil, nil, err
	}
	t, err := topologies.ParseFile(filepath.Join(fabricDir(name), topologyFile))
	if err != nil {
		return nil, nil, err
	}
	if t.NumNodes() != len(st.Nodes) {
		return nil, nil, fmt.Errorf("%s: state has %d nodes, topology %d", fabricDir(name), len(st.Nodes), t.NumNodes())
	}
	// The topology file need not list the nodes in the state's order (the
	// writer puts a CA first, as ibsim wants): index the state like the
	// topology, so that st.Nodes[i] is t.Node(i), and remember the order
	// the fabric was given in for output.
	byTopo := make([]nodeState, len(st.Nodes))
	st.given = make([]int, len(st.Nodes))
	for k, n := range st.Nodes {
		i, ok := t.Lookup(n.Name)
		if !ok {
			return nil, nil, fmt.Errorf("%s: node %s of the state is not in the topology", fabricDir(name), n.Name)
		}
		byTopo[i] = n
		st.given[k] = i
	}
	st.Nodes = byTopo
	return st, t, nil
}

// lookupNode returns the state of node in fabric name.
func lookupNode(name, node string) (*fabricState, nodeState, error) {
	st, err := openState(name)
	if err != nil {
		return nil, nodeState{}, err
	}
	for _, n := range st.Nodes {
		if n.Name == node {
			return st, n, nil
		}
	}
	return nil, nodeState{}, fmt.Errorf("fabric %s has no node %q", name, node)
}

// WriteVLStatus writes the data-plane part of a fabric's status as text
// (ibfab status --vls): each switch's architecture, adaptive routing,
// buffers and watched DLIDs, then one row per port and operational data
// VL.
func WriteVLStatus(out io.Writer, s *FabricStatus) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SWITCH\tARCH\tADAPTIVE_ROUTING\tVL_BLOCKS\tWATCHED")
	for _, n := range s.Nodes {
		c := n.SwitchConfig
		if c == nil {
			continue
		}
		ar := c.ARMode.String()
		if c.ARMode != mad.AROff {
			ar = fmt.Sprintf("%s T=%d%% AFC=VL%d", ar, c.ARThreshold, c.AFCVL)
		}
		blocks := fmt.Sprintf("%d per VL", c.RxBlocks)
		if len(c.VLBlocks) > 0 {
			blocks = joinInts(c.VLBlocks)
		}
		watched := "-"
		if len(c.Watched) > 0 {
			watched = joinInts(c.Watched)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", n.Name, c.Arch, ar, blocks, watched)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "NODE\tPORT\tVL\tRX_USED/SIZE\tDOWN_USED/SIZE\tQUEUED\tXMIT_WAIT\tRCV_PKTS\tWATCHED\tADAPTED\t")
	for _, n := range s.Nodes {
		for _, p := range n.Ports {
			for i, c := range p.Credits {
				adapted := ""
				if i == 0 && n.SwitchConfig != nil {
					adapted = fmt.Sprint(p.Adapted)
				}
				rcv, watched := "", ""
				if n.SwitchConfig != nil {
					rcv, watched = fmt.Sprint(c.RcvPkts), fmt.Sprint(c.Watched)
				}
				fmt.Fprintf(w, "%s\t%d\t%d\t%d/%d\t%d/%d\t%d\t%d\t%s\t%s\t%s\t\n", n.Name, p.Port, c.VL,
					c.RxUsed, c.RxCapacity, c.DownUsed, c.DownCapacity, c.Queued, c.XmitWait, rcv, watched, adapted)
			}
		}
	}
	return w.Flush()
}

// joinInts writes v as "1,2,3".
func joinInts[T int | uint16](v []T) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
