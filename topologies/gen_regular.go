package topologies

import (
	"strconv"
	"strings"
)

// KAryNTree returns a k-ary n-tree: n levels of k^(n-1) switches with 2k
// ports each, and k^n single-port CAs.
//
// A switch is named by its level l (0 at the top, n-1 at the leaves) and a
// word w of n-1 base-k digits: "sw<l>-<w0>-<w1>...". Switch (w, l) and
// switch (w', l+1) are cabled when w and w' differ at most in digit l; the
// link uses port w'[l]+1 of the upper switch (down ports 1..k) and port
// k+w[l]+1 of the lower one (up ports k+1..2k). Leaf w has CA
// "ca<w0>-...-<j>" on port j+1. Top switches use only their down ports.
// Node 0 is the first CA, then the switches level by level, then the other
// CAs.
func KAryNTree(k, n int) (*Topology, error) {
	switch {
	case k < 2 || 2*k > MaxPorts:
		return nil, invalid("k-ary n-tree with k=%d needs %d-port switches; want k from 2 to %d", k, 2*k, MaxPorts/2)
	case n < 1:
		return nil, invalid("k-ary n-tree with n=%d levels, want at least 1", n)
	}
	perLevel := 1 // k^(n-1)
	for range n - 1 {
		var ok bool
		if perLevel, ok = mulLimit(perLevel, k, MaxNodes); !ok {
			return nil, invalid("%d-ary %d-tree exceeds %d nodes", k, n, MaxNodes)
		}
	}
	hosts, ok := mulLimit(perLevel, k, MaxNodes)
	switches, ok2 := mulLimit(perLevel, n, MaxNodes)
	if !ok || !ok2 || hosts+switches > MaxNodes {
		return nil, invalid("%d-ary %d-tree exceeds %d nodes", k, n, MaxNodes)
	}
	// digits returns w's n-1 digits, most significant first.
	digits := func(w int) []int {
		d := make([]int, n-1)
		for i := n - 2; i >= 0; i-- {
			d[i] = w % k
			w /= k
		}
		return d
	}
	word := func(d []int) string {
		s := make([]string, len(d))
		for i, x := range d {
			s[i] = strconv.Itoa(x)
		}
		return strings.Join(s, "-")
	}
	b := newBuilder()
	hostName := func(h int) string { return "ca" + word(append(digits(h/k), h%k)) }
	first := b.node(CA, hostName(0), 1)
	sw := make([][]int, n) // [level][w]
	for l := range n {
		sw[l] = make([]int, perLevel)
		for w := range perLevel {
			name := "sw" + strconv.Itoa(l)
			if n > 1 {
				name += "-" + word(digits(w))
			}
			sw[l][w] = b.node(Switch, name, 2*k)
		}
	}
	// weight[l] is the value of digit l in a word.
	weight := make([]int, n)
	for l, x := n-2, 1; l >= 0; l-- {
		weight[l], x = x, x*k
	}
	for l := 0; l+1 < n; l++ {
		for w := range perLevel {
			d := digits(w)
			for c := range k {
				child := w + (c-d[l])*weight[l]
				b.link(sw[l][w], c+1, sw[l+1][child], k+d[l]+1)
			}
		}
	}
	for h := range hosts {
		ca := first
		if h > 0 {
			ca = b.node(CA, hostName(h), 1)
		}
		b.link(sw[n-1][h/k], h%k+1, ca, 1)
	}
	return b.done()
}

// Mesh returns a mesh of switches with the given sizes in one to three
// dimensions, each switch with one single-port CA. See Torus for the layout.
func Mesh(dims ...int) (*Topology, error) { return grid(false, dims) }

// Torus returns a torus: a mesh whose last switch in every dimension is also
// cabled to the first. In a dimension of size 2 the wraparound would join
// the same two switches as the mesh link, so there it is left out (a ring
// of two is one cable); a dimension of size 1 has no links.
//
// Switches have 2d+1 ports for d dimensions: in dimension i, port 2i+1 goes
// towards lower and port 2i+2 towards higher coordinates; the CA is on port
// 2d+1. Switch (x,y,z) is "sw<x>-<y>-<z>", its CA "ca<x>-<y>-<z>"; node 0 is
// the CA at the origin, then the switches with the last coordinate varying
// fastest, then the other CAs.
func Torus(dims ...int) (*Topology, error) { return grid(true, dims) }

func grid(torus bool, dims []int) (*Topology, error) {
	kind := "mesh"
	if torus {
		kind = "torus"
	}
	if len(dims) < 1 || len(dims) > 3 {
		return nil, invalid("%s with %d dimensions, want 1 to 3", kind, len(dims))
	}
	count := 1
	for _, d := range dims {
		if d < 1 {
			return nil, invalid("%s dimension of size %d, want at least 1", kind, d)
		}
		var ok bool
		if count, ok = mulLimit(count, d, MaxNodes/2); !ok {
			return nil, invalid("%s of %v exceeds %d nodes", kind, dims, MaxNodes)
		}
	}
	coords := func(i int) []int {
		c := make([]int, len(dims))
		for d := len(dims) - 1; d >= 0; d-- {
			c[d] = i % dims[d]
			i /= dims[d]
		}
		return c
	}
	index := func(c []int) int {
		i := 0
		for d, x := range c {
			i = i*dims[d] + x
		}
		return i
	}
	name := func(prefix string, i int) string {
		s := make([]string, len(dims))
		for d, x := range coords(i) {
			s[d] = strconv.Itoa(x)
		}
		return prefix + strings.Join(s, "-")
	}
	hostPort := 2*len(dims) + 1
	b := newBuilder()
	first := b.node(CA, name("ca", 0), 1)
	sw := make([]int, count)
	for i := range sw {
		sw[i] = b.node(Switch, name("sw", i), hostPort)
	}
	for i := range count {
		c := coords(i)
		for d, size := range dims {
			up := append([]int(nil), c...)
			switch {
			case c[d]+1 < size:
				up[d] = c[d] + 1
			case torus && size > 2:
				up[d] = 0
			default:
				continue
			}
			b.link(sw[i], 2*d+2, sw[index(up)], 2*d+1)
		}
	}
	for i := range count {
		ca := first
		if i > 0 {
			ca = b.node(CA, name("ca", i), 1)
		}
		b.link(sw[i], hostPort, ca, 1)
	}
	return b.done()
}
