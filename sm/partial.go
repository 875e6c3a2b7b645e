package sm

import (
	"context"
	"fmt"
	"slices"
	"time"

	"ibfab/sm/routing"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Change detection and partial discovery, thesis 5.2 and 5.4.
//
// Detection. A sweep reads SwitchInfo of every known switch; one whose
// PortStateChange is set has it cleared (a Set of the SwitchInfo just
// read, writing 1 to the bit) and every port read. A Trap 128 names a
// switch by its LID: that switch is cleared and read the same way. A port
// read Down where the database has a link is a deactivation; a port not
// Down where the database has none is an activation; a port back in Init
// or Armed where the database had it Active retrained: the far end is
// read again through it (a switch probed), and a device found reset (a
// switch's LinearFDBTop back to 0, a CA port's LID) is configured anew.
// Every change a sweep (and the traps that come in meanwhile) finds is
// assimilated together. With partial discovery a trap that comes in
// during the assimilation is taken at once, and its switch is scanned
// back along the route the trap came (traproute.go): the trap shows the
// switch alive and that route working, where the SM's own route to it may
// cross what changed (a cut link's far end traps too, unless its route to
// the SM took that link).
//
// Partial discovery (5.4.3) keeps the database of the last subnet and
// explores only what changed. Every device is WAITING (a switch swept and
// not answered yet), REACHABLE or MISSING. Each switch s has its
// destinationDevices: the devices whose route from the SM or to it, by the
// forwarding tables in place, crosses s. Devices are addressed LID-routed
// while their routes hold, and otherwise with a LID-routed prefix to a
// reachable switch and a directed suffix from there.
//
//   - activation: a NodeInfo goes out of the port (route to the switch,
//     one directed hop more), and from there exploration is full
//     discovery's, except that it stops at devices already in the
//     database; new devices get new LIDs, old ones keep theirs;
//   - deactivation: the link goes, the device at its far end is MISSING
//     and so is every device in its destinationDevices, unless it
//     answered in this assimilation (a device that answered, or trapped,
//     is reachable, whatever its neighbours say: the thesis leaves the
//     conflict open); when the far end is known alive, only the devices
//     whose routes crossed the link itself are MISSING, and the turns the
//     graph as it stands forbids are blocked at once (blockAhead). A
//     switch known alive only by a trap that came over the link is not
//     any more. Sweep SMPs to MISSING switches are given up, not left to
//     time out;
//   - once nothing is outstanding, every MISSING device cabled to a
//     REACHABLE switch gets the switch's route plus one directed hop: a
//     CA is then REACHABLE, a switch is probed with SwitchInfo like a
//     sweep (and scanned if its PortStateChange is set); repeated until
//     none is left; a probe that fails is not repeated. A switch that
//     lost a link or did not answer may be dead: it is probed through a
//     port known to be up (of a switch scanned, or read with
//     PortStateChange clear, in this assimilation), or else that port is
//     read while a probe with a short wait (and, if the switch lost a
//     link, its scan) goes through it, and a port read Down is a
//     deactivation that gives the probe up (traps come in spread out: the
//     dead switch's other neighbours may not be scanned yet, and a probe
//     over a link that is gone waits out every retry);
//   - what is still MISSING is deleted.
//
// With full discovery the same detection only decides whether anything
// changed: at the first change, what is outstanding is given up and the
// subnet is discovered from scratch.

// devState is a device's state during partial discovery.
type devState uint8

const (
	devReachable devState = iota
	devWaiting
	devMissing
)

// partialDiscovery is one assimilation's detection and, for partial
// discovery, its exploration of what changed.
type partialDiscovery struct {
	sm       *SM
	d        *discovery // the database: the last subnet, then what changed
	full     bool       // detection only: full discovery follows
	state    map[*dnode]devState
	answered map[*dnode]bool // answered in this assimilation: sticky REACHABLE
	failed   map[*dnode]bool // a probe got no answer: not probed again
	scanned  map[*dnode]bool
	clean    map[*dnode]bool      // SwitchInfo read with PortStateChange clear: its ports are as the database says
	rescan   map[*dnode]bool      // its scan was given up: scan it when found again
	suspect  map[*dnode]bool      // lost a link, or did not answer: may be dead
	lost     map[*dnode]bool      // lost a link: its PortStateChange is set
	trapped  map[*dnode][]trapHop // answered by a trap, scanned back along its route: that route, until the scan answers
	ahead    map[turnKey]bool     // blocks sent during discovery (blockAhead), one SLtoVL Set each
	checked  map[portKey]bool     // ports read before a probe through them
	added    map[*dnode]bool      // new to the database: every port being read
	dest     map[*dnode][]*dnode  // destinationDevices
	byLID    map[uint16]*dnode    // switches by LID, for traps

	changes    []string
	detectedAt time.Time // wall time of the first change found
	sweepStart time.Time
	sweepEnd   time.Time
	sweepOut   int // sweep SMPs not answered yet
	badTraps   int // trap LIDs that name no known switch
	// silent are the switches that did not answer their route of the
	// last subnet; refound those of them a probe's directed route then
	// reached at once (tablesSuspect).
	silent  map[*dnode]bool
	refound int
}

// portKey names port q of a node.
type portKey struct {
	n *dnode
	q int
}

// sweepTag tags a sweep's SwitchInfo Get, a *dnode a probe's: for
// cancel to recognize them by.
type sweepTag struct{ n *dnode }

// scanTag tags a scan's SMPs, for cancelScans: a switch found MISSING is
// not waited for (its route may cross what died); it is scanned again
// once a probe finds it.
type scanTag struct{ n *dnode }

// switchInfoGet returns the switch a SwitchInfo Get is for, and whether
// it is a sweep's.
func switchInfoGet(r *txn.Request) (*dnode, bool) {
	switch t := r.Tag.(type) {
	case sweepTag:
		return t.n, true
	case *dnode:
		return t, false
	}
	return nil, false
}

// newPartial starts an assimilation's detection on the SM's subnet.
// LID routes are used when the subnet's tables are in place (lidRoutes).
func newPartial(s *SM, full, lidRoutes bool) *partialDiscovery {
	sn := s.subnet
	p := &partialDiscovery{sm: s, full: full, state: map[*dnode]devState{}, answered: map[*dnode]bool{},
		failed: map[*dnode]bool{}, scanned: map[*dnode]bool{}, clean: map[*dnode]bool{}, rescan: map[*dnode]bool{}, suspect: map[*dnode]bool{}, silent: map[*dnode]bool{},
		lost: map[*dnode]bool{}, trapped: map[*dnode][]trapHop{}, ahead: map[turnKey]bool{},
		checked: map[portKey]bool{}, added: map[*dnode]bool{}, dest: map[*dnode][]*dnode{}, byLID: map[uint16]*dnode{}}
	p.d = dbFromSubnet(s, sn)
	p.d.partial = p
	if !full {
		s.beginPartial(&sn.Fabric)
	}
	if lidRoutes && sn.SMLID != 0 {
		for i, n := range p.d.nodes {
			if n == p.d.self {
				continue
			}
			if n.isSwitch() {
				if l := sn.LID[i][0]; l != 0 {
					n.rt = lidRoute(l)
				}
				continue
			}
			for q := 1; q < len(n.ports); q++ {
				if pt := &n.ports[q]; pt.path != nil && pt.lid != 0 {
					pt.rt = lidRoute(pt.lid)
				}
			}
		}
		if s.routes != nil && !full {
			for x, devs := range destinationDevices(sn, s.routes) {
				for _, dv := range devs {
					p.dest[p.d.nodes[x]] = append(p.dest[p.d.nodes[x]], p.d.nodes[dv])
				}
			}
		}
	}
	for i, n := range p.d.nodes {
		if n.isSwitch() && sn.LID[i][0] != 0 {
			p.byLID[sn.LID[i][0]] = n
		}
	}
	p.answered[p.d.self] = true
	return p
}

// dbFromSubnet returns a discovery holding sn as its database: the nodes
// in sn's order with their ports, LIDs, last PortInfo and links, their
// routes directed ones.
func dbFromSubnet(s *SM, sn *Subnet) *discovery {
	d := &discovery{sm: s, tx: s.tx, byGUID: map[uint64]*dnode{}, smLID: sn.SMLID, smPort: sn.SMPort}
	t := sn.Topo
	for i, tn := range t.Nodes() {
		ni := mad.NodeInfoFields{NodeType: mad.NodeType(tn.Type), NumPorts: uint8(tn.NumPorts), NodeGUID: tn.GUID,
			SystemImageGUID: tn.SystemImageGUID, VendorID: tn.VendorID, DeviceID: uint16(tn.DeviceID)}
		if i < len(sn.PartitionCap) {
			ni.PartitionCap = sn.PartitionCap[i]
		}
		n := &dnode{idx: i, ni: ni, path: sn.Paths[i], rt: drRoute(sn.Paths[i]), ports: make([]dport, tn.NumPorts+1),
			si: sn.Switch[i], haveSI: tn.Type == topologies.Switch, desc: tn.Description}
		for q := range n.ports {
			pt := &n.ports[q]
			pt.pi, pt.havePI = sn.PortInfo[i][q], sn.Have[i][q]
			pt.lid, pt.lmc = sn.LID[i][q], sn.LMC[i][q]
			switch {
			case tn.Type == topologies.Switch && q == 0:
				pt.guid = tn.GUID
			case tn.Type != topologies.Switch && q > 0:
				pt.guid = tn.Ports[q].GUID
				if q < len(sn.PortPaths[i]) && sn.PortPaths[i][q] != nil {
					pt.path, pt.rt, pt.reached = sn.PortPaths[i][q], drRoute(sn.PortPaths[i][q]), true
				}
			}
		}
		d.nodes = append(d.nodes, n)
		d.byGUID[tn.GUID] = n
	}
	for _, l := range t.Links() {
		d.link(d.nodes[l.A.Node], l.A.Port, d.nodes[l.B.Node], l.B.Port)
	}
	d.self = d.nodes[sn.SMNode]
	if d.self.isSwitch() {
		d.smPort = 0
	}
	return d
}

// destinationDevices returns, for every switch of sn, the devices whose
// route from the SM or to the SM crosses it by rt's tables (thesis
// 5.4.3), as node indexes.
func destinationDevices(sn *Subnet, rt *routing.Routes) [][]int {
	dest := make([][]int, sn.Topo.NumNodes())
	walkSMRoutes(sn, rt, func(dev, at, _ int) {
		if at != dev && at != sn.SMNode && !slices.Contains(dest[at], dev) {
			dest[at] = append(dest[at], dev)
		}
	})
	return dest
}

// routedOver returns the devices of sn whose route from the SM or to the
// SM leaves switch a by port pa or switch b by port pb (the two ends of
// a link), by rt's tables, as node indexes. Asked only when a link is
// lost between two switches known alive: it walks every route.
func routedOver(sn *Subnet, rt *routing.Routes, a, pa, b, pb int) []int {
	var devs []int
	walkSMRoutes(sn, rt, func(dev, at, out int) {
		if (at == a && out == pa || at == b && out == pb) && !slices.Contains(devs, dev) {
			devs = append(devs, dev)
		}
	})
	return devs
}

// walkSMRoutes follows, for every device of sn but the SM's, its route
// from the SM's switch and its route to the SM by rt's tables, calling
// visit with the device and each switch on the way and the port the
// route leaves it by (0 at the device itself, mad.LFTNoPort where the
// table has no entry).
func walkSMRoutes(sn *Subnet, rt *routing.Routes, visit func(dev, at, out int)) {
	f := &sn.Fabric
	smSw := -1
	if f.IsSwitch(sn.SMNode) {
		smSw = sn.SMNode
	} else if peer, ok := f.Topo.Peer(topologies.PortRef{Node: sn.SMNode, Port: sn.SMPort}); ok && f.IsSwitch(peer.Node) {
		smSw = peer.Node
	}
	walk := func(dev, at int, lid uint16) {
		for hops := 0; hops <= f.Topo.NumNodes() && at >= 0 && f.IsSwitch(at); hops++ {
			out := uint8(mad.LFTNoPort)
			if int(lid) < len(rt.LFT[at]) {
				out = rt.LFT[at][lid]
			}
			visit(dev, at, int(out))
			if out == 0 || out == mad.LFTNoPort || int(out) > f.Topo.Node(at).NumPorts {
				return
			}
			peer, ok := f.Topo.Peer(topologies.PortRef{Node: at, Port: int(out)})
			if !ok {
				return
			}
			at = peer.Node
		}
	}
	for _, e := range f.Ends() {
		if e.Node == sn.SMNode {
			continue
		}
		if smSw >= 0 && int(e.LID) < len(rt.LFT[smSw]) {
			walk(e.Node, smSw, e.LID)
		}
		if e.Switch >= 0 {
			walk(e.Node, e.Switch, sn.SMLID)
		}
	}
}

func (p *partialDiscovery) name(n *dnode) string {
	return fmt.Sprintf("%s %#x", map[mad.NodeType]string{mad.NodeTypeSwitch: "switch", mad.NodeTypeCA: "CA",
		mad.NodeTypeRouter: "router"}[n.ni.NodeType], n.ni.NodeGUID)
}

// change records a change found.
func (p *partialDiscovery) change(format string, args ...any) {
	if p.detectedAt.IsZero() {
		p.detectedAt = time.Now()
	}
	p.changes = append(p.changes, fmt.Sprintf(format, args...))
	if p.full {
		// Full discovery follows: what is outstanding no longer matters.
		p.sm.tx.Cancel(func(*txn.Request) bool { return true })
	}
}

// changed reports whether anything changed.
func (p *partialDiscovery) changed() bool { return len(p.changes) > 0 }

// send queues a Get (data nil) or Set of attr along rt, in phase.
func (p *partialDiscovery) send(phase string, rt smpRoute, attr mad.AttrID, mod uint32, data []byte, tag any, cb func(*txn.Response)) {
	p.inPhase(phase, func() { p.d.submit(rt, attr, mod, data, data != nil, tag, cb) })
}

// inPhase runs submit with the SMPs it queues counted for phase.
func (p *partialDiscovery) inPhase(phase string, submit func()) {
	tx := p.sm.tx
	old := tx.Phase()
	tx.SetPhase(phase)
	submit()
	tx.SetPhase(old)
}

// drPath returns a directed route from the SM to switch x over the links
// the database holds, through switches not MISSING; nil when there is
// none.
func (p *partialDiscovery) drPath(x *dnode) []uint8 {
	self := p.d.self
	paths := map[*dnode][]uint8{self: {0}}
	queue := []*dnode{self}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if u == x {
			return paths[u]
		}
		if u != self && !u.isSwitch() {
			continue
		}
		for q := 1; q < len(u.ports); q++ {
			if u == self && !u.isSwitch() && q != p.d.smPort {
				continue
			}
			v := u.ports[q].peer
			if v == nil || v == u || p.state[v] == devMissing || paths[v] != nil || len(paths[u]) > mad.MaxHopCount {
				continue
			}
			paths[v] = extend(paths[u], q)
			queue = append(queue, v)
		}
	}
	return nil
}

