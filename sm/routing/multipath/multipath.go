package multipath

import (
	"container/heap"
	"fmt"
	"math"

	"ibfab/sm/routing"
	"ibfab/sm/routing/updn"
	"ibfab/wire/mad"
)

// Multipath routing on the LMC aliases. A CA port with LMC > 0 answers to
// 2^LMC LIDs; the engine routes them all alike, and Route then gives
// alias i (base+i, i ≥ 1) a route of its own: the base LID keeps the
// engine's route, every alias gets, per destination as an LFT requires, a
// tree of shortest paths weighted to stay off the links the destination's
// earlier aliases use (a link costs one hop plus overlapPenalty for each
// source whose path to an earlier alias crosses it, per earlier alias),
// then refined switch by switch so that each source's path leaves its own
// earlier alias paths, the base path most (refine.go): a source
// has paths as disjoint as the topology allows at the price of short
// detours.
//
// Deadlock freedom comes from VL layers: a source sends alias i on SL i,
// and every port maps SL i to VL i mod Layers (the SM programs SLtoVL so),
// so the routes of one layer only wait on each other and each layer's
// channel dependency graph must be acyclic on its own (the verifier checks
// that). Layer 0 holds the engine's routes (switch LIDs, base LIDs); when
// there are more aliases than layers, alias i folds onto layer i mod
// Layers, and an alias folded onto layer 0 must also keep its up*/down*
// rule (no down→up turn) when the engine has one.
//
// Each alias tree is added to its layer with a cycle check. To be sure
// every destination finds an acyclic tree, each layer L ≥ 1 starts
// holding the dependencies of a fallback routing: up*/down* (FERa) rooted
// at a switch far from the engine's root and from the other layers' roots.
// A destination's alias tree takes the fallback tree's place: the
// fallback's dependencies are taken out, the shortest tree's put in, and
// if the layer then has a cycle (or, on layer 0, a down→up turn) the
// shortest tree is taken out and the fallback put back, which was acyclic
// with everything else before. Layer 0's fallback is the engine's own
// route. Whichever tree is in, the refinement then changes one switch's
// hop at a time, moving only that hop's dependencies and undoing any move
// that makes a cycle. Every layer stays acyclic at every step, by
// construction.

// overlapPenalty is what a link costs on top of its hop for each source
// whose path to an earlier alias of the same destination crosses it.
const overlapPenalty = 0.5

// Stats is what Route did: how many alias trees fell back,
// how long the paths are per layer and how disjoint the aliases are from
// the base route.
type Stats struct {
	Aliases int `json:"aliases"` // LIDs per CA port (2^LMC)
	Layers  int `json:"layers"`  // VL layers the aliases were built in
	// Trees counts the alias trees computed (one per destination port
	// and alias ≥ 1); Fallbacks those that are not the shortest, because
	// it closed a cycle in their layer (or broke layer 0's up*/down*
	// rule): Updn of them took the shortest up*/down* tree on the layer's
	// root, Reserve the layer's fallback tree. FallbacksByAlias splits
	// Fallbacks by alias (index 0 unused).
	Trees            int   `json:"trees"`
	Fallbacks        int   `json:"fallbacks"`
	Updn             int   `json:"fallbacks_updn"`
	Reserve          int   `json:"fallbacks_reserve"`
	FallbacksByAlias []int `json:"fallbacks_by_alias"`
	// MeanHops[l] is the mean path length, in links from the source CA
	// to the destination CA, of the routes to the LIDs of layer l, over
	// every pair of CA ports on switches.
	MeanHops []float64 `json:"mean_hops"`
	// MeanHopsByAlias[i] is the same for alias i alone.
	MeanHopsByAlias []float64 `json:"mean_hops_by_alias"`
	// Disjoint[i] is the fraction of pairs of CA ports on different
	// switches whose alias-i path shares no switch-to-switch link with
	// the base path (index 0: 1).
	Disjoint []float64 `json:"disjoint"`
}

