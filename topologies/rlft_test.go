package topologies_test

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

func pow(k, e int) int {
	x := 1
	for range e {
		x *= k
	}
	return x
}

// rlftName splits "s<stage>-<position>" or "h<index>".
func rlftName(t *testing.T, name string) (stage, pos int) {
	t.Helper()
	if h, ok := strings.CutPrefix(name, "h"); ok {
		i, err := strconv.Atoi(h)
		require.NoError(t, err, name)
		return 0, i
	}
	s, p, ok := strings.Cut(strings.TrimPrefix(name, "s"), "-")
	require.True(t, ok, name)
	stage, err := strconv.Atoi(s)
	require.NoError(t, err, name)
	pos, err = strconv.Atoi(p)
	require.NoError(t, err, name)
	return stage, pos
}

// shortestPaths returns, for every node, the number of shortest paths
// from node src that pass through switches only, and their length.
func shortestPaths(tp *topologies.Topology, src int) (count, dist []int) {
	dist = tp.Distances(src)
	count = make([]int, tp.NumNodes())
	count[src] = 1
	order := []int{src}
	for len(order) > 0 {
		u := order[0]
		order = order[1:]
		if u != src && tp.Node(u).Type != topologies.Switch {
			continue
		}
		for p := 1; p <= tp.Node(u).NumPorts; p++ {
			peer, ok := tp.Peer(ref(u, p))
			if !ok || dist[peer.Node] != dist[u]+1 {
				continue
			}
			if count[peer.Node] == 0 {
				order = append(order, peer.Node)
			}
			count[peer.Node] += count[u]
		}
	}
	return count, dist
}

// rlftTurn is the stage where a minimal route from host x to host y of
// RLFT(k, n) turns down: the lowest stage whose switches reach both, by
// the generator's digits (leaf j = (a_n … a_2), a_2 least significant).
func rlftTurn(k, n, x, y int) int {
	if n == 1 {
		return 1
	}
	lx, ly := x/k, y/k
	for j := 1; j < n; j++ {
		if lx/pow(k, j-1) == ly/pow(k, j-1) {
			return j
		}
	}
	return n
}