// sweep reads SwitchInfo of every known switch.
func (p *partialDiscovery) sweep() {
	p.sweepStart = time.Now()
	for _, n := range p.d.nodes {
		if !n.isSwitch() {
			continue
		}
		p.state[n] = devWaiting
		p.sweepOut++
		p.send(PhaseDetection, n.rt, mad.AttrSwitchInfo, 0, nil, sweepTag{n}, func(r *txn.Response) {
			p.sweepOut--
			if p.sweepOut == 0 {
				p.sweepEnd = time.Now()
			}
			p.onSwitchInfo(n, r, PhaseDetection)
		})
	}
}

// traps scans the switches that sent Trap 128 with these LIDs. A switch
// scanned already in this assimilation may have trapped for a change
// after its scan: its PortStateChange, set again since the scan cleared
// it, tells, and it is scanned once more if so.
//
// With partial discovery a switch not scanned yet is scanned back along
// the route its trap came (trapRoute): the trap shows it alive, so it
// counts as answered, and a switch found MISSING meanwhile is found
// again that way. A scan that gets no answer after all makes it MISSING.
func (p *partialDiscovery) traps(lids []uint16) {
	for _, lid := range lids {
		n := p.byLID[lid]
		if n != nil && !p.full && !p.scanned[n] && !p.failed[n] {
			if rt, path, hops := p.trapRoute(n); hops != nil {
				n.rt, n.path = rt, path
				p.state[n], p.answered[n], p.trapped[n] = devReachable, true, hops
			}
		}
		if n == nil || p.state[n] == devMissing {
			p.badTraps++
			continue
		}
		if !p.scanned[n] {
			p.scan(n, PhaseDetection)
			continue
		}
		p.send(PhaseDetection, n.rt, mad.AttrSwitchInfo, 0, nil, nil, func(r *txn.Response) {
			if r.Err != nil || !mad.SwitchInfo(r.Data).Fields().PortStateChange {
				return // the trap was for what the scan saw; a silence, the scan's problem
			}
			p.scanned[n] = false
			p.scan(n, PhaseDetection)
		})
	}
}