// Route returns a copy of base whose alias LIDs are routed apart in
// layers VL layers (see above), and what it did. base must be a complete
// route set of f from an engine; its base LIDs and switch LIDs are not
// changed. With no CA port of LMC > 0 it returns base's copy unchanged
// but for Layers. layers is capped at the aliases; below 1 is an error.
func Route(f *routing.Fabric, base *routing.Routes, layers int, o routing.Options) (*routing.Routes, *Stats, error) {
	if layers < 1 {
		return nil, nil, fmt.Errorf("%w: multipath over %d VL layers", routing.ErrRouting, layers)
	}
	m := newMPRun(f, base, layers)
	st := &Stats{Aliases: m.aliases, Layers: m.layers, FallbacksByAlias: make([]int, m.aliases)}
	m.r.Layers = m.layers
	if m.aliases < 2 {
		m.r.Layers = 0
		st.Layers = 1
		return m.r, st, nil
	}
	if err := m.fallbacks(o); err != nil {
		return nil, nil, err
	}
	m.seed()
	for i := 1; i < m.aliases; i++ {
		for _, d := range m.dests {
			if f.Ends()[d].NumLIDs() <= i {
				continue
			}
			st.Trees++
			switch m.route(d, i) {
			case treeUpdn:
				st.Updn++
			case treeReserve:
				st.Reserve++
			default:
				continue
			}
			st.Fallbacks++
			st.FallbacksByAlias[i]++
		}
	}
	m.pathStats(st)
	return m.r, st, nil
}

// mpRun is one run of Route.
type mpRun struct {
	f       *routing.Fabric
	base, r *routing.Routes
	layers  int
	aliases int
	dests   []int // CA end ports on switches with aliases, by index into f.Ends()
	// chanOf[node][port] is the channel of the switch-to-switch link
	// leaving there, -1 for none; head[c] is the switch channel c enters.
	chanOf [][]int32
	head   []int
	// fb[l] is layer l's fallback route set (layer 0: base), dags[l]
	// the up*/down* graph of its root (layer 0: nil when the engine is
	// not up*/down*).
	fb   []*routing.Routes
	dags []*updn.DAG
	// cdg[l][c][p] counts the routes of layer l that enter switch
	// head[c] by channel c and leave it by port p.
	cdg [][][]int32
	// load[node][port] counts the alias LIDs routed out of there.
	load [][]int32
}

func newMPRun(f *routing.Fabric, base *routing.Routes, layers int) *mpRun {
	m := &mpRun{f: f, base: base, r: base.Clone(), aliases: 1}
	n := f.Topo.NumNodes()
	m.chanOf = make([][]int32, n)
	m.load = make([][]int32, n)
	for i := range n {
		m.chanOf[i] = make([]int32, f.Topo.Node(i).NumPorts+1)
		m.load[i] = make([]int32, f.Topo.Node(i).NumPorts+1)
		for p := range m.chanOf[i] {
			m.chanOf[i][p] = -1
		}
		if !f.IsSwitch(i) {
			continue
		}
		for _, a := range f.Arcs(i) {
			if f.IsSwitch(a.Peer) {
				m.chanOf[i][a.Port] = int32(len(m.head))
				m.head = append(m.head, a.Peer)
			}
		}
	}
	for i, e := range f.Ends() {
		if e.Switch >= 0 && e.Port != 0 && e.NumLIDs() > 1 {
			m.dests = append(m.dests, i)
			m.aliases = max(m.aliases, e.NumLIDs())
		}
	}
	m.layers = min(layers, m.aliases)
	m.cdg = make([][][]int32, m.layers)
	for l := range m.cdg {
		m.cdg[l] = make([][]int32, len(m.head))
		for c, h := range m.head {
			m.cdg[l][c] = make([]int32, f.Topo.Node(h).NumPorts+1)
		}
	}
	return m
}

