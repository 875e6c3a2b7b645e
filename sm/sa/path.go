package sa

import (
	"ibfab/sm/routing"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// rateValid and mtuValid report whether a code names a rate or an MTU: a
// code outside IBA 1.5's table (mad.RateHalfGbps, to 1.2 Tb/s) is no
// rate, and a query that asks for one is ReqInvalid, as OpenSM answers it.
func rateValid(c uint8) bool { _, ok := mad.RateHalfGbps(c); return ok }
func mtuValid(c uint8) bool  { return c >= uint8(mad.MTU256) && c <= uint8(mad.MTU4096) }

// rateHalf is a valid rate code's nominal rate in 0.5 Gb/s.
func rateHalf(c uint8) int { r, _ := mad.RateHalfGbps(c); return r }

// select applies a selector (mad.SelectorGreater …) to what a path
// offers, have, given the value asked, want, under the order less: ok
// and the value the answer carries. Less than picks the largest value
// below want the path also carries (any smaller MTU or rate does).
func selectValue(sel uint8, want, have uint8, values []uint8, less func(a, b uint8) bool) (uint8, bool) {
	switch sel {
	case mad.SelectorGreater:
		return have, less(want, have)
	case mad.SelectorLess:
		best, ok := uint8(0), false
		for _, v := range values {
			if less(v, want) && !less(have, v) && (!ok || less(best, v)) {
				best, ok = v, true
			}
		}
		return best, ok
	case mad.SelectorExactly:
		return want, !less(have, want) && containsU8(values, want)
	}
	return have, true // largest available
}

func containsU8(s []uint8, v uint8) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var mtuCodes = []uint8{1, 2, 3, 4, 5}

func mtuLess(a, b uint8) bool  { return a < b }
func rateLess(a, b uint8) bool { return rateHalf(a) < rateHalf(b) }

func rateCodes() []uint8 { return mad.RateCodes() }

// hop is one link a path crosses: out of port Port of node Node.
type hop struct{ Node, Port int }

// walk follows the LFTs from end port src to LID dlid and returns the
// ports the packet leaves by (the source's first), or false when the
// tables do not deliver it.
func (x *index) walk(src routing.EndPort, dlid uint16) ([]hop, bool) {
	dst, ok := x.owner(dlid)
	if !ok {
		return nil, false
	}
	if dst.Node == src.Node && dst.Port == src.Port {
		return nil, true // a port to itself: loopback
	}
	rt := x.v.Routes
	t := x.sn.Topo
	var hops []hop
	node := src.Node
	if !x.sn.IsSwitch(node) {
		hops = append(hops, hop{src.Node, src.Port})
		peer, ok := t.Peer(topologies.PortRef{Node: src.Node, Port: src.Port})
		if !ok {
			return nil, false
		}
		if peer.Node == dst.Node && peer.Port == dst.Port {
			return hops, true // cabled back to back
		}
		if !x.sn.IsSwitch(peer.Node) {
			return nil, false
		}
		node = peer.Node
	}
	for range t.NumNodes() + 1 {
		if rt == nil || node >= len(rt.LFT) || int(dlid) >= len(rt.LFT[node]) {
			return nil, false
		}
		out := int(rt.LFT[node][dlid])
		if out == 0 {
			return hops, dst.Node == node
		}
		if out == mad.LFTNoPort || out > t.Node(node).NumPorts {
			return nil, false
		}
		hops = append(hops, hop{node, out})
		peer, ok := t.Peer(topologies.PortRef{Node: node, Port: out})
		switch {
		case !ok:
			return nil, false
		case !x.sn.IsSwitch(peer.Node):
			// A CA (or router) port: the destination, or a dead end.
			if peer.Node == dst.Node && peer.Port == dst.Port {
				return hops, true
			}
			return nil, false
		}
		node = peer.Node // a switch, the destination's own included: its LFT says port 0
	}
	return nil, false // a loop
}

// pathProps returns the MTU and rate codes a path offers: the least over
// its links (a port's NeighborMTU is the link's active MTU).
func (x *index) pathProps(src routing.EndPort, hops []hop) (mtu, rate uint8) {
	mtu, rate = uint8(mad.MTU4096), 0
	ports := hops
	if len(hops) == 0 {
		ports = []hop{{src.Node, src.Port}}
	}
	for _, h := range ports {
		pi, ok := x.portInfo(h.Node, h.Port)
		if !ok {
			continue
		}
		if m := uint8(pi.NeighborMTU); m != 0 && m < mtu {
			mtu = m
		}
		// The extended fields first: a link at NDR reads QDR in LinkSpeedActive.
		if r := mad.RateCode(pi.LinkWidthActive, pi.SpeedActive()); r != 0 && (rate == 0 || rateLess(r, rate)) {
			rate = r
		}
	}
	if rate == 0 {
		rate = 3 // 10 Gb/s: 4x SDR, what an unknown link is taken for
	}
	return mtu, rate
}

// endpoints returns the end ports a PathRecord query names on one side
// (by GID and/or LID components), all when it names none; status
// ReqInvalidGID for a GID or LID that names no port.
func (x *index) endpoints(r *request, gidBit, lidBit uint64, gidComp, lidComp int) ([]routing.EndPort, uint16, mad.Status) {
	l := mad.SAPathRecordLayout
	var lid uint16
	if r.mask&lidBit != 0 {
		lid = uint16(l.Components[lidComp].Uint(r.data))
	}
	if r.mask&gidBit != 0 {
		var g mad.GID
		copy(g[:], r.data[l.Components[gidComp].Bit/8:])
		i, ok := x.portByGID(g)
		if !ok {
			return nil, 0, mad.StatusSAReqInvalidGID
		}
		e := x.ends[i]
		if lid != 0 && (lid < e.LID || int(lid) >= int(e.LID)+e.NumLIDs()) {
			return nil, 0, mad.StatusOK // a GID and a LID of different ports: nothing matches
		}
		return []routing.EndPort{e}, lid, mad.StatusOK
	}
	if lid != 0 {
		e, ok := x.owner(lid)
		if !ok {
			return nil, 0, mad.StatusOK // no such LID: no records
		}
		return []routing.EndPort{e}, lid, mad.StatusOK
	}
	return x.byPort, 0, mad.StatusOK
}

// pathRecords answers PathRecord Get and GetTable: for each source and
// destination end port the query names (all when it names none), one
// record per (SLID, DLID) pair of their LMC aliases (the LIDs asked, when
// asked), following the LFTs.
func (s *SA) pathRecords(r *request) reply {
	if s.view == nil || s.view.sn == nil {
		return fail(mad.StatusSANoResources)
	}
	x := s.view
	l := mad.SAPathRecordLayout
	c := func(name string) uint64 { return l.Bit(name) }
	srcs, slid, st := x.endpoints(r, c("SGID"), c("SLID"), 3, 5)
	if st != mad.StatusOK {
		return fail(st)
	}
	q, _ := mad.DecodePathRecord(r.data)
	if r.mask&c("DGID") != 0 && q.DGID.IsMulticast() {
		return s.multicastPaths(r, &q, srcs, slid)
	}
	dsts, dlid, st := x.endpoints(r, c("DGID"), c("DLID"), 2, 4)
	if st != mad.StatusOK {
		return fail(st)
	}
	var out [][]byte
	// Destinations outside, sources inside: the order OpenSM lists a
	// table of paths in.
	for _, dst := range dsts {
		for _, src := range srcs {
			for sk := range src.NumLIDs() {
				sl := src.LID + uint16(sk)
				if slid != 0 && sl != slid {
					continue
				}
				for dk := range dst.NumLIDs() {
					dl := dst.LID + uint16(dk)
					if dlid != 0 && dl != dlid {
						continue
					}
					if rec, ok := s.pathRecord(r, &q, src, dst, sl, dl); ok {
						out = append(out, rec)
					}
				}
			}
		}
	}
	return reply{records: out}
}

// pathRecord builds the record of one (SLID, DLID) pair and checks it
// against the query's other components.
func (s *SA) pathRecord(r *request, q *mad.PathRecordFields, src, dst routing.EndPort, slid, dlid uint16) ([]byte, bool) {
	x := s.view
	l := mad.SAPathRecordLayout
	has := func(name string) bool { return r.mask&l.Bit(name) != 0 }
	hops, ok := x.walk(src, dlid)
	if !ok {
		return nil, false
	}
	self := dst.Node == src.Node && dst.Port == src.Port
	back, _ := x.walk(dst, slid)
	reversible := back != nil || self
	if has("Reversible") && q.Reversible && !reversible {
		return nil, false
	}
	mtu, rate := x.pathProps(src, hops)
	pkey := uint16(0xffff)
	if has("P_Key") {
		pkey = q.PKey | 0x8000
		if !x.hasPKey(src.Node, src.Port, q.PKey, false) || !x.hasPKey(dst.Node, dst.Port, q.PKey, false) {
			return nil, false
		}
	}
	f := mad.PathRecordFields{DGID: x.gid(dst.Node, dst.Port), SGID: x.gid(src.Node, src.Port), DLID: dlid, SLID: slid,
		Reversible: reversible, PKey: pkey, MTUSelector: mad.SelectorExactly, MTU: mtu,
		RateSelector: mad.SelectorExactly, Rate: rate, PacketLifeTimeSelector: mad.SelectorExactly,
		PacketLifeTime: s.cfg.PacketLifeTime}
	if self {
		f.PacketLifeTime = 0 // a port to itself crosses no link (OpenSM gives 0 too)
	}
	if !pathSelectors(r, q, &f) || !x.pathSL(r, q, &f, dst, dlid) {
		return nil, false
	}
	copyAsked(r, q, &f)
	rec := mad.AppendPathRecord(nil, &f)
	// What the query asks of the rest (RawTraffic, Preference …) must
	// match as it is.
	if !l.Match(r.data, rec, r.mask&^pathBuilt) {
		return nil, false
	}
	return rec, true
}

// pathBuilt are the PathRecord components pathRecord decides itself (or
// copies from the query); the query's others must match as they are.
var pathBuilt = func() uint64 {
	l := mad.SAPathRecordLayout
	var m uint64
	for _, n := range []string{"SGID", "DGID", "SLID", "DLID", "MTU", "MTUSelector", "Rate", "RateSelector",
		"PacketLifeTime", "PacketLifeTimeSelector", "P_Key", "Reversible", "NumbPath", "SL", "TClass", "FlowLabel",
		"HopLimit", "ServiceID_MSB", "ServiceID_LSB", "QoSClass"} {
		m |= l.Bit(n)
	}
	return m
}()

// pathSelectors applies the query's MTU, rate and packet lifetime
// selectors (exactly when it gives a value without one) to what the path
// offers, f's: false when the path cannot meet them, else f carries the
// values the selectors pick.
func pathSelectors(r *request, q *mad.PathRecordFields, f *mad.PathRecordFields) bool {
	l := mad.SAPathRecordLayout
	has := func(name string) bool { return r.mask&l.Bit(name) != 0 }
	selector := func(name string, sel uint8) uint8 {
		if has(name) {
			return sel
		}
		return mad.SelectorExactly
	}
	ok := true
	if has("MTU") {
		f.MTU, ok = selectValue(selector("MTUSelector", q.MTUSelector), q.MTU, f.MTU, mtuCodes, mtuLess)
	}
	if ok && has("Rate") {
		f.Rate, ok = selectValue(selector("RateSelector", q.RateSelector), q.Rate, f.Rate, rateCodes(), rateLess)
	}
	if ok && has("PacketLifeTime") {
		switch plt, sel := f.PacketLifeTime, selector("PacketLifeTimeSelector", q.PacketLifeTimeSelector); {
		case sel == mad.SelectorGreater && !(plt > q.PacketLifeTime),
			sel == mad.SelectorLess && !(plt < q.PacketLifeTime),
			sel == mad.SelectorExactly && plt != q.PacketLifeTime:
			ok = false
		}
	}
	return ok
}

// pathSL sets the path's SL: with routes in several VL layers, alias i
// of a CA port travels on SL i (the layer its routes were made
// deadlock-free in, routing.Routes.Layers), and a query naming another
// SL gets no path; else the SL asked, 0 when none is.
func (x *index) pathSL(r *request, q *mad.PathRecordFields, f *mad.PathRecordFields, dst routing.EndPort, dlid uint16) bool {
	asked := r.mask&mad.SAPathRecordLayout.Bit("SL") != 0
	rt := x.v.Routes
	if rt == nil || rt.Layers <= 1 {
		if asked {
			f.SL = q.SL
		}
		return true
	}
	f.SL = uint8(dlid - dst.LID)
	if dst.Port == 0 && x.sn.IsSwitch(dst.Node) {
		f.SL = 0
	}
	return !asked || q.SL == f.SL
}

// copyAsked copies into f the components a path carries as the query
// asks them: traffic class, flow label, hop limit, service ID, QoS class.
func copyAsked(r *request, q *mad.PathRecordFields, f *mad.PathRecordFields) {
	l := mad.SAPathRecordLayout
	has := func(name string) bool { return r.mask&l.Bit(name) != 0 }
	if has("TClass") {
		f.TClass = q.TClass
	}
	if has("FlowLabel") {
		f.FlowLabel = q.FlowLabel
	}
	if has("HopLimit") {
		f.HopLimit = q.HopLimit
	}
	if has("ServiceID_MSB") || has("ServiceID_LSB") {
		f.ServiceID = q.ServiceID
	}
	if has("QoSClass") {
		f.QoSClass = q.QoSClass
	}
}

// mprMaxPaths is the most paths a MultiPathRecord query without NumbPath
// gets: what NumbPath can ask (7 bits), OpenSM's limit too.
const mprMaxPaths = 127

// multiPathRecords answers a MultiPathRecord GetMulti: the PathRecords
// from each of its source GIDs to each of its destination GIDs, each
// (SLID, DLID) alias pair once, under the path properties it asks, at
// most NumbPath of them. The records go in a GetMultiResp table of
// PathRecords.
func (s *SA) multiPathRecords(r *request) reply {
	if s.view == nil || s.view.sn == nil {
		return fail(mad.StatusSANoResources)
	}
	ml, pl := mad.SAMultiPathRecordLayout, mad.SAPathRecordLayout
	q, err := mad.DecodeMultiPathRecord(r.data)
	if err != nil || int(q.SGIDCount)+int(q.DGIDCount) > mad.MultiPathMaxGIDs {
		return fail(mad.StatusSAReqInvalid)
	}
	// As OpenSM: both counts are required, NumbPath is not (at most
	// mprMaxPaths then); a count of 0, or a rate or MTU that is none, is
	// ReqInvalid; a multicast or unknown GID ReqInvalidGID.
	need := ml.Bit("SGIDCount") | ml.Bit("DGIDCount")
	if r.mask&need != need {
		return fail(mad.StatusSAReqInsufficient)
	}
	sel := func(s, v string) bool { return r.mask&ml.Bit(s) != 0 && r.mask&ml.Bit(v) != 0 }
	if q.SGIDCount == 0 || q.DGIDCount == 0 || sel("RateSelector", "Rate") && !rateValid(q.Rate) ||
		sel("MTUSelector", "MTU") && !mtuValid(q.MTU) {
		return fail(mad.StatusSAReqInvalid)
	}
	limit := mprMaxPaths
	if r.mask&ml.Bit("NumbPath") != 0 {
		limit = int(q.NumbPath & 0x7f)
	}
	for _, g := range q.GIDs {
		if _, ok := s.view.portByGID(g); !ok {
			return fail(mad.StatusSAReqInvalidGID)
		}
	}
	// The path properties asked carry over to a PathRecord query.
	pr := mad.PathRecordFields{RawTraffic: q.RawTraffic, FlowLabel: q.FlowLabel, HopLimit: q.HopLimit, TClass: q.TClass,
		Reversible: q.Reversible, PKey: q.PKey, QoSClass: q.QoSClass, SL: q.SL, MTUSelector: q.MTUSelector, MTU: q.MTU,
		RateSelector: q.RateSelector, Rate: q.Rate, PacketLifeTimeSelector: q.PacketLifeTimeSelector,
		PacketLifeTime: q.PacketLifeTime, ServiceID: q.ServiceID}
	var mask uint64
	for _, name := range []string{"RawTraffic", "FlowLabel", "HopLimit", "TClass", "Reversible", "P_Key", "QoSClass",
		"SL", "MTUSelector", "MTU", "RateSelector", "Rate", "PacketLifeTimeSelector", "PacketLifeTime"} {
		if r.mask&ml.Bit(name) != 0 {
			mask |= pl.Bit(name)
		}
	}
	var out [][]byte
	for _, sg := range q.GIDs[:q.SGIDCount] {
		for _, dg := range q.GIDs[q.SGIDCount:] {
			p := pr
			p.SGID, p.DGID = sg, dg
			sub := &request{from: r.from, hdr: r.hdr, method: mad.MethodGetTable, attr: mad.AttrSAPathRecord,
				mask: mask | pl.Bit("SGID") | pl.Bit("DGID"), data: mad.AppendPathRecord(nil, &p)}
			rep := s.pathRecords(sub)
			if rep.status != mad.StatusOK {
				return rep
			}
			out = append(out, rep.records...)
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return reply{records: out, size: pl.Size}
}

// multicastPaths answers a PathRecord query whose DGID is a multicast
// group's: from each source port asked, the group's path (its MLID, SL,
// MTU, rate, P_Key and lifetime); not reversible. An unknown group has no
// paths.
func (s *SA) multicastPaths(r *request, q *mad.PathRecordFields, srcs []routing.EndPort, slid uint16) reply {
	g := s.mc.groups[q.DGID]
	if g == nil {
		return reply{}
	}
	l := mad.SAPathRecordLayout
	var out [][]byte
	for _, src := range srcs {
		for k := range src.NumLIDs() {
			sl := src.LID + uint16(k)
			if slid != 0 && sl != slid {
				continue
			}
			f := mad.PathRecordFields{DGID: g.rec.MGID, SGID: s.view.gid(src.Node, src.Port), DLID: g.rec.MLID, SLID: sl,
				FlowLabel: g.rec.FlowLabel, HopLimit: g.rec.HopLimit, TClass: g.rec.TClass, PKey: g.rec.PKey, SL: g.rec.SL,
				MTUSelector: mad.SelectorExactly, MTU: g.rec.MTU, RateSelector: mad.SelectorExactly, Rate: g.rec.Rate,
				PacketLifeTimeSelector: mad.SelectorExactly, PacketLifeTime: g.rec.PacketLifeTime}
			rec := mad.AppendPathRecord(nil, &f)
			// Everything asked must match what the group is, selectors
			// read as exact.
			mask := r.mask &^ (l.Bit("SGID") | l.Bit("DGID") | l.Bit("SLID") | l.Bit("MTUSelector") |
				l.Bit("RateSelector") | l.Bit("PacketLifeTimeSelector") | l.Bit("NumbPath"))
			if l.Match(r.data, rec, mask) {
				out = append(out, rec)
			}
		}
	}
	return reply{records: out}
}
