package clab

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"ibfab/topologies"
)

// ErrPlacement is what a placement that cannot be made or read wraps.
var ErrPlacement = errors.New("clab: placement")

// DefaultSlack is how much fuller than an even share Place may fill a host
// by default (a fraction of the share): room enough to keep a leaf switch
// with its hosts when the leaves do not divide evenly.
const DefaultSlack = 0.05

// Capacity returns the default number of nodes a host may take when nodes
// are spread over hosts: an even share and DefaultSlack more, rounded up.
func Capacity(nodes, hosts int) int {
	if hosts <= 0 {
		return nodes
	}
	share := (nodes + hosts - 1) / hosts
	return share + int(float64(share)*DefaultSlack+0.999)
}

// Place assigns every node of t to one of hosts hosts, at most capacity
// nodes on each, cutting few links between hosts. It returns the host of
// each node by node index.
//
// A CA whose links all go to one switch stays with that switch (a fat
// tree's leaf with its hosts is one unit), so only links between switches
// are ever cut. The units are grown into hosts one at a time, each host
// taking next the unit with the most links into it, and then units are
// moved between hosts while a move cuts fewer links and fits.
func Place(t *topologies.Topology, hosts, capacity int) ([]int, error) {
	return PlaceApart(t, hosts, capacity, nil)
}

// PlaceApart is Place with the ends of every link of apart on different
// hosts, so that those links are among the cut ones: a suite that fails a
// link runs it between hosts. The ends are pinned to hosts before the
// placement grows (a link's first pinned end decides where the other
// goes: the next host), and pinned units never move. It fails when a
// link of apart cannot be cut: a CA's link to its one switch (the CA stays
// with it), or ends that earlier links pinned to one host.
func PlaceApart(t *topologies.Topology, hosts, capacity int, apart []topologies.Link) ([]int, error) {
	n := t.NumNodes()
	switch {
	case hosts < 1:
		return nil, fmt.Errorf("%w: %d hosts: want at least 1", ErrPlacement, hosts)
	case hosts > n:
		return nil, fmt.Errorf("%w: %d hosts for %d nodes: every host needs a node", ErrPlacement, hosts, n)
	case capacity*hosts < n:
		return nil, fmt.Errorf("%w: %d hosts of %d nodes hold fewer than the fabric's %d", ErrPlacement, hosts, capacity, n)
	}
	g := unitsOf(t)
	for _, w := range g.weight {
		if w > capacity {
			return nil, fmt.Errorf("%w: a switch with its CAs is %d nodes, more than a host's %d", ErrPlacement, w, capacity)
		}
	}
	if len(g.weight) < hosts {
		return nil, fmt.Errorf("%w: %d hosts for %d switches (a CA stays with its switch): every host needs one", ErrPlacement, hosts, len(g.weight))
	}
	if err := g.pinApart(t, hosts, apart); err != nil {
		return nil, err
	}
	// Grow from a few seeds and keep the placement that cuts least.
	var part []int
	best := -1
	for _, seed := range g.seeds(maxSeeds) {
		p, err := g.grow(seed, hosts, capacity, n)
		if err != nil {
			return nil, err
		}
		g.refine(p, hosts, capacity)
		if c := g.cut(p); best < 0 || c < best {
			part, best = p, c
		}
	}
	host := make([]int, n)
	for i := range host {
		host[i] = part[g.unit[i]]
	}
	return host, nil
}

// unitGraph is a topology's nodes merged into units that are never split:
// a switch with the CAs cabled to it alone.
type unitGraph struct {
	unit   []int         // unit of each node
	weight []int         // nodes in each unit
	adj    []map[int]int // links between units, by unit
	pin    []int         // host each unit must go to, -1: any
}

