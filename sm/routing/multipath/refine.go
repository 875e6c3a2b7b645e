package multipath

import (
	"cmp"
	"math"
	"slices"

	"ibfab/sm/routing"
)

// Refining an alias tree. The tree route picks is the shortest under the
// link weights or, when that closes a cycle in its layer, an up*/down* or
// the fallback tree. None of them looks at what a source needs most, a
// path apart from its own earlier aliases, and when the shortest tree
// does not fit, usually only a few of its hops close the cycle, yet the
// detours of all the others are lost with it. So every tree is then
// refined a switch at a time: each switch, nearest the destination first,
// moves to the port that most lowers the cost (srcCost.path) of the
// sources whose paths cross it, if the layer stays acyclic (and, on layer
// 0, up*/down*); else it keeps its hop. A move lowers the tree's total
// cost, so passes repeat until none moves, or for maxRefinePasses.

// baseShareCost and aliasShareCost are what a source's path costs on
// top of its links' weights for sharing a link with the source's base
// path and with each of its other earlier aliases. They are per path, not
// per shared link: a source on a mesh edge has fewer links out than
// aliases, and per link, sharing the one-hop base path would look cheaper
// than sharing a three-hop detour. The base costs twice an alias, as
// every flow that does not spread (the SM hands out base LIDs) takes it.
// At these costs a detour of two hops pays to leave the base path, three
// barely: the mean path of an alias layer stays within a hop of layer 0's.
const (
	baseShareCost  = 6
	aliasShareCost = 3
)

// maxRefinePasses bounds the passes over the switches; a pass after the
// first only moves switches that a move in the pass before opened a
// cheaper way for, and few do.
const maxRefinePasses = 4

// srcCost is the cost of an alias tree to its sources.
type srcCost struct {
	m      *mpRun
	t      int // the destination's switch
	weight func(s, port int) float64
	srcs   []int       // source switches
	cas    []int       // CA ports on each switch, by node
	own    [][][]int32 // each source switch's earlier alias paths, by node
}

// newSrcCost returns the cost of trees to alias i of end port e under
// weight, to the CA ports on other switches (as weight counts them).
func (m *mpRun) newSrcCost(e routing.EndPort, i int, weight func(s, port int) float64) *srcCost {
	n := m.f.Topo.NumNodes()
	sc := &srcCost{m: m, t: e.Switch, weight: weight, cas: make([]int, n), own: make([][][]int32, n)}
	for _, src := range m.f.Ends() {
		if src.Switch < 0 || src.Switch == e.Switch || m.f.IsSwitch(src.Node) {
			continue
		}
		if sc.cas[src.Switch] == 0 {
			sc.srcs = append(sc.srcs, src.Switch)
			for j := range i {
				path, _ := m.walk(src.Switch, e.LID+uint16(j), e.Switch)
				sc.own[src.Switch] = append(sc.own[src.Switch], path)
			}
		}
		sc.cas[src.Switch]++
	}
	return sc
}

// path returns the cost of source switch s's path along tree next: its
// links' weights plus baseShareCost if it shares a link with s's base
// path and aliasShareCost for each other earlier alias path of s it
// shares one with; +Inf if it does not reach the destination.
func (sc *srcCost) path(next []uint8, s int) float64 {
	m := sc.m
	cost := 0.0
	shared := make([]bool, len(sc.own[s]))
	x := s
	for range m.f.Topo.NumNodes() {
		if x == sc.t {
			return cost
		}
		c := m.hopChan(next, x)
		if c < 0 {
			return math.Inf(1)
		}
		cost += sc.weight(x, int(next[x]))
		for j, o := range sc.own[s] {
			if !shared[j] && slices.Contains(o, c) {
				shared[j] = true
				cost += aliasShareCost
				if j == 0 {
					cost += baseShareCost - aliasShareCost
				}
			}
		}
		x = m.head[c]
	}
	return math.Inf(1)
}

// total returns the cost of tree next to the source switches srcs, each
// counted once per CA port on it.
func (sc *srcCost) total(next []uint8, srcs []int) float64 {
	sum := 0.0
	for _, s := range srcs {
		sum += float64(sc.cas[s]) * sc.path(next, s)
	}
	return sum
}

// through returns the source switches whose path along tree next crosses
// switch u (u included).
func (sc *srcCost) through(next []uint8, u int) []int {
	var out []int
	for _, s := range sc.srcs {
		if sc.m.reaches(next, s, u, sc.t) {
			out = append(out, s)
		}
	}
	return out
}