// onSwitchInfo takes a sweep's or a probe's answer.
func (p *partialDiscovery) onSwitchInfo(n *dnode, r *txn.Response, phase string) {
	if r.Err != nil {
		if p.answered[n] {
			p.state[n] = devReachable // answered another way already
			return
		}
		if p.state[n] == devWaiting {
			p.state[n], p.suspect[n] = devMissing, true
			if !p.lost[n] {
				p.silent[n] = true
			}
			p.change("%s does not answer (%s)", p.name(n), n.rt)
		}
		return
	}
	p.state[n], p.answered[n] = devReachable, true
	p.clean[n] = !mad.SwitchInfo(r.Data).Fields().PortStateChange
	// Another SwitchInfo still out to it (a sweep's, by a route that no
	// longer works) is not waited for.
	p.cancel(func(x *dnode) bool { return x == n })
	was := n.si
	n.si, n.haveSI = mad.SwitchInfo(r.Data).Fields(), true
	if was.LinearFDBTop != 0 && n.si.LinearFDBTop == 0 {
		p.reset(n, phase)
	}
	if n.si.PortStateChange || p.rescan[n] {
		delete(p.rescan, n)
		p.scan(n, phase)
	}
}

// reset takes in a device that lost its configuration (a switch whose
// LinearFDBTop is back to 0, a CA port whose LID is): the SM forgets what
// it wrote there, so that all of it goes again, and a switch's port 0 is
// read again for its LID to be set.
func (p *partialDiscovery) reset(n *dnode, phase string) {
	p.change("%s was reset", p.name(n))
	p.sm.forget(n.ni.NodeGUID)
	if !n.isSwitch() || p.full {
		return
	}
	p.send(phase, n.rt, mad.AttrPortInfo, 0, nil, nil, func(r *txn.Response) {
		if r.Err == nil {
			pt := &n.ports[0]
			pt.takePortInfo(r.Data)
		}
	})
}

