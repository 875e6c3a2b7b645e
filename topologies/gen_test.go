package topologies_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

// thesisTable is the port table of the thesis's example network as the
// reference notes give it (§2.5): switch, then the peer on ports 1..4.
const thesisTable = `
1  sw2  sw3  CA4  -
2  sw1  sw5  sw6  CA7
3  sw1  sw8  sw9  sw6
5  sw10 sw2  CA11 -
6  sw2  sw3  sw10 CA12
8  sw3  CA13 -    -
9  sw3  CA14 -    -
10 sw5  sw6  CA15 -
`

func TestThesis8(t *testing.T) {
	tp := topologies.Thesis8()
	require.Equal(t, 8, tp.Count(topologies.Switch))
	require.Equal(t, 7, tp.Count(topologies.CA))
	require.Equal(t, 9+7, tp.NumLinks(), "9 switch links and 7 CA links")
	assert.Equal(t, "ca4", tp.Node(0).Name, "node 0 is the SM's CA")

	for _, row := range strings.Split(strings.TrimSpace(thesisTable), "\n") {
		f := strings.Fields(row)
		i, ok := tp.Lookup("sw" + f[0])
		require.True(t, ok, "sw%s", f[0])
		require.Equal(t, 4, tp.Node(i).NumPorts)
		for p, want := range f[1:] {
			peer, cabled := tp.Peer(ref(i, p+1))
			if want == "-" {
				assert.False(t, cabled, "sw%s port %d is free", f[0], p+1)
				continue
			}
			require.True(t, cabled, "sw%s port %d is cabled", f[0], p+1)
			assert.Equal(t, strings.ToLower(want), tp.Node(peer.Node).Name, "peer of sw%s port %d", f[0], p+1)
		}
	}
	for _, n := range tp.Nodes() {
		num, err := strconv.Atoi(strings.TrimLeft(n.Name, "swca"))
		require.NoError(t, err)
		assert.Equal(t, topologies.GeneratedGUID(num), n.GUID, "GUID of %s carries its thesis number", n.Name)
	}

	// Facts the notes derive from the network: BFS distances from switch 1,
	// 25 active switch ports, cut nodes 6 and 10 with two up-going ports.
	sw1, _ := tp.Lookup("sw1")
	dist := tp.Distances(sw1)
	for name, want := range map[string]int{"sw2": 1, "sw3": 1, "sw5": 2, "sw6": 2, "sw8": 2, "sw9": 2, "sw10": 3} {
		i, _ := tp.Lookup(name)
		assert.Equal(t, want, dist[i], "distance from sw1 to %s", name)
	}
	active := 0
	for i, n := range tp.Nodes() {
		if n.Type != topologies.Switch {
			continue
		}
		active += tp.Degree(i)
		up := 0
		for _, j := range tp.Neighbors(i) {
			if tp.Node(j).Type == topologies.Switch && dist[j] == dist[i]-1 {
				up++
			}
		}
		want := 1
		switch n.Name {
		case "sw1":
			want = 0
		case "sw6", "sw10":
			want = 2
		}
		assert.Equal(t, want, up, "up-going ports of %s", n.Name)
	}
	assert.Equal(t, 25, active)
	assert.True(t, tp.Connected())
	// ca13-sw8-sw3-sw1-sw2-sw5-ca11 is a longest path; sw8 to sw5 the
	// longest between switches.
	assert.Equal(t, 6, tp.Diameter())
	assert.Equal(t, 4, tp.SwitchDiameter())
	assert.True(t, topologies.Default().Equal(tp), "Default is Thesis8")
}

func TestThesis8AddPiece(t *testing.T) {
	piece := topologies.Thesis8AddPiece()
	assert.Equal(t, 3, piece.Topology.NumNodes())
	base := topologies.Thesis8()
	tp, err := base.Extend(piece)
	require.NoError(t, err)
	assert.Equal(t, 9, tp.Count(topologies.Switch))
	assert.Equal(t, 9, tp.Count(topologies.CA))
	assert.Equal(t, 16+4, tp.NumLinks())
	assert.Equal(t, 16, base.NumLinks(), "Extend leaves the base alone")
	sw16, _ := tp.Lookup("sw16")
	for port, want := range map[int]string{1: "ca17", 2: "sw8", 3: "ca18", 4: "sw9"} {
		peer, ok := tp.Peer(ref(sw16, port))
		require.True(t, ok)
		assert.Equal(t, want, tp.Node(peer.Node).Name, "peer of sw16 port %d", port)
	}
	for _, name := range []string{"sw8", "sw9"} {
		i, _ := tp.Lookup(name)
		peer, ok := tp.Peer(ref(i, 3))
		require.True(t, ok)
		assert.Equal(t, ref(sw16, map[string]int{"sw8": 2, "sw9": 4}[name]), peer)
	}
	_, err = tp.Extend(piece)
	assert.ErrorIs(t, err, topologies.ErrDuplicateName, "adding the piece twice")
}

