package sa

import (
	"cmp"
	"math/bits"
	"slices"

	"ibfab/sm"
	"ibfab/sm/routing"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// index is a View with the lookups the SA needs: end ports by LID and by
// GID, and the records built so far (each table is built at its first
// query and kept until the next Update).
type index struct {
	v     *sm.View
	sn    *sm.Subnet
	ends  []routing.EndPort
	byGID map[mad.GID]int // end port index by port GID
	// byGUID is the end port index by port GUID: what a requester's GID
	// is looked up by (portByGID).
	byGUID map[uint64]int
	// byNodeGUID is the node index by GUID, built at its first use.
	byNodeGUID map[uint64]int
	// nodeOrder is the nodes, byNode the end ports by node and byPort
	// by port GUID, in the order OpenSM lists them (newIndex).
	nodeOrder      []int
	byNode, byPort []routing.EndPort
	tables         map[mad.AttrID][][]byte
	// qos is the VLArbitration and SLtoVL records by node, sl2vl the
	// SLtoVL tables written, each built at its first use (qos.go).
	qos   map[qosKey][][]byte
	sl2vl map[sl2vlKey][]byte
}

func newIndex(v *sm.View) *index {
	x := &index{v: v, sn: v.Subnet, byGID: map[mad.GID]int{}, byGUID: map[uint64]int{}, tables: map[mad.AttrID][][]byte{}}
	if x.sn == nil {
		return x
	}
	x.ends = x.sn.EndPorts()
	for i, e := range x.ends {
		x.byGID[x.gid(e.Node, e.Port)] = i
		x.byGUID[x.portGUID(e.Node, e.Port)] = i
	}
	// OpenSM walks its node and port tables in the order of their
	// GUIDs as the host reads the network-order bytes (byte-swapped on
	// x86); so do the tables here, so that a truncated answer starts
	// with the same records.
	for i := range x.sn.Topo.Nodes() {
		x.nodeOrder = append(x.nodeOrder, i)
	}
	slices.SortStableFunc(x.nodeOrder, func(a, b int) int {
		return cmp.Compare(bits.ReverseBytes64(x.sn.Topo.Node(a).GUID), bits.ReverseBytes64(x.sn.Topo.Node(b).GUID))
	})
	rank := make([]int, len(x.nodeOrder))
	for r, i := range x.nodeOrder {
		rank[i] = r
	}
	x.byNode = slices.Clone(x.ends)
	slices.SortStableFunc(x.byNode, func(a, b routing.EndPort) int {
		return cmp.Or(cmp.Compare(rank[a.Node], rank[b.Node]), cmp.Compare(a.Port, b.Port))
	})
	x.byPort = slices.Clone(x.ends)
	slices.SortStableFunc(x.byPort, func(a, b routing.EndPort) int {
		return cmp.Compare(bits.ReverseBytes64(x.portGUID(a.Node, a.Port)), bits.ReverseBytes64(x.portGUID(b.Node, b.Port)))
	})
	return x
}

// switches returns the switches in node order.
func (x *index) switches() []int {
	var out []int
	for _, i := range x.nodeOrder {
		if x.sn.IsSwitch(i) {
			out = append(out, i)
		}
	}
	return out
}

// portGUID returns the GUID of port p of node i: a CA port's own, a
// switch's node GUID for every port.
func (x *index) portGUID(i, p int) uint64 {
	n := x.sn.Topo.Node(i)
	if n.Type != topologies.Switch && p < len(n.Ports) && n.Ports[p].GUID != 0 {
		return n.Ports[p].GUID
	}
	return n.GUID
}

// gid returns the default GID of port p of node i: its subnet prefix and
// port GUID.
func (x *index) gid(i, p int) mad.GID {
	prefix := mad.DefaultGIDPrefix
	if pi, ok := x.portInfo(i, p); ok && pi.GIDPrefix != 0 {
		prefix = pi.GIDPrefix
	}
	return mad.MakeGID(prefix, x.portGUID(i, p))
}

// portByGID returns the end port a requester's unicast GID names, as
// OpenSM finds it: by the interface ID alone when the prefix is link-local
// (fe80::/10, whatever its other bits: libibumad's clients send the
// default prefix byte-swapped, and real HCAs see that too), else when
// the prefix is the port's own.
func (x *index) portByGID(g mad.GID) (int, bool) {
	if g.IsMulticast() {
		return 0, false
	}
	i, ok := x.byGUID[g.GUID()]
	if !ok {
		return 0, false
	}
	if linkLocal := g[0] == 0xfe && g[1]&0xc0 == 0x80; !linkLocal && x.gid(x.ends[i].Node, x.ends[i].Port) != g {
		return 0, false
	}
	return i, true
}

// portInfo returns what the SM knows of port p of node i.
func (x *index) portInfo(i, p int) (mad.PortInfoFields, bool) {
	if i < 0 || i >= len(x.sn.Have) || p < 0 || p >= len(x.sn.Have[i]) || !x.sn.Have[i][p] {
		return mad.PortInfoFields{}, false
	}
	return x.sn.PortInfo[i][p], true
}

// lidOf returns the LID that names port p of node i in records: a
// switch's port 0 LID for each of its ports.
func (x *index) lidOf(i, p int) uint16 {
	if x.sn.IsSwitch(i) {
		p = 0
	}
	if p < len(x.sn.LID[i]) {
		return x.sn.LID[i][p]
	}
	return 0
}

// owner returns the end port that answers to lid.
func (x *index) owner(lid uint16) (routing.EndPort, bool) {
	i, ok := x.sn.Owner(lid)
	if !ok {
		return routing.EndPort{}, false
	}
	return x.ends[i], true
}

// tables returns the record builders, by attribute.
func (s *SA) tables() map[mad.AttrID]func(*request) [][]byte {
	return map[mad.AttrID]func(*request) [][]byte{
		mad.AttrSANodeRecord:       s.cached(mad.AttrSANodeRecord, (*index).nodeRecords),
		mad.AttrSAPortInfoRecord:   s.portInfoRecords,
		mad.AttrSASwitchInfoRecord: s.cached(mad.AttrSASwitchInfoRecord, (*index).switchInfoRecords),
		mad.AttrSALFTRecord:        s.cached(mad.AttrSALFTRecord, (*index).lftRecords),
		mad.AttrSAMFTRecord:        func(*request) [][]byte { return s.mc.mftRecords() },
		mad.AttrSALinkRecord:       s.cached(mad.AttrSALinkRecord, (*index).linkRecords),
		mad.AttrSASMInfoRecord:     s.smInfoRecords,
		mad.AttrSAGUIDInfoRecord:   s.cached(mad.AttrSAGUIDInfoRecord, (*index).guidInfoRecords),
		mad.AttrSAPKeyTableRecord:  s.pkeyTableRecords,
		mad.AttrSASLtoVLRecord:     s.qosRecords(mad.AttrSASLtoVLRecord, (*index).sl2vlOf),
		mad.AttrSAVLArbRecord:      s.qosRecords(mad.AttrSAVLArbRecord, (*index).vlArbOf),
		mad.AttrSAInformInfoRecord: s.informInfoRecords,
	}
}

// cached builds a table once per view.
func (s *SA) cached(attr mad.AttrID, build func(*index) [][]byte) func(*request) [][]byte {
	return func(*request) [][]byte {
		if s.view == nil || s.view.sn == nil {
			return nil
		}
		t, ok := s.view.tables[attr]
		if !ok {
			t = build(s.view)
			s.view.tables[attr] = t
		}
		return t
	}
}

// trusted reports whether the request carries the SM_Key, which shows
// M_Keys and SM_Keys and P_Key tables (as OpenSM's sa_key, an SM_Key of 0
// trusts every requester).
func (s *SA) trusted(r *request) bool { return r.hdr.SMKey() == s.cfg.SMKey }

// nodeRecords: one per end port, as OpenSM gives them: a CA's per port
// with a LID, a switch's once (port 0).
func (x *index) nodeRecords() [][]byte {
	var out [][]byte
	for _, e := range x.byNode {
		n := x.sn.Topo.Node(e.Node)
		ni := mad.NodeInfoFields{BaseVersion: 1, ClassVersion: 1, NodeType: mad.NodeType(n.Type),
			NumPorts: uint8(n.NumPorts), SystemImageGUID: n.SystemImageGUID, NodeGUID: n.GUID,
			PortGUID: x.portGUID(e.Node, e.Port), DeviceID: uint16(n.DeviceID), LocalPortNum: uint8(e.Port),
			VendorID: n.VendorID}
		if e.Node < len(x.sn.PartitionCap) {
			ni.PartitionCap = x.sn.PartitionCap[e.Node]
		}
		out = append(out, mad.AppendNodeRecord(nil, &mad.NodeRecordFields{LID: e.LID, NodeInfo: ni,
			NodeDescription: n.Description}))
	}
	return out
}

// portInfoRecords: every port whose PortInfo the SM holds, a switch's
// under its port 0 LID (a port that is down with its states alone, as
// OpenSM's); M_Keys hidden from untrusted requesters.
func (s *SA) portInfoRecords(r *request) [][]byte {
	if s.view == nil || s.view.sn == nil {
		return nil
	}
	x := s.view
	trusted := s.trusted(r)
	var out [][]byte
	for _, i := range x.nodeOrder {
		n := x.sn.Topo.Node(i)
		for p := 0; p <= n.NumPorts; p++ {
			pi, ok := x.portInfo(i, p)
			if !ok || (p == 0 && !x.sn.IsSwitch(i)) {
				continue
			}
			lid := x.lidOf(i, p)
			if lid == 0 {
				continue
			}
			if pi.PortState == mad.PortStateDown {
				// A port that is down holds no valid PortInfo but its
				// states (C14-24-2.1): OpenSM keeps only those, and so do
				// the records of an uncabled switch port here.
				pi = mad.PortInfoFields{PortState: pi.PortState, PortPhysicalState: pi.PortPhysicalState}
			}
			if !trusted {
				pi.MKey = 0
			}
			out = append(out, mad.AppendPortInfoRecord(nil, &mad.PortInfoRecordFields{EndportLID: lid,
				PortNum: uint8(p), PortInfo: pi}))
		}
	}
	return out
}

func (x *index) switchInfoRecords() [][]byte {
	var out [][]byte
	for _, i := range x.switches() {
		si := x.sn.Switch[i]
		if rt := x.v.Routes; rt != nil && i < len(rt.LFT) && rt.LFT[i] != nil {
			si.LinearFDBTop = rt.MaxLID
		}
		out = append(out, mad.AppendSwitchInfoRecord(nil, &mad.SwitchInfoRecordFields{LID: x.lidOf(i, 0), SwitchInfo: si}))
	}
	return out
}

// lftRecords: every block of every switch's LFT up to the routes'
// MaxLID.
func (x *index) lftRecords() [][]byte {
	rt := x.v.Routes
	if rt == nil {
		return nil
	}
	var out [][]byte
	for _, i := range x.switches() {
		if i >= len(rt.LFT) || rt.LFT[i] == nil {
			continue
		}
		lft := rt.LFT[i]
		for blk := 0; blk*mad.LFTEntriesPerBlock <= int(rt.MaxLID); blk++ {
			f := mad.LFTRecordFields{LID: x.lidOf(i, 0), BlockNum: uint16(blk)}
			for k := range f.LFT.Ports {
				lid := blk*mad.LFTEntriesPerBlock + k
				f.LFT.Ports[k] = mad.LFTNoPort
				if lid < len(lft) && lid <= int(rt.MaxLID) {
					f.LFT.Ports[k] = lft[lid]
				}
			}
			out = append(out, mad.AppendLFTRecord(nil, &f))
		}
	}
	return out
}

// linkRecords: both directions of every cable, by the LIDs of the two
// ends' nodes (a switch's port 0 LID, a CA port's LID).
func (x *index) linkRecords() [][]byte {
	var out [][]byte
	t := x.sn.Topo
	for _, i := range x.nodeOrder {
		n := t.Node(i)
		for p := 1; p <= n.NumPorts; p++ {
			peer, ok := t.Peer(topologies.PortRef{Node: i, Port: p})
			if !ok {
				continue
			}
			from, to := x.lidOf(i, p), x.lidOf(peer.Node, peer.Port)
			if from == 0 || to == 0 {
				continue
			}
			out = append(out, mad.AppendLinkRecord(nil, &mad.LinkRecordFields{FromLID: from, FromPort: uint8(p),
				ToPort: uint8(peer.Port), ToLID: to}))
		}
	}
	return out
}

// smInfoRecords: this SM and those it met; SM_Keys for trusted
// requesters only.
func (s *SA) smInfoRecords(r *request) [][]byte {
	if s.view == nil {
		return nil
	}
	var out [][]byte
	for _, m := range s.view.v.SMs {
		info := m.Info
		if !s.trusted(r) {
			info.SMKey = 0
		}
		out = append(out, mad.AppendSMInfoRecord(nil, &mad.SMInfoRecordFields{LID: m.LID, SMInfo: info}))
	}
	return out
}

// guidInfoRecords: block 0 of every end port, its port GUID at index 0
// (ibfab ports have one GUID).
func (x *index) guidInfoRecords() [][]byte {
	var out [][]byte
	for _, e := range x.byNode {
		f := mad.GUIDInfoRecordFields{LID: e.LID}
		f.GUIDInfo.GUIDs[0] = x.portGUID(e.Node, e.Port)
		out = append(out, mad.AppendGUIDInfoRecord(nil, &f))
	}
	return out
}

// pkeyTable returns the P_Key table of port p of node i as the SM wrote
// it, or the default partition's full member alone.
func (x *index) pkeyTable(i, p int) []mad.PKey {
	if x.v.PKeys != nil {
		if t, ok := x.v.PKeys[sm.PortKey{NodeGUID: x.sn.Topo.Node(i).GUID, Port: p}]; ok {
			return t
		}
	}
	return []mad.PKey{0xffff}
}

// pkeyTableRecords builds the P_KeyTableRecords; serve answers them to
// trusted requesters only (OpenSM answers others ReqInvalid).
func (s *SA) pkeyTableRecords(r *request) [][]byte {
	return s.cached(mad.AttrSAPKeyTableRecord, (*index).pkeyRecords)(r)
}

// pkeyRecords: the P_Key table blocks of every end port, as many as its
// NodeInfo's PartitionCap holds, and of a switch's external ports too
// (as many as its SwitchInfo's PartitionEnforcementCap holds, under the
// switch's LID), as OpenSM gives them.
func (x *index) pkeyRecords() [][]byte {
	var out [][]byte
	for _, e := range x.byNode {
		out = x.appendPKeyBlocks(out, e.Node, e.Port, e.LID, x.partitionCap(e.Node))
		if x.sn.IsSwitch(e.Node) {
			enforce := int(x.sn.Switch[e.Node].PartitionEnforcementCap)
			for p := 1; p <= x.sn.Topo.Node(e.Node).NumPorts; p++ {
				out = x.appendPKeyBlocks(out, e.Node, p, e.LID, enforce)
			}
		}
	}
	return out
}

// partitionCap is node i's NodeInfo.PartitionCap, 0 when unknown.
func (x *index) partitionCap(i int) int {
	if i < len(x.sn.PartitionCap) {
		return int(x.sn.PartitionCap[i])
	}
	return 0
}

// appendPKeyBlocks appends the P_KeyTableRecords of port p of node i
// (at lid): the blocks of its table, at least those of capacity entries.
func (x *index) appendPKeyBlocks(out [][]byte, i, p int, lid uint16, capacity int) [][]byte {
	t := x.pkeyTable(i, p)
	n := max(len(t), capacity)
	for blk := 0; blk == 0 || blk*mad.PKeysPerBlock < n; blk++ {
		f := mad.PKeyTableRecordFields{LID: lid, BlockNum: uint16(blk), PortNum: uint8(p)}
		for k := range f.PKeys.PKeys {
			if j := blk*mad.PKeysPerBlock + k; j < len(t) {
				f.PKeys.PKeys[k] = t[j]
			}
		}
		rec := mad.AppendPKeyTableRecord(nil, &f)
		// OpenSM puts BlockNum on the wire in the host's (little-
		// endian) order, and saquery reads it so, and writes its
		// queries' so: answer as they expect (the spec's order would
		// show block 1 as 256).
		rec[2], rec[3] = rec[3], rec[2]
		out = append(out, rec)
	}
	return out
}

// hasPKey reports whether port p of node i holds pkey (either
// membership, or full membership when full).
func (x *index) hasPKey(i, p int, pkey uint16, full bool) bool {
	for _, k := range x.pkeyTable(i, p) {
		if uint16(k)&0x7fff == pkey&0x7fff && (!full || uint16(k)&0x8000 != 0) {
			return true
		}
	}
	return false
}

// nodeByGUID returns the index of the node with GUID guid.
func (x *index) nodeByGUID(guid uint64) (int, bool) {
	if x.byNodeGUID == nil {
		x.byNodeGUID = map[uint64]int{}
		for i, n := range x.sn.Topo.Nodes() {
			x.byNodeGUID[n.GUID] = i
		}
	}
	i, ok := x.byNodeGUID[guid]
	return i, ok
}

// sharePKey reports whether end ports a and b hold a P_Key in common
// (either membership; two limited members do not communicate, but may
// ask for each other).
func (x *index) sharePKey(a, b routing.EndPort) bool {
	for _, k := range x.pkeyTable(a.Node, a.Port) {
		if uint16(k)&0x7fff != 0 && x.hasPKey(b.Node, b.Port, uint16(k), false) {
			return true
		}
	}
	return false
}