// fallbacks computes every layer's fallback: the engine's routes for
// layer 0, FERa rooted at a switch far from the other layers' roots for
// the others.
func (m *mpRun) fallbacks(o routing.Options) error {
	root, err := m.f.UpdnRoot(o)
	if err != nil {
		return err
	}
	roots := []int{root}
	m.fb = []*routing.Routes{m.base}
	d0, err := updn.NewDAG(m.f, root)
	if err != nil {
		return err
	}
	m.dags = []*updn.DAG{d0}
	for range m.layers - 1 {
		r := m.farthest(roots)
		roots = append(roots, r)
		lo := o
		lo.RootGUID = m.f.Topo.Node(r).GUID
		rt, err := updn.FERa(lo).Route(m.f)
		if err != nil {
			return err
		}
		d, err := updn.NewDAG(m.f, r)
		if err != nil {
			return err
		}
		m.fb = append(m.fb, rt)
		m.dags = append(m.dags, d)
	}
	return nil
}

// farthest returns the switch whose distance to the nearest of roots is
// largest, the first in topology order among equals.
func (m *mpRun) farthest(roots []int) int {
	near := make([]int, m.f.Topo.NumNodes())
	for i := range near {
		near[i] = math.MaxInt
	}
	for _, r := range roots {
		for i, d := range routing.SwitchDistances(m.f, r) {
			if d >= 0 && d < near[i] {
				near[i] = d
			}
		}
	}
	best := -1
	for _, s := range m.f.Switches() {
		if near[s] != math.MaxInt && (best < 0 || near[s] > near[best]) {
			best = s
		}
	}
	return best
}

// seed puts into each layer the dependencies of the routes it holds
// before any alias is routed apart: layer 0 the engine's routes to the
// switch LIDs (unless exempt) and base LIDs; every layer its fallback tree
// for each destination's aliases on it.
func (m *mpRun) seed() {
	for _, e := range m.f.Ends() {
		if e.Switch < 0 || (m.base.SwitchLIDsExempt && e.Port == 0) {
			continue
		}
		m.addDeps(0, m.tree(m.base, e.LID), 1)
	}
	for i := 1; i < m.aliases; i++ {
		for _, d := range m.dests {
			if m.f.Ends()[d].NumLIDs() > i {
				l := i % m.layers
				m.addDeps(l, m.tree(m.fb[l], m.f.Ends()[d].LID), 1)
			}
		}
	}
}

// tree returns the next hop port of every switch toward lid in rt,
// indexed by node (LFTNoPort for none and for other nodes).
func (m *mpRun) tree(rt *routing.Routes, lid uint16) []uint8 {
	t := make([]uint8, m.f.Topo.NumNodes())
	for i := range t {
		t[i] = mad.LFTNoPort
		if rt.LFT[i] != nil && int(lid) < len(rt.LFT[i]) {
			t[i] = rt.LFT[i][lid]
		}
	}
	return t
}

// dep is a channel dependency: routes entering switch head[c] by channel
// c leave it by port out.
type dep struct {
	c   int32
	out uint8
}

// deps returns the dependencies of a destination tree: every switch whose
// next hop is switch s makes s's own next hop depend on the link between
// them. Links to CAs depend on nothing, and nothing on them.
func (m *mpRun) deps(next []uint8) []dep {
	var out []dep
	for _, u := range m.f.Switches() {
		p := next[u]
		if int(p) >= len(m.chanOf[u]) {
			continue
		}
		c := m.chanOf[u][p]
		if c < 0 {
			continue
		}
		s := m.head[c]
		q := next[s]
		if int(q) < len(m.chanOf[s]) && m.chanOf[s][q] >= 0 {
			out = append(out, dep{c, q})
		}
	}
	return out
}

// addDeps adds (by > 0) or takes out (by < 0) a tree's dependencies in
// layer l.
func (m *mpRun) addDeps(l int, next []uint8, by int32) {
	for _, d := range m.deps(next) {
		m.cdg[l][d.c][d.out] += by
	}
}