// scan clears a switch's PortStateChange and reads every port.
func (p *partialDiscovery) scan(n *dnode, phase string) {
	if p.scanned[n] {
		return
	}
	p.scanned[n] = true
	want := n.si
	want.PortStateChange = true // writing 1 clears it
	p.send(phase, n.rt, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &want), scanTag{n}, func(r *txn.Response) {
		if r.Err != nil {
			p.d.warn("clearing PortStateChange of %s: %v", p.name(n), r.Err)
			if _, ok := p.trapped[n]; ok { // answered only by its trap: it may have died since
				p.untrap(n)
			}
			return
		}
		n.si = mad.SwitchInfo(r.Data).Fields()
		if _, ok := p.trapped[n]; ok {
			// Scanned back along its trap's route: a sweep's SwitchInfo
			// still out to it by the old one, which may cross what
			// changed, is not waited for.
			delete(p.trapped, n)
			p.cancel(func(x *dnode) bool { return x == n })
		}
	})
	for q := 1; q < len(n.ports); q++ {
		p.send(phase, n.rt, mad.AttrPortInfo, uint32(q), nil, scanTag{n}, func(r *txn.Response) {
			p.onScanPort(n, q, r)
		})
	}
}

// onScanPort compares a port read by a scan with the database.
func (p *partialDiscovery) onScanPort(n *dnode, q int, r *txn.Response) {
	if r.Err != nil {
		p.d.warn("no PortInfo %d from %s (%s): %v", q, p.name(n), n.rt, r.Err)
		return
	}
	pt := &n.ports[q]
	was := pt.pi.PortState
	pt.takePortInfo(r.Data)
	down := pt.pi.PortState == mad.PortStateDown
	switch {
	case pt.peer != nil && down:
		p.deactivate(n, q)
	case pt.peer == nil && !down:
		p.change("%s port %d up", p.name(n), q)
		if !p.full {
			p.d.explore(n, q)
		}
	case pt.peer != nil && was == mad.PortStateActive && pt.pi.PortState < mad.PortStateActive:
		peer, pp := pt.peer, pt.peerPort
		p.change("%s port %d retrained (to %s port %d)", p.name(n), q, p.name(peer), pp)
		if p.full || p.scanned[peer] {
			return
		}
		// The far end retrained too, and may have been reset: a switch is
		// probed, a CA port read again, through this link, which works
		// whatever the far end's LID.
		if peer.isSwitch() {
			peer.rt = n.rt.extend(q)
			p.probe(peer)
			return
		}
		p.send(PhaseDiscovery, n.rt.extend(q), mad.AttrPortInfo, uint32(pp), nil, nil, func(r *txn.Response) {
			if r.Err != nil {
				return
			}
			pi := &peer.ports[pp]
			pi.takePortInfo(r.Data)
			if !peer.isSwitch() && pi.lid != 0 && pi.pi.LID == 0 {
				p.reset(peer, PhaseDiscovery)
			}
		})
	}
}

