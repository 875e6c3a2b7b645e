package topologies

import (
	"fmt"
	"slices"
)

// Degree returns the number of cabled ports of node i.
func (t *Topology) Degree(i int) int {
	n := 0
	for _, l := range t.portLink[i][1:] {
		if l >= 0 {
			n++
		}
	}
	return n
}

// Neighbors returns the distinct nodes cabled to node i, in the order of the
// lowest port that reaches each. A node cabled to itself is its own neighbour.
func (t *Topology) Neighbors(i int) []int {
	var out []int
	for p, l := range t.portLink[i] {
		if p == 0 || l < 0 {
			continue
		}
		j := t.other(l, PortRef{i, p}).Node
		if !slices.Contains(out, j) {
			out = append(out, j)
		}
	}
	return out
}

// Distances returns, for every node, the number of links on a shortest path
// from node src, or -1 when there is none. Paths pass only through switches
// (see the package doc), so from a CA the walk starts at its own ports but
// never continues through another CA.
func (t *Topology) Distances(src int) []int {
	dist := make([]int, len(t.nodes))
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	queue := []int{src}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		if i != src && t.nodes[i].Type != Switch {
			continue
		}
		for p, l := range t.portLink[i] {
			if p == 0 || l < 0 {
				continue
			}
			j := t.other(l, PortRef{i, p}).Node
			if dist[j] < 0 {
				dist[j] = dist[i] + 1
				queue = append(queue, j)
			}
		}
	}
	return dist
}

// Connected reports whether every node reaches every other through switches.
// An empty topology is connected.
func (t *Topology) Connected() bool {
	if len(t.nodes) == 0 {
		return true
	}
	// Reaching everything from one node is not enough when that node is a
	// CA cabled to two separate switch islands, so start from a switch when
	// there is one, and check the CA-only case separately.
	src := slices.IndexFunc(t.nodes, func(n *Node) bool { return n.Type == Switch })
	if src < 0 {
		return t.Diameter() >= 0
	}
	return !slices.Contains(t.Distances(src), -1)
}

// Diameter returns the largest distance, in links, between two nodes, or -1
// when some pair is not connected. A single node has diameter 0.
func (t *Topology) Diameter() int {
	return t.diameter(func(*Node) bool { return true })
}

// SwitchDiameter returns the largest distance, in links, between two
// switches, or -1 when two switches are not connected or there are none.
func (t *Topology) SwitchDiameter() int {
	if t.Count(Switch) == 0 {
		return -1
	}
	return t.diameter(func(n *Node) bool { return n.Type == Switch })
}

func (t *Topology) diameter(include func(*Node) bool) int {
	best := 0
	for i, n := range t.nodes {
		if !include(n) {
			continue
		}
		for j, d := range t.Distances(i) {
			if !include(t.nodes[j]) {
				continue
			}
			if d < 0 {
				return -1
			}
			best = max(best, d)
		}
	}
	return best
}

// Piece is a part of a fabric meant to be added to a base topology later: its
// own nodes and links, and the links from its ports to nodes of the base.
type Piece struct {
	Topology    *Topology
	Attachments []Attachment
}

// Attachment is a link from a port of a Piece to a port of the base topology.
type Attachment struct {
	Node     string // node of the piece
	Port     int
	BaseNode string // node of the base topology
	BasePort int
	Width    Width // 0 means DefaultWidth
	Speed    Speed // 0 means DefaultSpeed
}

// Extend returns a copy of t with the piece's nodes appended, in the piece's
// order, and its links and attachments cabled. t is not changed.
func (t *Topology) Extend(p *Piece) (*Topology, error) {
	u := t.Clone()
	base := len(u.nodes)
	for _, n := range p.Topology.nodes {
		if _, err := u.AddNode(*n); err != nil {
			return nil, fmt.Errorf("adding piece node: %w", err)
		}
	}
	for _, l := range p.Topology.links {
		a := PortRef{l.A.Node + base, l.A.Port}
		b := PortRef{l.B.Node + base, l.B.Port}
		if err := u.Connect(a, b, l.Width, l.Speed); err != nil {
			return nil, fmt.Errorf("cabling piece link: %w", err)
		}
	}
	for _, at := range p.Attachments {
		i, ok := p.Topology.Lookup(at.Node)
		if !ok {
			return nil, fmt.Errorf("%w: attachment names %q, not in the piece", ErrDanglingLink, at.Node)
		}
		j, ok := t.Lookup(at.BaseNode)
		if !ok {
			return nil, fmt.Errorf("%w: attachment names %q, not in the base topology", ErrDanglingLink, at.BaseNode)
		}
		if err := u.Connect(PortRef{i + base, at.Port}, PortRef{j, at.BasePort}, at.Width, at.Speed); err != nil {
			return nil, fmt.Errorf("cabling attachment: %w", err)
		}
	}
	return u, nil
}