// cyclic reports whether layer l's dependency graph has a cycle.
func (m *mpRun) cyclic(l int) bool {
	g := m.cdg[l]
	color := make([]uint8, len(g)) // 0 white, 1 on the stack, 2 done
	type frame struct {
		c   int32
		out int
	}
	for start := range g {
		if color[start] != 0 {
			continue
		}
		color[start] = 1
		stack := []frame{{int32(start), 0}}
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			row := g[top.c]
			if top.out == len(row) {
				color[top.c] = 2
				stack = stack[:len(stack)-1]
				continue
			}
			p := top.out
			top.out++
			if row[p] == 0 {
				continue
			}
			n := m.chanOf[m.head[top.c]][p]
			switch color[n] {
			case 0:
				color[n] = 1
				stack = append(stack, frame{n, 0})
			case 1:
				return true
			}
		}
	}
	return false
}

// downUp reports whether a tree takes a down→up turn on the engine's
// up*/down* graph.
func (m *mpRun) downUp(next []uint8) bool {
	return m.turnsDownUp(m.deps(next))
}

// turnsDownUp reports whether any of deps is a down→up turn on the
// engine's up*/down* graph.
func (m *mpRun) turnsDownUp(deps []dep) bool {
	up := m.base.Up
	if up == nil {
		return false
	}
	for _, d := range deps {
		s := m.head[d.c]
		in := m.inPort(d.c)
		if up[s][in] && up[s][d.out] {
			return true
		}
	}
	return false
}

// inPort returns the port channel c enters its head switch by.
func (m *mpRun) inPort(c int32) int {
	s := m.head[c]
	for _, a := range m.f.Arcs(s) {
		if int(a.PeerPort) < len(m.chanOf[a.Peer]) && m.chanOf[a.Peer][a.PeerPort] == c {
			return a.Port
		}
	}
	return 0
}

// Kinds of alias tree, in the order route tries them.
const (
	treeShortest = iota // weighted shortest paths
	treeUpdn            // weighted shortest up*/down* paths on the layer's root
	treeReserve         // the layer's fallback tree, held from the start
)

// route gives alias i of destination d its tree: the weighted shortest
// one, or else the weighted shortest up*/down*-legal one on the layer's
// root, whichever first keeps the layer acyclic (and layer 0's up*/down*
// rule), or else the layer's fallback tree, which always does. It
// returns which it took.
func (m *mpRun) route(d, i int) int {
	e := m.f.Ends()[d]
	l := i % m.layers
	fb := m.tree(m.fb[l], e.LID)
	m.addDeps(l, fb, -1)
	weight := m.weight(e, i)
	kind, next := treeReserve, fb
	// The up*/down* tree is built only when the shortest does not fit.
	for k, build := range []func() []uint8{
		func() []uint8 { return m.shortest(e, weight) },
		func() []uint8 { return m.legal(e, weight, m.dags[l]) },
	} {
		cand := build()
		if cand == nil || (l == 0 && m.downUp(cand)) {
			continue
		}
		m.addDeps(l, cand, 1)
		if !m.cyclic(l) {
			kind, next = k, cand
			break
		}
		m.addDeps(l, cand, -1)
	}
	if kind == treeReserve {
		m.addDeps(l, fb, 1)
	}
	m.refine(l, e, i, next, weight)
	lid := int(e.LID) + i
	for _, s := range m.f.Switches() {
		m.r.LFT[s][lid] = next[s]
		if int(next[s]) < len(m.load[s]) {
			m.load[s][next[s]]++
		}
	}
	return kind
}

// weight returns the cost function of alias i of end port e's tree: a
// link costs 1, plus overlapPenalty for each source CA port whose path
// to one of e's earlier aliases crosses it, divided by the i earlier
// aliases: the crowd on a link per alias, so that for later aliases it
// does not outgrow the hops and the cost of sharing a source's own paths
// (refine.go), which would make them all take the same long
// ways round the busiest links. A link many sources share
// (the last hops into the destination, the one way along a mesh row)
// costs most, so the alternatives spread where the base routes gather
// and a source whose base path is short and shared takes a detour of a
// few hops rather than the same links; a link of a single source's path
// costs little more than a hop, so aliases stay short.
func (m *mpRun) weight(e routing.EndPort, i int) func(s, port int) float64 {
	uses := make([]int, len(m.head)) // by channel
	for _, src := range m.f.Ends() {
		if src.Switch < 0 || src.Switch == e.Switch || m.f.IsSwitch(src.Node) {
			continue
		}
		for j := range i {
			path, _ := m.walk(src.Switch, e.LID+uint16(j), e.Switch)
			for _, c := range path {
				uses[c]++
			}
		}
	}
	return func(s, port int) float64 {
		w := 1.0
		if port < len(m.chanOf[s]) && m.chanOf[s][port] >= 0 {
			w += overlapPenalty * float64(uses[m.chanOf[s][port]]) / float64(i)
		}
		return w
	}
}