// deactivate takes the link at port q of n out of the database and marks
// what it made unreachable.
func (p *partialDiscovery) deactivate(n *dnode, q int) {
	pt := &n.ports[q]
	peer, pp := pt.peer, pt.peerPort
	pt.peer = nil
	peer.ports[pp].peer = nil
	p.change("%s port %d down (to %s port %d)", p.name(n), q, p.name(peer), pp)
	if p.full {
		return
	}
	p.suspect[peer], p.lost[peer] = true, true
	// A switch known alive only by a trap that came over this link may
	// be behind it now.
	for x, hops := range p.trapped {
		if slices.ContainsFunc(hops, func(h trapHop) bool { return h == trapHop{n, q} || h == trapHop{peer, pp} }) {
			p.untrap(x)
		}
	}
	p.markMissing(peer)
	dest := p.dest[peer]
	if p.answered[peer] {
		// Alive (it answered, or trapped, in this assimilation): only
		// the routes that crossed the link itself are gone. And with both
		// ends alive, unless discovery finds more, the graph is the
		// database's now: its blocks go at once rather than with a probe
		// round or after discovery.
		if sn := p.sm.subnet; p.sm.routes != nil && n.idx < sn.Topo.NumNodes() && peer.idx < sn.Topo.NumNodes() {
			dest = nil
			for _, i := range routedOver(sn, p.sm.routes, n.idx, q, peer.idx, pp) {
				dest = append(dest, p.d.nodes[i])
			}
		}
		defer p.blockAhead()
	}
	for _, x := range dest {
		p.markMissing(x)
	}
	// Stop waiting for the sweep answers and scans of switches now
	// MISSING: their routes may cross what died.
	missing := func(x *dnode) bool { return p.state[x] == devMissing }
	p.cancel(missing)
	p.cancelScans(missing)
}