// checkGenerated checks what every generated topology promises: node 0 is a
// CA, GUIDs are GeneratedGUIDs, the fabric is connected, and no CA port
// is left uncabled.
func checkGenerated(t *testing.T, tp *topologies.Topology) {
	t.Helper()
	require.Positive(t, tp.NumNodes())
	assert.Equal(t, topologies.CA, tp.Node(0).Type, "node 0 is the SM's CA")
	assert.True(t, tp.Connected(), "connected")
	for i, n := range tp.Nodes() {
		assert.Equal(t, topologies.GeneratedGUID(i+1), n.GUID, "GUID of %s", n.Name)
		if n.Type == topologies.CA {
			assert.Equal(t, 1, tp.Degree(i), "CA %s is cabled", n.Name)
		}
	}
	for _, l := range tp.Links() {
		assert.NotEqual(t, l.A.Node, l.B.Node, "self-loop at %s", tp.Node(l.A.Node).Name)
		assert.Equal(t, topologies.Width4x, l.Width)
		assert.Equal(t, topologies.SpeedSDR, l.Speed)
	}
}

func TestFatTree(t *testing.T) {
	tests := []struct {
		name                 string
		leaves, spines, host int
	}{
		{"small", 2, 1, 1},
		{"ibsim scale", 18, 12, 24},
		{"one leaf", 1, 3, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := topologies.FatTree(tt.leaves, tt.spines, tt.host)
			require.NoError(t, err)
			checkGenerated(t, tp)
			assert.Equal(t, tt.leaves+tt.spines, tp.Count(topologies.Switch))
			assert.Equal(t, tt.leaves*tt.host, tp.Count(topologies.CA))
			assert.Equal(t, tt.leaves*tt.host+tt.leaves*tt.spines, tp.NumLinks())
			for i, n := range tp.Nodes() {
				switch {
				case strings.HasPrefix(n.Name, "leaf"):
					assert.Equal(t, tt.host+tt.spines, tp.Degree(i), "degree of %s", n.Name)
					spines := 0
					for _, j := range tp.Neighbors(i) {
						if strings.HasPrefix(tp.Node(j).Name, "spine") {
							spines++
						}
					}
					assert.Equal(t, tt.spines, spines, "%s reaches every spine once", n.Name)
				case strings.HasPrefix(n.Name, "spine"):
					assert.Equal(t, tt.leaves, tp.Degree(i), "degree of %s", n.Name)
				}
			}
			if tt.leaves > 1 {
				assert.Equal(t, 4, tp.Diameter())
				assert.Equal(t, 2, tp.SwitchDiameter())
			}
		})
	}
}

// kTreeName splits "sw<l>-<d0>-<d1>..." into the level and the word.
func kTreeName(t *testing.T, name string) (int, []string) {
	t.Helper()
	f := strings.Split(strings.TrimPrefix(name, "sw"), "-")
	l, err := strconv.Atoi(f[0])
	require.NoError(t, err)
	return l, f[1:]
}

func TestKAryNTree(t *testing.T) {
	tests := []struct{ k, n int }{{2, 1}, {2, 2}, {2, 3}, {3, 3}, {4, 3}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d-ary %d-tree", tt.k, tt.n), func(t *testing.T) {
			tp, err := topologies.KAryNTree(tt.k, tt.n)
			require.NoError(t, err)
			checkGenerated(t, tp)
			perLevel, hosts := 1, tt.k
			for range tt.n - 1 {
				perLevel *= tt.k
				hosts *= tt.k
			}
			assert.Equal(t, tt.n*perLevel, tp.Count(topologies.Switch))
			assert.Equal(t, hosts, tp.Count(topologies.CA))
			assert.Equal(t, (tt.n-1)*perLevel*tt.k+hosts, tp.NumLinks())
			assert.Equal(t, 2*tt.n, tp.Diameter())
			assert.Equal(t, 2*(tt.n-1), tp.SwitchDiameter())
			// The definition: (w, l) and (w', l+1) are cabled exactly when
			// the words differ at most in digit l.
			for i, n := range tp.Nodes() {
				if n.Type != topologies.Switch {
					continue
				}
				assert.Equal(t, 2*tt.k, n.NumPorts)
				l, w := kTreeName(t, n.Name)
				up, down := 0, 0
				for _, j := range tp.Neighbors(i) {
					m := tp.Node(j)
					if m.Type == topologies.CA {
						assert.Equal(t, tt.n-1, l, "CA %s hangs off a leaf", m.Name)
						down++
						continue
					}
					l2, w2 := kTreeName(t, m.Name)
					require.Equal(t, 1, abs(l2-l), "%s-%s skip a level", n.Name, m.Name)
					digit := min(l, l2)
					for d := range w {
						if d != digit {
							assert.Equal(t, w[d], w2[d], "%s-%s differ in digit %d", n.Name, m.Name, d)
						}
					}
					if l2 < l {
						up++
					} else {
						down++
					}
				}
				assert.Equal(t, tt.k, down, "down links of %s", n.Name)
				if l > 0 {
					assert.Equal(t, tt.k, up, "up links of %s", n.Name)
				} else {
					assert.Zero(t, up)
				}
			}
		})
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// gridCoords parses "sw<x>-<y>..." into coordinates.
func gridCoords(t *testing.T, name string) []int {
	t.Helper()
	var c []int
	for _, f := range strings.Split(name[2:], "-") {
		x, err := strconv.Atoi(f)
		require.NoError(t, err)
		c = append(c, x)
	}
	return c
}

