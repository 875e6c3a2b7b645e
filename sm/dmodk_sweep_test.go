package sm_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/sm/routing/ftree"
	"ibfab/sm/routing/routingtest"
	"ibfab/topologies"
)

// TestSweepDmodK brings RLFTs up on the in-memory fabric with dmodk, the
// SM on one host or another: the subnet comes up deadlock-free, the data
// plane delivers every LID (checkUp), routes are minimal, and the host
// order dmodk derives from the discovered fabric (whose nodes are named
// by GUID and numbered in discovery order) is the generator's: host d by
// GUID is h<d>, and each leaf sends it up port d mod K.
func TestSweepDmodK(t *testing.T) {
	for _, tt := range []struct {
		k  int
		sm string
	}{{2, "h0"}, {2, "h11"}, {3, "h0"}, {3, "h40"}} {
		t.Run(fmt.Sprintf("K=%d SM at %s", tt.k, tt.sm), func(t *testing.T) {
			topo, err := topologies.RLFT(tt.k, 3)
			require.NoError(t, err)
			node, ok := topo.Lookup(tt.sm)
			require.True(t, ok)
			b := newBench(t, topo, node, 1)
			s := b.newSM(t, sm.Config{RoutingConfig: sm.RoutingConfig{Routing: "dmodk"}})
			res := b.sweep(t, s)
			require.True(t, res.SubnetUp, res.Reason)
			assert.Equal(t, "dmodk", res.Routing)
			assert.True(t, res.DeadlockFree)
			checkUp(t, b.f)

			sn, routes := s.Subnet(), s.Routes()
			require.NotNil(t, routes)
			routingtest.CheckMinimalRoutes(t, &sn.Fabric, routes)
			up, err := ftree.FatTreeUpPorts(&sn.Fabric)
			require.NoError(t, err)
			for i, n := range sn.Topo.Nodes() {
				if n.Type != topologies.CA {
					continue
				}
				d, ok := up.HostIndex(sn.LID[i][1])
				require.True(t, ok)
				gen, _ := topo.LookupGUID(n.GUID)
				assert.Equal(t, fmt.Sprintf("h%d", d), topo.Node(gen).Name, "discovered host %s", n.Name)
				for _, s := range sn.Switches() {
					if up.Stage(s) == 1 && up.Alternatives(s, sn.LID[i][1]) != nil {
						assert.Equal(t, up.Up(s)[d%tt.k], int(routes.LFT[s][sn.LID[i][1]]))
					}
				}
			}
		})
	}
}
