package sm

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"ibfab/sm/routing"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Full discovery, thesis 5.3: every SMP pure directed route, in
// propagation order (a new SMP goes out as each answer comes in, up to the
// window). The pattern, which gives the thesis's 97 SMPs on its example
// network with the SM on a CA:
//
//	Get NodeInfo of the SM's own node (empty path)
//	a new switch:   Get SwitchInfo, Get PortInfo 0..N; once PortInfo 0 is
//	                in, Set PortInfo 0 (its LID, the SM's LID)
//	a new CA port:  Get PortInfo; once in, Set PortInfo (LID, SM's LID)
//	a switch port (or the SM's own port) not Down: Get NodeInfo one hop
//	                further, out of every such port, the arrival port too
//	a known node:   record the link only
//
// LIDs are given as the PortInfo answers of end ports (switch port 0, CA
// ports) arrive. A port an SM configured already (a LID and an SM LID)
// keeps its LID when no other port of this sweep has it, so that neither
// a restart nor a standby SM moves LIDs; else the port gets the LID the
// LIDMap holds for its GUID, else the lowest free one. The Set waits for
// the Get so it carries the port's other fields back unchanged, and is
// sent during discovery only to a port no SM configured yet, as on the
// thesis's fresh subnet: an SM does not know yet whether it will be
// master, and must not reconfigure a subnet another SM runs. What differs
// on configured ports (an SM LID, a LID taken twice) is set once this SM
// is master, in distribution and activation.
//
// Duplicate GUIDs: a node answering with a known GUID through a port
// whose link is already known to lead elsewhere, or that was Down, or
// with another type or port count, is a second device with that GUID. It
// is reported and not explored. Loops in the cabling are simply nodes met
// again; a route longer than 63 hops is reported and not extended.

// dnode is a node as discovery learns it.
type dnode struct {
	idx    int // order of discovery
	ni     mad.NodeInfoFields
	path   []uint8  // directed route from the SM, Path[0] unused
	rt     smpRoute // how this discovery addresses it: path, or a LID prefix and a directed suffix
	ports  []dport
	si     mad.SwitchInfoFields
	haveSI bool
	desc   string
}

// dport is one port of a dnode.
type dport struct {
	pi       mad.PortInfoFields
	havePI   bool
	guid     uint64   // port GUID: a CA port's own, a switch's node GUID
	path     []uint8  // a CA port's own route (through it); switches use the node's
	rt       smpRoute // how this discovery addresses a CA port
	lid      uint16
	lmc      uint8
	peer     *dnode
	peerPort int
	reached  bool // a CA port the SM reached (through it)
	fresh    bool // pi was read by this discovery, not carried over
}

// takePortInfo keeps PortInfo just read (data, an answer's SMP data).
func (pt *dport) takePortInfo(data []byte) {
	pt.pi, pt.havePI, pt.fresh = mad.PortInfo(data).Fields(), true, true
}

// portRoute returns the route that addresses port p of n.
func (n *dnode) portRoute(p int) smpRoute {
	if n.ni.NodeType != mad.NodeTypeSwitch && p < len(n.ports) && n.ports[p].path != nil {
		return n.ports[p].rt
	}
	return n.rt
}

func (n *dnode) isSwitch() bool { return n.ni.NodeType == mad.NodeTypeSwitch }

// discovery is one full discovery run.
type discovery struct {
	sm       *SM
	tx       transactions
	nodes    []*dnode
	byGUID   map[uint64]*dnode
	self     *dnode
	smPort   int
	smLID    uint16
	deferred []func() // LID Sets waiting for the SM's own LID
	problems []string // fatal: the subnet cannot be brought up as found
	warnings []string
	// partial is the partial discovery this one serves, nil for a full
	// one: it hears of every node found and every known node met.
	partial *partialDiscovery
}

