package sa

import (
	"fmt"
	"slices"

	"ibfab/sm"
	"ibfab/sm/routing"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Multicast (IBA 15.2.5.17, 14.2.5.12). A group is an MGID with an MLID
// and the path properties every member must meet; its members are port
// GIDs with join states. Each group's members that receive (full and
// non-members) are joined by a tree over the switches, and each switch's
// MFT entry for the MLID holds the tree's ports there; blocks are sent to
// the switches only when they change, and the tables are kept by switch
// GUID across sweeps.

// The IPoIB broadcast group of the default partition, as OpenSM creates
// it at start (RFC 4391: ff12:401b:<P_Key>::ffff:ffff, Q_Key 0x0B1B).
var broadcastMGID = mad.GID{0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}

const (
	broadcastQKey = 0x0b1b
	mlidFirst     = mad.MulticastLIDBase
	mlidLast      = 0xfffe // 0xFFFF is the permissive LID
)

// group is one multicast group.
type group struct {
	rec     mad.MCMemberRecordFields // the group's properties (PortGID, JoinState unused)
	members map[mad.GID]uint8        // join states by port GID
	proxy   map[mad.GID]bool
	// bySM: created by the SA itself (the broadcast group), kept when
	// its last member leaves.
	bySM bool
}

// mftKey names one MFT block of a switch: block (32 MLIDs) and position
// (16 ports).
type mftKey struct {
	guid     uint64
	block    uint16
	position uint8
}

// mcast is the SA's multicast state.
type mcast struct {
	sa     *SA
	groups map[mad.GID]*group
	// want is each switch's MFT as the trees need it, written what the
	// switches hold (as set), pending the blocks to send.
	want, written map[mftKey][mad.MFTEntriesPerBlock]uint16
	pending       map[mftKey]bool
	inFlight      map[mftKey]bool
}

func newMcast(s *SA) *mcast {
	return &mcast{sa: s, groups: map[mad.GID]*group{}, want: map[mftKey][mad.MFTEntriesPerBlock]uint16{},
		written: map[mftKey][mad.MFTEntriesPerBlock]uint16{}, pending: map[mftKey]bool{}, inFlight: map[mftKey]bool{}}
}

// createBroadcast creates the IPoIB broadcast group of partition 0xFFFF:
// MTU 2048, 10 Gb/s, SL 0, link-local scope, as OpenSM's defaults are.
func (m *mcast) createBroadcast() {
	mlid, _ := m.freeMLID()
	m.groups[broadcastMGID] = &group{rec: mad.MCMemberRecordFields{MGID: broadcastMGID, QKey: broadcastQKey,
		MLID: mlid, MTUSelector: mad.SelectorExactly, MTU: uint8(mad.MTU2048), PKey: 0xffff,
		RateSelector: mad.SelectorExactly, Rate: 3, PacketLifeTimeSelector: mad.SelectorExactly,
		PacketLifeTime: m.sa.cfg.PacketLifeTime, Scope: 2}, members: map[mad.GID]uint8{}, proxy: map[mad.GID]bool{},
		bySM: true}
}

// freeMLID returns the lowest MLID no group holds.
func (m *mcast) freeMLID() (uint16, bool) {
	used := map[uint16]bool{}
	for _, g := range m.groups {
		used[g.rec.MLID] = true
	}
	for l := uint32(mlidFirst); l <= mlidLast; l++ {
		if !used[uint16(l)] {
			return uint16(l), true
		}
	}
	return 0, false
}

// recordOf returns the MCMemberRecord of member gid of g.
func (g *group) recordOf(gid mad.GID) []byte {
	f := g.rec
	f.PortGID, f.JoinState, f.ProxyJoin = gid, g.members[gid], g.proxy[gid]
	return mad.AppendMCMemberRecord(nil, &f)
}

// mcMemberRecord answers MCMemberRecord Set (join or create), Delete
// (leave) and Get/GetTable (members, or groups with a zero PortGID).
func (s *SA) mcMemberRecord(r *request) reply {
	l := mad.SAMCMemberRecordLayout
	q, _ := mad.DecodeMCMemberRecord(r.data)
	// A rate or MTU that is none, with its selector, is ReqInvalid
	// whatever the method (OpenSM checks it first).
	sel := func(s, v string) bool { return r.mask&l.Bit(s) != 0 && r.mask&l.Bit(v) != 0 }
	if sel("RateSelector", "Rate") && !rateValid(q.Rate) || sel("MTUSelector", "MTU") && !mtuValid(q.MTU) {
		return fail(mad.StatusSAReqInvalid)
	}
	switch r.method {
	case mad.MethodGet, mad.MethodGetTable:
		var out [][]byte
		for _, mg := range s.mc.sorted() {
			if len(mg.members) == 0 {
				// A group with no member is one record, PortGID zero
				// and no join state, as OpenSM lists it.
				if rec := mg.recordOf(mad.GID{}); l.Match(r.data, rec, r.mask) {
					out = append(out, rec)
				}
				continue
			}
			for _, gid := range sortedGIDs(mg.members) {
				if rec := mg.recordOf(gid); l.Match(r.data, rec, r.mask) {
					out = append(out, rec)
				}
			}
		}
		return reply{records: out}
	case mad.MethodSet:
		return s.mc.join(r, &q)
	case mad.MethodDelete:
		return s.mc.leave(r, &q)
	}
	return fail(mad.StatusMethodAttrUnsupported)
}

func sortedGIDs(m map[mad.GID]uint8) []mad.GID {
	out := make([]mad.GID, 0, len(m))
	for g := range m {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b mad.GID) int { return slices.Compare(a[:], b[:]) })
	return out
}

