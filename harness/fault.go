package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"ibfab/bpf"
	"ibfab/fabricnet"
	"ibfab/topologies"
)

// Fault programs live on the sending end of a link: a port reads its veth
// with a packet socket, which the kernel serves before tc ingress runs, so
// the frames a port receives are caught at its peer's egress. Each sending
// port has at most one program (up to bpf.MaxRules rules), pinned in
// faultRoot/<fabric>/<node>/p<port> so that it outlives ibfab; Down removes
// the fabric's directory, which detaches them all.

// faultRoot is the bpffs directory of every fabric's fault programs.
var faultRoot = filepath.Join(bpf.FSRoot, "ibfab")

func faultFabricDir(fabric string) string { return filepath.Join(faultRoot, fabric) }

// nodeDirName is a node's directory name under its fabric's: the node
// part of its namespace name, which is safe as a file name.
func nodeDirName(fabric, node string) string {
	return strings.TrimPrefix(fabricnet.Namespace(fabric, node), fabricnet.NSPrefix+fabric+"-")
}

func faultPortDir(fabric, node string, port int) string {
	return filepath.Join(faultFabricDir(fabric), nodeDirName(fabric, node), fabricnet.PortIface(port))
}

// Fault is one installed rule, as ibfab fault list shows it: on the frames
// that From sends to To.
type Fault struct {
	From     string       `json:"from"` // NODE[PORT] whose egress holds the rule
	To       string       `json:"to"`   // the peer port that receives the frames
	Slot     int          `json:"slot"`
	Action   bpf.Action   `json:"action"`
	Rule     string       `json:"rule"` // as ibfab fault's flags
	Counters bpf.Counters `json:"counters"`
	// Spec is the rule itself.
	Spec bpf.Rule `json:"-"`
}

// sender is one sending end of a link: a node's port, and the port that
// receives what it sends.
type sender struct {
	node     nodeState
	port     int
	peer     nodeState
	peerPort int
}

func (s sender) from() string { return fmt.Sprintf("%s[%d]", s.node.Name, s.port) }
func (s sender) to() string   { return fmt.Sprintf("%s[%d]", s.peer.Name, s.peerPort) }

// nodesByTopo returns st's nodes in the order of t, the topology as read
// back from the fabric's file, which moves a CA to the front: the two
// orders may differ.
func nodesByTopo(st *fabricState, t *topologies.Topology) ([]nodeState, error) {
	out := make([]nodeState, t.NumNodes())
	for _, n := range st.Nodes {
		i, ok := t.Lookup(n.Name)
		if !ok {
			return nil, fmt.Errorf("node %s of the state is not in the topology", n.Name)
		}
		out[i] = n
	}
	return out, nil
}

