package ftree_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/routing"
	"ibfab/sm/routing/ftree"
	"ibfab/sm/routing/routingtest"
	"ibfab/topologies"
)

func routeDmodK(t *testing.T, tp *topologies.Topology, lmc uint8) (*routing.Fabric, *routing.Routes) {
	t.Helper()
	f, err := routing.NewFabric(tp, 0, 1, lmc)
	require.NoError(t, err)
	r := routingtest.Route(t, f, "dmodk", routing.Options{})
	rep := routing.Verify(f, r)
	require.NoError(t, rep.Err(), "dmodk must be connected and deadlock-free")
	require.True(t, rep.Connected())
	require.True(t, rep.DeadlockFree())
	return f, r
}

// TestDmodKRLFT: on RLFTs dmodk's tables route every pair minimally
// (2·turn stage links), are deadlock-free by the verifier, follow the
// D-mod-K formula with the layout's host indexes, spread each switch's
// destinations evenly over its up ports, and send every destination
// through one top switch, so every down link carries one destination.
func TestDmodKRLFT(t *testing.T) {
	for _, kn := range [][2]int{{2, 3}, {3, 3}, {4, 3}, {2, 2}, {2, 4}, {3, 1}} {
		k, n := kn[0], kn[1]
		for _, lmc := range []uint8{0, 1} {
			t.Run(fmt.Sprintf("K=%d n=%d lmc=%d", k, n, lmc), func(t *testing.T) {
				tp, err := topologies.RLFT(k, n)
				require.NoError(t, err)
				f, r := routeDmodK(t, tp, lmc)
				layout, err := topologies.LayoutFatTree(tp)
				require.NoError(t, err)
				crossing := routingtest.CheckMinimalRoutes(t, f, r)
				hosts := len(layout.Hosts)

				up, err := ftree.FatTreeUpPorts(f)
				require.NoError(t, err)
				topK := 1 // K^(n−1)
				for range n - 1 {
					topK *= k
				}
				for _, s := range f.Switches() {
					stage := layout.Stage(s)
					div := 1
					for range stage - 1 {
						div *= k
					}
					perPort := map[int]int{}
					for d, h := range layout.Hosts {
						lid := f.LID[h][1]
						alts := up.Alternatives(s, lid)
						if alts == nil {
							continue // below s
						}
						// The formula, with d the layout's host index.
						want := up.Up(s)[d/div%k]
						assert.Equal(t, want, int(r.LFT[s][lid]), "%s to h%d", tp.Node(s).Name, d)
						perPort[int(r.LFT[s][lid])]++
						hi, ok := up.HostIndex(lid)
						require.True(t, ok)
						assert.Equal(t, d, hi, "dmodk's host order is the layout's")
					}
					if stage == n {
						assert.Empty(t, perPort, "the top has no up port")
						continue
					}
					// Per-port balance: every up port carries the same
					// number of destinations (spread 0; at most 1 asked).
					require.Len(t, perPort, k, "%s uses all its up ports", tp.Node(s).Name)
					counts := slices.Collect(mapValues(perPort))
					assert.LessOrEqual(t, slices.Max(counts)-slices.Min(counts), 1, "%s: %v", tp.Node(s).Name, perPort)
					below := div * k // hosts below a stage-ℓ switch: K^ℓ
					assert.Equal(t, (hosts-below)/k, counts[0], "%s: destinations per up port", tp.Node(s).Name)
				}

				// Every destination crosses one top switch: h<d> the one
				// at position d mod K^(n−1); every down link between
				// switches carries one destination.
				for d, h := range layout.Hosts {
					for _, s := range f.Switches() {
						if layout.Stage(s) != n || n == 1 {
							continue
						}
						crossed := false
						for p := 1; p <= tp.Node(s).NumPorts; p++ {
							crossed = crossed || crossing[topologies.PortRef{Node: s, Port: p}][h]
						}
						assert.Equal(t, tp.Node(s).Name == fmt.Sprintf("s%d-%d", n, d%topK), crossed, "h%d through %s", d, tp.Node(s).Name)
					}
				}
				for link, dsts := range crossing {
					peer, _ := tp.Peer(link)
					if f.IsSwitch(peer.Node) && layout.Stage(peer.Node) < layout.Stage(link.Node) {
						assert.Len(t, dsts, 1, "down link %s[%d]", tp.Node(link.Node).Name, link.Port)
					}
				}
			})
		}
	}
}

