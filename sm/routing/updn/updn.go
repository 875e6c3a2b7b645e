package updn

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

	"ibfab/sm/routing"
	"ibfab/wire/mad"
)

// Up*/down* routing, thesis ch. 6. Every link gets a direction: "up" leads
// toward the root, the SM's switch. Directions follow the distance from
// the root (the thesis's BFS-by-distance DAG): a switch link goes up to
// the end nearer the root, and between two switches at the same distance
// up to the lower GUID, which keeps the graph acyclic with the root its
// only sink. A CA's link goes up to its switch. A legal route takes zero
// or more up links, then zero or more down links, never down then up.
//
// FERa and PIRa both compute legal routes on this DAG; see fera and pira.

// DAG is the up*/down* orientation of a fabric's links.
type DAG struct {
	Root int
	Dist []int    // per node: links from the root over switches; -1 unreached
	Up   [][]bool // [node][port]: leaving node through port goes up
}

// NewDAG orients f's links around root (a switch).
func NewDAG(f *routing.Fabric, root int) (*DAG, error) {
	t := f.Topo
	d := &DAG{Root: root, Dist: make([]int, t.NumNodes()), Up: make([][]bool, t.NumNodes())}
	for i := range d.Dist {
		d.Dist[i] = -1
		d.Up[i] = make([]bool, t.Node(i).NumPorts+1)
	}
	d.Dist[root] = 0
	queue := []int{root}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, a := range f.Arcs(u) {
			if d.Dist[a.Peer] >= 0 {
				continue
			}
			d.Dist[a.Peer] = d.Dist[u] + 1
			if f.IsSwitch(a.Peer) {
				queue = append(queue, a.Peer)
			}
		}
	}
	for i := range t.NumNodes() {
		if d.Dist[i] < 0 {
			return nil, fmt.Errorf("%w: %s is not connected to the root %s", routing.ErrRouting, t.Node(i).Name, t.Node(root).Name)
		}
		for _, a := range f.Arcs(i) {
			d.Up[i][a.Port] = d.above(f, a.Peer, i)
		}
	}
	return d, nil
}

// above reports whether node a is above node b: nearer the root, or as
// near with a lower GUID. A CA is never above anything.
func (d *DAG) above(f *routing.Fabric, a, b int) bool {
	switch {
	case !f.IsSwitch(a):
		return false
	case !f.IsSwitch(b):
		return true
	case d.Dist[a] != d.Dist[b]:
		return d.Dist[a] < d.Dist[b]
	}
	return f.Topo.Node(a).GUID < f.Topo.Node(b).GUID
}

// ---- FERa ----

type fera struct{ o routing.Options }

// FERa returns the updn-fera engine with options o, unchecked: multipath
// roots its fallback layers with it.
func FERa(o routing.Options) routing.Engine { return fera{o} }

func init() {
	routing.RegisterEngine("updn-fera", func(o routing.Options) (routing.Engine, error) {
		if err := o.FERaTies.Check(); err != nil {
			return nil, err
		}
		return fera{o}, nil
	})
	routing.RegisterEngine("updn-pira", func(o routing.Options) (routing.Engine, error) {
		if err := o.Parent.Check(); err != nil {
			return nil, err
		}
		return pira{o}, nil
	})
}

// start is both engines' first step: the DAG from the root the options
// name, and an empty route set with its up links.
func start(f *routing.Fabric, o routing.Options, name string) (*DAG, *routing.Routes, error) {
	root, err := f.UpdnRoot(o)
	if err != nil {
		return nil, nil, err
	}
	d, err := NewDAG(f, root)
	if err != nil {
		return nil, nil, err
	}
	r := routing.NewRoutes(name, f)
	r.Up = d.Up
	return d, r, nil
}

func (fera) Name() string { return "updn-fera" }