// pinApart pins the units at the ends of each link of apart to different
// hosts.
func (g *unitGraph) pinApart(t *topologies.Topology, hosts int, apart []topologies.Link) error {
	name := func(p topologies.PortRef) string { return fmt.Sprintf("%s[%d]", t.Node(p.Node).Name, p.Port) }
	for _, l := range apart {
		if l.A.Node < 0 || l.A.Node >= t.NumNodes() || l.B.Node < 0 || l.B.Node >= t.NumNodes() {
			return fmt.Errorf("%w: a link to cut names a node the topology does not have", ErrPlacement)
		}
		a, b := g.unit[l.A.Node], g.unit[l.B.Node]
		switch {
		case a == b:
			return fmt.Errorf("%w: link %s - %s cannot go between hosts: a CA stays with the one switch it is cabled to", ErrPlacement, name(l.A), name(l.B))
		case hosts < 2:
			return fmt.Errorf("%w: link %s - %s cannot go between hosts on one host", ErrPlacement, name(l.A), name(l.B))
		}
		switch pa, pb := g.pin[a], g.pin[b]; {
		case pa >= 0 && pb >= 0:
			if pa == pb {
				return fmt.Errorf("%w: link %s - %s cannot go between hosts: other links to cut put both ends on host %d", ErrPlacement, name(l.A), name(l.B), pa+1)
			}
		case pa >= 0:
			g.pin[b] = (pa + 1) % hosts
		case pb >= 0:
			g.pin[a] = (pb + 1) % hosts
		default:
			g.pin[a], g.pin[b] = 0, 1
		}
	}
	return nil
}

func unitsOf(t *topologies.Topology) *unitGraph {
	n := t.NumNodes()
	g := &unitGraph{unit: make([]int, n)}
	peers := make([][]int, n)
	for _, l := range t.Links() {
		peers[l.A.Node] = append(peers[l.A.Node], l.B.Node)
		peers[l.B.Node] = append(peers[l.B.Node], l.A.Node)
	}
	for i := range n {
		g.unit[i] = -1
	}
	// Switches (and CAs not hanging off one switch) each start a unit.
	for i := range n {
		if home := homeSwitch(t, i, peers[i]); home < 0 {
			g.unit[i] = len(g.weight)
			g.weight = append(g.weight, 0)
		}
	}
	for i := range n {
		if g.unit[i] < 0 {
			g.unit[i] = g.unit[homeSwitch(t, i, peers[i])]
		}
		g.weight[g.unit[i]]++
	}
	g.pin = make([]int, len(g.weight))
	for u := range g.pin {
		g.pin[u] = -1
	}
	g.adj = make([]map[int]int, len(g.weight))
	for u := range g.adj {
		g.adj[u] = map[int]int{}
	}
	for _, l := range t.Links() {
		a, b := g.unit[l.A.Node], g.unit[l.B.Node]
		if a != b {
			g.adj[a][b]++
			g.adj[b][a]++
		}
	}
	return g
}

// homeSwitch returns the switch every link of CA i goes to, or -1 when i
// is a switch or its links go elsewhere (several switches, another CA,
// none).
func homeSwitch(t *topologies.Topology, i int, peers []int) int {
	if t.Node(i).Type == topologies.Switch || len(peers) == 0 {
		return -1
	}
	for _, p := range peers {
		if p != peers[0] {
			return -1
		}
	}
	if t.Node(peers[0]).Type != topologies.Switch {
		return -1
	}
	return peers[0]
}

// maxSeeds is how many units Place grows its first host from.
const maxSeeds = 8

// seeds returns up to k units spread over the unit indices, the heaviest
// first.
func (g *unitGraph) seeds(k int) []int {
	heaviest := 0
	for u, w := range g.weight {
		if w > g.weight[heaviest] {
			heaviest = u
		}
	}
	out := []int{heaviest}
	for i := range min(k, len(g.weight)) - 1 {
		if u := (heaviest + (i+1)*len(g.weight)/k) % len(g.weight); u != heaviest {
			out = append(out, u)
		}
	}
	return out
}

// cut counts the links between units on different hosts.
func (g *unitGraph) cut(part []int) int {
	c := 0
	for u, m := range g.adj {
		for v, k := range m {
			if u < v && part[u] != part[v] {
				c += k
			}
		}
	}
	return c
}