func TestRLFT(t *testing.T) {
	tests := []struct {
		k, n               int
		hosts, switches    int
		leaves, perStage   int
		top, minimalPaths  int
		skipAllPairsDetail bool
	}{
		{k: 2, n: 3, hosts: 16, switches: 20, leaves: 8, perStage: 8, top: 4, minimalPaths: 4},
		{k: 3, n: 3, hosts: 54, switches: 45, leaves: 18, perStage: 18, top: 9, minimalPaths: 9},
		{k: 4, n: 3, hosts: 128, switches: 80, leaves: 32, perStage: 32, top: 16, minimalPaths: 16},
		{k: 2, n: 2, hosts: 8, switches: 6, leaves: 4, perStage: 4, top: 2, minimalPaths: 2},
		{k: 2, n: 4, hosts: 32, switches: 56, leaves: 16, perStage: 16, top: 8, minimalPaths: 8},
		{k: 3, n: 1, hosts: 6, switches: 1, leaves: 1, perStage: 1, top: 1, minimalPaths: 1},
		// Seed 003's config #1: 432 hosts, 180 switches of 12 ports.
		{k: 6, n: 3, hosts: 432, switches: 180, leaves: 72, perStage: 72, top: 36, minimalPaths: 36, skipAllPairsDetail: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("K=%d n=%d", tt.k, tt.n), func(t *testing.T) {
			tp, err := topologies.RLFT(tt.k, tt.n)
			require.NoError(t, err)
			// The paper's formulas.
			require.Equal(t, 2*pow(tt.k, tt.n), tt.hosts)
			require.Equal(t, tt.hosts*(2*tt.n-1)/(2*tt.k), tt.switches)
			assert.Equal(t, tt.hosts, tp.Count(topologies.CA))
			assert.Equal(t, tt.switches, tp.Count(topologies.Switch))
			assert.Equal(t, "h0", tp.Node(0).Name, "node 0 is the SM's host")
			assert.True(t, tp.Connected())
			assert.Equal(t, 2*tt.n, tp.Diameter())

			perStage := map[int]int{}
			for i, n := range tp.Nodes() {
				stage, pos := rlftName(t, n.Name)
				assert.Equal(t, topologies.GUIDPrefix|uint64(stage)<<32|uint64(pos)<<8, n.GUID, "GUID of %s", n.Name)
				if n.Type == topologies.CA {
					assert.Equal(t, 1, tp.Degree(i), "%s is cabled", n.Name)
					continue
				}
				perStage[stage]++
				// Every switch has 2K ports, all cabled: K down and K up
				// below the top, 2K down at the top.
				require.Equal(t, 2*tt.k, n.NumPorts, n.Name)
				assert.Equal(t, 2*tt.k, tp.Degree(i), "%s uses every port", n.Name)
				up, down := 0, 0
				for p := 1; p <= n.NumPorts; p++ {
					peer, _ := tp.Peer(ref(i, p))
					ps, _ := rlftName(t, tp.Node(peer.Node).Name)
					switch {
					case ps == stage+1:
						up++
						assert.Greater(t, p, tt.k, "%s port %d goes up: ports K+1..2K", n.Name, p)
					case ps == stage-1 || ps == 0 && stage == 1:
						down++
					default:
						t.Errorf("%s port %d joins stage %d to stage %d", n.Name, p, stage, ps)
					}
				}
				if stage == tt.n {
					assert.Equal(t, 2*tt.k, down, "top %s", n.Name)
				} else {
					assert.Equal(t, tt.k, down, "%s", n.Name)
					assert.Equal(t, tt.k, up, "%s", n.Name)
				}
			}
			for l := 1; l <= tt.n; l++ {
				want := tt.perStage
				if l == tt.n {
					want = tt.top
				}
				assert.Equal(t, want, perStage[l], "switches at stage %d", l)
			}
			assert.Equal(t, tt.leaves, perStage[1])

			// Minimal paths: a pair that turns at stage j has K^(j−1)
			// of length 2j; pairs turning at the top have K^(n−1), the
			// most (seed 003's path diversity).
			most := 0
			for x := range tt.hosts {
				if tt.skipAllPairsDetail && x%37 != 0 {
					continue
				}
				xi, _ := tp.Lookup("h" + strconv.Itoa(x))
				count, dist := shortestPaths(tp, xi)
				for y := range tt.hosts {
					if y == x {
						continue
					}
					yi, _ := tp.Lookup("h" + strconv.Itoa(y))
					j := rlftTurn(tt.k, tt.n, x, y)
					require.Equal(t, 2*j, dist[yi], "h%d to h%d: hops", x, y)
					require.Equal(t, pow(tt.k, j-1), count[yi], "h%d to h%d: minimal paths", x, y)
					most = max(most, count[yi])
				}
			}
			assert.Equal(t, tt.minimalPaths, most)
			assert.Equal(t, pow(tt.k, tt.n-1), most)

			// The generated file loads back unchanged.
			var b bytes.Buffer
			require.NoError(t, topologies.Write(&b, tp))
			back, err := topologies.Parse(&b, "rlft")
			require.NoError(t, err)
			assert.True(t, tp.Equal(back))
		})
	}
}

func TestRLFTInvalid(t *testing.T) {
	for _, tt := range []struct{ k, n int }{{1, 3}, {0, 3}, {-2, 3}, {128, 2}, {2, 0}, {2, -1}, {16, 5}, {100, 1000}, {2, 64}} {
		_, err := topologies.RLFT(tt.k, tt.n)
		assert.ErrorIs(t, err, topologies.ErrInvalid, "RLFT(%d, %d)", tt.k, tt.n)
	}
}

