package fabricgraph_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/harness/fabricgraph"
	"ibfab/internal/testsupport"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

// TestRunningFabric draws a running default fabric: every link Init (no
// SM), then the link of a port set down Down and a killed node dead, in
// JSON that keeps to the schema and in an SVG dot renders.
func TestRunningFabric(t *testing.T) {
	testenv.RequireProgram(t, "dot", "graphviz")
	topo := topologies.Default()
	f := fabrictest.Up(t, "graph", topo, harness.UpOptions{})
	graph := func() *fabricgraph.Graph {
		tp, err := harness.Topology(f.Name)
		require.NoError(t, err)
		s, err := harness.Status(t.Context(), f.Name)
		require.NoError(t, err)
		return fabricgraph.WithStatus(tp, s)
	}
	states := func(g *fabricgraph.Graph) map[string]int {
		m := map[string]int{}
		for _, l := range g.Links {
			m[l.State]++
		}
		return m
	}
	g := graph()
	assert.Equal(t, map[string]int{"Init": topo.NumLinks()}, states(g))
	assert.NoError(t, validate(t, schema(t), g))

	require.NoError(t, harness.SetLink(f.Name, "ca4", 1, false))
	require.NoError(t, harness.Kill(f.Name, "ca7"))
	testsupport.WaitFor(t, 10*time.Second, "ca4's link Down and ca7 dead", func() bool {
		g = graph()
		dead := false
		for _, n := range g.Nodes {
			if n.Name == "ca7" && n.Alive != nil && !*n.Alive {
				dead = true
			}
		}
		return dead && states(g)["Down"] >= 1
	})
	for _, l := range g.Links {
		if l.A.Node == "ca4" || l.B.Node == "ca4" {
			assert.Equal(t, "Down", l.State, "ca4's link")
		}
	}
	assert.NoError(t, validate(t, schema(t), g))
	var svg bytes.Buffer
	require.NoError(t, fabricgraph.WriteSVG(context.Background(), &svg, g))
	assert.Equal(t, topo.NumLinks(), strings.Count(svg.String(), `class="edge"`))
	assert.Contains(t, svg.String(), `#c62828`, "the Down link drawn red")
}
