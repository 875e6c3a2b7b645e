package sm

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"

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

// dag is the up*/down* orientation of a fabric's links.
type dag struct {
	root int
	dist []int    // per node: links from the root over switches; -1 unreached
	up   [][]bool // [node][port]: leaving node through port goes up
}

// newDAG orients f's links around root (a switch).
func newDAG(f *Fabric, root int) (*dag, error) {
	t := f.Topo
	d := &dag{root: root, dist: make([]int, t.NumNodes()), up: make([][]bool, t.NumNodes())}
	for i := range d.dist {
		d.dist[i] = -1
		d.up[i] = make([]bool, t.Node(i).NumPorts+1)
	}
	d.dist[root] = 0
	queue := []int{root}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, a := range f.arcs(u) {
			if d.dist[a.Peer] >= 0 {
				continue
			}
			d.dist[a.Peer] = d.dist[u] + 1
			if f.IsSwitch(a.Peer) {
				queue = append(queue, a.Peer)
			}
		}
	}
	for i := range t.NumNodes() {
		if d.dist[i] < 0 {
			return nil, fmt.Errorf("%w: %s is not connected to the root %s", ErrRouting, t.Node(i).Name, t.Node(root).Name)
		}
		for _, a := range f.arcs(i) {
			d.up[i][a.Port] = d.above(f, a.Peer, i)
		}
	}
	return d, nil
}

// above reports whether node a is above node b: nearer the root, or as
// near with a lower GUID. A CA is never above anything.
func (d *dag) above(f *Fabric, a, b int) bool {
	switch {
	case !f.IsSwitch(a):
		return false
	case !f.IsSwitch(b):
		return true
	case d.dist[a] != d.dist[b]:
		return d.dist[a] < d.dist[b]
	}
	return f.Topo.Node(a).GUID < f.Topo.Node(b).GUID
}

// UpdnRoot returns the node index of the switch the up*/down* engines
// root f's routes at under o: RootGUID's switch when set, else the SM's
// switch (the SM's node, or the switch its port is cabled to, or else the
// switch with the lowest GUID). An SM beside ibsm that routes up*/down*
// too (OpenSM's updn in the benchmarks) is given this root to compare
// like with like.
func (f *Fabric) UpdnRoot(o RoutingOptions) (int, error) { return updnRoot(f, o) }

// updnRoot returns the root switch of f: RootGUID's switch when set, else
// the SM's switch.
func updnRoot(f *Fabric, o RoutingOptions) (int, error) {
	if o.RootGUID != 0 {
		i, ok := f.Topo.LookupGUID(o.RootGUID)
		if !ok || !f.IsSwitch(i) {
			return 0, fmt.Errorf("%w: root GUID %#x is not a switch of the fabric", ErrRouting, o.RootGUID)
		}
		return i, nil
	}
	r := f.smSwitch()
	if r < 0 {
		return 0, fmt.Errorf("%w: no switch", ErrRouting)
	}
	return r, nil
}

// ---- FERa ----

type fera struct{ o RoutingOptions }