// TestLayoutRLFT: the layout read from the cabling is the generator's:
// h<i> is host i, s1-<j> is leaf j, s<l>-* is at stage l, host i is on
// leaf ⌊i/K⌋; the same after the names are thrown away (a net file
// round trip with other names).
func TestLayoutRLFT(t *testing.T) {
	for _, kn := range [][2]int{{2, 3}, {3, 3}, {4, 3}, {2, 2}, {3, 1}, {2, 4}} {
		k, n := kn[0], kn[1]
		t.Run(fmt.Sprintf("K=%d n=%d", k, n), func(t *testing.T) {
			tp, err := topologies.RLFT(k, n)
			require.NoError(t, err)
			l, err := topologies.LayoutFatTree(tp)
			require.NoError(t, err)
			assert.Equal(t, n, l.Stages)
			require.Len(t, l.Hosts, 2*pow(k, n))
			perLeaf := k
			if n == 1 {
				perLeaf = 2 * k
			}
			for i, node := range l.Hosts {
				assert.Equal(t, "h"+strconv.Itoa(i), tp.Node(node).Name)
				hi, ok := l.HostIndex(node)
				assert.True(t, ok)
				assert.Equal(t, i, hi)
				leaf, ok := l.Leaf(i)
				require.True(t, ok)
				assert.Equal(t, i/perLeaf, leaf)
				assert.Equal(t, fmt.Sprintf("s1-%d", leaf), tp.Node(l.Leaves[leaf]).Name)
			}
			for i, node := range tp.Nodes() {
				stage, _ := rlftName(t, node.Name)
				assert.Equal(t, stage, l.Stage(i), node.Name)
			}
			_, ok := l.HostIndex(l.Leaves[0])
			assert.False(t, ok, "a switch is no host")
			_, ok = l.Leaf(len(l.Hosts))
			assert.False(t, ok)
			assert.Zero(t, l.Stage(-1))
			assert.Zero(t, l.Stage(tp.NumNodes()))

			// Renamed (as ibnetdiscover would print it): the same layout
			// by GUID.
			var b bytes.Buffer
			require.NoError(t, topologies.Write(&b, tp))
			text := b.String()
			for i := tp.NumNodes() - 1; i >= 0; i-- {
				name := tp.Node(i).Name
				text = strings.ReplaceAll(text, `"`+name+`"`, fmt.Sprintf(`"N-%016x"`, tp.Node(i).GUID))
			}
			renamed, err := topologies.Parse(strings.NewReader(text), "renamed")
			require.NoError(t, err)
			rl, err := topologies.LayoutFatTree(renamed)
			require.NoError(t, err)
			for i, node := range rl.Hosts {
				assert.Equal(t, tp.Node(l.Hosts[i]).GUID, renamed.Node(node).GUID, "host %d", i)
			}
		})
	}
}

func TestLayoutFatTree(t *testing.T) {
	ft, err := topologies.FatTree(4, 3, 2)
	require.NoError(t, err)
	l, err := topologies.LayoutFatTree(ft)
	require.NoError(t, err)
	assert.Equal(t, 2, l.Stages)
	leaf1, _ := ft.Lookup("leaf1")
	spine2, _ := ft.Lookup("spine2")
	assert.Equal(t, 1, l.Stage(leaf1))
	assert.Equal(t, 2, l.Stage(spine2))
	// From spine1 (lowest GUID at the top) down its ports 1..4: leaf1..4.
	for j, s := range l.Leaves {
		assert.Equal(t, fmt.Sprintf("leaf%d", j+1), ft.Node(s).Name)
	}
	for i, h := range l.Hosts {
		assert.Equal(t, fmt.Sprintf("ca%d-%d", i/2+1, i%2+1), ft.Node(h).Name)
	}

	kt, err := topologies.KAryNTree(2, 3)
	require.NoError(t, err)
	l, err = topologies.LayoutFatTree(kt)
	require.NoError(t, err)
	assert.Equal(t, 3, l.Stages)
	assert.Len(t, l.Hosts, 8)
	assert.Len(t, l.Leaves, 4)
}