func (m *mcast) sorted() []*group {
	out := make([]*group, 0, len(m.groups))
	for _, g := range m.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *group) int { return int(a.rec.MLID) - int(b.rec.MLID) })
	return out
}

// member checks the port a join or leave names: it must exist, and share
// a partition with the requester; q's PortGID becomes the port's GID.
func (m *mcast) member(r *request, q *mad.MCMemberRecordFields) (routing.EndPort, mad.Status) {
	x := m.sa.view
	if x == nil || x.sn == nil {
		return routing.EndPort{}, mad.StatusSANoResources
	}
	i, ok := x.portByGID(q.PortGID)
	if !ok {
		return routing.EndPort{}, mad.StatusSAReqInvalidGID
	}
	e := x.ends[i]
	// A requester may join or leave for another port it shares a
	// partition with, ProxyJoin or not: OpenSM 3.3 takes such requests
	// (ibsim's mcast_storm with a GUID file makes them).
	if from, ok := x.owner(r.from.LID); ok && (from.Node != e.Node || from.Port != e.Port) && !x.sharePKey(from, e) {
		return routing.EndPort{}, mad.StatusSAReqInvalid
	}
	// Members are kept by their port's own GID, whatever prefix the
	// request wrote (portByGID).
	q.PortGID = x.gid(e.Node, e.Port)
	return e, mad.StatusOK
}

// join answers a Set: create the group when its MGID is unknown (or zero:
// the SA picks one), else check the request against the group, then add
// the join states.
func (m *mcast) join(r *request, q *mad.MCMemberRecordFields) reply {
	l := mad.SAMCMemberRecordLayout
	need := l.Bit("MGID") | l.Bit("PortGID") | l.Bit("JoinState")
	if r.mask&need != need {
		return fail(mad.StatusSAReqInsufficient)
	}
	if q.JoinState == 0 || !mad.JoinStateValid(q.JoinState) {
		return fail(mad.StatusSAReqInvalid)
	}
	e, st := m.member(r, q)
	if st != mad.StatusOK {
		return fail(st)
	}
	g := m.groups[q.MGID]
	if g == nil {
		g, st = m.create(r, q, e)
	} else {
		st = m.admit(r, q, g, e)
	}
	if st != mad.StatusOK {
		return fail(st)
	}
	g.members[q.PortGID] |= q.JoinState
	g.proxy[q.PortGID] = q.ProxyJoin
	m.rebuild()
	return reply{records: [][]byte{g.recordOf(q.PortGID)}}
}