func init() {
	RegisterEngine("updn-fera", func(o RoutingOptions) (Engine, error) {
		if err := tiesNames.check(uint8(o.FERaTies)); err != nil {
			return nil, err
		}
		return fera{o}, nil
	})
	RegisterEngine("updn-pira", func(o RoutingOptions) (Engine, error) {
		if err := parentNames.check(uint8(o.Parent)); err != nil {
			return nil, err
		}
		return pira{o}, nil
	})
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
func (e fera) Route(f *Fabric) (*Routes, error) {
	root, err := updnRoot(f, e.o)
	if err != nil {
		return nil, err
	}
	d, err := newDAG(f, root)
	if err != nil {
		return nil, err
	}
	r := newRoutes(e.Name(), f)
	r.Up = d.up
	rng := rand.New(rand.NewPCG(e.o.Seed, 0xfe7a))
	type best struct {
		port, dist int
		up, set    bool
	}
	type option struct{ node, port, dist int }
	bests := make([]best, f.Topo.NumNodes())
	var queue []option
	r.seq = make([][]int32, f.Topo.NumNodes())
	for _, s := range f.Switches() {
		r.seq[s] = make([]int32, len(f.ends))
	}
	var seq int32
	for i, dst := range f.ends {
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
		r.setEnd(t, dst, dst.SwitchPort)
		r.Computed++
		r.PerStep[i]++
		r.seq[t][i], seq = seq, seq+1
		for _, a := range f.arcs(t) {
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
			up := d.up[o.node][o.port]
			cur := bests[o.node]
			accept := !cur.set ||
				(!up && cur.up) ||
				(up == cur.up && o.dist < cur.dist) ||
				(up == cur.up && o.dist == cur.dist && e.o.FERaTies == TieRandom && rng.IntN(2) == 0 && o.port != cur.port)
			if !accept {
				continue
			}
			bests[o.node] = best{port: o.port, dist: o.dist, up: up, set: true}
			r.setEnd(o.node, dst, o.port)
			r.Computed++
			r.PerStep[i]++
			r.seq[o.node][i], seq = seq, seq+1
			for _, a := range f.arcs(o.node) {
				// n → x → y is legal when x → y goes down or n → x goes up.
				if f.IsSwitch(a.Peer) && (!up || d.up[a.Peer][a.PeerPort]) {
					queue = append(queue, option{a.Peer, a.PeerPort, o.dist + 1})
				}
			}
		}
	}
	return r, nil
}

// ---- PIRa ----

type pira struct{ o RoutingOptions }

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
func (e pira) Route(f *Fabric) (*Routes, error) {
	root, err := updnRoot(f, e.o)
	if err != nil {
		return nil, err
	}
	d, err := newDAG(f, root)
	if err != nil {
		return nil, err
	}
	r := newRoutes(e.Name(), f)
	r.Up = d.up
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
	f     *Fabric
	d     *dag
	r     *Routes
	o     RoutingOptions
	rng   *rand.Rand
	endOf []int     // switch -> its end port
	ft    [][]int16 // ft[z][end] is z's explicit entry for an end port, -1 when implicit
	// explored are the switches explored so far.
	explored []int
}

// piraUp is an upper neighbour of a node and the node's port to it.
type piraUp struct{ node, port int }

func newPiraRun(f *Fabric, d *dag, r *Routes, o RoutingOptions) *piraRun {
	x := &piraRun{f: f, d: d, r: r, o: o, rng: rand.New(rand.NewPCG(o.Seed, 0x91ba)),
		endOf: make([]int, f.Topo.NumNodes()), ft: make([][]int16, f.Topo.NumNodes())}
	for i, ep := range f.ends {
		if ep.Switch >= 0 && ep.Port == 0 && f.IsSwitch(ep.Node) {
			x.endOf[ep.Node] = i
		}
	}
	for _, s := range f.Switches() {
		x.ft[s] = make([]int16, len(f.ends))
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
	for i, ep := range x.f.ends {
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
	ep := x.f.ends[i]
	if ep.Port == 0 {
		return x.d.dist[ep.Node], x.f.Topo.Node(ep.Node).GUID
	}
	return x.d.dist[ep.Switch] + 1, x.f.Topo.Node(ep.Node).Ports[ep.Port].GUID
}

// entry sets z's explicit entry for an end port, computed at a step.
func (x *piraRun) entry(z, end, port, step int) {
	x.ft[z][end] = int16(port)
	x.r.Computed++
	x.r.PerStep[step]++
}

// explore takes end port n, the next in exploration order: steps 3 to 6.
func (x *piraRun) explore(n int) error {
	ep := x.f.ends[n]
	prev := x.upperNeighbours(ep)
	if ep.Node == x.d.root && ep.Port == 0 {
		x.entry(x.d.root, n, 0, n)
		x.explored = append(x.explored, x.d.root)
		return nil
	}
	if len(prev) == 0 {
		return fmt.Errorf("%w: %s has no upper neighbour", ErrRouting, x.f.Topo.Node(ep.Node).Name)
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
func (x *piraRun) upperNeighbours(ep EndPort) []piraUp {
	if ep.Port != 0 {
		return []piraUp{{ep.Switch, 0}}
	}
	var prev []piraUp
	seen := map[int]bool{}
	for _, a := range x.f.arcs(ep.Node) {
		if x.d.up[ep.Node][a.Port] && x.f.IsSwitch(a.Peer) && !seen[a.Peer] {
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
	case ParentFirst:
		return prev[0]
	case ParentRandom:
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
		for k, ep := range x.f.ends {
			port := int(x.r.Default[s])
			if x.ft[s][k] >= 0 {
				port = int(x.ft[s][k])
			}
			if port != mad.LFTNoPort {
				x.r.setEnd(s, ep, port)
			}
		}
	}
}

// portTo returns the lowest port of switch a cabled to node b.
func portTo(f *Fabric, a, b int) int {
	for _, x := range f.arcs(a) {
		if x.Peer == b {
			return x.Port
		}
	}
	return mad.LFTNoPort
}