// req returns a request along rt; a LID-prefixed route's answer comes
// back to the SM's LID. Once the SM has given prefixes up, such a route
// goes purely directed instead.
func (d *discovery) req(rt smpRoute, attr mad.AttrID, mod uint32) txn.Request {
	if rt.lid != 0 && rt.path != nil && d.sm.noPrefix {
		if pure, ok := d.pure(rt); ok {
			rt = drRoute(pure)
		}
	}
	return rt.request(d.smLID, attr, mod)
}

// submit queues a Get, or a Set of data, along rt. A directed route with
// a LID-routed prefix that goes unanswered is tried again purely
// directed; if that answers, the SM uses no more prefixes: some switches
// do not switch a directed-route SMP by its LID on the prefix (or on the
// answer's way back), as IBA 14.2.2 asks, and hand it to their SMI, which
// drops it. If it does not, the device is gone, not the prefix at fault.
func (d *discovery) submit(rt smpRoute, attr mad.AttrID, mod uint32, data []byte, set bool, tag any, cb func(*txn.Response)) {
	r := d.req(rt, attr, mod)
	r.Data, r.Tag = data, tag
	done := cb
	if r.DR && r.DrSLID != 0 {
		done = func(resp *txn.Response) {
			if errors.Is(resp.Err, ErrTimeout) {
				if pure, ok := d.pure(rt); ok {
					lost := resp.Req
					if lost == nil {
						lost = &r
					}
					d.submit(drRoute(pure), attr, mod, data, set, tag, func(resp *txn.Response) {
						if resp.Err == nil && !d.sm.noPrefix {
							d.warn("no answer through a LID-routed prefix (%v), one purely directed: directed routes from now on", lost)
							d.sm.noPrefix = true
						}
						cb(resp)
					})
					return
				}
			}
			cb(resp)
		}
	}
	if set {
		d.tx.Set(r, done)
	} else {
		d.tx.Get(r, done)
	}
}

// pure returns the purely directed form of a LID-prefixed route: a
// directed route to the prefix's switch over the links the database
// holds, through devices not MISSING, then the route's directed part.
func (d *discovery) pure(rt smpRoute) ([]uint8, bool) {
	if d.partial == nil || rt.path == nil {
		return nil, false
	}
	s := d.partial.byLID[rt.lid]
	if s == nil {
		return nil, false
	}
	path := d.partial.drPath(s)
	if path == nil {
		return nil, false
	}
	return append(path, rt.path[1:]...), true
}

