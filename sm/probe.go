package sm

import (
	"errors"

	"ibfab/sm/routing/updn"
	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// Probing what partial discovery found MISSING (partial.go has the
// protocol): once nothing is outstanding, each MISSING device cabled to a
// REACHABLE switch gets that switch's route plus a directed hop, and the
// switches among them are probed; one that may be dead through a port
// known to be up, or with the port read as the probe goes.

// probe reads SwitchInfo of a switch found MISSING, along its new route.
func (p *partialDiscovery) probe(n *dnode) {
	p.state[n] = devWaiting
	p.send(PhaseDiscovery, n.rt, mad.AttrSwitchInfo, 0, nil, n, func(r *txn.Response) {
		if r.Err != nil {
			p.failed[n] = true
		} else if p.silent[n] {
			p.refound++
		}
		p.onSwitchInfo(n, r, PhaseDiscovery)
	})
}

// tablesSuspect reports whether most switches (two at least) did not
// answer along the routes of the last subnet yet answered a probe at
// once, with no link lost on the way: not a loss or a death but the
// forwarding tables, which are no longer what this SM wrote (another SM
// rewrote them while this one was cut off and thought itself master).
// Random SMP loss silences one switch now and then, not most of them.
func (p *partialDiscovery) tablesSuspect() bool {
	switches := 0
	for _, n := range p.d.nodes {
		if n.isSwitch() {
			switches++
		}
	}
	return p.refound >= 2 && 2*p.refound > switches
}

// probeMissing gives every MISSING device cabled to a REACHABLE switch
// (or the SM's own node) that switch's route plus a directed hop, and
// probes the switches among them. It reports whether it found any.
//
// A suspect switch (it lost a link or did not answer: it may be dead) is
// probed only through a port known to be up: one of a switch scanned, or
// read with PortStateChange clear, in this assimilation, or else one read
// as the probe goes (checkThenProbe). A dead switch's other neighbours
// may not have been scanned yet (their traps still on the way), and a
// probe along a link that is gone waits out every retry.
func (p *partialDiscovery) probeMissing() bool {
	any, ahead := false, false
	for _, x := range p.d.nodes {
		if p.state[x] != devMissing || p.failed[x] {
			continue
		}
		q, check := p.probePort(x)
		if q == 0 {
			continue
		}
		s, sp := x.ports[q].peer, x.ports[q].peerPort
		x.rt, x.path = s.rt.extend(sp), extend(s.path, sp)
		if s == p.d.self && !s.isSwitch() {
			x.rt, x.path = drRoute([]uint8{0, uint8(sp)}), []uint8{0, uint8(sp)}
		}
		any = true
		switch {
		case !x.isSwitch():
			x.ports[q].rt, x.ports[q].path = x.rt, x.path
			p.state[x] = devReachable
		case check:
			p.checkThenProbe(x, s, sp)
			ahead = ahead || p.lost[x]
		case p.lost[x]: // through a port known to be up: no read
			p.checked[portKey{s, sp}] = true
			p.state[x] = devWaiting
			p.quickProbe(x, s, sp)
			p.scanLost(x)
			ahead = true
		default:
			p.probe(x)
		}
	}
	if ahead {
		p.blockAhead()
	}
	return any
}

// blockAhead: with cut-deps, the turns that the graph of the database as
// it stands (every switch being probed alive, with the links it has
// left) forbids at its cut nodes, and that the SM does not hold blocked,
// are blocked now: with the probes of a switch that lost a link, or as
// soon as a link between two switches known alive is found gone. Unless
// discovery finds more, that is the graph distribution will protect, and
// a block is safe whatever it finds (it only drops data): so the
// protection is in when the tables are, without a round trip of its own
// after discovery (a cut link's far end: two of the SMPs its cut sent).
// A block the final graph does not want is undone with the tables; one
// to a switch found dead is given up with its scan.
func (p *partialDiscovery) blockAhead() {
	s := p.sm
	if p.full || s.cfg.Distribution != DistCutDeps || s.routes == nil || s.routes.Up == nil {
		return // not up*/down* routes: distribution goes without cut-node blocks
	}
	sn, err := p.d.subnet()
	if err != nil {
		return
	}
	root, err := sn.Fabric.UpdnRoot(s.cfg.Options)
	if err != nil {
		return
	}
	g, err := updn.NewDAG(&sn.Fabric, root)
	if err != nil {
		return // a device cut off: discovery will tell
	}
	want := forbiddenBy(&sn.Fabric, g.Up)
	keys := make([]turnKey, 0, len(want))
	for k := range want {
		if !s.blocked[k] && !p.ahead[k] {
			keys = append(keys, k)
		}
	}
	sortTurns(keys)
	for _, k := range keys {
		n := p.d.byGUID[k.guid]
		var to txn.Request
		var tag any
		switch p.state[n] {
		case devReachable:
			to = txn.Request{DR: true, Path: p.drPath(n)}
		case devWaiting:
			if p.lost[n] { // probed now, along the probe's route
				to, tag = p.d.req(n.rt, 0, 0), scanTag{n}
			}
		}
		if !to.DR && to.LID == 0 || to.DR && to.Path == nil {
			continue
		}
		p.ahead[k] = true
		p.inPhase(PhaseDiscovery, func() { s.blockTurn(to, k, tag, func(error) {}) })
	}
}

// probePort returns the port of x to probe it through (0: none), and
// whether the far end's port must be read first: a suspect x goes
// through a port known to be up if it has one.
func (p *partialDiscovery) probePort(x *dnode) (q int, check bool) {
	unknown := 0
	for q := 1; q < len(x.ports); q++ {
		s, sp := x.ports[q].peer, x.ports[q].peerPort
		if s == nil || s == x || p.state[s] != devReachable || !(s.isSwitch() || s == p.d.self) ||
			s.rt.hops() >= mad.MaxHopCount || p.checked[portKey{s, sp}] {
			continue
		}
		if !p.suspect[x] || !x.isSwitch() || !s.isSwitch() || p.scanned[s] || p.clean[s] {
			return q, false
		}
		if unknown == 0 {
			unknown = q
		}
	}
	return unknown, unknown != 0
}

// checkThenProbe reads port sp of s, which x is cabled to by the
// database, and at the same time probes x through it (quickProbe, and
// scanLost: all of it goes the same way, so x answers the probe before
// the scan's Set clears PortStateChange). The read decides: a port read
// Down is a deactivation (as a scan of s would find) and what went to x
// is given up, not waited for; a port up lets the probe's answer, or its
// silence, tell (a silent probe has the scan given up too). One round
// trip instead of three (read, then probe, then scan) is what a link cut
// costs at its far end; a dead switch costs the SMPs that went to it for
// nothing.
func (p *partialDiscovery) checkThenProbe(x, s *dnode, sp int) {
	p.checked[portKey{s, sp}] = true
	p.state[x] = devWaiting
	p.readLink(x, s, sp, nil)
	p.quickProbe(x, s, sp)
	p.scanLost(x)
}

// scanLost scans x right behind its probe if it lost a link: the probe's
// answer would have it scanned (its PortStateChange is set), and x sees
// the probe first. A probe that goes unanswered has the scan given up.
func (p *partialDiscovery) scanLost(x *dnode) {
	if p.lost[x] {
		delete(p.rescan, x)
		p.scan(x, PhaseDiscovery)
	}
}

// readLink reads port sp of s, x's neighbour, and calls next (if any)
// if it is still up and cabled to x; if it is not, the link is gone (a
// port read Down is a deactivation, as a scan of s would find) and x
// stays MISSING unless found another way: what is still out to it is
// given up.
func (p *partialDiscovery) readLink(x, s *dnode, sp int, next func()) {
	p.send(PhaseDiscovery, s.rt, mad.AttrPortInfo, uint32(sp), nil, nil, func(r *txn.Response) {
		up := false
		if r.Err != nil {
			p.d.warn("no PortInfo %d from %s (%s): %v", sp, p.name(s), s.rt, r.Err)
		} else {
			pt := &s.ports[sp]
			pt.takePortInfo(r.Data)
			up = pt.pi.PortState != mad.PortStateDown && pt.peer == x
			if pt.pi.PortState == mad.PortStateDown && pt.peer != nil {
				p.deactivate(s, sp)
			}
		}
		switch {
		case p.state[x] != devWaiting: // answered another way meanwhile, or deactivated
		case up:
			if next != nil {
				next()
			}
		default:
			p.state[x] = devMissing
			gone := func(n *dnode) bool { return n == x }
			p.cancel(gone)
			p.cancelScans(gone)
		}
	})
}

// quickProbe reads SwitchInfo of suspect x through port sp of s, waiting
// Config.ProbeTimeout once. When x is dead, s's port often still reads
// Active because s has not noticed yet (a dead switch's neighbours do
// not all lose their links at the same instant), and a probe with the
// full timeout and its retries would hold discovery up for nothing; so
// an unanswered probe has what else went to x given up and the port read
// again, and only a port still up earns x a probe in full (and a scan).
func (p *partialDiscovery) quickProbe(x, s *dnode, sp int) {
	r := p.d.req(x.rt, mad.AttrSwitchInfo, 0)
	r.Tag, r.Probe = x, true
	p.inPhase(PhaseDiscovery, func() {
		p.sm.tx.Get(r, func(resp *txn.Response) {
			if !errors.Is(resp.Err, ErrTimeout) || p.state[x] != devWaiting {
				p.onSwitchInfo(x, resp, PhaseDiscovery)
				return
			}
			p.cancelScans(func(n *dnode) bool { return n == x })
			p.readLink(x, s, sp, func() { p.probe(x) })
		})
	})
}