func mapValues(m map[int]int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// TestDmodKFatTrees: on the other fat trees (two-level, k-ary n-trees)
// dmodk is connected, deadlock-free and minimal, and leaves spread their
// destinations over their up ports within one.
func TestDmodKFatTrees(t *testing.T) {
	gens := map[string]func() (*topologies.Topology, error){
		"fattree 8x4x3": func() (*topologies.Topology, error) { return topologies.FatTree(8, 4, 3) },
		"fattree 4x2x6": func() (*topologies.Topology, error) { return topologies.FatTree(4, 2, 6) },
		"3-ary 3-tree":  func() (*topologies.Topology, error) { return topologies.KAryNTree(3, 3) },
		"2-ary 4-tree":  func() (*topologies.Topology, error) { return topologies.KAryNTree(2, 4) },
	}
	for name, gen := range gens {
		t.Run(name, func(t *testing.T) {
			tp, err := gen()
			require.NoError(t, err)
			f, r := routeDmodK(t, tp, 0)
			routingtest.CheckMinimalRoutes(t, f, r)
			up, err := ftree.FatTreeUpPorts(f)
			require.NoError(t, err)
			for _, s := range f.Switches() {
				if up.Stage(s) != 1 {
					continue
				}
				perPort := map[int]int{}
				for _, e := range f.EndPorts() {
					if e.Port != 0 && up.Alternatives(s, e.LID) != nil {
						perPort[int(r.LFT[s][e.LID])]++
					}
				}
				counts := slices.Collect(mapValues(perPort))
				require.Len(t, counts, len(up.Up(s)))
				assert.LessOrEqual(t, slices.Max(counts)-slices.Min(counts), 1, "%s: %v", tp.Node(s).Name, perPort)
			}
		})
	}
}

// TestDmodKDegraded: with a leaf's up link or a top switch's down link
// gone, the CA routes stay connected, deadlock-free and as short as the
// damaged fabric allows, and the up ports that no longer reach a
// destination minimally are no alternatives for it. Some switches then
// have no up*/down* route to the CAs below the cut (a stage-2 switch cut
// from a leaf reaches it only through a valley): the verifier reports
// those switch-to-CA pairs, for ftree alike, and only those.
func TestDmodKDegraded(t *testing.T) {
	tp, err := topologies.RLFT(2, 3)
	require.NoError(t, err)
	leaf, _ := tp.Lookup("s1-3")
	top, _ := tp.Lookup("s3-1")
	for name, p := range map[string]topologies.PortRef{"leaf up link": {Node: leaf, Port: 3}, "top down link": {Node: top, Port: 2}} {
		t.Run(name, func(t *testing.T) {
			damaged := routingtest.Without(t, tp, p)
			f, err := routing.NewFabric(damaged, 0, 1, 0)
			require.NoError(t, err)
			r := routingtest.Route(t, f, "dmodk", routing.Options{})
			rep := routing.Verify(f, r)
			assert.True(t, rep.DeadlockFree(), "%v", rep.Err())
			ftreeRep := routing.Verify(f, routingtest.Route(t, f, "ftree", routing.Options{}))
			assert.Equal(t, ftreeRep.Unconnected, rep.Unconnected, "dmodk leaves out what ftree leaves out: %v", rep.Failures)
			for _, why := range rep.Failures {
				assert.Regexp(t, `^s\d-\d+ port 0 to LID`, why, "only switches lack routes")
			}
			routingtest.CheckMinimalRoutes(t, f, r)
			up, err := ftree.FatTreeUpPorts(f)
			require.NoError(t, err)
			for _, s := range f.Switches() {
				for _, e := range f.EndPorts() {
					alts := up.Alternatives(s, e.LID)
					if e.Port == 0 || alts == nil {
						continue
					}
					assert.Contains(t, alts, int(r.LFT[s][e.LID]), "the deterministic port is an alternative")
					for _, a := range alts {
						assert.Contains(t, up.Up(s), a)
					}
				}
			}
		})
	}
	// The top switch cut from pod 0 (s3-1's port 1 goes to s2-1, pod
	// a_3 = 0): the stage-2 switches of other pods that reach s3-1 leave
	// it out for destinations in pod 0, and only for them.
	cut := routingtest.Without(t, tp, topologies.PortRef{Node: top, Port: 1})
	f, err := routing.NewFabric(cut, 0, 1, 0)
	require.NoError(t, err)
	up, err := ftree.FatTreeUpPorts(f)
	require.NoError(t, err)
	s23, _ := cut.Lookup("s2-3") // pod 1, b_2 = 1: up to s3-1 (port 3) and s3-3 (port 4)
	h0, _ := cut.Lookup("h0")
	h8, _ := cut.Lookup("h8")
	assert.Equal(t, []int{3, 4}, up.Up(s23))
	assert.Equal(t, []int{4}, up.Alternatives(s23, f.LID[h0][1]), "s3-1 no longer reaches pod 0")
	assert.Equal(t, []int{3, 4}, up.Alternatives(s23, f.LID[h8][1]))
}

func TestDmodKNotFatTree(t *testing.T) {
	for name, gen := range map[string]func() (*topologies.Topology, error){
		"torus":     func() (*topologies.Topology, error) { return topologies.Torus(3, 3) },
		"irregular": func() (*topologies.Topology, error) { return topologies.Irregular(16, 4, 1, 3) },
		"thesis8":   func() (*topologies.Topology, error) { return topologies.Thesis8(), nil },
	} {
		t.Run(name, func(t *testing.T) {
			tp, err := gen()
			require.NoError(t, err)
			f, err := routing.NewFabric(tp, 0, 1, 0)
			require.NoError(t, err)
			e, err := routing.NewEngine("dmodk", routing.Options{})
			require.NoError(t, err)
			_, err = e.Route(f)
			require.ErrorIs(t, err, routing.ErrRouting)
			assert.Contains(t, err.Error(), "dmodk: ")
			assert.Contains(t, err.Error(), "not a fat tree")
			_, err = ftree.FatTreeUpPorts(f)
			assert.ErrorIs(t, err, routing.ErrRouting)
		})
	}
}

// TestFatTreeUpPorts: on RLFTs every switch below the top has up ports
// K+1..2K, offered as alternatives for exactly the CA LIDs not below it;
// top switches and switch LIDs have none.
func TestFatTreeUpPorts(t *testing.T) {
	for _, k := range []int{2, 3} {
		tp, err := topologies.RLFT(k, 3)
		require.NoError(t, err)
		f, err := routing.NewFabric(tp, 0, 1, 1)
		require.NoError(t, err)
		layout, err := topologies.LayoutFatTree(tp)
		require.NoError(t, err)
		up, err := ftree.FatTreeUpPorts(f)
		require.NoError(t, err)
		var wantUp []int
		for p := k + 1; p <= 2*k; p++ {
			wantUp = append(wantUp, p)
		}
		for _, s := range f.Switches() {
			stage := layout.Stage(s)
			assert.Equal(t, stage, up.Stage(s), tp.Node(s).Name)
			// below: the leaves s reaches going down.
			below := map[int]bool{}
			var walk func(int)
			walk = func(u int) {
				if layout.Stage(u) == 1 {
					below[u] = true
				}
				for _, v := range tp.Neighbors(u) {
					if layout.Stage(v) == layout.Stage(u)-1 {
						walk(v)
					}
				}
			}
			walk(s)
			if stage == 3 {
				assert.Nil(t, up.Up(s))
			} else {
				assert.Equal(t, wantUp, up.Up(s), tp.Node(s).Name)
			}
			for _, e := range f.EndPorts() {
				for a := range e.NumLIDs() {
					lid := e.LID + uint16(a)
					alts := up.Alternatives(s, lid)
					switch {
					case e.Port == 0:
						assert.Nil(t, alts, "switch LIDs keep one route")
					case below[e.Switch] || stage == 3:
						assert.Nil(t, alts, "%s: %s is below", tp.Node(s).Name, tp.Node(e.Node).Name)
					default:
						assert.Equal(t, wantUp, alts, "%s to %s", tp.Node(s).Name, tp.Node(e.Node).Name)
					}
				}
			}
		}
		assert.Nil(t, up.Alternatives(-1, 1))
		assert.Nil(t, up.Alternatives(0, f.LID[0][1]), "a CA has no alternatives")
		assert.Nil(t, up.Alternatives(f.Switches()[0], f.MaxLID()+1))
		assert.Nil(t, up.Up(0))
		assert.Zero(t, up.Stage(0))
		_, ok := up.HostIndex(f.LID[f.Switches()[0]][0])
		assert.False(t, ok, "a switch LID is no host")
	}
}