// pick returns the port of switch s that minimises the link's weight plus
// dist beyond it, among the links ok allows; ties go to the port with the
// fewest alias LIDs routed out of it, then the lowest port. -1: none.
func (m *mpRun) pick(s int, weight func(s, port int) float64, dist []float64, ok func(a routing.Arc) bool) int {
	best, bestCost := -1, math.Inf(1)
	for _, a := range m.f.Arcs(s) {
		if !m.f.IsSwitch(a.Peer) || math.IsInf(dist[a.Peer], 1) || !ok(a) {
			continue
		}
		c := weight(s, a.Port) + dist[a.Peer]
		switch {
		case c < bestCost-1e-9:
		case c < bestCost+1e-9 && m.load[s][a.Port] < m.load[s][best]:
		default:
			continue
		}
		best, bestCost = a.Port, c
	}
	return best
}

// newTree returns a tree with only the destination switch's entry.
func (m *mpRun) newTree(e routing.EndPort) []uint8 {
	next := make([]uint8, m.f.Topo.NumNodes())
	for k := range next {
		next[k] = mad.LFTNoPort
	}
	next[e.Switch] = uint8(e.SwitchPort)
	return next
}

// legal returns the tree of up*/down*-legal paths on d to end port e
// shortest under weight. A linear table gives a switch one port
// whatever way a packet came in, so a switch with a way down to the
// destination takes it (a packet may have come down to it), as FERa
// does; the others go up toward the best switch that has one.
func (m *mpRun) legal(e routing.EndPort, weight func(s, port int) float64, d *updn.DAG) []uint8 {
	if d == nil {
		return nil
	}
	f := m.f
	isDown := func(x int, a routing.Arc) bool { return !d.Up[x][a.Port] }
	down := m.dijkstra([]int{e.Switch}, nil, weight, func(x int, a routing.Arc) bool { return isDown(x, a) })
	var seeds []int
	for _, s := range f.Switches() {
		if !math.IsInf(down[s], 1) {
			seeds = append(seeds, s)
		}
	}
	any := m.dijkstra(seeds, down, weight, func(x int, a routing.Arc) bool { return !isDown(x, a) && math.IsInf(down[x], 1) })
	next := m.newTree(e)
	for _, s := range f.Switches() {
		if s == e.Switch {
			continue
		}
		var p int
		if !math.IsInf(down[s], 1) {
			p = m.pick(s, weight, down, func(a routing.Arc) bool { return isDown(s, a) })
		} else {
			p = m.pick(s, weight, any, func(a routing.Arc) bool { return !isDown(s, a) })
		}
		if p < 0 {
			return nil
		}
		next[s] = uint8(p)
	}
	return next
}

// shortest returns the tree of paths to end port e shortest under
// weight (see weight and pick).
func (m *mpRun) shortest(e routing.EndPort, weight func(s, port int) float64) []uint8 {
	dist := m.dijkstra([]int{e.Switch}, nil, weight, func(int, routing.Arc) bool { return true })
	next := m.newTree(e)
	for _, s := range m.f.Switches() {
		if s == e.Switch || math.IsInf(dist[s], 1) {
			continue
		}
		if p := m.pick(s, weight, dist, func(routing.Arc) bool { return true }); p >= 0 {
			next[s] = uint8(p)
		}
	}
	return next
}

