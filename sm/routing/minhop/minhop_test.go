package minhop_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/routing"
	_ "ibfab/sm/routing/minhop"
	"ibfab/topologies"
)

func route(t *testing.T, f *routing.Fabric, name string, o routing.Options) *routing.Routes {
	t.Helper()
	e, err := routing.NewEngine(name, o)
	require.NoError(t, err)
	r, err := e.Route(f)
	require.NoError(t, err)
	return r
}

// TestMinhopCreditLoop: on a torus minimum-hop routes close cycles of
// channel dependencies, and the verifier says where.
func TestMinhopCreditLoop(t *testing.T) {
	topo, err := topologies.Torus(4, 4)
	require.NoError(t, err)
	f, err := routing.NewFabric(topo, 0, 1, 0)
	require.NoError(t, err)
	rep := routing.Verify(f, route(t, f, "minhop", routing.Options{}))
	assert.True(t, rep.Connected())
	require.ErrorIs(t, rep.Err(), routing.ErrCreditLoop)
	assert.GreaterOrEqual(t, len(rep.Cycle), 3)
	assert.Equal(t, rep.Cycle[0], rep.Cycle[len(rep.Cycle)-1], "a cycle ends where it starts")
}