// portSenders returns the sending ends a fault on node's port applies to:
// the port itself (egress), or its peer (ingress: what the port receives).
// Port 0 means every cabled port of the node.
func portSenders(st *fabricState, t *topologies.Topology, node string, port int, ingress bool) ([]sender, error) {
	i, ok := t.Lookup(node)
	if !ok {
		return nil, fmt.Errorf("fabric %s has no node %q", st.Fabric, node)
	}
	n := t.Node(i)
	if port < 0 || port > n.NumPorts {
		return nil, fmt.Errorf("%s has ports 1-%d, not %d", node, n.NumPorts, port)
	}
	nodes, err := nodesByTopo(st, t)
	if err != nil {
		return nil, err
	}
	var out []sender
	for p := 1; p <= n.NumPorts; p++ {
		if port != 0 && p != port {
			continue
		}
		peer, ok := t.Peer(topologies.PortRef{Node: i, Port: p})
		if !ok {
			if port != 0 {
				return nil, fmt.Errorf("%s[%d] is not cabled", node, p)
			}
			continue
		}
		s := sender{node: nodes[i], port: p, peer: nodes[peer.Node], peerPort: peer.Port}
		if ingress {
			s = sender{node: nodes[peer.Node], port: peer.Port, peer: nodes[i], peerPort: p}
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no cabled port", node)
	}
	return out, nil
}

// lockFaults serializes the fault commands of one fabric (a lock file in
// its run directory) and returns the unlock.
func lockFaults(fabric string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(fabricDir(fabric), "faults.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// AddFault installs rule r on the frames node's port sends (or, with
// ingress, receives) in fabric; port 0 means every cabled port of the
// node. It returns the faults installed, one per port.
func AddFault(fabric, node string, port int, ingress bool, r bpf.Rule) ([]Fault, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	st, t, err := loadFabric(fabric)
	if err != nil {
		return nil, err
	}
	senders, err := portSenders(st, t, node, port, ingress)
	if err != nil {
		return nil, err
	}
	if st.Plane == PlaneMgmt {
		return addMgmtFaults(fabric, senders, r)
	}
	if err := bpf.MountFS(); err != nil {
		return nil, err
	}
	unlock, err := lockFaults(fabric)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []Fault
	for _, s := range senders {
		slot, err := addRule(fabric, s, r)
		if err != nil {
			return out, fmt.Errorf("%s: %w", s.from(), err)
		}
		out = append(out, Fault{From: s.from(), To: s.to(), Slot: slot, Action: r.Action, Rule: r.String(), Spec: r})
	}
	return out, nil
}

// addRule adds r to the program on s's port, attaching one if there is
// none (or only a stale one, whose device is gone), and sets up fq for a
// delay rule.
func addRule(fabric string, s sender, r bpf.Rule) (int, error) {
	dir := faultPortDir(fabric, s.node.Name, s.port)
	var slot int
	err := fabricnet.Do(s.node.Namespace, func() error {
		l, err := netlink.LinkByName(fabricnet.PortIface(s.port))
		if err != nil {
			return err
		}
		ifindex := l.Attrs().Index
		if r.Action == bpf.Delay {
			h, err := netlink.NewHandle()
			if err != nil {
				return err
			}
			defer h.Close()
			if err := bpf.SetupFQ(h, ifindex); err != nil {
				return err
			}
		}
		a, err := openOrAttach(dir, ifindex)
		if err != nil {
			return err
		}
		defer a.Close()
		slot, err = a.Add(r)
		return err
	})
	return slot, err
}

// openOrAttach opens the program pinned in dir if it is attached to
// device ifindex, and otherwise (none, half made, or stale: its device is
// gone) attaches a new one there. It runs in the device's namespace.
func openOrAttach(dir string, ifindex int) (*bpf.Attachment, error) {
	a, err := bpf.Open(dir)
	switch {
	case err == nil:
		if idx, ok := a.Ifindex(); ok && idx == ifindex {
			return a, nil
		}
		if err := a.Detach(); err != nil {
			return nil, err
		}
	case errors.Is(err, os.ErrNotExist):
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	return bpf.Attach(dir, ifindex, bpf.Egress)
}

// ListFaults returns the faults installed in fabric, by sending port and
// slot, with their counters.
func ListFaults(fabric string) ([]Fault, error) {
	st, t, err := loadFabric(fabric)
	if err != nil {
		return nil, err
	}
	if st.Plane == PlaneMgmt {
		return listMgmtFaults(fabric, t)
	}
	nodes, err := nodesByTopo(st, t)
	if err != nil {
		return nil, err
	}
	var out []Fault
	for i, n := range nodes {
		for p := 1; p <= t.Node(i).NumPorts; p++ {
			peer, ok := t.Peer(topologies.PortRef{Node: i, Port: p})
			if !ok {
				continue
			}
			s := sender{node: n, port: p, peer: nodes[peer.Node], peerPort: peer.Port}
			a, err := bpf.Open(faultPortDir(fabric, n.Name, p))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return out, err
			}
			entries, err := a.List()
			a.Close()
			if err != nil {
				return out, fmt.Errorf("%s: %w", s.from(), err)
			}
			for _, e := range entries {
				out = append(out, Fault{From: s.from(), To: s.to(), Slot: e.Slot, Action: e.Rule.Action,
					Rule: e.Rule.String(), Counters: e.Counters, Spec: e.Rule})
			}
		}
	}
	return out, nil
}

// ClearFaults removes the faults on both directions of node's port in
// fabric (port 0: of all its ports; node "": every fault of the fabric),
// detaching their programs and removing the fq qdiscs delay rules set up.
// It returns how many rules it removed.
func ClearFaults(fabric, node string, port int) (int, error) {
	st, t, err := loadFabric(fabric)
	if err != nil {
		return 0, err
	}
	if st.Plane == PlaneMgmt {
		return clearMgmtFaults(fabric, st, t, node, port)
	}
	var senders []sender
	if node == "" {
		for i := range st.Nodes {
			s, err := portSenders(st, t, st.Nodes[i].Name, 0, false)
			if err == nil {
				senders = append(senders, s...)
			}
		}
	} else {
		out, err := portSenders(st, t, node, port, false)
		if err != nil {
			return 0, err
		}
		in, _ := portSenders(st, t, node, port, true)
		senders = append(out, in...)
	}
	unlock, err := lockFaults(fabric)
	if err != nil {
		return 0, err
	}
	defer unlock()
	removed := 0
	var errs []error
	for _, s := range senders {
		n, err := clearPort(fabric, s)
		removed += n
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.from(), err))
		}
	}
	return removed, errors.Join(errs...)
}

// clearPort detaches the program on s's port, if any, and removes the fq
// qdisc SetupFQ put there.
func clearPort(fabric string, s sender) (int, error) {
	dir := faultPortDir(fabric, s.node.Name, s.port)
	a, err := bpf.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	n := 0
	if err == nil {
		entries, _ := a.List()
		n = len(entries)
		err = a.Detach()
	} else {
		err = errors.Join(err, os.RemoveAll(dir)) // a half-made directory
	}
	err = errors.Join(err, fabricnet.Do(s.node.Namespace, func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		l, err := h.LinkByName(fabricnet.PortIface(s.port))
		if err != nil {
			return err
		}
		return bpf.RemoveFQ(h, l.Attrs().Index)
	}))
	// The node's directory goes with its last port's.
	_ = os.Remove(filepath.Dir(dir))
	return n, err
}

// removeFaults unpins every fault program of fabric (Down calls it):
// unpinned, the programs detach, or go with their devices.
func removeFaults(fabric string) error {
	err := os.RemoveAll(faultFabricDir(fabric))
	_ = os.Remove(faultRoot) // when no other fabric has faults
	return err
}

// SortFaults orders faults by sending port, then slot.
func SortFaults(fs []Fault) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].From != fs[j].From {
			return portLess(fs[i].From, fs[j].From)
		}
		return fs[i].Slot < fs[j].Slot
	})
}

// portLess orders "node[port]" names by node, then port number.
func portLess(a, b string) bool {
	na, pa := splitPortName(a)
	nb, pb := splitPortName(b)
	if na != nb {
		return na < nb
	}
	return pa < pb
}

func splitPortName(s string) (string, int) {
	i := strings.LastIndexByte(s, '[')
	if i < 0 || !strings.HasSuffix(s, "]") {
		return s, 0
	}
	p, _ := strconv.Atoi(s[i+1 : len(s)-1])
	return s[:i], p
}
