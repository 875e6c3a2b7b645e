package clab

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

func fatTree(t testing.TB, leaves, spines, hosts int) *topologies.Topology {
	t.Helper()
	ft, err := topologies.FatTree(leaves, spines, hosts)
	require.NoError(t, err)
	return ft
}

// loads returns how many nodes each host got.
func loads(host []int, hosts int) []int {
	l := make([]int, hosts)
	for _, h := range host {
		l[h]++
	}
	return l
}

// caLinksCut counts the cut links with a CA at an end.
func caLinksCut(t *topologies.Topology, host []int) int {
	n := 0
	for _, l := range CutLinks(t, host) {
		if t.Node(l.A.Node).Type == topologies.CA || t.Node(l.B.Node).Type == topologies.CA {
			n++
		}
	}
	return n
}

// bestCut is the fewest links any placement of t's units on hosts hosts
// within capacity cuts, found by trying them all (small fabrics only).
func bestCut(t *topologies.Topology, hosts, capacity int, apart ...topologies.Link) int {
	g := unitsOf(t)
	part := make([]int, len(g.weight))
	best := -1
	var try func(u int)
	try = func(u int) {
		if u == len(part) {
			load := make([]int, hosts)
			for v, h := range part {
				load[h] += g.weight[v]
			}
			for _, l := range load {
				if l == 0 || l > capacity {
					return
				}
			}
			host := make([]int, t.NumNodes())
			for i := range host {
				host[i] = part[g.unit[i]]
			}
			for _, l := range apart {
				if host[l.A.Node] == host[l.B.Node] {
					return
				}
			}
			if c := len(CutLinks(t, host)); best < 0 || c < best {
				best = c
			}
			return
		}
		for h := range hosts {
			part[u] = h
			try(u + 1)
		}
	}
	try(0)
	return best
}

// TestPlaceOptimalSmall: on fabrics small enough to try every placement,
// Place cuts as few links as the best one within the same capacity, keeps
// every CA with its switch and fills no host past its capacity.
func TestPlaceOptimalSmall(t *testing.T) {
	cases := []struct {
		name  string
		topo  *topologies.Topology
		hosts int
	}{
		{"thesis8 on 2", topologies.Thesis8(), 2},
		{"thesis8 on 3", topologies.Thesis8(), 3},
		{"fattree 4x2x3 on 2", fatTree(t, 4, 2, 3), 2},
		{"fattree 6x3x2 on 3", fatTree(t, 6, 3, 2), 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			capacity := Capacity(c.topo.NumNodes(), c.hosts)
			host, err := Place(c.topo, c.hosts, capacity)
			require.NoError(t, err)
			require.Len(t, host, c.topo.NumNodes())
			for h, l := range loads(host, c.hosts) {
				assert.True(t, l > 0 && l <= capacity, "host %d holds %d of at most %d", h, l, capacity)
			}
			assert.Zero(t, caLinksCut(c.topo, host), "links to CAs cut")
			assert.Equal(t, bestCut(c.topo, c.hosts, capacity), len(CutLinks(c.topo, host)), "links cut")
		})
	}
}

// TestPlaceFatTree648: the 648-host fat tree (36 leaves of 18 hosts, 18
// spines) on 4 hosts keeps every leaf with its hosts and cuts no more than
// the leaf-spine links that any balanced split must (3/4 of 648), where
// spreading the nodes in turn cuts almost every link.
func TestPlaceFatTree648(t *testing.T) {
	ft := fatTree(t, 36, 18, 18)
	const hosts = 4
	capacity := Capacity(ft.NumNodes(), hosts)
	host, err := Place(ft, hosts, capacity)
	require.NoError(t, err)
	for h, l := range loads(host, hosts) {
		assert.LessOrEqual(t, l, capacity, "host %d", h)
		assert.GreaterOrEqual(t, l, ft.NumNodes()/hosts-ft.NumNodes()/20, "host %d nearly empty", h)
	}
	assert.Zero(t, caLinksCut(ft, host), "links to CAs cut")
	cut := len(CutLinks(ft, host))
	assert.LessOrEqual(t, cut, 36*18*(hosts-1)/hosts, "links cut")
	naive := make([]int, ft.NumNodes())
	for i := range naive {
		naive[i] = i % hosts
	}
	assert.Greater(t, len(CutLinks(ft, naive)), cut*3/2, "round robin should cut far more")
	assert.Positive(t, caLinksCut(ft, naive), "round robin cuts links to CAs")
	t.Logf("648-host fat tree on 4 hosts: %d of %d links cut (round robin: %d), loads %v", cut, ft.NumLinks(), len(CutLinks(ft, naive)), loads(host, hosts))
}

// link returns t's link at node[port].
func link(t testing.TB, topo *topologies.Topology, node string, port int) topologies.Link {
	t.Helper()
	i, ok := topo.Lookup(node)
	require.True(t, ok, node)
	l, ok := topo.LinkAt(topologies.PortRef{Node: i, Port: port})
	require.True(t, ok, "%s[%d]", node, port)
	return l
}