// grow fills hosts one after another up to an even share of the nodes
// (the last takes what is left), each from the heaviest unit left and then
// the unit with the most links into the host, and returns each unit's
// host. What does not fit where it was grown goes to the least loaded host
// it fits.
func (g *unitGraph) grow(seed, hosts, capacity, nodes int) ([]int, error) {
	part := make([]int, len(g.weight))
	copy(part, g.pin)
	left := len(part)
	pinned := make([]int, hosts) // nodes pinned to each host
	for u, h := range part {
		if h >= 0 {
			left--
			pinned[h] += g.weight[u]
			nodes -= g.weight[u]
		}
	}
	linksIn := make([]int, len(part)) // links of each unplaced unit into the host being filled
	for h := range hosts {
		rest := nodes // what is left: the unplaced nodes and those pinned to this host or later ones
		for _, k := range pinned[h:] {
			rest += k
		}
		share := (rest + hosts - 1 - h) / (hosts - h) // an even share of what is left
		if h == hosts-1 {
			share = capacity
		}
		clear(linksIn)
		for u, p := range part {
			if p == h {
				for v, k := range g.adj[u] {
					linksIn[v] += k
				}
			}
		}
		filled := pinned[h]
		for left > 0 {
			best := -1
			for u, p := range part {
				if h == 0 && filled == 0 && part[seed] < 0 {
					best = seed // the first host grows from the seed
					break
				}
				if p >= 0 || filled+g.weight[u] > capacity {
					continue
				}
				if best < 0 || linksIn[u] > linksIn[best] ||
					(linksIn[u] == linksIn[best] && g.weight[u] > g.weight[best]) {
					best = u
				}
			}
			if best < 0 || (filled > 0 && filled+g.weight[best] > share && h < hosts-1) {
				break
			}
			part[best] = h
			filled += g.weight[best]
			nodes -= g.weight[best]
			left--
			for v, k := range g.adj[best] {
				linksIn[v] += k
			}
		}
	}
	load := make([]int, hosts)
	for u, h := range part {
		if h >= 0 {
			load[h] += g.weight[u]
		}
	}
	for u, h := range part {
		if h >= 0 {
			continue
		}
		to := -1
		for h := range hosts {
			if load[h]+g.weight[u] <= capacity && (to < 0 || load[h] < load[to]) {
				to = h
			}
		}
		if to < 0 {
			return nil, fmt.Errorf("%w: %d nodes do not fit %d hosts of %d: raise the capacity", ErrPlacement, nodes, hosts, capacity)
		}
		part[u] = to
		load[to] += g.weight[u]
	}
	for h, l := range load {
		if l == 0 {
			return nil, fmt.Errorf("%w: host %d got no node", ErrPlacement, h+1)
		}
	}
	return part, nil
}

// maxSwapUnits bounds the fabrics whose units refine also tries to swap
// in pairs (a pass is quadratic in the units).
const maxSwapUnits = 4096

// refine moves single units to the host they have the most links into
// while that cuts fewer links, fits the host and leaves no host empty,
// and swaps pairs of units between hosts while that cuts fewer.
func (g *unitGraph) refine(part []int, hosts, capacity int) {
	for range 20 {
		g.moves(part, hosts, capacity)
		if len(part) > maxSwapUnits || !g.swaps(part, hosts, capacity) {
			return
		}
	}
}

// swaps exchanges the first pair of units of different hosts whose swap
// cuts fewer links and fits both hosts, and reports whether it found one.
func (g *unitGraph) swaps(part []int, hosts, capacity int) bool {
	load := make([]int, hosts)
	for u, h := range part {
		load[h] += g.weight[u]
	}
	// gainTo is what moving u alone to host h saves.
	gainTo := func(u, h int) int {
		d := 0
		for v, k := range g.adj[u] {
			switch part[v] {
			case h:
				d += k
			case part[u]:
				d -= k
			}
		}
		return d
	}
	for u := range part {
		for v := u + 1; v < len(part); v++ {
			a, b := part[u], part[v]
			if a == b || g.pin[u] >= 0 || g.pin[v] >= 0 || load[a]-g.weight[u]+g.weight[v] > capacity || load[b]-g.weight[v]+g.weight[u] > capacity {
				continue
			}
			if gainTo(u, b)+gainTo(v, a)-2*g.adj[u][v] > 0 {
				part[u], part[v] = b, a
				return true
			}
		}
	}
	return false
}

