package webview

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"ibfab/harness"
	"ibfab/harness/fabricgraph"
	"ibfab/internal/enum"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// Fabric is /api/fabric: the map's nodes and links with what the last
// poll saw. Fields may be added, never renamed: the page and scripts read
// it.
type Fabric struct {
	Fabric string `json:"fabric"`
	// Layout is how the page places the nodes.
	Layout Layout `json:"layout"`
	// Polled is when the status behind this view was read.
	Polled time.Time `json:"polled"`
	// Window is the span the utilizations are measured over: about a
	// second once the server has polled that long, less before.
	Window time.Duration `json:"window_ns"`
	Nodes  []Node        `json:"nodes"`
	Links  []Link        `json:"links"`
}

// Node is one node of the map.
type Node struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Alive bool   `json:"alive"`
	Error string `json:"error,omitempty"`
	// X and Y place the node when the layout is LayoutFatTree: stage
	// rows, top stage first.
	X float64 `json:"x"`
	Y float64 `json:"y"`
	// Drops and Errors sum the node's ports' (LinkEnd's meaning), and
	// NewDrops and NewErrors their rises over the window.
	Drops     uint64 `json:"drops"`
	Errors    uint64 `json:"errors"`
	NewDrops  uint64 `json:"new_drops"`
	NewErrors uint64 `json:"new_errors"`
}

// Link is one cable: both ends' state and counters, and how busy it is.
type Link struct {
	ID string  `json:"id"`
	A  LinkEnd `json:"a"`
	B  LinkEnd `json:"b"`
	// State is the lower of the two ends' states (Down < Init < Armed <
	// Active): a link carries data only when both ends are Active.
	State string `json:"state"`
	// Utilization is the busier direction's share of the link's rate over
	// Fabric.Window, 0 to 1.
	Utilization float64 `json:"utilization"`
}

// LinkEnd is one port of a link.
type LinkEnd struct {
	Node  string `json:"node"`
	Port  int    `json:"port"`
	State string `json:"state"`
	Phys  string `json:"phys"`
	LID   uint16 `json:"lid"`
	// Utilization is what the port sent over the window as a share of
	// its rate.
	Utilization float64 `json:"utilization"`
	// Drops is the sum of the port's drop counters (nodeproc's Drops),
	// Errors the sum of its PMA error counters, both since the port
	// started (or its PMA counters were reset).
	Drops  uint64 `json:"drops"`
	Errors uint64 `json:"errors"`
	// NewDrops and NewErrors are how much Drops and Errors rose over
	// Fabric.Window: what the page marks, so that a mark goes once the
	// port stops dropping (the totals are in the node's detail).
	NewDrops  uint64 `json:"new_drops"`
	NewErrors uint64 `json:"new_errors"`
}

// Layout is how the page places a fabric's nodes.
type Layout uint8

const (
	// LayoutForce lets the page's force-directed layout place them: any
	// topology.
	LayoutForce Layout = iota // force
	// LayoutFatTree places them by the server's X and Y: switch stages
	// in rows, hosts below their leaves (topologies.LayoutFatTree).
	LayoutFatTree // fattree
)

var layouts = enum.New("layout", LayoutForce, LayoutFatTree)

// MarshalText writes the layout's name, which the page switches on.
func (l Layout) MarshalText() ([]byte, error) { return layouts.Marshal(l) }

// UnmarshalText reads a name MarshalText wrote.
func (l *Layout) UnmarshalText(b []byte) error { return layouts.Unmarshal(l, b) }

// portErrors sums a port's PMA error counters: what marks a link as
// faulty on the map besides drops.
func portErrors(c nodeproc.Counters) uint64 {
	return uint64(c.SymbolErrorCounter) + uint64(c.LinkErrorRecoveryCounter) + uint64(c.PortRcvErrors) +
		uint64(c.PortRcvRemotePhysicalErrors) + uint64(c.PortRcvSwitchRelayErrors) + uint64(c.PortXmitDiscards) +
		uint64(c.PortXmitConstraintErrors) + uint64(c.PortRcvConstraintErrors) + uint64(c.LocalLinkIntegrityErrors) +
		uint64(c.ExcessiveBufferOverrunErrors) + uint64(c.VL15Dropped)
}

// portDrops sums a port's drop counters.
func portDrops(p nodeproc.PortStatus) uint64 {
	var n uint64
	for _, v := range p.Drops {
		n += v
	}
	return n
}

// rise is how much a counter went up from base to now; a counter that
// went back (a PMA reset, a restarted node) rose by nothing, as
// utilization has it.
func rise(base, now uint64) uint64 {
	if now < base {
		return 0
	}
	return now - base
}

// sample is one poll: when, and the status read.
type sample struct {
	at time.Time
	st *harness.FabricStatus
}

// portKey names a port across samples.
type portKey struct {
	node string
	port int
}

// ports indexes a status's ports.
func ports(st *harness.FabricStatus) map[portKey]nodeproc.PortStatus {
	m := map[portKey]nodeproc.PortStatus{}
	for _, n := range st.Nodes {
		for _, p := range n.Ports {
			m[portKey{n.Name, p.Port}] = p
		}
	}
	return m
}