// reaches reports whether the path from switch s along tree next passes
// switch u before t.
func (m *mpRun) reaches(next []uint8, s, u, t int) bool {
	for range m.f.Topo.NumNodes() {
		switch {
		case s == u:
			return true
		case s == t:
			return false
		}
		c := m.hopChan(next, s)
		if c < 0 {
			return false
		}
		s = m.head[c]
	}
	return false
}

// refine moves switches of next, the tree to alias i of end port e in
// layer l (whose dependencies l holds), onto ports cheaper to their
// sources while the layer stays acyclic.
func (m *mpRun) refine(l int, e routing.EndPort, i int, next []uint8, weight func(s, port int) float64) {
	sc := m.newSrcCost(e, i, weight)
	hops := routing.SwitchDistances(m.f, e.Switch)
	order := slices.Clone(m.f.Switches())
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(hops[a], hops[b]) })
	for range maxRefinePasses {
		again := false
		for _, u := range order {
			if hops[u] > 0 && m.refineSwitch(l, next, sc, u) {
				again = true
			}
		}
		if !again {
			return
		}
	}
}

// hopChoice is a port a switch could take and its sources' cost with it.
type hopChoice struct {
	port uint8
	cost float64
}

// refineSwitch moves switch u of next to the port cheapest to the sources
// whose paths cross it among those cheaper than its own that keep layer
// l acyclic, and reports whether there was one.
func (m *mpRun) refineSwitch(l int, next []uint8, sc *srcCost, u int) bool {
	srcs := sc.through(next, u)
	if len(srcs) == 0 {
		return false // no path would change, only the layer's dependencies
	}
	old := next[u]
	cur := sc.total(next, srcs)
	var choices []hopChoice
	for _, a := range m.f.Arcs(u) {
		// Not to a CA, not the same, not to a switch whose path
		// crosses u: that would be a loop.
		if !m.f.IsSwitch(a.Peer) || a.Port == int(old) || m.reaches(next, a.Peer, u, sc.t) {
			continue
		}
		next[u] = uint8(a.Port)
		if c := sc.total(next, srcs); c < cur-1e-9 {
			choices = append(choices, hopChoice{uint8(a.Port), c})
		}
		next[u] = old
	}
	slices.SortStableFunc(choices, func(a, b hopChoice) int { return cmp.Compare(a.cost, b.cost) })
	for _, ch := range choices {
		if m.tryHop(l, next, u, ch.port) {
			return true
		}
		m.tryHop(l, next, u, old) // acyclic with old before
	}
	return false
}

// tryHop sets switch s's next hop to port p, moving the dependencies
// that hop makes and takes part in, and reports whether layer l is then
// acyclic (and, on layer 0, has no down→up turn at s).
func (m *mpRun) tryHop(l int, next []uint8, s int, p uint8) bool {
	m.hopDeps(l, next, s, -1)
	next[s] = p
	m.hopDeps(l, next, s, 1)
	return !(l == 0 && m.turnsDownUp(m.hopDepsOf(next, s))) && !m.cyclic(l)
}

// hopDeps adds (by > 0) or takes out (by < 0) in layer l the
// dependencies of tree next that involve switch s's next hop.
func (m *mpRun) hopDeps(l int, next []uint8, s int, by int32) {
	for _, d := range m.hopDepsOf(next, s) {
		m.cdg[l][d.c][d.out] += by
	}
}

// hopDepsOf returns the dependencies of tree next that involve switch s's
// next hop: the link out of s on to the hop beyond it, and every link
// into s from a switch whose next hop s is on to s's own hop. They are
// the only ones a change of that hop changes (see deps).
func (m *mpRun) hopDepsOf(next []uint8, s int) []dep {
	c := m.hopChan(next, s)
	if c < 0 {
		return nil
	}
	var out []dep
	if m.hopChan(next, m.head[c]) >= 0 {
		out = append(out, dep{c, next[m.head[c]]})
	}
	for _, a := range m.f.Arcs(s) {
		if !m.f.IsSwitch(a.Peer) {
			continue
		}
		if in := m.hopChan(next, a.Peer); in >= 0 && m.head[in] == s {
			out = append(out, dep{in, next[s]})
		}
	}
	return out
}

// hopChan returns the channel of switch s's next hop in tree next, -1
// when it does not lead to a switch.
func (m *mpRun) hopChan(next []uint8, s int) int32 {
	p := next[s]
	if int(p) >= len(m.chanOf[s]) {
		return -1
	}
	return m.chanOf[s][p]
}