// cancelScans gives up the scans out to the switches drop picks: each is
// scanned again, whatever its PortStateChange, when a probe finds it.
func (p *partialDiscovery) cancelScans(drop func(*dnode) bool) {
	p.sm.tx.Cancel(func(r *txn.Request) bool {
		t, ok := r.Tag.(scanTag)
		if !ok || !drop(t.n) {
			return false
		}
		p.scanned[t.n], p.rescan[t.n] = false, true
		return true
	})
}

// cancel gives up the SwitchInfo Gets (sweeps' and probes') out to the
// switches drop picks.
func (p *partialDiscovery) cancel(drop func(*dnode) bool) {
	p.sm.tx.Cancel(func(r *txn.Request) bool {
		x, sweep := switchInfoGet(r)
		if x == nil || !drop(x) {
			return false
		}
		if sweep {
			if p.sweepOut--; p.sweepOut == 0 {
				p.sweepEnd = time.Now()
			}
		}
		return true
	})
}

func (p *partialDiscovery) markMissing(x *dnode) {
	if x != nil && !p.answered[x] {
		p.state[x] = devMissing
	}
}

// found hears of a node new to the database.
func (p *partialDiscovery) found(n *dnode) {
	p.state[n], p.answered[n], p.added[n] = devReachable, true, true
	p.change("new %s", p.name(n))
}

// met hears of a known node reached again through port lp, along rt: one
// that was MISSING is found again there.
func (p *partialDiscovery) met(n *dnode, lp int, rt smpRoute, path []uint8) {
	if p.state[n] != devMissing || p.failed[n] {
		return
	}
	n.rt, n.path = rt, path
	if !n.isSwitch() {
		n.ports[lp].rt, n.ports[lp].path = rt, path
		p.state[n] = devReachable
		return
	}
	p.probe(n)
}

