package sm

import "ibfab/wire/mad"

// A Trap 128 comes to the SM along the trapping switch's own route to the
// SM's LID, by the tables in place: the links of that route carried it
// after the change. Partial discovery scans the switch back along them,
// so that a change it trapped for (the link its SM-to-switch route took,
// say) does not leave its scan to time out, and so that its scan goes
// with the first ones instead of waiting for a probe.

// trapHop is one switch of a trap's route and the port it left by.
type trapHop struct {
	at  *dnode
	out int
}

// trapPath returns n's route to the SM by the tables in place, over the
// links the database holds now; nil when they do not lead to the SM (a
// link on it found gone, a switch new to the database, no tables).
func (p *partialDiscovery) trapPath(n *dnode) []trapHop {
	rt, self, lid := p.sm.routes, p.d.self, p.d.smLID
	if rt == nil || lid == 0 {
		return nil
	}
	var hops []trapHop
	for at := n; at != self; {
		if !at.isSwitch() || at.idx >= len(rt.LFT) || int(lid) >= len(rt.LFT[at.idx]) || len(hops) >= mad.MaxHopCount {
			return nil
		}
		out := int(rt.LFT[at.idx][lid])
		if out == 0 || out >= len(at.ports) || at.ports[out].peer == nil {
			return nil
		}
		hops = append(hops, trapHop{at, out})
		at = at.ports[out].peer
	}
	return hops
}

// trapRoute returns the route to switch n back along its trap's route:
// LID-routed as far as the SM's own route to a switch on it takes the
// same links, directed from there (purely LID-routed when the SM's route
// to n is the trap's backwards). path is the whole of it directed, hops
// the trap's route; nil when n has none (trapPath).
func (p *partialDiscovery) trapRoute(n *dnode) (rt smpRoute, path []uint8, hops []trapHop) {
	hops = p.trapPath(n)
	if hops == nil {
		return smpRoute{}, nil, nil
	}
	// back[i] is the port out of which the SM's side of hop i reaches
	// hops[i].at: the directed route is back[last] ... back[0].
	back := make([]int, len(hops))
	for i, h := range hops {
		back[i] = h.at.ports[h.out].peerPort
	}
	path = []uint8{0}
	for i := len(hops) - 1; i >= 0; i-- {
		path = append(path, uint8(back[i]))
	}
	// The first switch (from n) whose LID route from the SM is the
	// trap's backwards, link by link.
	for j := range hops {
		if l := hops[j].at.ports[0].lid; l != 0 && p.lidRouteFollows(hops[j:], back[j:], l) {
			if j == 0 {
				return lidRoute(l), path, hops
			}
			// From there, the last j hops of the directed route.
			return smpRoute{lid: l, path: append([]uint8{0}, path[len(path)-j:]...)}, path, hops
		}
	}
	return drRoute(path), path, hops
}

// untrap takes back what n's trap told: n is not known alive after all
// (its scan got no answer, or a link its trap came over is gone). It is
// MISSING, to be probed like any switch that may be dead, and scanned
// when found.
func (p *partialDiscovery) untrap(n *dnode) {
	delete(p.trapped, n)
	p.answered[n], p.suspect[n] = false, true
	p.markMissing(n)
	p.cancelScans(func(x *dnode) bool { return x == n })
}

// lidRouteFollows reports whether the tables take an SMP from the SM to
// lid (owned by hops[0].at) back along hops: out of port back[i] at the
// switch hops[i] led to, for i from the last to 0.
func (p *partialDiscovery) lidRouteFollows(hops []trapHop, back []int, lid uint16) bool {
	lft := p.sm.routes.LFT
	for i := len(hops) - 1; i >= 0; i-- {
		at := hops[i].at.ports[hops[i].out].peer
		if at == p.d.self && !at.isSwitch() {
			continue // the SM's CA sends out of its only port to the fabric
		}
		if at.idx >= len(lft) || int(lid) >= len(lft[at.idx]) || int(lft[at.idx][lid]) != back[i] {
			return false
		}
	}
	at := hops[0].at
	return at.idx < len(lft) && int(lid) < len(lft[at.idx]) && lft[at.idx][lid] == 0
}