// Route runs FERa, the Fully Explicit Routing algorithm (thesis 6.2.2):
// for each destination, a controlled flood outward from it that never
// makes a down→up turn. A switch reached gets the port it was reached by;
// reached again, it keeps its entry unless the new option is down-going
// and the old one up-going (the IB rule: any down-going option beats every
// up-going one), or both are of one kind and the new one is shorter. Ties
// keep the old entry, or toss a seeded coin with TieRandom. The flood is
// FIFO, ports lowest first. Every accepted option counts as an entry
// computed, overwrites included; a switch's entry for itself (port 0)
// counts too.
func (e fera) Route(f *routing.Fabric) (*routing.Routes, error) {
	d, r, err := start(f, e.o, e.Name())
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(e.o.Seed, 0xfe7a))
	type best struct {
		port, dist int
		up, set    bool
	}
	type option struct{ node, port, dist int }
	bests := make([]best, f.Topo.NumNodes())
	var queue []option
	r.Seq = make([][]int32, f.Topo.NumNodes())
	for _, s := range f.Switches() {
		r.Seq[s] = make([]int32, len(f.Ends()))
	}
	var seq int32
	for i, dst := range f.Ends() {
		if dst.Switch < 0 {
			continue
		}
		clear(bests)
		queue = queue[:0]
		// The destination's own switch: port 0 for itself, the CA's port
		// for a CA. Both count as computed entries.
		t := dst.Switch
		bests[t] = best{port: dst.SwitchPort, dist: 0, set: true}
		if dst.SwitchPort != 0 {
			bests[t].dist = 1
		}
		r.SetEnd(t, dst, dst.SwitchPort)
		r.Computed++
		r.PerStep[i]++
		r.Seq[t][i], seq = seq, seq+1
		for _, a := range f.Arcs(t) {
			// Nothing turns at the destination: every neighbour may come.
			if f.IsSwitch(a.Peer) {
				queue = append(queue, option{a.Peer, a.PeerPort, bests[t].dist + 1})
			}
		}
		for len(queue) > 0 {
			o := queue[0]
			queue = queue[1:]
			if o.node == t {
				continue
			}
			up := d.Up[o.node][o.port]
			cur := bests[o.node]
			accept := !cur.set ||
				(!up && cur.up) ||
				(up == cur.up && o.dist < cur.dist) ||
				(up == cur.up && o.dist == cur.dist && e.o.FERaTies == routing.TieRandom && rng.IntN(2) == 0 && o.port != cur.port)
			if !accept {
				continue
			}
			bests[o.node] = best{port: o.port, dist: o.dist, up: up, set: true}
			r.SetEnd(o.node, dst, o.port)
			r.Computed++
			r.PerStep[i]++
			r.Seq[o.node][i], seq = seq, seq+1
			for _, a := range f.Arcs(o.node) {
				// n → x → y is legal when x → y goes down or n → x goes up.
				if f.IsSwitch(a.Peer) && (!up || d.Up[a.Peer][a.PeerPort]) {
					queue = append(queue, option{a.Peer, a.PeerPort, o.dist + 1})
				}
			}
		}
	}
	return r, nil
}

// ---- PIRa ----

type pira struct{ o routing.Options }

func (pira) Name() string { return "updn-pira" }

// Route runs PIRa, the Partially Implicit Routing algorithm (thesis
// 6.2.3). Every legal route is up hops then down hops, and all up hops
// lead to the root, so each switch's up segment is its default port,
// toward its parent, and only down segments need explicit entries.
// Nodes (switches, and CA ports as leaves) are explored in a topological
// order from the root down: by distance from the root, then GUID (on the
// thesis's example network, its LID order). Exploring node n with upper
// neighbours PREV(n), all already explored:
//
//  3. pick the parent f in PREV(n) (Options.Parent); a switch's default
//     port is its port to f;
//  4. a switch gets FT(n, y) = its port to y for every other y in PREV(n),
//     and FT(n, n) = 0;
//  5. every y in PREV(n) gets FT(y, n) = its port to n;
//  6. every other explored switch z gets FT(z, n) = FT(z, f) when z has an
//     explicit entry for f; otherwise z reaches n by its default port.
//
// No entry equals its switch's default port by construction. Computed
// counts the explicit entries, self entries included; PerStep those of
// each exploration step. The LFT holds the explicit entries and, in every
// other entry, the default port, since linear tables have none.
func (e pira) Route(f *routing.Fabric) (*routing.Routes, error) {
	d, r, err := start(f, e.o, e.Name())
	if err != nil {
		return nil, err
	}
	r.Default = make([]uint8, f.Topo.NumNodes())
	for i := range r.Default {
		r.Default[i] = mad.LFTNoPort
	}
	x := newPiraRun(f, d, r, e.o)
	for _, n := range x.order() {
		if err := x.explore(n); err != nil {
			return nil, err
		}
	}
	x.fillLFT()
	return r, nil
}

// piraRun is one run of PIRa.
type piraRun struct {
	f     *routing.Fabric
	d     *DAG
	r     *routing.Routes
	o     routing.Options
	rng   *rand.Rand
	endOf []int     // switch -> its end port
	ft    [][]int16 // ft[z][end] is z's explicit entry for an end port, -1 when implicit
	// explored are the switches explored so far.
	explored []int
}

// piraUp is an upper neighbour of a node and the node's port to it.
type piraUp struct{ node, port int }

func newPiraRun(f *routing.Fabric, d *DAG, r *routing.Routes, o routing.Options) *piraRun {
	x := &piraRun{f: f, d: d, r: r, o: o, rng: rand.New(rand.NewPCG(o.Seed, 0x91ba)),
		endOf: make([]int, f.Topo.NumNodes()), ft: make([][]int16, f.Topo.NumNodes())}
	for i, ep := range f.Ends() {
		if ep.Switch >= 0 && ep.Port == 0 && f.IsSwitch(ep.Node) {
			x.endOf[ep.Node] = i
		}
	}
	for _, s := range f.Switches() {
		x.ft[s] = make([]int16, len(f.Ends()))
		for k := range x.ft[s] {
			x.ft[s][k] = -1
		}
	}
	return x
}

