package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"ibfab/fabricnet"
	"ibfab/internal/ctl"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// ErrBadPiece is wrapped by CheckPiece's errors (and Add's for them).
var ErrBadPiece = errors.New("bad piece")

// AddOptions tune Add. The zero value waits 30 s plus 100 ms per new node.
type AddOptions struct {
	// NodeArgs are extra flags for every new node process; NodeArgsFor
	// adds flags for single new nodes by name.
	NodeArgs    []string
	NodeArgsFor map[string][]string
	// Timeout bounds the wait for the new links to train.
	Timeout time.Duration
}

// CheckPiece checks that p can be added to a fabric running base and
// returns the extended topology: base's nodes in their order, then the
// piece's. Errors wrap ErrBadPiece and say what is wrong where.
func CheckPiece(base *topologies.Topology, p *topologies.Piece) (*topologies.Topology, error) {
	if p == nil || p.Topology == nil || p.Topology.NumNodes() == 0 {
		return nil, badPiece("it has no nodes")
	}
	if err := checkPieceNodes(base, p.Topology); err != nil {
		return nil, err
	}
	used, err := checkAttachments(base, p)
	if err != nil {
		return nil, err
	}
	for _, l := range p.Topology.Links() {
		if err := nodeproc.CheckLinkRate(l.Width, l.Speed); err != nil {
			pt := p.Topology
			return nil, badPiece("%s[%d] - %s[%d]: %v", pt.Node(l.A.Node).Name, l.A.Port, pt.Node(l.B.Node).Name, l.B.Port, err)
		}
	}
	u, err := base.Extend(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPiece, err)
	}
	first := base.NumNodes()
	// A node process runs all its links at one rate: check the new nodes
	// and the switches the piece is cabled to.
	touched := map[int]bool{}
	for i := first; i < u.NumNodes(); i++ {
		touched[i] = true
	}
	for ref := range used {
		touched[ref.Node] = true
	}
	for _, i := range slices.Sorted(maps.Keys(touched)) {
		if err := checkOneRate(u, i); err != nil {
			return nil, err
		}
	}
	if islands := unreachable(u, first); len(islands) > 0 {
		return nil, badPiece("%s would not be connected to the fabric", strings.Join(islands, ", "))
	}
	return u, nil
}

// badPiece is an error wrapping ErrBadPiece.
func badPiece(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadPiece}, args...)...)
}

// checkPieceNodes checks that the piece's nodes are ones ibfab runs and that
// neither their names nor their GUIDs are the fabric's already.
func checkPieceNodes(base, pt *topologies.Topology) error {
	for _, n := range pt.Nodes() {
		if n.Type == topologies.Router {
			return badPiece("%s is a router, which ibfab does not emulate", n.Name)
		}
		if _, ok := base.Lookup(n.Name); ok {
			return badPiece("node %q is in the fabric already", n.Name)
		}
		if j, ok := base.LookupGUID(n.GUID); ok {
			return badPiece("%s's GUID %#016x is %s's in the fabric (set another with a switchguid= or caguid= line)", n.Name, n.GUID, base.Node(j).Name)
		}
		for q := 1; q <= n.NumPorts; q++ {
			g := n.Ports[q].GUID
			if g == 0 {
				continue
			}
			if j, ok := base.LookupGUID(g); ok {
				return badPiece("%s[%d]'s port GUID %#016x is node %s's GUID in the fabric", n.Name, q, g, base.Node(j).Name)
			}
			if r, ok := base.LookupPortGUID(g); ok {
				return badPiece("%s[%d]'s port GUID %#016x is %s[%d]'s in the fabric", n.Name, q, g, base.Node(r.Node).Name, r.Port)
			}
		}
		if r, ok := base.LookupPortGUID(n.GUID); ok {
			return badPiece("%s's GUID %#016x is %s[%d]'s port GUID in the fabric", n.Name, n.GUID, base.Node(r.Node).Name, r.Port)
		}
	}
	return nil
}