func TestGrids(t *testing.T) {
	tests := []struct {
		name        string
		torus       bool
		dims        []int
		switchLinks int
		swDiameter  int
	}{
		{"mesh 3x3", false, []int{3, 3}, 12, 4},
		{"mesh 2x3x4", false, []int{2, 3, 4}, 1*12 + 2*8 + 3*6, 6},
		{"torus 4x4", true, []int{4, 4}, 32, 4},
		{"torus 5x3", true, []int{5, 3}, 15 + 15, 3},
		{"torus 2x3 (no wrap in size 2)", true, []int{2, 3}, 3 + 6, 2},
		{"torus 1x5", true, []int{1, 5}, 5, 2},
		{"torus 3x3x3", true, []int{3, 3, 3}, 81, 3},
		{"mesh 1", false, []int{1}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gen := topologies.Mesh
			if tt.torus {
				gen = topologies.Torus
			}
			tp, err := gen(tt.dims...)
			require.NoError(t, err)
			checkGenerated(t, tp)
			count := 1
			for _, d := range tt.dims {
				count *= d
			}
			assert.Equal(t, count, tp.Count(topologies.Switch))
			assert.Equal(t, count, tp.Count(topologies.CA))
			assert.Equal(t, tt.switchLinks+count, tp.NumLinks())
			assert.Equal(t, tt.swDiameter, tp.SwitchDiameter())
			for _, l := range tp.Links() {
				a, b := tp.Node(l.A.Node), tp.Node(l.B.Node)
				if a.Type != topologies.Switch || b.Type != topologies.Switch {
					assert.Equal(t, 2*len(tt.dims)+1, map[bool]int{true: l.A.Port, false: l.B.Port}[a.Type == topologies.Switch], "CA port")
					continue
				}
				ca, cb := gridCoords(t, a.Name), gridCoords(t, b.Name)
				diff := -1
				for d := range ca {
					if ca[d] != cb[d] {
						require.Equal(t, -1, diff, "%s-%s differ in two dimensions", a.Name, b.Name)
						diff = d
					}
				}
				require.NotEqual(t, -1, diff)
				size := tt.dims[diff]
				// The port towards higher coordinates is 2d+2, wrapping in a torus.
				if (ca[diff]+1)%size == cb[diff] && (tt.torus || ca[diff]+1 == cb[diff]) {
					assert.Equal(t, [2]int{2*diff + 2, 2*diff + 1}, [2]int{l.A.Port, l.B.Port}, "%s-%s ports", a.Name, b.Name)
				} else {
					require.Equal(t, (cb[diff]+1)%size, ca[diff], "%s-%s are not neighbours", a.Name, b.Name)
					assert.Equal(t, [2]int{2*diff + 1, 2*diff + 2}, [2]int{l.A.Port, l.B.Port}, "%s-%s ports", a.Name, b.Name)
				}
			}
		})
	}
}

func TestIrregular(t *testing.T) {
	tests := []struct {
		name                  string
		switches, ports, host int
	}{
		{"thesis 8", 8, 4, 1},
		{"thesis 16", 16, 4, 1},
		{"thesis 64", 64, 4, 1},
		{"two hosts", 12, 8, 2},
		{"one switch", 1, 4, 3},
		{"two-port switches", 5, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(5) {
				tp, err := topologies.Irregular(tt.switches, tt.ports, tt.host, seed)
				require.NoError(t, err)
				checkGenerated(t, tp)
				require.Equal(t, tt.switches, tp.Count(topologies.Switch))
				pairs := map[[2]int]bool{}
				free := 0
				for _, l := range tp.Links() {
					p := [2]int{l.A.Node, l.B.Node}
					assert.False(t, pairs[p], "parallel link %v", p)
					pairs[p] = true
				}
				for i, n := range tp.Nodes() {
					if n.Type != topologies.Switch {
						continue
					}
					assert.Equal(t, tt.ports, n.NumPorts)
					cas := 0
					for _, j := range tp.Neighbors(i) {
						if tp.Node(j).Type == topologies.CA {
							cas++
						}
					}
					left := n.NumPorts - tp.Degree(i)
					free += left
					// Up to the asked number of CAs, as many as free ports allow.
					assert.LessOrEqual(t, cas, tt.host)
					if cas < tt.host {
						assert.Zero(t, left, "%s has a free port but only %d CAs", n.Name, cas)
					}
				}
				if tt.switches >= 8 {
					assert.Positive(t, free, "not every port is cabled")
				}
				again, err := topologies.Irregular(tt.switches, tt.ports, tt.host, seed)
				require.NoError(t, err)
				assert.True(t, tp.Equal(again), "seed %d gives the same network twice", seed)
			}
		})
	}
	a, _ := topologies.Irregular(16, 4, 1, 1)
	b, _ := topologies.Irregular(16, 4, 1, 2)
	assert.False(t, a.Equal(b), "seeds 1 and 2 give different networks")
}

