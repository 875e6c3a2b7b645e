package routingtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ibfab/sm/routing"
	"ibfab/topologies"
)

// ThesisFabric is the thesis's 8-switch network with the SM on CA 4,
// behind switch 1.
func ThesisFabric(t *testing.T) *routing.Fabric {
	t.Helper()
	f, err := routing.NewFabric(topologies.Thesis8(), 0, 1, 0) // the SM on CA 4, behind switch 1
	require.NoError(t, err)
	return f
}

// Route runs the engine of that name with o on f.
func Route(t *testing.T, f *routing.Fabric, name string, o routing.Options) *routing.Routes {
	t.Helper()
	e, err := routing.NewEngine(name, o)
	require.NoError(t, err)
	r, err := e.Route(f)
	require.NoError(t, err)
	return r
}

// Grid is a mesh, or a torus, of dims.
func Grid(t *testing.T, torus bool, dims ...int) *topologies.Topology {
	t.Helper()
	mk := topologies.Mesh
	if torus {
		mk = topologies.Torus
	}
	topo, err := mk(dims...)
	require.NoError(t, err)
	return topo
}

// Without returns a copy of tp without the link at port p.
func Without(t *testing.T, tp *topologies.Topology, p topologies.PortRef) *topologies.Topology {
	t.Helper()
	out := topologies.New()
	for _, n := range tp.Nodes() {
		_, err := out.AddNode(*n)
		require.NoError(t, err)
	}
	cut, ok := tp.LinkAt(p)
	require.True(t, ok)
	for _, l := range tp.Links() {
		if l != cut {
			require.NoError(t, out.Connect(l.A, l.B, l.Width, l.Speed))
		}
	}
	return out
}

// Hop is one switch a packet crosses and the port it leaves by.
type Hop struct{ Node, Port int }

// Trace follows the tables from CA src to lid, returning the switches
// crossed; it fails t when the packet does not reach dst.
func Trace(t *testing.T, f *routing.Fabric, r *routing.Routes, src, dst int, lid uint16) []Hop {
	t.Helper()
	peer, ok := f.Topo.Peer(topologies.PortRef{Node: src, Port: 1})
	require.True(t, ok)
	var path []Hop
	at := peer.Node
	for len(path) <= f.Topo.NumNodes() {
		p := int(r.LFT[at][lid])
		path = append(path, Hop{at, p})
		next, ok := f.Topo.Peer(topologies.PortRef{Node: at, Port: p})
		require.True(t, ok, "%s routes LID %d out of uncabled port %d", f.Topo.Node(at).Name, lid, p)
		if next.Node == dst {
			return path
		}
		require.True(t, f.IsSwitch(next.Node), "LID %d reaches %s", lid, f.Topo.Node(next.Node).Name)
		at = next.Node
	}
	t.Fatalf("LID %d from %s: loop", lid, f.Topo.Node(src).Name)
	return nil
}

// CheckMinimalRoutes traces every CA pair: each route must be as short as
// the topology allows; it returns the destinations (host nodes) whose
// routes cross each directed link, keyed by its tail port.
func CheckMinimalRoutes(t *testing.T, f *routing.Fabric, r *routing.Routes) map[topologies.PortRef]map[int]bool {
	t.Helper()
	crossing := map[topologies.PortRef]map[int]bool{}
	var hosts []int
	for i, n := range f.Topo.Nodes() {
		if n.Type == topologies.CA && f.LID[i][1] != 0 {
			hosts = append(hosts, i)
		}
	}
	for _, src := range hosts {
		dist := f.Topo.Distances(src)
		for _, dst := range hosts {
			if src == dst {
				continue
			}
			path := Trace(t, f, r, src, dst, f.LID[dst][1])
			require.Equal(t, dist[dst], len(path)+1, "%s to %s: links", f.Topo.Node(src).Name, f.Topo.Node(dst).Name)
			for _, h := range path {
				k := topologies.PortRef{Node: h.Node, Port: h.Port}
				if crossing[k] == nil {
					crossing[k] = map[int]bool{}
				}
				crossing[k][dst] = true
			}
		}
	}
	return crossing
}
