package topologies

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Permutation is a bit permutation of node addresses: the persistent
// traffic patterns of numerical applications (Duato, Yalamanchili and Ni,
// "Interconnection Networks", the patterns the congestion-control
// experiments of issue 19 run). With n = 2^b nodes, node a = a_{b-1}…a_0
// sends to the node whose address is a's bits rearranged:
//
//   - Butterfly swaps the most and the least significant bit;
//   - PerfectShuffle rotates the bits left by one (a_{b-2}…a_0 a_{b-1}).
//     The "shuffle permutation" of the paper's Fig. 1 (a 16-node mesh)
//     is this one: the paper names no other and the digest reads it so;
//   - MatrixTranspose swaps the upper and the lower half of the bits. With
//     an odd bit count the upper ⌊b/2⌋ and the lower ⌊b/2⌋ bits swap and
//     the middle bit stays: on 32 nodes (5 bits) a4a3 a2 a1a0 sends to
//     a1a0 a2 a4a3. On a grid of 2^i × 2^i nodes numbered row by row this
//     is the transpose of the matrix of nodes.
//
// A node its permutation maps onto itself (a fixed point) sends nothing:
// Pairs leaves it out and counts it.
type Permutation uint8

// The permutations.
const (
	Butterfly       Permutation = iota + 1 // butterfly
	PerfectShuffle                         // shuffle
	MatrixTranspose                        // transpose
)

// Permutations lists every permutation, in the paper's order.
func Permutations() []Permutation { return []Permutation{Butterfly, PerfectShuffle, MatrixTranspose} }

// ParsePermutation reads a permutation's name: butterfly, shuffle (or
// perfect-shuffle), transpose (or matrix-transpose).
func ParsePermutation(s string) (Permutation, error) {
	switch strings.ToLower(s) {
	case "butterfly":
		return Butterfly, nil
	case "shuffle", "perfect-shuffle":
		return PerfectShuffle, nil
	case "transpose", "matrix-transpose":
		return MatrixTranspose, nil
	}
	return 0, invalid("permutation %q: want butterfly, shuffle or transpose", s)
}

// AddressBits returns b for n = 2^b nodes, n at least 2; any other n is
// an error: a bit permutation needs every b-bit address to be a node.
func AddressBits(n int) (int, error) {
	if n < 2 || n&(n-1) != 0 {
		return 0, invalid("a bit permutation needs a power of two of at least 2 nodes, not %d", n)
	}
	return bits.TrailingZeros(uint(n)), nil
}

// dest is a's partner among 2^b nodes; p is valid and a < 2^b.
func (p Permutation) dest(a, b int) int {
	mask := 1<<b - 1
	switch p {
	case Butterfly:
		hi, lo := a>>(b-1)&1, a&1
		return a&^(1<<(b-1)|1) | lo<<(b-1) | hi
	case PerfectShuffle:
		return (a<<1 | a>>(b-1)) & mask
	case MatrixTranspose:
		h := b / 2
		low := a & (1<<h - 1)
		high := a >> (b - h)
		mid := a >> h & (1<<(b-2*h) - 1)
		return low<<(b-h) | mid<<h | high
	}
	return a
}

// Map returns the permutation over n nodes: m[a] is the node a sends to.
func (p Permutation) Map(n int) ([]int, error) {
	b, err := AddressBits(n)
	if err != nil {
		return nil, err
	}
	if p < Butterfly || p > MatrixTranspose {
		return nil, invalid("unknown %v", p)
	}
	m := make([]int, n)
	for a := range m {
		m[a] = p.dest(a, b)
	}
	return m, nil
}

// Pair is one source and the node it sends to, by address.
type Pair struct {
	Src int `json:"src"`
	Dst int `json:"dst"`
}

// Pairs returns the senders of the permutation over n nodes with their
// partners, in address order, leaving out the fixed points, whose number
// it returns.
func (p Permutation) Pairs(n int) (pairs []Pair, fixed int, err error) {
	m, err := p.Map(n)
	if err != nil {
		return nil, 0, err
	}
	for a, d := range m {
		if a == d {
			fixed++
			continue
		}
		pairs = append(pairs, Pair{Src: a, Dst: d})
	}
	return pairs, fixed, nil
}

// GridHost is the name Mesh and Torus give the CA of grid node i (its
// switch's index, the last coordinate varying fastest): "ca<x>-<y>…".
// The grid's node i is address i of a permutation over its nodes.
func GridHost(dims []int, i int) string {
	c := make([]string, len(dims))
	for d := len(dims) - 1; d >= 0; d-- {
		c[d] = strconv.Itoa(i % dims[d])
		i /= dims[d]
	}
	return "ca" + strings.Join(c, "-")
}

// Burst is a hot spot: a load suddenly sent through one region of the
// network. Every pair's source starts sending to its destination at
// Start and stops at Start+Length, at Load of its link's data rate. The
// times count from the start of the experiment's traffic, in the time
// the experiment runs in (real time for the harness).
type Burst struct {
	Pairs  []Pair        `json:"pairs"`
	Load   float64       `json:"load"` // fraction of each source's link rate
	Start  time.Duration `json:"start_ns"`
	Length time.Duration `json:"length_ns"`
}

// Sources lists the burst's sources, Region its destinations, in order
// of the pairs.
func (b Burst) Sources() []int { return b.column(func(p Pair) int { return p.Src }) }

// Region lists the burst's destinations in the order of its pairs.
func (b Burst) Region() []int { return b.column(func(p Pair) int { return p.Dst }) }

func (b Burst) column(f func(Pair) int) []int {
	out := make([]int, len(b.Pairs))
	for i, p := range b.Pairs {
		out[i] = f(p)
	}
	return out
}

// GridHotSpot is the hot spot of a two-dimensional grid of w × h nodes
// (dims = [w, h], node (x, y) at index x·h + y, as Mesh and Torus number
// them): the left half of one row, y = ⌊(h−1)/2⌋, x < w/2, sends to the
// node half the grid away along x, (x + w/2, y). On a mesh the one
// minimal path of such a pair runs along the row, so all w/2 sources
// cross the row's middle link (x = w/2−1 to w/2): at load ρ each, that
// link is offered ρ·w/2 of its rate while the rows on either side stay
// idle, room for alternative paths (a burst of several rows would leave
// each row's detours crossing its neighbour's hot link). Nothing else is
// shared: every source and every destination is in one pair. Start and
// Length are left for the experiment to set.
func GridHotSpot(dims []int, load float64) (Burst, error) {
	if len(dims) != 2 || dims[0] < 2 || dims[0]%2 != 0 || dims[1] < 1 {
		return Burst{}, invalid("a grid hot spot needs two dimensions, the first even, not %v", dims)
	}
	if !(load > 0 && load <= 1) {
		return Burst{}, invalid("hot spot load %v: want a fraction of the link rate in (0, 1]", load)
	}
	w, h := dims[0], dims[1]
	b := Burst{Load: load}
	y := (h - 1) / 2
	for x := range w / 2 {
		b.Pairs = append(b.Pairs, Pair{Src: x*h + y, Dst: (x+w/2)*h + y})
	}
	return b, nil
}

// String describes the burst by its pairs.
func (b Burst) String() string {
	s := make([]string, len(b.Pairs))
	for i, p := range b.Pairs {
		s[i] = fmt.Sprintf("%d→%d", p.Src, p.Dst)
	}
	return fmt.Sprintf("burst %s at %.0f %% from %v for %v", strings.Join(s, " "), b.Load*100, b.Start, b.Length)
}