// TestPlaceApart: the links to cut go between hosts, and otherwise the
// placement cuts as few as the best one that cuts them (tried all).
func TestPlaceApart(t *testing.T) {
	thesis := topologies.Thesis8()
	ft := fatTree(t, 4, 2, 3)
	cases := []struct {
		name  string
		topo  *topologies.Topology
		hosts int
		apart []topologies.Link
	}{
		{"link-failure's sw2-sw6 on 2", thesis, 2, []topologies.Link{link(t, thesis, "sw2", 3)}},
		{"flap-storm's two links on 2", thesis, 2, []topologies.Link{link(t, thesis, "sw3", 4), link(t, thesis, "sw2", 2)}},
		{"sw2-sw6 on 3", thesis, 3, []topologies.Link{link(t, thesis, "sw2", 3)}},
		{"a leaf-spine link on 2", ft, 2, []topologies.Link{link(t, ft, "leaf1", 4)}},
		{"nothing apart", thesis, 2, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			capacity := Capacity(c.topo.NumNodes(), c.hosts)
			host, err := PlaceApart(c.topo, c.hosts, capacity, c.apart)
			require.NoError(t, err)
			for h, l := range loads(host, c.hosts) {
				assert.True(t, l > 0 && l <= capacity, "host %d holds %d of at most %d", h, l, capacity)
			}
			for _, l := range c.apart {
				assert.NotEqual(t, host[l.A.Node], host[l.B.Node], "%s - %s on one host", c.topo.Node(l.A.Node).Name, c.topo.Node(l.B.Node).Name)
			}
			assert.Zero(t, caLinksCut(c.topo, host), "links to CAs cut")
			assert.Equal(t, bestCut(c.topo, c.hosts, capacity, c.apart...), len(CutLinks(c.topo, host)), "links cut")
		})
	}
}

func TestPlaceApartErrors(t *testing.T) {
	topo := topologies.Thesis8()
	cases := []struct {
		name  string
		hosts int
		apart []topologies.Link
		want  string
	}{
		{"a CA's link", 2, []topologies.Link{link(t, topo, "ca4", 1)}, "a CA stays with"},
		// sw2-sw6 puts sw6 on host 2, sw1-sw3 sw3 there too: sw3-sw6
		// cannot be cut as well (the greedy pins do not backtrack).
		{"ends pinned together", 2, []topologies.Link{link(t, topo, "sw2", 3), link(t, topo, "sw1", 2), link(t, topo, "sw3", 4)}, "put both ends on host 2"},
		{"one host", 1, []topologies.Link{link(t, topo, "sw2", 3)}, "on one host"},
		{"no such node", 2, []topologies.Link{{A: topologies.PortRef{Node: 99, Port: 1}, B: topologies.PortRef{Node: 0, Port: 1}}}, "does not have"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := PlaceApart(topo, c.hosts, Capacity(topo.NumNodes(), max(c.hosts, 1)), c.apart)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrPlacement), "%v", err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestPlaceErrors(t *testing.T) {
	ft := fatTree(t, 4, 2, 3)
	cases := []struct {
		name            string
		hosts, capacity int
		want            string
	}{
		{"no hosts", 0, 100, "want at least 1"},
		{"too small", 2, 5, "hold fewer"},
		{"leaf does not fit", 6, 3, "more than a host's"},
		{"more hosts than switches", 7, 10, "every host needs one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Place(ft, c.hosts, c.capacity)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrPlacement), "%v", err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestReadPlacement(t *testing.T) {
	topo := topologies.Thesis8()
	hosts := []string{"a", "b"}
	var all strings.Builder
	for i, n := range topo.Nodes() {
		all.WriteString(n.Name + " " + hosts[i%2] + " # comment\n\n")
	}
	host, err := ReadPlacement(strings.NewReader(all.String()), topo, hosts)
	require.NoError(t, err)
	for i, h := range host {
		assert.Equal(t, i%2, h, topo.Node(i).Name)
	}
	first := topo.Node(0).Name
	cases := []struct{ name, text, want string }{
		{"empty", "", "no host for"},
		{"three fields", first + " a b\n", "line 1: want NODE HOST"},
		{"unknown node", "nosuch a\n", `no node "nosuch"`},
		{"unknown host", first + " c\n", `host "c" is not one of a,b`},
		{"twice", first + " a\n" + first + " b\n", "placed twice"},
		{"host unused", strings.ReplaceAll(all.String(), " b ", " a "), `host "b" gets no node`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadPlacement(strings.NewReader(c.text), topo, hosts)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrPlacement))
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// FuzzReadPlacement: any text either fails or places every node on one of
// the hosts.
func FuzzReadPlacement(f *testing.F) {
	topo := topologies.Thesis8()
	hosts := []string{"a", "b"}
	var all strings.Builder
	for i, n := range topo.Nodes() {
		all.WriteString(n.Name + " " + hosts[i%2] + "\n")
	}
	f.Add(all.String())
	f.Add("sw1 a\n# x\nca4 b")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		host, err := ReadPlacement(strings.NewReader(text), topo, hosts)
		if err != nil {
			return
		}
		require.Len(t, host, topo.NumNodes())
		for _, h := range host {
			require.True(t, h == 0 || h == 1)
		}
	})
}
