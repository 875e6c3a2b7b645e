package routing

import (
	"fmt"
	"slices"

	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Fabric is what routing works on: a topology, where the SM sits in it,
// and the LIDs of its end ports. Discovery builds one; tests can build one
// from any topology with NewFabric.
type Fabric struct {
	Topo   *topologies.Topology
	SMNode int // the SM's node
	SMPort int // the SM's port on it: a CA port, or 0 on a switch
	// LID[node][port] is the base LID of an end port: port 0 of a switch,
	// ports 1..N of a CA or router; 0 means none. LMC[node][port] is its
	// LMC: the port answers to LIDs LID … LID+2^LMC-1.
	LID [][]uint16
	LMC [][]uint8

	ends  []EndPort
	owner map[uint16]int // LID -> index in ends
	adj   [][]Arc        // per node, its cables in port order
}

// EndPort is a port that has LIDs: a switch's port 0 or a CA port, with
// the switch port it hangs off.
type EndPort struct {
	Node, Port int
	LID        uint16 // base LID
	LMC        uint8
	// Switch and SwitchPort locate the end port in the switch graph: the
	// switch itself and port 0 for a switch, the peer switch and its port
	// for a CA port cabled to a switch; Switch is -1 otherwise.
	Switch, SwitchPort int
}

// NumLIDs returns 2^LMC.
func (e EndPort) NumLIDs() int { return 1 << e.LMC }

// NewFabric returns t as a Fabric with the SM on smNode's smPort and LIDs
// given in topology order: each switch one, each cabled CA port an
// aligned block of 2^lmc.
func NewFabric(t *topologies.Topology, smNode, smPort int, lmc uint8) (*Fabric, error) {
	if smNode < 0 || smNode >= t.NumNodes() {
		return nil, fmt.Errorf("sm: SM node %d not in the topology", smNode)
	}
	f := &Fabric{Topo: t, SMNode: smNode, SMPort: smPort}
	f.LID, f.LMC = make([][]uint16, t.NumNodes()), make([][]uint8, t.NumNodes())
	next := uint32(1)
	for i, n := range t.Nodes() {
		f.LID[i], f.LMC[i] = make([]uint16, n.NumPorts+1), make([]uint8, n.NumPorts+1)
		if n.Type == topologies.Switch {
			f.LID[i][0] = uint16(next)
			next++
			continue
		}
		for p := 1; p <= n.NumPorts; p++ {
			if _, ok := t.LinkAt(topologies.PortRef{Node: i, Port: p}); !ok && !(i == smNode && p == smPort) {
				continue
			}
			size := uint32(1) << lmc
			next = (next + size - 1) &^ (size - 1)
			f.LID[i][p], f.LMC[i][p] = uint16(next), lmc
			next += size
		}
	}
	if next > mad.MulticastLIDBase {
		return nil, fmt.Errorf("sm: %d LIDs needed, the unicast range has %d", next-1, mad.MulticastLIDBase-1)
	}
	return f, f.Index()
}

// Index builds the cable lists, the end port list and the LID owner map,
// checking that no two ports share a LID: discovery calls it once it has
// filled Topo, SMNode, SMPort, LID and LMC (NewFabric does). The topology
// must not change afterwards.
func (f *Fabric) Index() error {
	f.ends, f.owner = nil, map[uint16]int{}
	f.adj = make([][]Arc, f.Topo.NumNodes())
	for i := range f.adj {
		n := f.Topo.Node(i)
		for p := 1; p <= n.NumPorts; p++ {
			peer, ok := f.Topo.Peer(topologies.PortRef{Node: i, Port: p})
			if ok && peer.Node != i {
				f.adj[i] = append(f.adj[i], Arc{Port: p, Peer: peer.Node, PeerPort: peer.Port})
			}
		}
	}
	for i, n := range f.Topo.Nodes() {
		for p := 0; p <= n.NumPorts && p < len(f.LID[i]); p++ {
			lid := f.LID[i][p]
			if lid == 0 {
				continue
			}
			e := EndPort{Node: i, Port: p, LID: lid, LMC: f.LMC[i][p], Switch: -1}
			if n.Type == topologies.Switch {
				e.Switch = i
			} else if peer, ok := f.Topo.Peer(topologies.PortRef{Node: i, Port: p}); ok &&
				f.Topo.Node(peer.Node).Type == topologies.Switch {
				e.Switch, e.SwitchPort = peer.Node, peer.Port
			}
			for k := range e.NumLIDs() {
				l := uint32(lid) + uint32(k)
				if l >= mad.MulticastLIDBase {
					return fmt.Errorf("sm: %s port %d: LIDs past the unicast range", n.Name, p)
				}
				if o, dup := f.owner[uint16(l)]; dup {
					oe := f.ends[o]
					return fmt.Errorf("sm: LID %d of %s port %d also belongs to %s port %d",
						l, n.Name, p, f.Topo.Node(oe.Node).Name, oe.Port)
				}
				f.owner[uint16(l)] = len(f.ends)
			}
			f.ends = append(f.ends, e)
		}
	}
	return nil
}

// EndPorts returns the end ports in topology order (node, then port).
func (f *Fabric) EndPorts() []EndPort { return slices.Clone(f.ends) }

// Ends returns the end ports as EndPorts does, without the copy: the
// slice is shared, do not change it.
func (f *Fabric) Ends() []EndPort { return f.ends }

// Owner returns the end port that answers to lid, as an index into
// EndPorts.
func (f *Fabric) Owner(lid uint16) (int, bool) {
	i, ok := f.owner[lid]
	return i, ok
}

// MaxLID returns the highest LID in use.
func (f *Fabric) MaxLID() uint16 {
	var top uint16
	for _, e := range f.ends {
		if l := e.LID + uint16(e.NumLIDs()) - 1; l > top {
			top = l
		}
	}
	return top
}

// Switches returns the indexes of the switches, in topology order.
func (f *Fabric) Switches() []int {
	var s []int
	for i, n := range f.Topo.Nodes() {
		if n.Type == topologies.Switch {
			s = append(s, i)
		}
	}
	return s
}

// IsSwitch reports whether node i is a switch.
func (f *Fabric) IsSwitch(i int) bool { return f.Topo.Node(i).Type == topologies.Switch }

// Arc is a cable seen from one end: out of Port of the node, into
// PeerPort of Peer.
type Arc struct {
	Port, Peer, PeerPort int
}

// Arcs returns the cables of node i in port order, self-loops left out;
// the slice is shared.
func (f *Fabric) Arcs(i int) []Arc { return f.adj[i] }

// SMSwitch returns the switch the SM reaches the fabric through: its own
// node when that is a switch, else the switch its port is cabled to, else
// the switch with the lowest GUID; -1 when there is no switch.
func (f *Fabric) SMSwitch() int {
	if f.IsSwitch(f.SMNode) {
		return f.SMNode
	}
	if peer, ok := f.Topo.Peer(topologies.PortRef{Node: f.SMNode, Port: f.SMPort}); ok && f.IsSwitch(peer.Node) {
		return peer.Node
	}
	best := -1
	for _, s := range f.Switches() {
		if best < 0 || f.Topo.Node(s).GUID < f.Topo.Node(best).GUID {
			best = s
		}
	}
	return best
}

// UpdnRoot returns the node index of the switch the up*/down* engines
// root f's routes at under o: RootGUID's switch when set, else the SM's
// switch (the SM's node, or the switch its port is cabled to, or else the
// switch with the lowest GUID). An SM beside ibsm that routes up*/down*
// too (OpenSM's updn in the benchmarks) is given this root to compare
// like with like.
func (f *Fabric) UpdnRoot(o Options) (int, error) {
	if o.RootGUID != 0 {
		i, ok := f.Topo.LookupGUID(o.RootGUID)
		if !ok || !f.IsSwitch(i) {
			return 0, fmt.Errorf("%w: root GUID %#x is not a switch of the fabric", ErrRouting, o.RootGUID)
		}
		return i, nil
	}
	r := f.SMSwitch()
	if r < 0 {
		return 0, fmt.Errorf("%w: no switch", ErrRouting)
	}
	return r, nil
}

// SwitchDistances returns the hop counts from every switch to switch t
// over switch links, -1 where t is unreachable.
func SwitchDistances(f *Fabric, t int) []int {
	d := make([]int, f.Topo.NumNodes())
	for i := range d {
		d[i] = -1
	}
	d[t] = 0
	queue := []int{t}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, a := range f.Arcs(u) {
			if f.IsSwitch(a.Peer) && d[a.Peer] < 0 {
				d[a.Peer] = d[u] + 1
				queue = append(queue, a.Peer)
			}
		}
	}
	return d
}
