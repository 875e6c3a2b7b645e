package fabricgraph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/harness/fabricgraph"
	"ibfab/internal/testsupport/testenv"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// schema compiles docs/graph.schema.json.
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "graph.schema.json"))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("graph.schema.json", doc))
	s, err := c.Compile("graph.schema.json")
	require.NoError(t, err)
	return s
}

// validate checks g's JSON against the schema.
func validate(t *testing.T, s *jsonschema.Schema, g any) error {
	t.Helper()
	b, err := json.Marshal(g)
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return s.Validate(v)
}

func fatTree(t *testing.T) *topologies.Topology {
	t.Helper()
	ft, err := topologies.FatTree(4, 2, 3)
	require.NoError(t, err)
	return ft
}

func TestFromTopology(t *testing.T) {
	s := schema(t)
	for _, tc := range []struct {
		name   string
		topo   *topologies.Topology
		stages map[int]int // stage: switches at it
	}{
		{"default", topologies.Default(), map[int]int{}},
		{"fattree", fatTree(t), map[int]int{1: 4, 2: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := fabricgraph.FromTopology(tc.topo)
			require.Len(t, g.Nodes, tc.topo.NumNodes())
			require.Len(t, g.Links, tc.topo.NumLinks())
			stages := map[int]int{}
			for i, n := range g.Nodes {
				tn := tc.topo.Node(i)
				assert.Equal(t, tn.Name, n.Name)
				assert.Equal(t, tn.NumPorts, n.Ports)
				assert.Nil(t, n.Alive, "a topology file has no processes")
				if n.Stage > 0 {
					stages[n.Stage]++
				}
			}
			assert.Equal(t, tc.stages, stages, "switches per stage")
			for _, l := range g.Links {
				assert.Empty(t, l.State, "a topology file has no state")
				assert.Equal(t, "4xSDR", l.Rate)
			}
			assert.NoError(t, validate(t, s, g))
		})
	}
}

// status is a FabricStatus of t with every port in state, but for the
// ports given.
func status(t *topologies.Topology, state string, dead string, ports map[string]string) *harness.FabricStatus {
	fs := &harness.FabricStatus{Fabric: "gt"}
	for _, n := range t.Nodes() {
		ns := harness.NodeStatus{Status: nodeproc.Status{Name: n.Name}, Alive: n.Name != dead}
		for p := 1; p <= n.NumPorts; p++ {
			st := state
			if s, ok := ports[n.Name+"["+string(rune('0'+p))+"]"]; ok {
				st = s
			}
			ns.Ports = append(ns.Ports, nodeproc.PortStatus{Port: p, State: st, Phys: "LinkUp", LID: uint16(p)})
		}
		fs.Nodes = append(fs.Nodes, ns)
	}
	return fs
}

func TestWithStatus(t *testing.T) {
	s := schema(t)
	topo := topologies.Default()
	g := fabricgraph.WithStatus(topo, status(topo, "Active", "ca7", map[string]string{"ca4[1]": "Down", "sw1[1]": "Armed"}))
	assert.Equal(t, "gt", g.Fabric)
	states := map[string]int{}
	for _, l := range g.Links {
		states[l.State]++
		if l.A.Node == "ca4" || l.B.Node == "ca4" {
			assert.Equal(t, "Down", l.State, "the lesser end of %v", l)
		}
	}
	assert.Equal(t, map[string]int{"Active": topo.NumLinks() - 2, "Down": 1, "Armed": 1}, states)
	for _, n := range g.Nodes {
		require.NotNil(t, n.Alive, n.Name)
		assert.Equal(t, n.Name != "ca7", *n.Alive, n.Name)
	}
	assert.NoError(t, validate(t, s, g))
	// The schema can fail: a state no port has.
	g.Links[0].State = "Broken"
	assert.Error(t, validate(t, s, g))
}

func TestWriteDOT(t *testing.T) {
	topo := fatTree(t)
	var b bytes.Buffer
	require.NoError(t, fabricgraph.WriteDOT(&b, fabricgraph.WithStatus(topo, status(topo, "Active", "", map[string]string{"ca1-1[1]": "Init"}))))
	dot := b.String()
	assert.True(t, strings.HasPrefix(dot, `graph "gt" {`), dot)
	assert.Equal(t, topo.NumLinks(), strings.Count(dot, " -- "))
	assert.Equal(t, topo.NumLinks()-1, strings.Count(dot, `color="#2e7d32"`), "Active links green")
	assert.Equal(t, 1, strings.Count(dot, `color="#1565c0"`), "the Init link blue")
	assert.Equal(t, 2, strings.Count(dot, "rank=same"), "one rank per stage")

	// Names are quoted: a backslash cannot escape the closing quote (a
	// topology refuses a quote in a name).
	odd := topologies.New()
	a, err := odd.AddNode(topologies.Node{Type: topologies.Switch, Name: `s\1\`, NumPorts: 2, GUID: 0x10})
	require.NoError(t, err)
	c, err := odd.AddNode(topologies.Node{Type: topologies.CA, Name: "h 1", NumPorts: 1, GUID: 0x20})
	require.NoError(t, err)
	require.NoError(t, odd.Connect(topologies.PortRef{Node: a, Port: 1}, topologies.PortRef{Node: c, Port: 1}, 0, 0))
	b.Reset()
	require.NoError(t, fabricgraph.WriteDOT(&b, fabricgraph.FromTopology(odd)))
	assert.Contains(t, b.String(), `"s\\1\\" -- "h 1"`)
}

// TestSVG renders the DOT with Graphviz's dot.
func TestSVG(t *testing.T) {
	testenv.RequireProgram(t, "dot", "graphviz")
	var b bytes.Buffer
	require.NoError(t, fabricgraph.WriteSVG(context.Background(), &b, fabricgraph.FromTopology(fatTree(t))))
	svg := b.String()
	assert.Contains(t, svg, "<svg")
	assert.Equal(t, fatTree(t).NumLinks(), strings.Count(svg, `class="edge"`), "one edge drawn per link")
}

func TestFormatText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want fabricgraph.Format
		ok   bool
	}{{"dot", fabricgraph.FormatDOT, true}, {"json", fabricgraph.FormatJSON, true}, {"svg", fabricgraph.FormatSVG, true}, {"png", 0, false}, {"", 0, false}, {"DOT", 0, false}} {
		var f fabricgraph.Format
		err := f.UnmarshalText([]byte(tc.in))
		assert.Equal(t, tc.ok, err == nil, tc.in)
		assert.Equal(t, tc.want, f, tc.in)
	}
}

// TestLowerState: the lesser state wins; an unknown end gives way.
func TestLowerState(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{"Active", "Active", "Active"},
		{"Active", "Down", "Down"},
		{"Init", "Armed", "Init"},
		{"Armed", "Active", "Armed"},
		{"Unknown", "Active", "Active"},
		{"Down", "Unknown", "Down"},
		{"Unknown", "Unknown", "Unknown"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, fabricgraph.LowerState(tt.a, tt.b), "%s/%s", tt.a, tt.b)
	}
}