func TestGeneratorErrors(t *testing.T) {
	tests := []struct {
		name string
		gen  func() (*topologies.Topology, error)
	}{
		{"fat tree no leaves", func() (*topologies.Topology, error) { return topologies.FatTree(0, 2, 2) }},
		{"fat tree negative spines", func() (*topologies.Topology, error) { return topologies.FatTree(2, -1, 2) }},
		{"fat tree no hosts", func() (*topologies.Topology, error) { return topologies.FatTree(2, 2, 0) }},
		{"fat tree 255 leaves", func() (*topologies.Topology, error) { return topologies.FatTree(255, 2, 2) }},
		{"fat tree 255-port leaf", func() (*topologies.Topology, error) { return topologies.FatTree(2, 128, 127) }},
		{"fat tree too big", func() (*topologies.Topology, error) { return topologies.FatTree(254, 54, 200) }},
		{"ktree k=1", func() (*topologies.Topology, error) { return topologies.KAryNTree(1, 3) }},
		{"ktree k=128", func() (*topologies.Topology, error) { return topologies.KAryNTree(128, 2) }},
		{"ktree n=0", func() (*topologies.Topology, error) { return topologies.KAryNTree(2, 0) }},
		{"ktree too big", func() (*topologies.Topology, error) { return topologies.KAryNTree(16, 5) }},
		{"ktree overflow", func() (*topologies.Topology, error) { return topologies.KAryNTree(100, 1000) }},
		{"mesh no dims", func() (*topologies.Topology, error) { return topologies.Mesh() }},
		{"mesh 4 dims", func() (*topologies.Topology, error) { return topologies.Mesh(2, 2, 2, 2) }},
		{"torus zero", func() (*topologies.Topology, error) { return topologies.Torus(3, 0) }},
		{"torus negative", func() (*topologies.Topology, error) { return topologies.Torus(-3, 3) }},
		{"torus too big", func() (*topologies.Topology, error) { return topologies.Torus(1000, 1000) }},
		{"irregular no switches", func() (*topologies.Topology, error) { return topologies.Irregular(0, 4, 1, 1) }},
		{"irregular too many switches", func() (*topologies.Topology, error) { return topologies.Irregular(5000, 4, 1, 1) }},
		{"irregular 255 ports", func() (*topologies.Topology, error) { return topologies.Irregular(4, 255, 1, 1) }},
		{"irregular one-port switches", func() (*topologies.Topology, error) { return topologies.Irregular(4, 1, 1, 1) }},
		{"irregular no hosts", func() (*topologies.Topology, error) { return topologies.Irregular(4, 4, 0, 1) }},
		{"irregular more hosts than ports", func() (*topologies.Topology, error) { return topologies.Irregular(4, 4, 5, 1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := tt.gen()
			assert.Nil(t, tp)
			assert.ErrorIs(t, err, topologies.ErrInvalid)
		})
	}
}

func TestDumbbell(t *testing.T) {
	d := topologies.Dumbbell()
	assert.Equal(t, 2, d.Count(topologies.Switch))
	assert.Equal(t, 6, d.Count(topologies.CA))
	assert.Equal(t, 8, d.NumLinks())
	assert.Equal(t, topologies.CA, d.Node(0).Type, "the SM's CA first")
	sw1, _ := d.Lookup("sw1")
	sw2, _ := d.Lookup("sw2")
	for _, p := range []int{5, 6} {
		peer, ok := d.Peer(topologies.PortRef{Node: sw1, Port: p})
		require.True(t, ok)
		assert.Equal(t, sw2, peer.Node)
	}
	b1, _ := d.Lookup("b1")
	peer, _ := d.Peer(topologies.PortRef{Node: b1, Port: 1})
	assert.Equal(t, topologies.PortRef{Node: sw2, Port: 1}, peer)
}
