package topologies

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// GUIDPrefix is the fixed upper part of the node GUIDs generators assign.
// Its first byte, 0x02, marks a locally administered EUI-64, so generated
// GUIDs cannot be mistaken for a vendor's.
const GUIDPrefix uint64 = 0x02fab0_0000000000

// GeneratedGUID returns the node GUID generators give node number i: the
// prefix plus i shifted past the low byte, which stays free for the port
// GUIDs of CAs (node GUID plus port number). Thesis8 numbers nodes as the
// thesis does; the other generators number them 1, 2, ... in node order.
func GeneratedGUID(i int) uint64 { return GUIDPrefix | uint64(i)<<8 }

// MaxNodes bounds generated fabrics: each switch and each CA port needs a
// unicast LID, and there are 0xbfff of them (IBA 4.1.3).
const MaxNodes = 0xbfff

// MaxIrregularSwitches bounds Irregular, whose extra-link search is
// quadratic in the number of switches.
const MaxIrregularSwitches = 4096

// irregularStream is the second PCG word, so that a seed means the same
// graph here and nowhere else.
const irregularStream = 0x1b_fab_1e6

// builder adds generated nodes and links, keeping the first error.
type builder struct {
	t   *Topology
	err error
}

func newBuilder() *builder { return &builder{t: New()} }

// node adds a node whose GUID follows its position.
func (b *builder) node(typ NodeType, name string, ports int) int {
	return b.nodeGUID(typ, name, ports, GeneratedGUID(b.t.NumNodes()+1))
}

func (b *builder) nodeGUID(typ NodeType, name string, ports int, guid uint64) int {
	if b.err != nil {
		return -1
	}
	i, err := b.t.AddNode(Node{Type: typ, Name: name, NumPorts: ports, GUID: guid})
	b.err = err
	return i
}

func (b *builder) link(a, pa, c, pc int) {
	if b.err != nil {
		return
	}
	b.err = b.t.Connect(PortRef{a, pa}, PortRef{c, pc}, 0, 0)
}

func (b *builder) done() (*Topology, error) {
	if b.err != nil {
		return nil, fmt.Errorf("generating: %w", b.err)
	}
	return b.t, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// mulLimit multiplies a and b, reporting false past limit.
func mulLimit(a, b, limit int) (int, bool) {
	if a < 0 || b < 0 || (a != 0 && b > limit/a) {
		return 0, false
	}
	return a * b, a*b <= limit
}

// Irregular returns a random irregular network as in the thesis's
// evaluation: switches switches of ports ports each, cabled into a connected
// random graph, then up to hostsPerSwitch single-port CAs on each switch's
// free ports (so a switch left with no free port gets none, and not every
// port is cabled). The same arguments always give the same network.
//
// The graph is a random spanning tree (each switch, in random order, cabled
// to a random earlier switch with a free port) plus switches/4 extra links
// between random pairs of switches with free ports. There are no self-loops
// and no parallel links. Switch ports are used lowest first, links before
// CAs. One port of sw1 is kept for the subnet manager's CA, ca1-1, which is
// node 0; then come sw1..swN and the other CAs, ca<switch>-<n>.
func Irregular(switches, ports, hostsPerSwitch int, seed uint64) (*Topology, error) {
	if err := checkIrregular(switches, ports, hostsPerSwitch); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, irregularStream))
	g := newSwitchGraph(switches, ports)
	g.spanningTree(r)
	g.extraLinks(r, switches/4)
	return g.build(hostsPerSwitch)
}

// checkIrregular refuses the arguments of Irregular that give no network
// or one too large.
func checkIrregular(switches, ports, hostsPerSwitch int) error {
	switch {
	case switches < 1 || switches > MaxIrregularSwitches:
		return invalid("irregular network with %d switches, want 1 to %d", switches, MaxIrregularSwitches)
	case ports < 1 || ports > MaxPorts:
		return invalid("irregular network with %d-port switches, want 1 to %d ports", ports, MaxPorts)
	case switches > 1 && ports < 2:
		return invalid("irregular network of %d switches needs at least 2 ports per switch: one to cable, one for the SM's CA", switches)
	case hostsPerSwitch < 1 || hostsPerSwitch > ports:
		return invalid("irregular network with %d hosts per switch, want 1 to %d (the port count)", hostsPerSwitch, ports)
	}
	if n, ok := mulLimit(switches, 1+hostsPerSwitch, MaxNodes); !ok {
		return invalid("irregular network of up to %d nodes exceeds %d", n, MaxNodes)
	}
	return nil
}

// switchGraph is the switch-to-switch cabling of an irregular network as
// Irregular draws it.
type switchGraph struct {
	ports    int
	used     []int // cabled ports of each switch
	adjacent []map[int]bool
	links    [][2]int // in the order they were cabled
}

func newSwitchGraph(switches, ports int) *switchGraph {
	g := &switchGraph{ports: ports, used: make([]int, switches), adjacent: make([]map[int]bool, switches)}
	for i := range g.adjacent {
		g.adjacent[i] = map[int]bool{}
	}
	return g
}

// capacity returns switch i's ports left to cable.
func (g *switchGraph) capacity(i int) int {
	if i == 0 {
		return g.ports - 1 - g.used[i] // sw1 keeps a port for the SM's CA
	}
	return g.ports - g.used[i]
}