// checkAttachments checks the cables from the piece to the fabric: each
// from a free port of the piece to a distinct free port of a fabric switch,
// at a rate a node runs. It returns the fabric ports cabled, with the piece
// port each takes.
func checkAttachments(base *topologies.Topology, p *topologies.Piece) (map[topologies.PortRef]string, error) {
	if len(p.Attachments) == 0 {
		return nil, badPiece("no port of it is cabled to the fabric (a port line naming a node of the fabric, such as [2] \"sw8\"[3])")
	}
	pt := p.Topology
	used := map[topologies.PortRef]string{}
	for _, a := range p.Attachments {
		i, ok := pt.Lookup(a.Node)
		if !ok {
			return nil, badPiece("a cable starts at %q, which the piece does not define", a.Node)
		}
		me := fmt.Sprintf("%s[%d]", a.Node, a.Port)
		if a.Port < 1 || a.Port > pt.Node(i).NumPorts {
			return nil, badPiece("%s: %s has ports 1-%d", me, a.Node, pt.Node(i).NumPorts)
		}
		if peer, ok := pt.Peer(topologies.PortRef{Node: i, Port: a.Port}); ok {
			return nil, badPiece("%s is cabled both to %s[%d] of the piece and to %s[%d] of the fabric", me, pt.Node(peer.Node).Name, peer.Port, a.BaseNode, a.BasePort)
		}
		ref, err := checkBasePort(base, a, me)
		if err != nil {
			return nil, err
		}
		if other, dup := used[ref]; dup {
			return nil, badPiece("%s and %s both name %s[%d]", other, me, a.BaseNode, a.BasePort)
		}
		used[ref] = me
		if err := nodeproc.CheckLinkRate(a.Width, a.Speed); err != nil {
			return nil, badPiece("%s - %s[%d]: %v", me, a.BaseNode, a.BasePort, err)
		}
	}
	return used, nil
}

// checkBasePort checks that attachment a (the piece's port me) names a free
// port of a switch of the fabric, and returns that port.
func checkBasePort(base *topologies.Topology, a topologies.Attachment, me string) (topologies.PortRef, error) {
	j, ok := base.Lookup(a.BaseNode)
	if !ok {
		return topologies.PortRef{}, badPiece("%s names %q, which is neither in the piece nor in the fabric", me, a.BaseNode)
	}
	bn := base.Node(j)
	there := fmt.Sprintf("%s[%d]", a.BaseNode, a.BasePort)
	switch {
	case bn.Type != topologies.Switch:
		return topologies.PortRef{}, badPiece("%s names %s, a port of an HCA: an HCA's ports are fixed when it starts; cable new nodes to free switch ports", me, there)
	case a.BasePort < 1 || a.BasePort > bn.NumPorts:
		return topologies.PortRef{}, badPiece("%s names %s, but %s has ports 1-%d", me, there, a.BaseNode, bn.NumPorts)
	}
	ref := topologies.PortRef{Node: j, Port: a.BasePort}
	if peer, ok := base.Peer(ref); ok {
		return topologies.PortRef{}, badPiece("%s names %s, which is cabled to %s[%d] already", me, there, base.Node(peer.Node).Name, peer.Port)
	}
	return ref, nil
}

// checkOneRate checks that node i of u has all its links at one width and
// speed, which its process needs.
func checkOneRate(u *topologies.Topology, i int) error {
	var rate, where string
	for q := 1; q <= u.Node(i).NumPorts; q++ {
		l, ok := u.LinkAt(topologies.PortRef{Node: i, Port: q})
		if !ok {
			continue
		}
		w, s := l.Width, l.Speed
		if w == 0 {
			w = topologies.DefaultWidth
		}
		if s == 0 {
			s = topologies.DefaultSpeed
		}
		r := fmt.Sprintf("%v %v", w, s)
		if rate == "" {
			rate, where = r, fmt.Sprintf("%s[%d]", u.Node(i).Name, q)
		} else if r != rate {
			return badPiece("%s would run %s[%d] at %s and %s at %s: a node runs all its links at one rate",
				u.Node(i).Name, u.Node(i).Name, q, r, where, rate)
		}
	}
	return nil
}

