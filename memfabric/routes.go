package memfabric

import "ibfab/topologies"

// Route is a directed route from one node to another, the way an SM
// addresses a node it has no LID route to.
type Route struct {
	// Path is the DRRequest path: Path[0] is unused (0) and Path[i] the
	// port hop i leaves by, Path[1] being the source's own port.
	Path []uint8
	// In[i] is the port hop i arrives on, so In[len(In)-1] is the
	// destination's port; In[0] is unused. A correct directed-route
	// response carries In[1:] as ReturnPath[1:].
	In []uint8
}

// Hops returns the number of links the route crosses.
func (r Route) Hops() int { return len(r.Path) - 1 }

// Routes returns a shortest route from node src to every node it reaches,
// found breadth first with ports tried lowest first, so the result is the
// same every time. Routes pass only through switches; a CA source uses its
// own ports for the first hop only.
func Routes(t *topologies.Topology, src int) map[int]Route {
	routes := map[int]Route{src: {Path: []uint8{0}, In: []uint8{0}}}
	queue := []int{src}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		n := t.Node(u)
		if u != src && n.Type != topologies.Switch {
			continue
		}
		for p := 1; p <= n.NumPorts; p++ {
			l, ok := t.LinkAt(topologies.PortRef{Node: u, Port: p})
			if !ok {
				continue
			}
			peer := l.A
			if peer == (topologies.PortRef{Node: u, Port: p}) {
				peer = l.B
			}
			if _, seen := routes[peer.Node]; seen {
				continue
			}
			r := routes[u]
			routes[peer.Node] = Route{
				Path: append(append([]uint8(nil), r.Path...), uint8(p)),
				In:   append(append([]uint8(nil), r.In...), uint8(peer.Port)),
			}
			queue = append(queue, peer.Node)
		}
	}
	return routes
}