// create makes the group a join names, for its first member e: the
// request must give every component a group is made of, its creator
// must be a full member of it (or send-only full) holding its P_Key, and
// the MTU and rate it asks must be what e's link carries.
func (m *mcast) create(r *request, q *mad.MCMemberRecordFields, e routing.EndPort) (*group, mad.Status) {
	l := mad.SAMCMemberRecordLayout
	has := func(name string) bool { return r.mask&l.Bit(name) != 0 }
	x := m.sa.view
	create := l.Bit("MGID") | l.Bit("PortGID") | l.Bit("JoinState") | l.Bit("Q_Key") | l.Bit("TClass") |
		l.Bit("P_Key") | l.Bit("FlowLabel") | l.Bit("SL")
	switch {
	case r.mask&create != create:
		return nil, mad.StatusSAReqInsufficient
	case !q.MGID.IsZero() && !validMGID(q.MGID):
		return nil, mad.StatusSAReqInvalid
	case q.JoinState&mad.JoinFullMember == 0 && q.JoinState&mad.JoinSendOnlyFull == 0:
		return nil, mad.StatusSAReqInvalid // only a full member creates
	case !x.hasPKey(e.Node, e.Port, q.PKey, false):
		return nil, mad.StatusSAReqInvalid
	case has("MLID") && q.MLID != 0:
		return nil, mad.StatusSAReqInvalid // the SA assigns MLIDs
	}
	mtu, rate := x.pathProps(e, nil)
	rec := *q
	var okMTU, okRate bool
	rec.MTU, okMTU = groupValue(r, "MTUSelector", "MTU", q.MTUSelector, q.MTU, mtu, mtuCodes, mtuLess)
	rec.Rate, okRate = groupValue(r, "RateSelector", "Rate", q.RateSelector, q.Rate, rate, rateCodes(), rateLess)
	if !okMTU || !okRate {
		return nil, mad.StatusSAReqInvalid
	}
	rec.MTUSelector, rec.RateSelector, rec.PacketLifeTimeSelector = mad.SelectorExactly, mad.SelectorExactly, mad.SelectorExactly
	if !has("PacketLifeTime") {
		rec.PacketLifeTime = m.sa.cfg.PacketLifeTime
	}
	if !has("Scope") {
		rec.Scope = q.MGID[1] & 0x0f
	}
	rec.PKey |= 0x8000
	mlid, free := m.freeMLID()
	if !free {
		return nil, mad.StatusSANoResources
	}
	rec.MLID = mlid
	if q.MGID.IsZero() {
		rec.MGID = mad.GID{0xff, 0x12, 0xa0, 0x1b, byte(rec.PKey >> 8), byte(rec.PKey), 0, 0, 0, 0, 0, 0,
			0, 0, byte(mlid >> 8), byte(mlid)}
	}
	g := &group{rec: rec, members: map[mad.GID]uint8{}, proxy: map[mad.GID]bool{}}
	m.groups[rec.MGID] = g
	m.sa.notify(m.sa.smNotice(TrapMcGroupCreated, rec.MGID), rec.MGID)
	return g, mad.StatusOK
}

// validMGID reports whether a client may create a group of MGID g (IBA
// 4.1.1, OpenSM's checks): a multicast GID of a scope that is not
// reserved, and but for IPoIB's signatures no reserved flag bits and no
// SA-assigned signature (0xA01B) of link-local scope.
func validMGID(g mad.GID) bool {
	if !g.IsMulticast() || g[1]&0x0f == 0 {
		return false
	}
	switch sig := uint16(g[2])<<8 | uint16(g[3]); sig {
	case 0x401b, 0x601b:
		return true
	case 0xa01b:
		if g[1]&0x0f == 2 {
			return false
		}
	}
	return g[1]&0xe0 == 0
}

// groupValue returns the MTU or rate a new group gets: what the port
// has, or under the selector the request gives (exactly when it gives
// none) the value asked; false when the port cannot meet it.
func groupValue(r *request, selName, valName string, sel, want, have uint8, values []uint8,
	less func(a, b uint8) bool) (uint8, bool) {
	l := mad.SAMCMemberRecordLayout
	if r.mask&l.Bit(valName) == 0 {
		return have, true
	}
	s := uint8(mad.SelectorExactly)
	if r.mask&l.Bit(selName) != 0 {
		s = sel
	}
	return selectValue(s, want, have, values, less)
}

