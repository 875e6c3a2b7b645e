package minhop_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/routing"
	_ "ibfab/sm/routing/minhop"
	"ibfab/sm/routing/routingtest"
	"ibfab/topologies"
)

// TestMinhopCreditLoop: on a torus minimum-hop routes close cycles of
// channel dependencies, and the verifier says where.
func TestMinhopCreditLoop(t *testing.T) {
	topo, err := topologies.Torus(4, 4)
	require.NoError(t, err)
	f, err := routing.NewFabric(topo, 0, 1, 0)
	require.NoError(t, err)
	rep := routing.Verify(f, routingtest.Route(t, f, "minhop", routing.Options{}))
	assert.True(t, rep.Connected())
	require.ErrorIs(t, rep.Err(), routing.ErrCreditLoop)
	assert.GreaterOrEqual(t, len(rep.Cycle), 3)
	assert.Equal(t, rep.Cycle[0], rep.Cycle[len(rep.Cycle)-1], "a cycle ends where it starts")
}
