package topologies

import (
	"fmt"
	"strconv"
)

// RLFT returns the real-life fat tree RLFT(k, n) of seed 003: n stages of
// switches with 2k ports each, 2·k^n single-port CAs ("hosts") and
// N·(2n−1)/(2k) switches for N hosts. Stages are numbered from 1 at the
// leaves to n at the top. A switch of stages 1..n−1 has k down ports (1..k)
// and k up ports (k+1..2k); a top switch has 2k down ports. Stages 1..n−1
// hold 2·k^(n−1) switches each and the top k^(n−1). RLFT(2, 3) has 16
// hosts and 20 switches, RLFT(3, 3) 54 and 45, RLFT(4, 3) 128 and 80.
//
// It is the parallel generalized fat tree PGFT(n; k,…,k,2k; 1,k,…,k;
// 1,…,1), cabled as a k-ary n-tree whose top switches take twice as many
// subtrees. A switch of stage l is a word of n−1 digits
// (a_n, …, a_{l+1}, b_l, …, b_2): a_j picks the subtree below stage j, so
// a_n ranges over 0..2k−1 and the other a_j over 0..k−1; b_j picks one of
// the k parents at stage j, 0..k−1. A switch of stage l and one of stage
// l+1 are cabled when their words differ at most in digit n−l−1 (counting
// from 0 at the left), where the lower switch holds its a_{l+1} and the
// upper one its b_{l+1}: the link joins the upper switch's down port
// a_{l+1}+1 to the lower switch's up port k+b_{l+1}+1. Host a_1 of leaf
// (a_n, …, a_2) is on the leaf's port a_1+1. RLFT(k, 1) is one switch
// with 2k hosts.
//
// A switch's position in its stage is its word read as a number (mixed
// radix, a_n the most significant digit), and the switch is named
// "s<stage>-<position>": the leaves are s1-0 … s1-(2k^(n−1)−1), the top
// switches s<n>-0 …. A host's index is leaf position·k + a_1, and the host
// is named "h<index>": leaf s1-j holds hosts h(j·k) … h(j·k+k−1), so host
// indexes run in leaf order. The GUIDs say the same in hex: GUIDPrefix,
// then the stage in bits 32..39 (0 for a host) and the position (the
// index for a host) in bits 8..31, so that s2-5 is 0x02fab0_02_000005_00
// and h9 is 0x02fab0_00_000009_00, whose port 1 is …01 (AddNode's rule).
// Node 0 is h0, where the subnet manager runs; then come the switches
// stage by stage from the leaves up, then the other hosts.
//
// LayoutFatTree recovers stages and host indexes from the cabling alone;
// on an RLFT they are the ones these names and GUIDs give.
func RLFT(k, n int) (*Topology, error) {
	switch {
	case k < 2 || 2*k > MaxPorts:
		return nil, invalid("RLFT with k=%d needs %d-port switches; want k from 2 to %d", k, 2*k, MaxPorts/2)
	case n < 1:
		return nil, invalid("RLFT with %d stages, want at least 1", n)
	}
	top := 1 // k^(n-1)
	for range n - 1 {
		var ok bool
		if top, ok = mulLimit(top, k, MaxNodes); !ok {
			return nil, invalid("RLFT(%d, %d) exceeds %d nodes", k, n, MaxNodes)
		}
	}
	// Stages below the top hold 2·k^(n−1) switches, hosts number 2·k^n.
	lower, ok := mulLimit(top, 2, MaxNodes)
	hosts, ok2 := mulLimit(lower, k, MaxNodes)
	switches, ok3 := mulLimit(lower, n-1, MaxNodes)
	if !ok || !ok2 || !ok3 || switches+top+hosts > MaxNodes {
		return nil, invalid("RLFT(%d, %d) exceeds %d nodes", k, n, MaxNodes)
	}
	switches += top

	// radix returns the range of digit d of a stage-l word: 2k for a_n,
	// the leftmost digit below the top, else k.
	radix := func(l, d int) int {
		if d == 0 && l < n {
			return 2 * k
		}
		return k
	}
	count := func(l int) int {
		if l == n {
			return top
		}
		return lower
	}
	digits := func(l, pos int) []int {
		w := make([]int, n-1)
		for d := n - 2; d >= 0; d-- {
			w[d] = pos % radix(l, d)
			pos /= radix(l, d)
		}
		return w
	}
	position := func(l int, w []int) int {
		pos := 0
		for d, x := range w {
			pos = pos*radix(l, d) + x
		}
		return pos
	}

	b := newBuilder()
	host := func(i int) int {
		return b.nodeGUID(CA, "h"+strconv.Itoa(i), 1, rlftGUID(0, i))
	}
	first := host(0)
	sw := make([][]int, n+1) // [stage][position]
	for l := 1; l <= n; l++ {
		sw[l] = make([]int, count(l))
		for pos := range sw[l] {
			sw[l][pos] = b.nodeGUID(Switch, fmt.Sprintf("s%d-%d", l, pos), 2*k, rlftGUID(l, pos))
		}
	}
	for l := 1; l < n; l++ {
		d := n - l - 1 // the digit the two stages' words differ in
		for pos := range sw[l] {
			w := digits(l, pos)
			child := w[d]
			for parent := range k {
				w[d] = parent
				b.link(sw[l+1][position(l+1, w)], child+1, sw[l][pos], k+parent+1)
			}
		}
	}
	perLeaf := k
	if n == 1 {
		perLeaf = 2 * k // the one switch is leaf and top
	}
	for h := range hosts {
		ca := first
		if h > 0 {
			ca = host(h)
		}
		b.link(sw[1][h/perLeaf], h%perLeaf+1, ca, 1)
	}
	return b.done()
}

// rlftGUID is the GUID of the node at position pos of stage (0: hosts).
func rlftGUID(stage, pos int) uint64 {
	return GUIDPrefix | uint64(stage)<<32 | uint64(pos)<<8
}