// admit checks a join to the existing group g: what the request names
// must be what the group is, its MTU and rate selectors must hold of the
// group's, and a receiving member's port must carry the group's MTU and
// rate and hold its P_Key.
func (m *mcast) admit(r *request, q *mad.MCMemberRecordFields, g *group, e routing.EndPort) mad.Status {
	l := mad.SAMCMemberRecordLayout
	gr := mad.AppendMCMemberRecord(nil, &g.rec)
	check := r.mask & (l.Bit("Q_Key") | l.Bit("P_Key") | l.Bit("SL") | l.Bit("FlowLabel") | l.Bit("TClass") |
		l.Bit("HopLimit") | l.Bit("Scope") | l.Bit("MLID"))
	if !l.Match(r.data, gr, check) {
		return mad.StatusSAReqInvalid
	}
	if !selectorHolds(r, "MTUSelector", "MTU", q.MTUSelector, q.MTU, g.rec.MTU, mtuLess) ||
		!selectorHolds(r, "RateSelector", "Rate", q.RateSelector, q.Rate, g.rec.Rate, rateLess) {
		return mad.StatusSAReqInvalid
	}
	x := m.sa.view
	mtu, rate := x.pathProps(e, nil)
	if q.JoinState&(mad.JoinFullMember|mad.JoinNonMember) != 0 && (mtu < g.rec.MTU || rateLess(rate, g.rec.Rate)) {
		return mad.StatusSAReqInvalid // the port cannot carry the group's traffic
	}
	if !x.hasPKey(e.Node, e.Port, g.rec.PKey, false) {
		return mad.StatusSAReqInvalid
	}
	return mad.StatusOK
}

// selectorHolds reports whether a group's value grp meets the request's
// selector (exactly when it gives none) of the value it asks, when it
// asks one.
func selectorHolds(r *request, selName, valName string, sel, want, grp uint8, less func(a, b uint8) bool) bool {
	l := mad.SAMCMemberRecordLayout
	if r.mask&l.Bit(valName) == 0 {
		return true
	}
	s := uint8(mad.SelectorExactly)
	if r.mask&l.Bit(selName) != 0 {
		s = sel
	}
	switch s {
	case mad.SelectorLess:
		return less(grp, want)
	case mad.SelectorGreater:
		return less(want, grp)
	case mad.SelectorExactly:
		return grp == want
	}
	return true // largest available: any
}

// leave answers a Delete: the join states given leave the member; a
// member with none left goes, and a group with no member left is deleted
// unless the SA made it.
func (m *mcast) leave(r *request, q *mad.MCMemberRecordFields) reply {
	l := mad.SAMCMemberRecordLayout
	need := l.Bit("MGID") | l.Bit("PortGID") | l.Bit("JoinState")
	if r.mask&need != need {
		return fail(mad.StatusSAReqInsufficient)
	}
	g := m.groups[q.MGID]
	if g == nil {
		return fail(mad.StatusSAReqInvalid)
	}
	if _, st := m.member(r, q); st != mad.StatusOK {
		return fail(st)
	}
	states, ok := g.members[q.PortGID]
	if !ok || states&q.JoinState == 0 || states|q.JoinState != states {
		return fail(mad.StatusSAReqInvalid) // not a member in all those states
	}
	// What is left stays when it is a full membership, or another full
	// member keeps the group; else the member goes (OpenSM's rule). The
	// answer carries the join states left.
	left := states &^ q.JoinState
	othersFull := false
	for gid, st := range g.members {
		othersFull = othersFull || (gid != q.PortGID && st&mad.JoinFullMember != 0)
	}
	if left&mad.JoinFullMember != 0 || (left != 0 && othersFull) {
		g.members[q.PortGID] = left
	} else {
		delete(g.members, q.PortGID)
		delete(g.proxy, q.PortGID)
	}
	rec := g.recordOf(q.PortGID)
	if len(g.members) == 0 && !g.bySM {
		delete(m.groups, q.MGID)
		m.sa.notify(m.sa.smNotice(TrapMcGroupDeleted, q.MGID), q.MGID)
	}
	m.rebuild()
	return reply{records: [][]byte{rec}}
}

// forgetSwitches forgets what was written to the switches that are not
// in both views: one that left may come back reset, with an empty MFT,
// and gets its blocks again.
func (m *mcast) forgetSwitches(old, cur *index) {
	in := func(x *index) map[uint64]bool {
		set := map[uint64]bool{}
		if x != nil && x.sn != nil {
			for _, i := range x.sn.Switches() {
				set[x.sn.Topo.Node(i).GUID] = true
			}
		}
		return set
	}
	was, is := in(old), in(cur)
	for k := range m.written {
		if !was[k.guid] || !is[k.guid] {
			delete(m.written, k)
		}
	}
}

