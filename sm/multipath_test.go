package sm_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/sm/routing/routingtest"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestSweepMultipath: with LMC 1 a sweep routes the aliases apart, says
// how, and maps SL 1 to VL 1 on every port, switches' pairs included. With
// the cut nodes' forbidden turns blocked (PreBlock), a block drops layer
// 0's SLs only: the alias layer's routes may take those turns.
func TestSweepMultipath(t *testing.T) {
	for _, preBlock := range []bool{false, true} {
		t.Run(fmt.Sprintf("preblock=%v", preBlock), func(t *testing.T) {
			testSweepMultipath(t, preBlock)
		})
	}
}

func testSweepMultipath(t *testing.T, preBlock bool) {
	b := newBench(t, routingtest.Grid(t, true, 4, 4), 0, 1)
	s := b.newSM(t, sm.Config{
		LIDConfig:          sm.LIDConfig{LMC: 1},
		AssimilationConfig: sm.AssimilationConfig{PreBlock: preBlock},
	})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	require.NotNil(t, res.Multipath)
	assert.Equal(t, 2, res.Multipath.Layers)
	assert.Equal(t, 2, s.Routes().Layers)
	assert.True(t, res.DeadlockFree)
	checkUp(t, b.f)
	blocked := map[[3]uint64]bool{}
	for _, k := range s.Blocked() {
		blocked[k] = true
	}
	if preBlock {
		require.NotEmpty(t, blocked, "a torus's up*/down* graph has cut-node turns to block")
	}
	for _, n := range b.f.Nodes() {
		np := b.topo.Node(n.Index).NumPorts
		for in := range np + 1 {
			for out := 1; out <= np; out++ {
				if n.Agent.Type() != mad.NodeTypeSwitch && in != 0 {
					continue
				}
				_, inCabled := b.topo.Peer(topologies.PortRef{Node: n.Index, Port: in})
				_, outCabled := b.topo.Peer(topologies.PortRef{Node: n.Index, Port: out})
				if in == out || !outCabled || (in != 0 && !inCabled) {
					continue
				}
				layer0 := uint8(0)
				if blocked[[3]uint64{n.Agent.NodeGUID(), uint64(in), uint64(out)}] {
					layer0 = 15
				}
				assert.EqualValues(t, 1, n.Agent.VLFor(uint8(in), uint8(out), 1), "%s %d→%d", n.Name, in, out)
				assert.EqualValues(t, layer0, n.Agent.VLFor(uint8(in), uint8(out), 2), "%s %d→%d", n.Name, in, out)
			}
		}
	}
	again := b.sweep(t, s)
	require.True(t, again.SubnetUp, again.Reason)
	assert.Zero(t, again.SMPsByAttr["Set SLtoVLMappingTable"], "the tables hold already")
}