// TestFatTreeLeaves: the walk goes down from the top switch of the
// lowest GUID, through its ports in port order (not the leaves' GUIDs),
// then from the next top switch for the leaves the first misses; a CA
// cabled to two leaves, which LayoutFatTree refuses, plays no part.
func TestFatTreeLeaves(t *testing.T) {
	tp := topologies.New()
	add := func(typ topologies.NodeType, name string, ports int, guid uint64) int {
		i, err := tp.AddNode(topologies.Node{Type: typ, Name: name, NumPorts: ports, GUID: guid})
		require.NoError(t, err)
		return i
	}
	spA := add(topologies.Switch, "spA", 4, 0x100)
	spB := add(topologies.Switch, "spB", 4, 0x200)
	l0 := add(topologies.Switch, "l0", 4, 0x30)
	l1 := add(topologies.Switch, "l1", 4, 0x20)
	l2 := add(topologies.Switch, "l2", 4, 0x10)
	ca0 := add(topologies.CA, "ca0", 1, 0x1000)
	dual := add(topologies.CA, "dual", 2, 0x2000)
	for _, l := range [][2]topologies.PortRef{
		{ref(spA, 1), ref(l1, 1)}, {ref(spA, 2), ref(l0, 1)},
		{ref(spB, 1), ref(l2, 1)}, {ref(spB, 2), ref(l0, 2)},
		{ref(l0, 3), ref(ca0, 1)}, {ref(l1, 3), ref(dual, 1)}, {ref(l2, 3), ref(dual, 2)},
	} {
		require.NoError(t, tp.Connect(l[0], l[1], 0, 0))
	}
	_, err := topologies.LayoutFatTree(tp)
	require.ErrorIs(t, err, topologies.ErrInvalid, "a two-port CA")
	stage := make([]int, tp.NumNodes())
	for _, s := range []int{l0, l1, l2} {
		stage[s] = 1
	}
	stage[spA], stage[spB] = 2, 2
	assert.Equal(t, []int{l1, l0, l2}, topologies.FatTreeLeaves(tp, stage))
}

func TestLayoutNotFatTree(t *testing.T) {
	torus, err := topologies.Torus(3, 3)
	require.NoError(t, err)
	_, err = topologies.LayoutFatTree(torus)
	require.ErrorIs(t, err, topologies.ErrInvalid)
	assert.Contains(t, err.Error(), "not a fat tree")

	// Two CAs cabled to each other, no switch.
	pair := topologies.New()
	a, _ := pair.AddNode(topologies.Node{Type: topologies.CA, Name: "a", NumPorts: 1, GUID: 0x10})
	b, _ := pair.AddNode(topologies.Node{Type: topologies.CA, Name: "b", NumPorts: 1, GUID: 0x20})
	require.NoError(t, pair.Connect(ref(a, 1), ref(b, 1), 0, 0))
	_, err = topologies.LayoutFatTree(pair)
	assert.ErrorIs(t, err, topologies.ErrInvalid)

	// A two-port CA on two leaves.
	hand := topologies.New()
	sw1, _ := hand.AddNode(topologies.Node{Type: topologies.Switch, Name: "sw1", NumPorts: 2, GUID: 0x100})
	sw2, _ := hand.AddNode(topologies.Node{Type: topologies.Switch, Name: "sw2", NumPorts: 2, GUID: 0x200})
	ca, _ := hand.AddNode(topologies.Node{Type: topologies.CA, Name: "ca", NumPorts: 2, GUID: 0x300})
	require.NoError(t, hand.Connect(ref(sw1, 1), ref(ca, 1), 0, 0))
	require.NoError(t, hand.Connect(ref(sw2, 1), ref(ca, 2), 0, 0))
	require.NoError(t, hand.Connect(ref(sw1, 2), ref(sw2, 2), 0, 0))
	_, err = topologies.LayoutFatTree(hand)
	require.ErrorIs(t, err, topologies.ErrInvalid)
	assert.Contains(t, err.Error(), "2 cabled ports")

	// A switch with no way to a leaf.
	lone := topologies.New()
	sw, _ := lone.AddNode(topologies.Node{Type: topologies.Switch, Name: "sw", NumPorts: 2, GUID: 0x100})
	_, err = lone.AddNode(topologies.Node{Type: topologies.Switch, Name: "island", NumPorts: 2, GUID: 0x200})
	require.NoError(t, err)
	h, _ := lone.AddNode(topologies.Node{Type: topologies.CA, Name: "h", NumPorts: 1, GUID: 0x300})
	require.NoError(t, lone.Connect(ref(sw, 1), ref(h, 1), 0, 0))
	_, err = topologies.LayoutFatTree(lone)
	require.ErrorIs(t, err, topologies.ErrInvalid)
	assert.Contains(t, err.Error(), "reaches no leaf")

	_, err = topologies.LayoutFatTree(topologies.New())
	assert.ErrorIs(t, err, topologies.ErrInvalid)
}