// rebuild drops members whose port left the subnet, recomputes every
// group's tree and the MFT blocks they need, and marks those that differ
// from what the switches hold.
func (m *mcast) rebuild() {
	x := m.sa.view
	if x == nil || x.sn == nil {
		return
	}
	for mgid, g := range m.groups {
		for gid := range g.members {
			if _, ok := x.byGID[gid]; !ok {
				delete(g.members, gid)
				delete(g.proxy, gid)
			}
		}
		if len(g.members) == 0 && !g.bySM {
			delete(m.groups, mgid)
			m.sa.notify(m.sa.smNotice(TrapMcGroupDeleted, mgid), mgid)
		}
	}
	want := map[mftKey][mad.MFTEntriesPerBlock]uint16{}
	for _, g := range m.groups {
		for sw, ports := range m.tree(g) {
			n := x.sn.Topo.Node(sw)
			off := int(g.rec.MLID - mlidFirst)
			blk := uint16(off / mad.MFTEntriesPerBlock)
			for _, p := range ports {
				k := mftKey{n.GUID, blk, uint8(p / 16)}
				e := want[k]
				e[off%mad.MFTEntriesPerBlock] |= 1 << (p % 16)
				want[k] = e
			}
		}
	}
	// Blocks that go empty are written too: the switch must forget the
	// MLID.
	for k := range m.written {
		if _, ok := want[k]; !ok {
			want[k] = [mad.MFTEntriesPerBlock]uint16{}
		}
	}
	m.want = want
	for k, e := range want {
		if w, ok := m.written[k]; !ok || w != e {
			m.pending[k] = true
		} else {
			delete(m.pending, k)
		}
	}
}

// tree returns the MFT ports of g's tree at each switch: a shortest-path
// tree over the active switch links from the switch of the first
// receiving member (by GID order), pruned to the switches on the way to
// a member's switch, plus each switch's ports to receiving members. Send-
// only members need no entry: their packets enter the tree at their
// switch, which forwards to the tree's ports there.
func (m *mcast) tree(g *group) map[int][]int {
	x := m.sa.view
	t := x.sn.Topo
	memberPorts := map[int][]int{} // switch -> ports to CA members that receive
	var senders []int
	for _, gid := range sortedGIDs(g.members) {
		e := x.ends[x.byGID[gid]]
		if e.Switch < 0 {
			continue
		}
		if g.members[gid]&(mad.JoinFullMember|mad.JoinNonMember) == 0 {
			senders = append(senders, e.Switch)
			continue
		}
		if e.Port == 0 {
			memberPorts[e.Switch] = append(memberPorts[e.Switch], 0)
		} else {
			memberPorts[e.Switch] = append(memberPorts[e.Switch], e.SwitchPort)
		}
	}
	if len(memberPorts) == 0 {
		return nil
	}
	keys := make([]int, 0, len(memberPorts))
	for k := range memberPorts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	root := keys[0]
	// BFS over active switch-to-switch links.
	parent := map[int][2]int{root: {-1, 0}} // switch -> (parent switch, port towards parent)
	queue := []int{root}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for p := 1; p <= t.Node(s).NumPorts; p++ {
			peer, ok := t.Peer(topologies.PortRef{Node: s, Port: p})
			if !ok || !x.sn.IsSwitch(peer.Node) || peer.Node == s {
				continue
			}
			if pi, ok := x.portInfo(s, p); ok && pi.PortState != mad.PortStateActive {
				continue
			}
			if _, seen := parent[peer.Node]; seen {
				continue
			}
			parent[peer.Node] = [2]int{s, peer.Port}
			queue = append(queue, peer.Node)
		}
	}
	out := map[int][]int{}
	add := func(sw, port int) {
		if !slices.Contains(out[sw], port) {
			out[sw] = append(out[sw], port)
		}
	}
	// Connect each member switch (and each sender's switch) to the root.
	for _, sw := range append(keys, senders...) {
		for cur := sw; cur != root; {
			pr, ok := parent[cur]
			if !ok {
				break // not reachable: its members stay apart
			}
			up := pr[1]
			add(cur, up)
			// the parent's port down to cur
			for p := 1; p <= t.Node(pr[0]).NumPorts; p++ {
				if peer, ok := t.Peer(topologies.PortRef{Node: pr[0], Port: p}); ok && peer.Node == cur && peer.Port == up {
					add(pr[0], p)
				}
			}
			cur = pr[0]
		}
	}
	for sw, ports := range memberPorts {
		for _, p := range ports {
			add(sw, p)
		}
	}
	return out
}