// unreachable names the nodes at index first or later of u that no path
// from the fabric's nodes (those before first) reaches: the SM could not
// reach them through the fabric.
func unreachable(u *topologies.Topology, first int) []string {
	seen := make([]bool, u.NumNodes())
	var queue []int
	for i := range first {
		seen[i] = true
		queue = append(queue, i)
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for q := 1; q <= u.Node(i).NumPorts; q++ {
			if peer, ok := u.Peer(topologies.PortRef{Node: i, Port: q}); ok && !seen[peer.Node] {
				seen[peer.Node] = true
				queue = append(queue, peer.Node)
			}
		}
	}
	var islands []string
	for i := first; i < u.NumNodes(); i++ {
		if !seen[i] {
			islands = append(islands, u.Node(i).Name)
		}
	}
	return islands
}

// Add adds piece p to running fabric name (see ibfab add -h): checks it
// (CheckPiece), creates the new nodes' namespaces and veths, records the
// extended topology and state, starts the new processes, opens the new
// ports of the running switches and waits until every new link has trained
// (LinkUp, Init). It returns the extended topology as recorded: the
// fabric's nodes, then the piece's.
//
// Until the new processes run, a failure undoes everything. A failure
// afterwards leaves the nodes recorded as part of the fabric and says so:
// restarting a switch that did not take its new cable opens it from the
// recorded topology; ibfab down removes everything.
func Add(name string, p *topologies.Piece, o AddOptions) (*topologies.Topology, error) {
	if err := needProcesses(name, "add"); err != nil {
		return nil, err
	}
	if st, err := openState(name); err != nil {
		return nil, err
	} else if len(st.Hosts) > 0 {
		return nil, fmt.Errorf("fabric %s is spread over %d hosts: add places no new node on them", name, len(st.Hosts))
	}
	// One add at a time per fabric: each extends the recorded topology it
	// read, and a second one would overwrite the first's.
	unlock, err := lockFile(filepath.Join(fabricDir(name), "add.lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, t, err := loadFabric(name)
	if err != nil {
		return nil, err
	}
	u, err := CheckPiece(t, p)
	if err != nil {
		return nil, err
	}
	cables, err := cablesToRunning(name, st, u, t.NumNodes())
	if err != nil {
		return nil, err
	}
	tx, err := beginAdd(name, st, u, t.NumNodes())
	if err != nil {
		return nil, err
	}
	if err := tx.record(); err != nil {
		return nil, tx.undo(err)
	}
	if err := tx.startNodes(o); err != nil {
		return nil, tx.undo(err)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30*time.Second + time.Duration(u.NumNodes()-tx.first)*100*time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tx.introduce(ctx); err != nil {
		return nil, tx.undo(err)
	}

	// Committed: the new nodes run and are recorded. The old switches
	// open their new ports.
	committed := func(err error) error {
		return fmt.Errorf("%w (the new nodes are part of fabric %s now; 'ibfab restart %s NODE' reopens a switch's ports from the recorded topology, 'ibfab down --name %s' removes it all)",
			err, name, name, name)
	}
	if err := cableOldSwitches(ctx, name, st, u, cables); err != nil {
		return u, committed(err)
	}
	if err := waitNewLinks(ctx, name, st, u, tx.first); err != nil {
		return u, committed(err)
	}
	return u, nil
}

// cablesToRunning maps each switch of the fabric (index below first in u)
// that the piece is cabled to, to its new ports and the new node at the
// other end of each. Those switches must be running to take the cable.
func cablesToRunning(name string, st *fabricState, u *topologies.Topology, first int) (map[int]map[int]int, error) {
	cables := map[int]map[int]int{}
	for _, l := range u.Links() {
		a, b := l.A, l.B
		if a.Node >= first {
			a, b = b, a
		}
		if a.Node >= first || b.Node < first {
			continue
		}
		n := st.Nodes[a.Node]
		if n.PID == 0 || !alive(n.PID) || !IsNodeProcess(n.PID, name, n.Name) {
			return nil, fmt.Errorf("%s is not running (killed?): restart it before cabling %s[%d]", n.Name, n.Name, a.Port)
		}
		if cables[a.Node] == nil {
			cables[a.Node] = map[int]int{}
		}
		cables[a.Node][a.Port] = b.Node
	}
	return cables, nil
}

// addTx is an add until it commits: what undo needs to leave the fabric as
// it was.
type addTx struct {
	name, dir         string
	st                *fabricState
	u                 *topologies.Topology
	first             int      // index in u of the piece's first node
	existing, created []string // the fabric's namespaces, the piece's
	started           []nodeState
	oldTopo, oldState []byte
}

// beginAdd saves the recorded topology and state and creates the new
// nodes' namespaces and veths.
func beginAdd(name string, st *fabricState, u *topologies.Topology, first int) (*addTx, error) {
	tx := &addTx{name: name, dir: fabricDir(name), st: st, u: u, first: first}
	var err error
	if tx.oldTopo, err = os.ReadFile(filepath.Join(tx.dir, topologyFile)); err != nil {
		return nil, err
	}
	if tx.oldState, err = os.ReadFile(filepath.Join(tx.dir, stateFile)); err != nil {
		return nil, err
	}
	tx.existing = make([]string, first)
	for i := range tx.existing {
		tx.existing[i] = st.Nodes[i].Namespace
	}
	if tx.created, err = fabricnet.Extend(name, u, tx.existing, first); err != nil {
		return nil, err
	}
	return tx, nil
}

// undo stops the new processes, removes the new namespaces and sockets and
// restores the recorded topology and state; it returns err saying whether
// that worked.
func (tx *addTx) undo(err error) error {
	var errs []error
	if err := stopProcesses(tx.created, 2*time.Second); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, fabricnet.Retract(tx.name, tx.u, tx.existing, tx.first, tx.created))
	for _, n := range tx.started {
		errs = append(errs, removeIfExists(nodeproc.SocketPath(tx.name, n.Name)))
	}
	errs = append(errs, writeFileAtomic(filepath.Join(tx.dir, topologyFile), tx.oldTopo),
		writeFileAtomic(filepath.Join(tx.dir, stateFile), tx.oldState))
	if uerr := errors.Join(errs...); uerr != nil {
		return fmt.Errorf("%w (undoing it: %v)", err, uerr)
	}
	return fmt.Errorf("%w (the fabric is as it was)", err)
}

// record writes the extended topology, which the new processes read when
// they start, and the state with the new nodes.
func (tx *addTx) record() error {
	var buf bytes.Buffer
	if err := topologies.Write(&buf, tx.u); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(tx.dir, topologyFile), buf.Bytes()); err != nil {
		return err
	}
	st := tx.st
	for i := tx.first; i < tx.u.NumNodes(); i++ {
		n := tx.u.Node(i)
		st.Nodes = append(st.Nodes, nodeState{Name: n.Name, Type: nodeTypeName(n.Type),
			GUID: fmt.Sprintf("%#016x", n.GUID), Namespace: tx.created[i-tx.first]})
		st.given = append(st.given, i)
	}
	st.Namespaces = append(st.Namespaces, tx.created...)
	return writeState(tx.dir, st)
}

// startNodes starts the new nodes' processes and records their PIDs.
func (tx *addTx) startNodes(o AddOptions) error {
	st := tx.st
	uo := UpOptions{TimeScale: st.TimeScale, NodeArgs: o.NodeArgs, NodeArgsFor: o.NodeArgsFor, CPUs: st.CPUs, epoch: time.Unix(0, st.Epoch)}
	for i := tx.first; i < tx.u.NumNodes(); i++ {
		pid, err := startNode(tx.name, tx.u, st.Nodes[i], uo)
		if err != nil {
			return err
		}
		st.Nodes[i].PID = pid
		tx.started = append(tx.started, st.Nodes[i])
	}
	return writeState(tx.dir, st)
}

// introduce tells the new nodes their neighbours' processes; this also
// waits for their control sockets, so that a node that cannot start is
// undone.
func (tx *addTx) introduce(ctx context.Context) error {
	for i := tx.first; i < tx.u.NumNodes(); i++ {
		pids := map[int]int{}
		for q := 1; q <= tx.u.Node(i).NumPorts; q++ {
			if peer, ok := tx.u.Peer(topologies.PortRef{Node: i, Port: q}); ok {
				pids[q] = tx.st.Nodes[peer.Node].PID
			}
		}
		if len(pids) == 0 {
			continue
		}
		if err := callUntilUp(ctx, tx.name, tx.st.Nodes[i], "peers", nodeproc.PeersArgs{PIDs: pids}); err != nil {
			return err
		}
	}
	return nil
}

// cableOldSwitches has each running switch of cables open its new ports.
func cableOldSwitches(ctx context.Context, name string, st *fabricState, u *topologies.Topology, cables map[int]map[int]int) error {
	var errs []error
	for _, j := range slices.Sorted(maps.Keys(cables)) {
		for _, q := range slices.Sorted(maps.Keys(cables[j])) {
			l, _ := u.LinkAt(topologies.PortRef{Node: j, Port: q})
			args := nodeproc.CableArgs{Port: q, Width: l.Width, Speed: l.Speed, PeerPID: st.Nodes[cables[j][q]].PID}
			if err := callUntilUp(ctx, name, st.Nodes[j], "cable", args); err != nil {
				errs = append(errs, fmt.Errorf("cabling %s[%d]: %w", st.Nodes[j].Name, q, err))
			}
		}
	}
	return errors.Join(errs...)
}

// waitNewLinks polls the nodes at either end of the links that touch a node
// at index first or later of u until those links have trained.
func waitNewLinks(ctx context.Context, fabric string, st *fabricState, u *topologies.Topology, first int) error {
	ports := map[int]map[int]bool{}
	for _, l := range u.Links() {
		if l.A.Node < first && l.B.Node < first {
			continue
		}
		for _, r := range []topologies.PortRef{l.A, l.B} {
			if ports[r.Node] == nil {
				ports[r.Node] = map[int]bool{}
			}
			ports[r.Node][r.Port] = true
		}
	}
	start := time.Now()
	for {
		var pending []string
		for _, i := range slices.Sorted(maps.Keys(ports)) {
			n := st.Nodes[i]
			var s nodeproc.Status
			err := ctl.Call(ctx, nodeproc.SocketPath(fabric, n.Name), "status", nil, &s)
			switch {
			case err != nil:
				pending = append(pending, n.Name+": "+err.Error())
			case !trained(&s, ports[i]):
				var ps []string
				for _, p := range s.Ports {
					if ports[i][p.Port] && (p.Phys != "LinkUp" || p.State == "Down") {
						ps = append(ps, fmt.Sprintf("[%d] %s/%s", p.Port, p.Phys, p.State))
					}
				}
				pending = append(pending, n.Name+" "+strings.Join(ps, ","))
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w after %v: %s", errNotTrained, time.Since(start).Round(time.Millisecond), strings.Join(pending, "; "))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// writeFileAtomic replaces name with b through a rename, so that readers
// see the old or the new content, never a part.
func writeFileAtomic(name string, b []byte) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// lockFile takes an exclusive flock on name, waiting for it, and returns
// its release.
func lockFile(name string) (func(), error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", name, err)
	}
	return func() { f.Close() }, nil
}

func removeIfExists(name string) error {
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