// utilization is what a port sent between base and now as a share of
// its rate. PortXmitData counts 4-byte words. Emulated time runs
// TimeScale times slower than the wall clock the samples were taken by,
// so the pacer's wall-clock rate is Rate/TimeScale. A counter that went
// back (a PMA reset, a restarted node) gives 0 rather than a huge
// number, as does a port with no rate or a window of no time.
func utilization(base, now nodeproc.PortStatus, dt time.Duration, scale float64) float64 {
	if dt <= 0 || now.Rate == 0 || now.Counters.PortXmitData < base.Counters.PortXmitData {
		return 0
	}
	scale = max(scale, 1)
	bits := float64(now.Counters.PortXmitData-base.Counters.PortXmitData) * 32
	u := bits / dt.Seconds() / (float64(now.Rate) / scale)
	return min(u, 1)
}

// portWindow is two samples' ports: what a view's ends are read from.
type portWindow struct {
	cur, prev map[portKey]nodeproc.PortStatus // prev nil: no window yet
	dt        time.Duration
	scale     float64
}

// end is one port's state, counters and what they rose by over the
// window.
func (w *portWindow) end(name string, port int) LinkEnd {
	k := portKey{name, port}
	p, ok := w.cur[k]
	if !ok {
		return LinkEnd{Node: name, Port: port, State: "Unknown", Phys: "Unknown"}
	}
	e := LinkEnd{Node: name, Port: port, State: p.State, Phys: p.Phys, LID: p.LID,
		Drops: portDrops(p), Errors: portErrors(p.Counters)}
	if b, ok := w.prev[k]; ok {
		e.Utilization = utilization(b, p, w.dt, w.scale)
		e.NewDrops, e.NewErrors = rise(portDrops(b), e.Drops), rise(portErrors(b.Counters), e.Errors)
	}
	return e
}

// buildFabric builds the view of t from the newest sample now and the
// sample base the utilizations and new drops are measured from (base
// may be empty: no window yet, every utilization and rise 0). pos, the
// fat-tree layout's places (fatTreePositions), places the nodes when it
// is not nil.
func buildFabric(t *topologies.Topology, pos map[int][2]float64, base, now sample) *Fabric {
	f := &Fabric{Fabric: now.st.Fabric, Polled: now.at}
	w := &portWindow{cur: ports(now.st), scale: now.st.TimeScale}
	if base.st != nil {
		w.prev, w.dt = ports(base.st), now.at.Sub(base.at)
		f.Window = w.dt
	}
	if pos != nil {
		f.Layout = LayoutFatTree
	}
	f.Nodes = buildNodes(t, pos, now.st, w)
	for _, l := range t.Links() {
		a, b := w.end(t.Node(l.A.Node).Name, l.A.Port), w.end(t.Node(l.B.Node).Name, l.B.Port)
		f.Links = append(f.Links, Link{
			ID: linkID(a, b), A: a, B: b,
			State:       fabricgraph.LowerState(a.State, b.State),
			Utilization: max(a.Utilization, b.Utilization),
		})
	}
	return f
}

// buildNodes is the view's nodes: t's, with st's liveness and the sums
// of their ports' drops and errors.
func buildNodes(t *topologies.Topology, pos map[int][2]float64, st *harness.FabricStatus, w *portWindow) []Node {
	byName := map[string]harness.NodeStatus{}
	for _, n := range st.Nodes {
		byName[n.Name] = n
	}
	var nodes []Node
	for i, tn := range t.Nodes() {
		ns := byName[tn.Name]
		n := Node{Name: tn.Name, Type: nodeType(tn.Type), Alive: ns.Alive, Error: ns.Error}
		if p, ok := pos[i]; ok {
			n.X, n.Y = p[0], p[1]
		}
		for _, p := range ns.Ports {
			e := w.end(tn.Name, p.Port)
			n.Drops, n.Errors = n.Drops+e.Drops, n.Errors+e.Errors
			n.NewDrops, n.NewErrors = n.NewDrops+e.NewDrops, n.NewErrors+e.NewErrors
		}
		nodes = append(nodes, n)
	}
	return nodes
}

// linkID is "a[1]-b[2]", the edge's id on the page.
func linkID(a, b LinkEnd) string {
	return fmt.Sprintf("%s[%d]-%s[%d]", a.Node, a.Port, b.Node, b.Port)
}

// nodeType is the status's name of a node type.
func nodeType(t topologies.NodeType) string {
	if t == topologies.Switch {
		return "switch"
	}
	return "hca"
}

// Spacing of the fat-tree layout, in the page's model units (a node is
// 22 units wide, its label 11 high under it). A host's label ("ca12-12")
// is what sets hostDX.
const (
	hostDX = 48 // between hosts of a sub-row, and between leaves' blocks
	hostDY = 46 // between a block's sub-rows
	// hostGapDY is from the leaves' row to their blocks' first sub-row:
	// short, so that a leaf's cables fan out to its hosts rather than
	// run down to them in a bundle.
	hostGapDY = 100
	// layoutDY is the least spacing of the switch rows.
	layoutDY = 120
	// layoutAspect is the height the layout aims at per unit of width:
	// the map's pane of a landscape window.
	layoutAspect = 0.75
)

