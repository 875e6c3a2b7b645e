package memfabric

import (
	"fmt"

	"ibfab/agent"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Changes at run time: nodes that lose power and get it back, and pieces
// cabled in, with the link events the neighbours' data planes would
// report, so that their agents set PortStateChange and send Trap 128 as on
// a real fabric. Call them while nothing else uses the fabric, then Run.

// PowerOff takes node away as a crash or a power cut would: its agent
// stops (no more traps or timers), its ports refuse changes, and each of
// its links loses the physical link at both ends, which the neighbours'
// agents hear of. Nothing crosses its links until PowerOn.
func (f *Fabric) PowerOff(node int) error {
	if node < 0 || node >= len(f.nodes) {
		return fmt.Errorf("memfabric: no node %d", node)
	}
	if f.off[node] {
		return fmt.Errorf("memfabric: %s is off already", f.nodes[node].Name)
	}
	if f.off == nil {
		f.off = map[int]bool{}
	}
	f.off[node] = true
	n := f.nodes[node]
	n.Agent.Close()
	for p := 1; p <= f.topo.Node(node).NumPorts; p++ {
		l, ok := f.topo.LinkAt(topologies.PortRef{Node: node, Port: p})
		if !ok {
			continue
		}
		ls := trained(l)
		ls.State, ls.Phys = mad.PortStateDown, mad.PhysStatePolling
		for _, end := range []topologies.PortRef{l.A, l.B} {
			f.nodes[end.Node].Ports.SetLink(uint8(end.Port), ls)
		}
		for _, end := range []topologies.PortRef{l.A, l.B} {
			if end.Node != node && !f.off[end.Node] {
				f.nodes[end.Node].Agent.PortStateChanged(uint8(end.Port))
			}
		}
	}
	n.Ports.Refuse(true)
	return nil
}

// PowerOn brings a node that PowerOff took away back as after a reset: a
// new agent (no LIDs, empty tables; opts adjust its Config as NewFabric's
// do), and every link to a node with power trained again, both ends
// reported to their agents.
func (f *Fabric) PowerOn(node int, opts ...Option) error {
	if node < 0 || node >= len(f.nodes) {
		return fmt.Errorf("memfabric: no node %d", node)
	}
	if !f.off[node] {
		return fmt.Errorf("memfabric: %s is on", f.nodes[node].Name)
	}
	a, err := agent.New(f.agentConfig(node, opts))
	if err != nil {
		return fmt.Errorf("memfabric: node %q: %w", f.nodes[node].Name, err)
	}
	delete(f.off, node)
	n := f.nodes[node]
	n.Agent = a
	n.Ports.Refuse(false)
	f.train(node)
	return nil
}

// IsOn reports whether node has power.
func (f *Fabric) IsOn(node int) bool { return !f.off[node] }

// AddPiece cables p into the running fabric (topologies.Topology.Extend):
// its nodes, appended in the piece's order, get agents (opts as for
// NewFabric), and its links and attachments train, every end reported to
// its agent, so that the base switches it attaches to raise traps. The
// fabric's Topology is the extended one from then on. It returns the
// indexes of the new nodes.
func (f *Fabric) AddPiece(p *topologies.Piece, opts ...Option) ([]int, error) {
	u, err := f.topo.Extend(p)
	if err != nil {
		return nil, fmt.Errorf("memfabric: %w", err)
	}
	base := f.topo.NumNodes()
	var added []*Node
	for i := base; i < u.NumNodes(); i++ {
		n := u.Node(i)
		if n.Type != topologies.CA && n.Type != topologies.Switch {
			return nil, fmt.Errorf("memfabric: node %q: %v nodes are not supported", n.Name, n.Type)
		}
		np := uint8(n.NumPorts)
		added = append(added, &Node{Index: i, Name: n.Name, Ports: NewPorts(np), Counters: NewCounters(np)})
	}
	old := f.topo
	f.topo = u
	f.nodes = append(f.nodes, added...)
	var idx []int
	for _, n := range added {
		a, err := agent.New(f.agentConfig(n.Index, opts))
		if err != nil {
			f.topo, f.nodes = old, f.nodes[:base]
			return nil, fmt.Errorf("memfabric: node %q: %w", n.Name, err)
		}
		n.Agent = a
		i := n.Index
		n.Ports.OnChange(func(port uint8) { f.portChanged(i, port) })
		idx = append(idx, i)
	}
	for _, i := range idx {
		f.train(i)
	}
	return idx, nil
}

// train brings up every link of node whose far end has power: both ends
// LinkUp and Init, reported to both agents.
func (f *Fabric) train(node int) {
	for p := 1; p <= f.topo.Node(node).NumPorts; p++ {
		l, ok := f.topo.LinkAt(topologies.PortRef{Node: node, Port: p})
		if !ok {
			continue
		}
		ends := []topologies.PortRef{l.A, l.B}
		if f.off[l.A.Node] || f.off[l.B.Node] {
			continue
		}
		if f.nodes[l.A.Node].Ports.Link(uint8(l.A.Port)).Phys == mad.PhysStateLinkUp &&
			f.nodes[l.B.Node].Ports.Link(uint8(l.B.Port)).Phys == mad.PhysStateLinkUp {
			continue // up already (a link of a piece, trained from its other end)
		}
		for _, end := range ends {
			f.nodes[end.Node].Ports.SetLink(uint8(end.Port), trained(l))
		}
		for _, end := range ends {
			f.nodes[end.Node].Agent.PortStateChanged(uint8(end.Port))
		}
	}
}