// dijkstra returns every switch's weighted distance to the nearest of
// seeds (at their distance in from, or 0 when from is nil) over the
// switch links x → y that use allows, +Inf where none is reachable.
func (m *mpRun) dijkstra(seeds []int, from []float64, weight func(s, port int) float64, use func(x int, a routing.Arc) bool) []float64 {
	f := m.f
	dist := make([]float64, f.Topo.NumNodes())
	for k := range dist {
		dist[k] = math.Inf(1)
	}
	q := &mpQueue{}
	for _, t := range seeds {
		dist[t] = 0
		if from != nil {
			dist[t] = from[t]
		}
		heap.Push(q, mpItem{t, dist[t]})
	}
	for q.Len() > 0 {
		it := heap.Pop(q).(mpItem)
		if it.d > dist[it.node] {
			continue
		}
		// Relax the links into it.node: x → it.node out of x's port.
		for _, a := range f.Arcs(it.node) {
			x := a.Peer
			if !f.IsSwitch(x) {
				continue
			}
			back := routing.Arc{Port: a.PeerPort, Peer: it.node, PeerPort: a.Port}
			if !use(x, back) {
				continue
			}
			if d := it.d + weight(x, back.Port); d < dist[x] {
				dist[x] = d
				heap.Push(q, mpItem{x, d})
			}
		}
	}
	return dist
}

type mpItem struct {
	node int
	d    float64
}

// mpQueue is a min-heap of items by distance.
type mpQueue []mpItem

func (q mpQueue) Len() int           { return len(q) }
func (q mpQueue) Less(i, j int) bool { return q[i].d < q[j].d }
func (q mpQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *mpQueue) Push(x any)        { *q = append(*q, x.(mpItem)) }
func (q *mpQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// pathStats measures the route set: the mean path length per layer and
// per alias, and each alias's disjointness from the base path.
func (m *mpRun) pathStats(st *Stats) {
	hops := make([]float64, m.layers)
	pairs := make([]int, m.layers)
	aliasHops := make([]float64, m.aliases)
	aliasPairs := make([]int, m.aliases)
	disjoint := make([]int, m.aliases)
	apart := make([]int, m.aliases)
	for si, src := range m.f.Ends() {
		if src.Switch < 0 || src.Port == 0 {
			continue
		}
		for di, dst := range m.f.Ends() {
			if di == si || dst.Switch < 0 || dst.Port == 0 {
				continue
			}
			basePath, _ := m.walk(src.Switch, dst.LID, dst.Switch)
			for k := range dst.NumLIDs() {
				path, ok := m.walk(src.Switch, dst.LID+uint16(k), dst.Switch)
				if !ok {
					continue
				}
				l := k % m.layers
				hops[l] += float64(len(path) + 2)
				pairs[l]++
				aliasHops[k] += float64(len(path) + 2)
				aliasPairs[k]++
				if src.Switch != dst.Switch {
					apart[k]++
					if !sharesLink(path, basePath) {
						disjoint[k]++
					}
				}
			}
		}
	}
	st.MeanHops = means(hops, pairs)
	st.MeanHopsByAlias = means(aliasHops, aliasPairs)
	st.Disjoint = make([]float64, m.aliases)
	for k := range st.Disjoint {
		if apart[k] > 0 {
			st.Disjoint[k] = float64(disjoint[k]) / float64(apart[k])
		}
	}
	if len(st.Disjoint) > 0 {
		st.Disjoint[0] = 1
	}
}

// walk follows the tables from switch s to lid and returns the switch
// links taken, and whether it reached switch t.
func (m *mpRun) walk(s int, lid uint16, t int) ([]int32, bool) {
	var path []int32
	for range m.f.Topo.NumNodes() {
		if s == t {
			return path, true
		}
		p := m.r.LFT[s][lid]
		if int(p) >= len(m.chanOf[s]) || m.chanOf[s][p] < 0 {
			return path, false
		}
		c := m.chanOf[s][p]
		path = append(path, c)
		s = m.head[c]
	}
	return path, false
}

func sharesLink(a, b []int32) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

func means(sum []float64, n []int) []float64 {
	out := make([]float64, len(sum))
	for i := range sum {
		if n[i] > 0 {
			out[i] = math.Round(sum[i]/float64(n[i])*1000) / 1000
		}
	}
	return out
}