func (g *switchGraph) cable(a, b int) {
	g.links = append(g.links, [2]int{a, b})
	g.used[a]++
	g.used[b]++
	g.adjacent[a][b], g.adjacent[b][a] = true, true
}

// spanningTree cables each switch, in random order, to a random earlier
// one with a free port.
func (g *switchGraph) spanningTree(r *rand.Rand) {
	var open []int // placed switches with a free port
	for k, s := range r.Perm(len(g.used)) {
		if k > 0 {
			j := r.IntN(len(open))
			peer := open[j]
			g.cable(s, peer)
			if g.capacity(peer) == 0 {
				open[j] = open[len(open)-1]
				open = open[:len(open)-1]
			}
		}
		if g.capacity(s) > 0 {
			open = append(open, s)
		}
	}
}

// extraLinks cables up to n more pairs of switches with free ports, not
// yet adjacent, so that the graph has cycles as the thesis's networks do.
func (g *switchGraph) extraLinks(r *rand.Rand, n int) {
	for range n {
		var free []int
		for i := range g.used {
			if g.capacity(i) > 0 {
				free = append(free, i)
			}
		}
		if !g.cableRandomPair(r, free) {
			return
		}
	}
}

// cableRandomPair cables a random switch of free to a random one of free
// it is not adjacent to, if there is such a pair.
func (g *switchGraph) cableRandomPair(r *rand.Rand, free []int) bool {
	for _, ai := range r.Perm(len(free)) {
		a := free[ai]
		var peers []int
		for _, b := range free {
			if b != a && !g.adjacent[a][b] {
				peers = append(peers, b)
			}
		}
		if len(peers) > 0 {
			g.cable(a, peers[r.IntN(len(peers))])
			return true
		}
	}
	return false
}

// build returns the network: the SM's CA, the switches, their links on
// the lowest ports in cabling order, then up to hostsPerSwitch CAs on
// each switch's free ports.
func (g *switchGraph) build(hostsPerSwitch int) (*Topology, error) {
	switches := len(g.used)
	b := newBuilder()
	hosts := make([]int, switches)
	for i := range switches {
		hosts[i] = min(hostsPerSwitch, g.ports-g.used[i])
	}
	sm := b.node(CA, "ca1-1", 1)
	sw := make([]int, switches)
	for i := range switches {
		sw[i] = b.node(Switch, "sw"+strconv.Itoa(i+1), g.ports)
	}
	next := make([]int, switches) // highest port used so far
	for _, l := range g.links {
		next[l[0]]++
		next[l[1]]++
		b.link(sw[l[0]], next[l[0]], sw[l[1]], next[l[1]])
	}
	for i := range switches {
		for h := 1; h <= hosts[i]; h++ {
			ca := sm
			if i != 0 || h != 1 {
				ca = b.node(CA, fmt.Sprintf("ca%d-%d", i+1, h), 1)
			}
			b.link(sw[i], next[i]+h, ca, 1)
		}
	}
	return b.done()
}

// FatTree returns a two-level fat tree: leaves leaf switches, each with
// hostsPerLeaf single-port CAs on ports 1..hostsPerLeaf and one link to
// each of spines spine switches on the ports after them; spine j's port i
// goes to leaf i. Node 0 is ca1-1, then leaf1..leafL, spine1..spineS, and
// the other CAs, ca<leaf>-<n>.
func FatTree(leaves, spines, hostsPerLeaf int) (*Topology, error) {
	switch {
	case leaves < 1:
		return nil, invalid("fat tree with %d leaves, want at least 1", leaves)
	case spines < 1:
		return nil, invalid("fat tree with %d spines, want at least 1", spines)
	case hostsPerLeaf < 1:
		return nil, invalid("fat tree with %d hosts per leaf, want at least 1", hostsPerLeaf)
	case leaves > MaxPorts:
		return nil, invalid("fat tree with %d leaves needs %d-port spines; a switch has at most %d ports", leaves, leaves, MaxPorts)
	case hostsPerLeaf > MaxPorts || spines > MaxPorts || hostsPerLeaf+spines > MaxPorts:
		return nil, invalid("fat tree leaf with %d hosts and %d spine links needs %d ports; a switch has at most %d",
			hostsPerLeaf, spines, hostsPerLeaf+spines, MaxPorts)
	}
	if n, ok := mulLimit(leaves, hostsPerLeaf+1, MaxNodes-spines); !ok {
		return nil, invalid("fat tree of %d nodes exceeds %d", n+spines, MaxNodes)
	}
	b := newBuilder()
	sm := b.node(CA, "ca1-1", 1)
	leaf := make([]int, leaves)
	for i := range leaf {
		leaf[i] = b.node(Switch, "leaf"+strconv.Itoa(i+1), hostsPerLeaf+spines)
	}
	spine := make([]int, spines)
	for j := range spine {
		spine[j] = b.node(Switch, "spine"+strconv.Itoa(j+1), leaves)
	}
	for i := range leaf {
		for h := 1; h <= hostsPerLeaf; h++ {
			ca := sm
			if i != 0 || h != 1 {
				ca = b.node(CA, fmt.Sprintf("ca%d-%d", i+1, h), 1)
			}
			b.link(leaf[i], h, ca, 1)
		}
		for j := range spine {
			b.link(leaf[i], hostsPerLeaf+j+1, spine[j], i+1)
		}
	}
	return b.done()
}