func (d *discovery) problem(format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

func (d *discovery) warn(format string, args ...any) {
	d.warnings = append(d.warnings, fmt.Sprintf(format, args...))
}

// run discovers the subnet from the SM's port.
func (d *discovery) run(ctx context.Context) error {
	d.byGUID = map[uint64]*dnode{}
	d.sm.lids.BeginSweep()
	self := []uint8{0}
	d.tx.Get(txn.Request{DR: true, Path: self, Attr: mad.AttrNodeInfo}, func(r *txn.Response) {
		d.onNodeInfo(r, drRoute(self), self, nil, 0)
	})
	return d.tx.Run(ctx)
}

func extend(path []uint8, port int) []uint8 {
	p := make([]uint8, len(path)+1)
	copy(p, path)
	p[len(path)] = uint8(port)
	return p
}

// onNodeInfo handles the answer to a NodeInfo sent along rt (pure, as a
// directed route from the SM) out of port fromPort of from (nil: the SM's
// own node).
func (d *discovery) onNodeInfo(r *txn.Response, rt smpRoute, pure []uint8, from *dnode, fromPort int) {
	where := txn.PathString(pure)
	if r.Err != nil {
		if from == nil {
			d.problem("the SM's own node does not answer NodeInfo: %v", r.Err)
			if errors.Is(r.Err, ErrTimeout) {
				d.sm.unreadable(pure, r.Err) // its own port protected by another SM's key
			}
		} else {
			d.warn("no NodeInfo through path %s: %v", where, r.Err)
			if d.partial == nil && errors.Is(r.Err, ErrTimeout) {
				d.sm.unreadable(pure, r.Err)
			}
		}
		return
	}
	ni := mad.NodeInfo(r.Data).Fields()
	if ni.NodeType == mad.NodeTypeSwitch {
		d.sm.mk.MetAt(pure, ni.NodeGUID)
	} else if ni.PortGUID != 0 {
		d.sm.mk.MetAt(pure, ni.PortGUID)
	}
	switch {
	case ni.NodeType != mad.NodeTypeCA && ni.NodeType != mad.NodeTypeSwitch && ni.NodeType != mad.NodeTypeRouter,
		ni.NumPorts == 0 || ni.NumPorts > topologies.MaxPorts, ni.NodeGUID == 0,
		int(ni.LocalPortNum) > int(ni.NumPorts),
		ni.NodeType != mad.NodeTypeSwitch && ni.LocalPortNum == 0:
		d.problem("malformed NodeInfo through path %s: type %v, %d ports, GUID %#x, local port %d",
			where, ni.NodeType, ni.NumPorts, ni.NodeGUID, ni.LocalPortNum)
		return
	}
	lp := int(ni.LocalPortNum)
	n, known := d.byGUID[ni.NodeGUID]
	if known {
		d.meet(n, ni, rt, pure, from, fromPort)
		return
	}
	n = &dnode{idx: len(d.nodes), ni: ni, path: pure, rt: rt, ports: make([]dport, int(ni.NumPorts)+1)}
	d.nodes = append(d.nodes, n)
	d.byGUID[ni.NodeGUID] = n
	if from == nil {
		d.self = n
		d.smPort = lp
	} else {
		d.link(from, fromPort, n, lp)
	}
	if d.partial != nil {
		d.partial.found(n)
	}
	if n.isSwitch() {
		n.ports[0].guid = ni.NodeGUID
		d.submit(n.rt, mad.AttrSwitchInfo, 0, nil, false, nil, func(r *txn.Response) {
			if r.Err != nil {
				d.problem("no SwitchInfo from %#x (path %s): %v", n.ni.NodeGUID, txn.PathString(n.path), r.Err)
				return
			}
			n.si, n.haveSI = mad.SwitchInfo(r.Data).Fields(), true
		})
		for p := 0; p <= int(ni.NumPorts); p++ {
			d.getPortInfo(n, p)
		}
		return
	}
	d.newCAPort(n, lp, ni.PortGUID, pure, rt)
}

// meet handles a NodeInfo answer from a node already known: a link that
// closes a cycle, a CA's other port, or a second device with the GUID.
func (d *discovery) meet(n *dnode, ni mad.NodeInfoFields, rt smpRoute, path []uint8, from *dnode, fromPort int) {
	lp := int(ni.LocalPortNum)
	where := txn.PathString(path)
	if ni.NodeType != n.ni.NodeType || ni.NumPorts != n.ni.NumPorts {
		d.problem("duplicate GUID %#x: a %v with %d ports at path %s, a %v with %d ports at path %s",
			ni.NodeGUID, n.ni.NodeType, n.ni.NumPorts, txn.PathString(n.path), ni.NodeType, ni.NumPorts, where)
		return
	}
	if from == nil {
		return
	}
	pt := &n.ports[lp]
	switch {
	case pt.peer != nil && (pt.peer != from || pt.peerPort != fromPort):
		d.problem("duplicate GUID %#x: its port %d leads to %#x port %d, and path %s reaches it there from %#x port %d",
			ni.NodeGUID, lp, pt.peer.ni.NodeGUID, pt.peerPort, where, from.ni.NodeGUID, fromPort)
		return
	case n.isSwitch() && pt.havePI && pt.fresh && pt.pi.PortState == mad.PortStateDown && d.partial == nil:
		d.problem("duplicate GUID %#x: its port %d is Down, yet path %s reaches it there", ni.NodeGUID, lp, where)
		return
	case !n.isSwitch() && pt.reached && pt.peer == nil && d.partial == nil:
		d.problem("duplicate GUID %#x: port %d reached by two routes (%s and %s)", ni.NodeGUID, lp, txn.PathString(pt.path), where)
		return
	}
	d.link(from, fromPort, n, lp)
	if d.partial != nil {
		d.partial.met(n, lp, rt, path)
		if n.isSwitch() && (!pt.havePI || !pt.fresh || pt.pi.PortState == mad.PortStateDown) {
			// A known switch reached over a link new to the database: its
			// port's state is stale (or was read Down before the link came
			// up), and activation must know it.
			d.partial.readLinkPort(n, lp, rt)
		}
	}
	if !n.isSwitch() && !pt.reached {
		d.newCAPort(n, lp, ni.PortGUID, path, rt)
	}
}

// link records the cable between port pa of a and port pb of b.
func (d *discovery) link(a *dnode, pa int, b *dnode, pb int) {
	a.ports[pa].peer, a.ports[pa].peerPort = b, pb
	b.ports[pb].peer, b.ports[pb].peerPort = a, pa
}

// newCAPort starts on a CA or router port reached through it by path
// (directed from the SM) and rt.
func (d *discovery) newCAPort(n *dnode, p int, guid uint64, path []uint8, rt smpRoute) {
	pt := &n.ports[p]
	pt.reached, pt.guid, pt.path, pt.rt = true, guid, path, rt
	if guid == 0 {
		d.problem("%#x port %d has port GUID 0", n.ni.NodeGUID, p)
		return
	}
	d.getPortInfo(n, p)
}

// giveLID assigns the LIDs of end port p of n, whose PortInfo is in.
func (d *discovery) giveLID(n *dnode, p int) {
	pt := &n.ports[p]
	lmc := d.sm.cfg.LMC
	if n.isSwitch() {
		lmc = 0 // base port 0 takes one LID
	}
	var cur uint16
	if configured(&pt.pi) {
		cur = pt.pi.LID
	}
	lid, err := d.sm.lids.AssignPrefer(pt.guid, lmc, cur)
	if err != nil {
		d.problem("%v", err)
		return
	}
	pt.lid, pt.lmc = lid, lmc
	if n == d.self && (p == d.smPort || n.isSwitch()) {
		d.smLID = lid
		deferred := d.deferred
		d.deferred = nil
		for _, f := range deferred {
			f()
		}
	}
}

// configured reports whether an SM has configured a port: it has a LID
// and knows its SM.
func configured(pi *mad.PortInfoFields) bool { return pi.LID != 0 && pi.MasterSMLID != 0 }

func (d *discovery) getPortInfo(n *dnode, p int) {
	d.submit(n.portRoute(p), mad.AttrPortInfo, uint32(p), nil, false, nil, func(r *txn.Response) {
		d.onPortInfo(r, n, p)
	})
}

func (d *discovery) onPortInfo(r *txn.Response, n *dnode, p int) {
	if r.Err != nil {
		d.problem("no PortInfo %d from %#x (path %s): %v", p, n.ni.NodeGUID, txn.PathString(r.Req.Path), r.Err)
		return
	}
	pt := &n.ports[p]
	pt.takePortInfo(r.Data)
	if p == 0 || !n.isSwitch() {
		d.sm.readKey(pt.guid, r.Req.Path, pt.pi.LID, &pt.pi)
		d.giveLID(n, p)
		if pt.lid != 0 && !configured(&pt.pi) {
			d.setLID(n, p)
		}
	}
	if p == 0 {
		return
	}
	if pt.pi.PortState == mad.PortStateDown {
		if d.partial != nil && n.isSwitch() && pt.peer != nil && pt.peer.isSwitch() {
			// A new switch met over this port while its read was on the
			// way back: the link came up after the read.
			d.partial.rereadPort(n, p, pt.peer.rt.extend(pt.peerPort))
		}
		return
	}
	if !n.isSwitch() && !(n == d.self && p == d.smPort) {
		return // CAs do not forward
	}
	if len(n.path)-1 >= mad.MaxHopCount || n.rt.hops() >= mad.MaxHopCount {
		d.problem("%#x port %d is %d hops away: past the directed-route limit", n.ni.NodeGUID, p, len(n.path))
		return
	}
	d.explore(n, p)
}

// explore sends a NodeInfo out of port p of n, to whatever is cabled
// there.
func (d *discovery) explore(n *dnode, p int) {
	rt, pure := n.rt.extend(p), extend(n.path, p)
	d.submit(rt, mad.AttrNodeInfo, 0, nil, false, nil, func(r *txn.Response) {
		d.onNodeInfo(r, rt, pure, n, p)
	})
}

// setLID sends the Set(PortInfo) giving end port p of n its LID and the
// SM's: once the SM's own LID is known, which it is but for an answer
// that overtook the SM's own.
func (d *discovery) setLID(n *dnode, p int) {
	pt := &n.ports[p]
	smLID := d.smLID
	if smLID == 0 {
		d.deferred = append(d.deferred, func() { d.setLID(n, p) })
		return
	}
	pi := forSet(pt.pi)
	pi.LID, pi.LMC, pi.MasterSMLID = pt.lid, pt.lmc, smLID
	pi.SubnetTimeOut = d.sm.cfg.SubnetTimeOut
	// The M_Key fields stay as read: a port keyed now would not answer
	// discovery's SMPs through the routes not met yet (whose target, and
	// so key, is not known); activation keys it.
	d.submit(n.portRoute(p), mad.AttrPortInfo, uint32(p), mad.AppendPortInfo(nil, &pi), true, nil, func(r *txn.Response) {
		if r.Err != nil {
			d.problem("setting LID %d on %#x port %d (path %s): %v", pt.lid, n.ni.NodeGUID, p, txn.PathString(r.Req.Path), r.Err)
			if d.partial == nil {
				d.sm.setRefused(r.Req.Path, &pt.pi, r.Err)
			}
			return
		}
		got := mad.PortInfo(r.Data).Fields()
		d.sm.mk.Set(pt.guid, &got)
		if got.LID != pt.lid || got.MasterSMLID != smLID {
			d.problem("%#x port %d took LID %d, SM LID %d; asked for %d, %d", n.ni.NodeGUID, p, got.LID, got.MasterSMLID, pt.lid, smLID)
			return
		}
		pt.pi = got
	})
}

// forSet returns the PortInfo to send back in a Set that changes some
// fields: the read-only and live ones as "no change".
func forSet(pi mad.PortInfoFields) mad.PortInfoFields {
	pi.PortState = mad.PortStateNoChange
	pi.PortPhysicalState = mad.PhysStateNoChange
	pi.LinkDownDefaultState = mad.PhysStateNoChange
	pi.LinkWidthEnabled = mad.LinkWidthNoChange
	pi.LinkSpeedEnabled = mad.LinkSpeedNoChange
	// Not a change either; activation sets LinkSpeedExtEnabled, with bit
	// 31 of the modifier, when PortConfig.LinkSpeedExt asks for it.
	pi.LinkSpeedExtEnabled = mad.LinkSpeedExtNoChange
	pi.LinkSpeedExtEnabled2 = 0
	return pi
}

// Subnet is what discovery found, ready for routing.
type Subnet struct {
	routing.Fabric
	// Paths[node] is the directed route from the SM to the node, and for
	// CAs PortPaths[node][port] the route through each port reached.
	Paths     [][]uint8
	PortPaths [][][]uint8
	PortInfo  [][]mad.PortInfoFields // last read or set, per node and port
	Have      [][]bool               // PortInfo[node][port] is known
	Switch    []mad.SwitchInfoFields // per node; zero for CAs
	SMLID     uint16                 // the SM's own LID
	Problems  []string               // fatal: the subnet cannot be brought up as found
	Warnings  []string
	// PartitionCap is each node's NodeInfo.PartitionCap: the P_Key
	// table size of its CA ports and switch port 0.
	PartitionCap []uint16
}

// subnet builds the Subnet: a topology of the nodes in discovery order
// (the SM's own node first), named as ibnetdiscover names them, with the
// links found and their active rates.
func (d *discovery) subnet() (*Subnet, error) {
	t := topologies.New()
	sn := &Subnet{Problems: d.problems, Warnings: d.warnings}
	for _, n := range d.nodes {
		typ := topologies.NodeType(n.ni.NodeType)
		prefix := map[topologies.NodeType]string{topologies.Switch: "S", topologies.CA: "H", topologies.Router: "R"}[typ]
		node := topologies.Node{Type: typ, Name: fmt.Sprintf("%s-%016x", prefix, n.ni.NodeGUID),
			NumPorts: int(n.ni.NumPorts), GUID: n.ni.NodeGUID, SystemImageGUID: n.ni.SystemImageGUID,
			VendorID: n.ni.VendorID, DeviceID: uint32(n.ni.DeviceID), Description: n.desc}
		node.Ports = make([]topologies.Port, node.NumPorts+1)
		for p := range n.ports {
			pt := &n.ports[p]
			if typ != topologies.Switch && p > 0 {
				node.Ports[p].GUID = pt.guid
			}
			node.Ports[p].LID, node.Ports[p].LMC = pt.lid, pt.lmc
		}
		if typ == topologies.Switch && n.haveSI {
			node.EnhancedPort0 = n.si.EnhancedPort0
		}
		if _, err := t.AddNode(node); err != nil {
			return nil, fmt.Errorf("sm: building the topology: %w", err)
		}
		sn.Paths = append(sn.Paths, n.path)
		sn.Switch = append(sn.Switch, n.si)
		sn.PartitionCap = append(sn.PartitionCap, n.ni.PartitionCap)
		pp, pi, have := make([][]uint8, len(n.ports)), make([]mad.PortInfoFields, len(n.ports)), make([]bool, len(n.ports))
		lids, lmcs := make([]uint16, len(n.ports)), make([]uint8, len(n.ports))
		for p := range n.ports {
			pp[p], pi[p], have[p] = n.ports[p].path, n.ports[p].pi, n.ports[p].havePI
			lids[p], lmcs[p] = n.ports[p].lid, n.ports[p].lmc
			if n.isSwitch() && p > 0 {
				lids[p] = 0
			}
		}
		sn.PortPaths, sn.PortInfo, sn.Have = append(sn.PortPaths, pp), append(sn.PortInfo, pi), append(sn.Have, have)
		sn.LID, sn.LMC = append(sn.LID, lids), append(sn.LMC, lmcs)
	}
	for _, n := range d.nodes {
		for p := 1; p < len(n.ports); p++ {
			pt := &n.ports[p]
			if pt.peer == nil || pt.peer.idx < n.idx || (pt.peer == n && pt.peerPort < p) {
				continue
			}
			w := topologies.Width(pt.pi.LinkWidthActive)
			// The extended fields first (a link at NDR reads QDR in
			// LinkSpeedActive); topologies' Speed bits are mad's.
			s := topologies.Speed(pt.pi.SpeedActive())
			if !slices.Contains([]topologies.Width{topologies.Width1x, topologies.Width4x, topologies.Width8x,
				topologies.Width12x, topologies.Width2x}, w) {
				w = 0
			}
			if s&(s-1) != 0 || s > topologies.SpeedXDR || s == topologies.SpeedFDR10 {
				s = 0
			}
			a := topologies.PortRef{Node: n.idx, Port: p}
			b := topologies.PortRef{Node: pt.peer.idx, Port: pt.peerPort}
			if err := t.Connect(a, b, w, s); err != nil {
				return nil, fmt.Errorf("sm: building the topology: %w", err)
			}
		}
	}
	sn.Topo = t
	sn.SMLID = d.smLID
	if d.self != nil {
		sn.SMNode, sn.SMPort = d.self.idx, d.smPort
		if d.self.isSwitch() {
			sn.SMPort = 0
		}
	}
	if err := sn.Index(); err != nil {
		return nil, err
	}
	return sn, nil
}