// readLinkPort reads port q of switch n, which a new link reaches, along
// rt (the route that reached it through that port). A port still Down
// after all is a second device with n's GUID.
func (p *partialDiscovery) readLinkPort(n *dnode, q int, rt smpRoute) {
	if pt := &n.ports[q]; p.added[n] && !(pt.havePI && pt.pi.PortState == mad.PortStateDown) {
		// Its ports are read as it is found; only one read Down before
		// this link came up (a switch hot-added cable by cable) is stale.
		return
	}
	p.rereadPort(n, q, rt)
}

// rereadPort reads port q of switch n again along rt, a route through it.
func (p *partialDiscovery) rereadPort(n *dnode, q int, rt smpRoute) {
	p.send(PhaseDiscovery, rt, mad.AttrPortInfo, uint32(q), nil, nil, func(r *txn.Response) {
		if r.Err != nil {
			p.d.warn("no PortInfo %d from %s (%s): %v", q, p.name(n), rt, r.Err)
			return
		}
		pt := &n.ports[q]
		pt.takePortInfo(r.Data)
		if pt.pi.PortState == mad.PortStateDown {
			p.d.problem("duplicate GUID %#x: its port %d is Down, yet %s reaches it there", n.ni.NodeGUID, q, rt)
		}
	})
}

// run exchanges SMPs until detection, and for partial discovery the
// exploration of what changed, are complete.
//
// With partial discovery, traps that come in meanwhile are taken in as
// they come: the far end of a cut link traps too, and is scanned with
// the near end rather than after it.
func (p *partialDiscovery) run(ctx context.Context) error {
	if !p.full {
		p.sm.onTrap = func() { p.traps(p.sm.takeTraps()) }
		defer func() { p.sm.onTrap = nil }()
	}
	for {
		if err := p.sm.tx.Run(ctx); err != nil {
			return err
		}
		if p.full && p.changed() {
			return nil
		}
		if lids := p.sm.takeTraps(); len(lids) > 0 {
			p.traps(lids)
			continue
		}
		if p.full || !p.probeMissing() {
			return nil
		}
	}
}

// finish deletes what is still MISSING and returns the new subnet, its
// nodes in the old order and the new ones after.
func (p *partialDiscovery) finish() (*Subnet, []uint64, error) {
	d := p.d
	var removed []uint64
	keep := d.nodes[:0]
	for _, n := range d.nodes {
		if p.state[n] != devMissing {
			keep = append(keep, n)
			continue
		}
		removed = append(removed, n.ni.NodeGUID)
		delete(d.byGUID, n.ni.NodeGUID)
		for q := range n.ports {
			if peer := n.ports[q].peer; peer != nil && peer != n {
				peer.ports[n.ports[q].peerPort].peer = nil
			}
		}
	}
	clear(d.nodes[len(keep):])
	d.nodes = keep
	for i, n := range d.nodes {
		n.idx = i
	}
	d.repath()
	sn, err := d.subnet()
	return sn, removed, err
}

// repath gives every node the shortest directed route from the SM, ports
// tried lowest first, and every CA port reached the route through it.
func (d *discovery) repath() {
	for _, n := range d.nodes {
		n.path = nil
		if !n.isSwitch() {
			for q := range n.ports {
				n.ports[q].path, n.ports[q].reached = nil, false
			}
		}
	}
	self := d.self
	self.path = []uint8{0}
	if !self.isSwitch() {
		self.ports[d.smPort].path, self.ports[d.smPort].reached = []uint8{0}, true
	}
	queue := []*dnode{self}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if u != self && !u.isSwitch() {
			continue
		}
		for q := 1; q < len(u.ports); q++ {
			if u == self && !u.isSwitch() && q != d.smPort {
				continue
			}
			v, vp := u.ports[q].peer, u.ports[q].peerPort
			if v == nil || v == u {
				continue
			}
			path := extend(u.path, q)
			if !v.isSwitch() && v.ports[vp].path == nil {
				v.ports[vp].path, v.ports[vp].reached = path, true
			}
			if v.path == nil {
				v.path = path
				if len(path)-1 > mad.MaxHopCount {
					d.problem("%#x is %d hops away: past the directed-route limit", v.ni.NodeGUID, len(path)-1)
					continue
				}
				queue = append(queue, v)
			}
		}
	}
	for _, n := range d.nodes {
		if n.path == nil {
			d.problem("%#x is not reachable from the SM", n.ni.NodeGUID)
		}
	}
}