// mftRecords lists the MFT blocks the trees need, by switch LID.
func (m *mcast) mftRecords() [][]byte {
	x := m.sa.view
	if x == nil || x.sn == nil {
		return nil
	}
	lids := map[uint64]uint16{}
	for _, i := range x.sn.Switches() {
		lids[x.sn.Topo.Node(i).GUID] = x.lidOf(i, 0)
	}
	keys := make([]mftKey, 0, len(m.want))
	for k, e := range m.want {
		if e != ([mad.MFTEntriesPerBlock]uint16{}) && lids[k.guid] != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b mftKey) int {
		if c := int(lids[a.guid]) - int(lids[b.guid]); c != 0 {
			return c
		}
		if a.block != b.block {
			return int(a.block) - int(b.block)
		}
		return int(a.position) - int(b.position)
	})
	var out [][]byte
	for _, k := range keys {
		f := mad.MFTRecordFields{LID: lids[k.guid], Position: k.position, BlockNum: k.block,
			MFT: mad.MulticastForwardingTableFields{PortMasks: m.want[k]}}
		out = append(out, mad.AppendMFTRecord(nil, &f))
	}
	return out
}

// TakeSets returns the MFT blocks to write: those that differ from what
// the switches hold and are not already on their way.
func (s *SA) TakeSets() []sm.SASet {
	s.resendReports() // the SM calls TakeSets between sweeps: the SA's tick
	m := s.mc
	x := s.view
	if x == nil || x.sn == nil || len(m.pending) == 0 {
		return nil
	}
	node := map[uint64]int{}
	for _, i := range x.sn.Switches() {
		node[x.sn.Topo.Node(i).GUID] = i
	}
	keys := make([]mftKey, 0, len(m.pending))
	for k := range m.pending {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b mftKey) int {
		return slices.Compare([]uint64{a.guid, uint64(a.block), uint64(a.position)},
			[]uint64{b.guid, uint64(b.block), uint64(b.position)})
	})
	var out []sm.SASet
	for _, k := range keys {
		i, ok := node[k.guid]
		if !ok || m.inFlight[k] {
			continue
		}
		e := m.want[k]
		f := mad.MulticastForwardingTableFields{PortMasks: e}
		out = append(out, sm.SASet{Node: i, Attr: mad.AttrMulticastFwdTbl, Mod: mad.MFTModifier(k.block, k.position),
			Data: mad.AppendMulticastForwardingTable(nil, &f), Tag: mftSet{k, e}})
		m.inFlight[k] = true
		delete(m.pending, k)
	}
	return out
}

// mftSet is the tag of an MFT block Set.
type mftSet struct {
	key     mftKey
	entries [mad.MFTEntriesPerBlock]uint16
}

// SetDone records the outcome of a Set TakeSets asked for: the block is
// written, or pending again.
func (s *SA) SetDone(set sm.SASet, err error) {
	t, ok := set.Tag.(mftSet)
	if !ok {
		return
	}
	m := s.mc
	delete(m.inFlight, t.key)
	if err != nil {
		// Tried again after the next sweep (rebuild), not at once: a
		// switch that refuses would be asked without end.
		s.stats.MFTFails++
		return
	}
	s.stats.MFTSets++
	m.written[t.key] = t.entries
	if m.want[t.key] != t.entries {
		m.pending[t.key] = true
	}
}

// Groups describes the multicast groups, for logs and tests.
func (s *SA) Groups() []string {
	var out []string
	for _, g := range s.mc.sorted() {
		out = append(out, fmt.Sprintf("%v mlid %#04x members %d", g.rec.MGID, g.rec.MLID, len(g.members)))
	}
	return out
}
