package fabricgraph

import (
	"fmt"

	"ibfab/harness"
	"ibfab/internal/enum"
	"ibfab/topologies"
)

// Graph is a fabric's nodes and links. Fields may be added, never renamed
// (docs/graph.schema.json).
type Graph struct {
	// Fabric is the running fabric's name; empty for a topology file.
	Fabric string `json:"fabric,omitempty"`
	Nodes  []Node `json:"nodes"`
	Links  []Link `json:"links"`
}

// Node is one switch, CA or router.
type Node struct {
	Name  string   `json:"name"`
	Type  NodeKind `json:"type"`
	GUID  string   `json:"guid"`
	Ports int      `json:"ports"`
	// Stage is a fat tree switch's stage, 1 for the leaves; 0 elsewhere.
	Stage int `json:"stage,omitempty"`
	// Alive is whether the node's process runs; unset for a topology file.
	Alive *bool `json:"alive,omitempty"`
}

// End is one end of a link: the node, the port and, when the fabric
// runs, what the port reports.
type End struct {
	Node  string `json:"node"`
	Port  int    `json:"port"`
	State string `json:"state,omitempty"`
	Phys  string `json:"phys,omitempty"`
	LID   uint16 `json:"lid,omitempty"`
}

// Link is one cable.
type Link struct {
	A    End    `json:"a"`
	B    End    `json:"b"`
	Rate string `json:"rate"`
	// State is the lesser of the ends' states; unset for a topology file.
	State string `json:"state,omitempty"`
}

//go:generate go tool stringer -type=NodeKind,Format -linecomment

// NodeKind is a node's type as the graph names it (status's names).
type NodeKind uint8

// The node kinds.
const (
	KindHCA    NodeKind = iota + 1 // hca
	KindSwitch                     // switch
	KindRouter                     // router
)

var kinds = enum.New("node kind", KindHCA, KindSwitch, KindRouter)

// MarshalText implements encoding.TextMarshaler.
func (k NodeKind) MarshalText() ([]byte, error) { return kinds.Marshal(k) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *NodeKind) UnmarshalText(b []byte) error { return kinds.Unmarshal(k, b) }

func kindOf(t topologies.NodeType) NodeKind {
	switch t {
	case topologies.Switch:
		return KindSwitch
	case topologies.Router:
		return KindRouter
	}
	return KindHCA
}

// FromTopology is t's graph with no state.
func FromTopology(t *topologies.Topology) *Graph {
	g := &Graph{Nodes: make([]Node, 0, t.NumNodes()), Links: make([]Link, 0, t.NumLinks())}
	var stage func(int) int
	if l, err := topologies.LayoutFatTree(t); err == nil {
		stage = l.Stage
	}
	for i, n := range t.Nodes() {
		gn := Node{Name: n.Name, Type: kindOf(n.Type), GUID: fmt.Sprintf("0x%016x", n.GUID), Ports: n.NumPorts}
		if stage != nil && n.Type == topologies.Switch {
			gn.Stage = stage(i)
		}
		g.Nodes = append(g.Nodes, gn)
	}
	for _, l := range t.Links() {
		g.Links = append(g.Links, Link{
			A:    End{Node: t.Node(l.A.Node).Name, Port: l.A.Port},
			B:    End{Node: t.Node(l.B.Node).Name, Port: l.B.Port},
			Rate: topologies.Rate{Width: l.Width, Speed: l.Speed}.String(),
		})
	}
	return g
}

// WithStatus is t's graph with the state s reports of fabric s.Fabric.
// A port s does not list keeps no state.
func WithStatus(t *topologies.Topology, s *harness.FabricStatus) *Graph {
	g := FromTopology(t)
	g.Fabric = s.Fabric
	type key struct {
		node string
		port int
	}
	ports := map[key]End{}
	alive := map[string]bool{}
	for _, n := range s.Nodes {
		alive[n.Name] = n.Alive
		for _, p := range n.Ports {
			ports[key{n.Name, p.Port}] = End{Node: n.Name, Port: p.Port, State: p.State, Phys: p.Phys, LID: p.LID}
		}
	}
	for i := range g.Nodes {
		if a, ok := alive[g.Nodes[i].Name]; ok {
			g.Nodes[i].Alive = &a
		}
	}
	for i := range g.Links {
		l := &g.Links[i]
		if e, ok := ports[key{l.A.Node, l.A.Port}]; ok {
			l.A = e
		}
		if e, ok := ports[key{l.B.Node, l.B.Port}]; ok {
			l.B = e
		}
		if l.A.State != "" && l.B.State != "" {
			l.State = LowerState(l.A.State, l.B.State)
		}
	}
	return g
}

// stateRank orders the logical port states; anything else (Unknown, a
// dead node's ports) ranks 0.
var stateRank = map[string]int{"Down": 1, "Init": 2, "Armed": 3, "Active": 4}

// LowerState is a link's state from its ends' (Down < Init < Armed <
// Active). An end whose state is unknown (its node is dead or does not
// answer) gives way to the other's: the live end knows whether the cable
// carries anything (a dead peer's link is Down there), and the dead node
// is drawn as such.
func LowerState(a, b string) string {
	ra, rb := stateRank[a], stateRank[b]
	switch {
	case ra == 0:
		return b
	case rb == 0:
		return a
	case rb < ra:
		return b
	}
	return a
}

// Format is an output format of `ibfab graph`.
type Format uint8

// The formats.
const (
	FormatDOT  Format = iota + 1 // dot
	FormatJSON                   // json
	FormatSVG                    // svg
)

var formats = enum.New("format", FormatDOT, FormatJSON, FormatSVG)

// MarshalText implements encoding.TextMarshaler.
func (f Format) MarshalText() ([]byte, error) { return formats.Marshal(f) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (f *Format) UnmarshalText(b []byte) error { return formats.Unmarshal(f, b) }