// fatTreeGrid is how fatTreePositions places a fat tree's hosts: each
// leaf's hosts in a block of sub-rows under it, cols wide, every other
// sub-row shifted half a column (so that a cable to a lower sub-row
// passes between the hosts above), the blocks side by side.
type fatTreeGrid struct {
	cols, rows int
	shift      float64 // of the odd sub-rows
	width      float64 // of the whole drawing: the blocks and their gaps
	hostsH     float64 // from the first sub-row to the last
	stageDY    float64 // between a switch stage's row and the next
}

// newFatTreeGrid picks the blocks' width: the narrowest whose sub-rows
// fill at most half the drawing's height, and at least two columns (a
// column of hosts under its leaf hides their cables behind each other).
// The switch rows are spread over the rest of the height, so that the
// drawing is about layoutAspect as high as it is wide.
func newFatTreeGrid(leaves, perLeaf, stages int) fatTreeGrid {
	var g fatTreeGrid
	for g.cols = min(2, perLeaf); ; g.cols++ {
		g.rows = (perLeaf + g.cols - 1) / g.cols
		g.shift = 0
		if g.rows > 1 {
			g.shift = hostDX / 2
		}
		g.width = float64(leaves*(g.cols+1)-2)*hostDX + g.shift
		g.hostsH = float64(g.rows-1) * hostDY
		if g.cols >= perLeaf || g.hostsH <= layoutAspect*g.width/2 {
			break
		}
	}
	g.stageDY = layoutDY
	if stages > 1 {
		g.stageDY = max(layoutDY, (layoutAspect*g.width-g.hostsH-hostGapDY)/float64(stages-1))
	}
	return g
}

// fatTreePositions places a fat tree's nodes: each leaf's hosts, in host
// order, in a block of sub-rows (fatTreeGrid) at the bottom, the leaves
// centred over their blocks, each higher stage's switches ordered by the
// mean position of the switches below them (a barycentre, so that few
// cables cross) and spread evenly over the width. Nodes the layout does
// not place are left to the page.
func fatTreePositions(t *topologies.Topology, l *topologies.FatTreeLayout) map[int][2]float64 {
	perLeaf := make([]int, len(l.Leaves))
	for h := range l.Hosts {
		if li, ok := l.Leaf(h); ok {
			perLeaf[li]++
		}
	}
	g := newFatTreeGrid(len(l.Leaves), max(1, slices.Max(perLeaf)), l.Stages)
	pos := map[int][2]float64{}
	y := func(stage int) float64 { return float64(l.Stages-stage) * g.stageDY }
	pitch := float64(g.cols+1) * hostDX // block to block
	k := make([]int, len(l.Leaves))     // hosts placed per leaf
	for h, n := range l.Hosts {
		li, _ := l.Leaf(h)
		col, row := k[li]%g.cols, k[li]/g.cols
		k[li]++
		x := float64(li)*pitch + float64(col)*hostDX + float64(row%2)*g.shift
		pos[n] = [2]float64{x, y(1) + hostGapDY + float64(row)*hostDY}
	}
	for li, n := range l.Leaves {
		pos[n] = [2]float64{float64(li)*pitch + (float64(g.cols-1)*hostDX+g.shift)/2, y(1)}
	}
	for stage := 2; stage <= l.Stages; stage++ {
		spread(pos, barycentreOrder(t, l, pos, stage), g.width, y(stage))
	}
	return pos
}

// spread places nodes evenly over width on row y; one node is centred.
func spread(pos map[int][2]float64, nodes []int, width, y float64) {
	step, off := 0.0, width/2
	if len(nodes) > 1 {
		step, off = width/float64(len(nodes)-1), 0
	}
	for k, n := range nodes {
		pos[n] = [2]float64{off + float64(k)*step, y}
	}
}

// barycentreOrder returns the switches of stage ordered by the mean x of
// their neighbours one stage down (placed already), node order breaking
// ties.
func barycentreOrder(t *topologies.Topology, l *topologies.FatTreeLayout, pos map[int][2]float64, stage int) []int {
	var nodes []int
	centre := map[int]float64{}
	for i := range t.NumNodes() {
		if l.Stage(i) != stage {
			continue
		}
		var sum float64
		var k int
		for _, j := range t.Neighbors(i) {
			if p, ok := pos[j]; ok && l.Stage(j) == stage-1 {
				sum += p[0]
				k++
			}
		}
		if k > 0 {
			centre[i] = sum / float64(k)
		}
		nodes = append(nodes, i)
	}
	slices.SortStableFunc(nodes, func(a, b int) int {
		return cmp.Or(cmp.Compare(centre[a], centre[b]), a-b)
	})
	return nodes
}