// order returns the exploration order over the end ports that hang off a
// switch.
func (x *piraRun) order() []int {
	var order []int
	for i, ep := range x.f.Ends() {
		if ep.Switch >= 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, x.compare)
	return order
}

// compare orders end ports by distance from the root, then GUID.
func (x *piraRun) compare(a, b int) int {
	da, ga := x.rank(a)
	db, gb := x.rank(b)
	return cmp.Or(cmp.Compare(da, db), cmp.Compare(ga, gb))
}

// rank is an end port's place in the exploration order: its distance
// from the root, and its GUID.
func (x *piraRun) rank(i int) (int, uint64) {
	ep := x.f.Ends()[i]
	if ep.Port == 0 {
		return x.d.Dist[ep.Node], x.f.Topo.Node(ep.Node).GUID
	}
	return x.d.Dist[ep.Switch] + 1, x.f.Topo.Node(ep.Node).Ports[ep.Port].GUID
}

// entry sets z's explicit entry for an end port, computed at a step.
func (x *piraRun) entry(z, end, port, step int) {
	x.ft[z][end] = int16(port)
	x.r.Computed++
	x.r.PerStep[step]++
}

// explore takes end port n, the next in exploration order: steps 3 to 6.
func (x *piraRun) explore(n int) error {
	ep := x.f.Ends()[n]
	prev := x.upperNeighbours(ep)
	if ep.Node == x.d.Root && ep.Port == 0 {
		x.entry(x.d.Root, n, 0, n)
		x.explored = append(x.explored, x.d.Root)
		return nil
	}
	if len(prev) == 0 {
		return fmt.Errorf("%w: %s has no upper neighbour", routing.ErrRouting, x.f.Topo.Node(ep.Node).Name)
	}
	parent := x.parent(prev)
	if ep.Port == 0 {
		x.exploreSwitch(n, ep.Node, prev, parent)
	} else {
		x.entry(ep.Switch, n, ep.SwitchPort, n)
	}
	pEnd := x.endOf[parent.node]
	for _, z := range x.explored {
		if !slices.ContainsFunc(prev, func(y piraUp) bool { return y.node == z }) && x.ft[z][pEnd] >= 0 {
			x.entry(z, n, int(x.ft[z][pEnd]), n)
		}
	}
	if ep.Port == 0 {
		x.explored = append(x.explored, ep.Node)
	}
	return nil
}

// upperNeighbours returns PREV of an end port, in exploration order so
// that first and last mean what they say: a switch's upper neighbour
// switches, or a CA port's switch.
func (x *piraRun) upperNeighbours(ep routing.EndPort) []piraUp {
	if ep.Port != 0 {
		return []piraUp{{ep.Switch, 0}}
	}
	var prev []piraUp
	seen := map[int]bool{}
	for _, a := range x.f.Arcs(ep.Node) {
		if x.d.Up[ep.Node][a.Port] && x.f.IsSwitch(a.Peer) && !seen[a.Peer] {
			seen[a.Peer] = true
			prev = append(prev, piraUp{a.Peer, a.Port})
		}
	}
	slices.SortStableFunc(prev, func(a, b piraUp) int { return x.compare(x.endOf[a.node], x.endOf[b.node]) })
	return prev
}

// parent picks the parent among PREV (step 3, Options.Parent).
func (x *piraRun) parent(prev []piraUp) piraUp {
	switch x.o.Parent {
	case routing.ParentFirst:
		return prev[0]
	case routing.ParentRandom:
		return prev[x.rng.IntN(len(prev))]
	}
	return prev[len(prev)-1]
}

// exploreSwitch takes switch s, end port n: its default port toward its
// parent (step 3), its entries for itself and its other upper neighbours
// (step 4), and theirs for it (step 5).
func (x *piraRun) exploreSwitch(n, s int, prev []piraUp, parent piraUp) {
	x.r.Default[s] = uint8(parent.port)
	x.r.DefaultPorts++
	x.entry(s, n, 0, n)
	for _, y := range prev {
		if y.node != parent.node {
			x.entry(s, x.endOf[y.node], y.port, n)
		}
	}
	for _, y := range prev {
		x.entry(y.node, n, portTo(x.f, y.node, s), n)
	}
}

// fillLFT writes every switch's table: its explicit entries and, in every
// other, its default port.
func (x *piraRun) fillLFT() {
	for _, s := range x.f.Switches() {
		for k, ep := range x.f.Ends() {
			port := int(x.r.Default[s])
			if x.ft[s][k] >= 0 {
				port = int(x.ft[s][k])
			}
			if port != mad.LFTNoPort {
				x.r.SetEnd(s, ep, port)
			}
		}
	}
}

// portTo returns the lowest port of switch a cabled to node b.
func portTo(f *routing.Fabric, a, b int) int {
	for _, x := range f.Arcs(a) {
		if x.Peer == b {
			return x.Port
		}
	}
	return mad.LFTNoPort
}