// moves moves single units to the host they have the most links into
// while that cuts fewer links, fits the host and leaves no host empty.
func (g *unitGraph) moves(part []int, hosts, capacity int) {
	load := make([]int, hosts)
	units := make([]int, hosts)
	for u, h := range part {
		load[h] += g.weight[u]
		units[h]++
	}
	into := make([]int, hosts)
	for range 50 {
		moved := false
		for u, from := range part {
			if g.pin[u] >= 0 {
				continue
			}
			clear(into)
			for v, k := range g.adj[u] {
				into[part[v]] += k
			}
			best := from
			for h := range hosts {
				if into[h] > into[best] && load[h]+g.weight[u] <= capacity && units[from] > 1 {
					best = h
				}
			}
			if best != from {
				part[u] = best
				load[from] -= g.weight[u]
				load[best] += g.weight[u]
				units[from]--
				units[best]++
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// CutLinks returns the links of t whose ends host places on different
// hosts.
func CutLinks(t *topologies.Topology, host []int) []topologies.Link {
	var cut []topologies.Link
	for _, l := range t.Links() {
		if host[l.A.Node] != host[l.B.Node] {
			cut = append(cut, l)
		}
	}
	return cut
}

// ReadPlacement reads a placement file: one "NODE HOST" pair a line, a
// node of t and one of hosts' names, blank lines and lines from '#' on
// ignored. Every node must be placed exactly once and every host get a
// node. It returns the host of each node by node index.
func ReadPlacement(r io.Reader, t *topologies.Topology, hosts []string) ([]int, error) {
	host := make([]int, t.NumNodes())
	for i := range host {
		host[i] = -1
	}
	byName := make(map[string]int, len(hosts))
	for i, h := range hosts {
		byName[h] = i
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%w: line %d: want NODE HOST, got %q", ErrPlacement, line, strings.TrimSpace(text))
		}
		i, ok := t.Lookup(f[0])
		if !ok {
			return nil, fmt.Errorf("%w: line %d: no node %q in the topology", ErrPlacement, line, f[0])
		}
		h, ok := byName[f[1]]
		if !ok {
			return nil, fmt.Errorf("%w: line %d: host %q is not one of %s", ErrPlacement, line, f[1], strings.Join(hosts, ","))
		}
		if host[i] >= 0 {
			return nil, fmt.Errorf("%w: line %d: node %q placed twice", ErrPlacement, line, f[0])
		}
		host[i] = h
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlacement, err)
	}
	var missing []string
	used := make([]bool, len(hosts))
	for i, h := range host {
		if h < 0 {
			missing = append(missing, t.Node(i).Name)
			continue
		}
		used[h] = true
	}
	if len(missing) > 0 {
		slices.SortFunc(missing, cmp.Compare)
		more := ""
		if len(missing) > 5 {
			more = fmt.Sprintf(" and %d more", len(missing)-5)
			missing = missing[:5]
		}
		return nil, fmt.Errorf("%w: no host for %s%s", ErrPlacement, strings.Join(missing, ", "), more)
	}
	for h, u := range used {
		if !u {
			return nil, fmt.Errorf("%w: host %q gets no node", ErrPlacement, hosts[h])
		}
	}
	return host, nil
}

// WritePlacement writes host as a placement file ReadPlacement reads.
func WritePlacement(w io.Writer, t *topologies.Topology, hosts []string, host []int) error {
	for i, n := range t.Nodes() {
		if _, err := fmt.Fprintf(w, "%s %s\n", n.Name, hosts[host[i]]); err != nil {
			return err
		}
	}
	return nil
}
