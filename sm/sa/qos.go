package sa

import (
	"cmp"
	"encoding/binary"
	"slices"

	"ibfab/sm"
	"ibfab/wire/mad"
)

// VLArbitrationTableRecords and SLtoVLMappingTableRecords, served as
// OpenSM serves them: for every port the SM holds PortInfo of, the four
// VLArbitration blocks (1-4) and the SLtoVL table of a CA port or of
// every (output, input) port pair of a switch, each as the SM wrote it,
// zero where it wrote none (with --vl-tables keep, every table: ibsm does
// not read the devices' own). A query naming a CA port's LID is about
// that port whatever port number it gives (clients send 0, as osmtest
// does): its VLArbitration records are its own port's, its SLtoVL record
// the one with no port numbers.

// qosKey names the records of one node for one of the two attributes.
type qosKey struct {
	attr mad.AttrID
	node int
}

// qosRecords returns the builder of attr's table from of, the records of
// one node: those of the node that owns the query's LID when it gives
// one, else every node's in node order; each node's built once per view.
func (s *SA) qosRecords(attr mad.AttrID, of func(*index, int) [][]byte) func(*request) [][]byte {
	return func(r *request) [][]byte {
		x := s.view
		if x == nil || x.sn == nil {
			return nil
		}
		if x.qos == nil {
			x.qos = map[qosKey][][]byte{}
		}
		node := func(i int) [][]byte {
			k := qosKey{attr, i}
			recs, ok := x.qos[k]
			if !ok {
				recs = of(x, i)
				x.qos[k] = recs
			}
			return recs
		}
		if r.mask&qosLIDBit != 0 {
			e, ok := x.owner(binary.BigEndian.Uint16(r.data))
			if !ok {
				return nil
			}
			return node(e.Node)
		}
		var out [][]byte
		for _, i := range x.nodeOrder {
			out = append(out, node(i)...)
		}
		return out
	}
}

// qosLIDBit is the LID component of both records (their first).
const qosLIDBit = 1 << 0

// qosQuery returns the query and component mask a VLArbitration or
// SLtoVL query matches records with: its LID the base LID of the port
// that owns it, and for a CA port the port numbers as OpenSM reads them
// (the port's own for VLArbitration, none for SLtoVL).
func (x *index) qosQuery(attr mad.AttrID, data []byte, mask uint64) ([]byte, uint64) {
	if mask&qosLIDBit == 0 || x == nil || x.sn == nil {
		return data, mask
	}
	e, ok := x.owner(binary.BigEndian.Uint16(data))
	if !ok {
		return data, mask
	}
	q := append([]byte(nil), data...)
	binary.BigEndian.PutUint16(q, x.lidOf(e.Node, e.Port))
	if x.sn.IsSwitch(e.Node) {
		return q, mask
	}
	switch attr {
	case mad.AttrSAVLArbRecord:
		l := mad.SAVLArbRecordLayout
		l.Components[l.Component("OutputPortNum")].SetUint(q, uint64(e.Port))
		mask |= l.Bit("OutputPortNum")
	case mad.AttrSASLtoVLRecord:
		l := mad.SASLtoVLRecordLayout
		mask &^= l.Bit("InputPortNum") | l.Bit("OutputPortNum")
	}
	return q, mask
}

// qosPorts returns the ports of node i that have records: a switch's
// every port it holds PortInfo of, port 0 included; a CA's with a LID.
func (x *index) qosPorts(i int) []int {
	var ports []int
	sw := x.sn.IsSwitch(i)
	for p := 0; p <= x.sn.Topo.Node(i).NumPorts; p++ {
		if _, ok := x.portInfo(i, p); !ok || (!sw && (p == 0 || x.lidOf(i, p) == 0)) {
			continue
		}
		ports = append(ports, p)
	}
	return ports
}

// vlArbOf returns the VLArbitrationTableRecords of node i: blocks 1-4
// of each port, by port.
func (x *index) vlArbOf(i int) [][]byte {
	guid := x.sn.Topo.Node(i).GUID
	var out [][]byte
	for _, p := range x.qosPorts(i) {
		for blk := mad.VLArbLow0; blk <= mad.VLArbHigh32; blk++ {
			f := mad.VLArbRecordFields{LID: x.lidOf(i, p), OutputPortNum: uint8(p), BlockNum: uint8(blk)}
			k := sm.BlockKey{NodeGUID: guid, Port: p, Attr: mad.AttrVLArbitration, Mod: mad.VLArbModifier(blk, uint8(p))}
			if b, ok := x.v.Blocks[k]; ok {
				f.Table = mad.VLArbitrationTable(b).Fields()
			}
			out = append(out, mad.AppendVLArbRecord(nil, &f))
		}
	}
	return out
}

// sl2vlOf returns the SLtoVLMappingTableRecords of node i: one per CA
// port, no port numbers in it; a switch's one per (output, input) pair,
// output outside as OpenSM lists them.
func (x *index) sl2vlOf(i int) [][]byte {
	guid := x.sn.Topo.Node(i).GUID
	tables := x.sl2vlWritten()
	var out [][]byte
	ports := x.qosPorts(i)
	if !x.sn.IsSwitch(i) {
		for _, p := range ports {
			f := mad.SLtoVLRecordFields{LID: x.lidOf(i, p)}
			if b, ok := tables[sl2vlKey{guid, p, 0}]; ok {
				f.Table = mad.SLtoVLMappingTable(b).Fields()
			}
			out = append(out, mad.AppendSLtoVLRecord(nil, &f))
		}
		return out
	}
	for _, o := range ports {
		for _, in := range ports {
			f := mad.SLtoVLRecordFields{LID: x.lidOf(i, 0), InputPortNum: uint8(in), OutputPortNum: uint8(o)}
			if b, ok := tables[sl2vlKey{guid, in, o}]; ok {
				f.Table = mad.SLtoVLMappingTable(b).Fields()
			}
			out = append(out, mad.AppendSLtoVLRecord(nil, &f))
		}
	}
	return out
}

// sl2vlKey names one SLtoVL table: a switch's (input, output) pair, a CA
// port's as (port, 0).
type sl2vlKey struct {
	guid    uint64
	in, out int
}

// sl2vlWritten resolves the SLtoVL blocks the SM wrote into tables by
// sl2vlKey, once per view. A switch's blocks, written with modifiers
// that may name all input or output ports, give each pair the most
// specific block written for it.
func (x *index) sl2vlWritten() map[sl2vlKey][]byte {
	if x.sl2vl != nil {
		return x.sl2vl
	}
	x.sl2vl = map[sl2vlKey][]byte{}
	rank := map[sl2vlKey]int{}
	for _, k := range x.blockKeys(mad.AttrSLtoVLMapping) {
		i, ok := x.nodeByGUID(k.NodeGUID)
		if !ok {
			continue
		}
		data := x.v.Blocks[k]
		if !x.sn.IsSwitch(i) {
			x.sl2vl[sl2vlKey{k.NodeGUID, k.Port, 0}] = data
			continue
		}
		m, err := mad.ParseSLtoVLModifier(k.Mod)
		if err != nil {
			continue
		}
		n := x.sn.Topo.Node(i).NumPorts
		for in := 0; in <= n; in++ {
			for o := 1; o <= n; o++ {
				if (!m.AllInPorts && in != int(m.InPort)) || (!m.AllOutPorts && o != int(m.OutPort)) {
					continue
				}
				r := 0
				if !m.AllInPorts {
					r += 2
				}
				if !m.AllOutPorts {
					r++
				}
				p := sl2vlKey{k.NodeGUID, in, o}
				if old, ok := rank[p]; !ok || r >= old {
					x.sl2vl[p], rank[p] = data, r
				}
			}
		}
	}
	return x.sl2vl
}

// blockKeys returns the keys of the blocks of attr the SM wrote, by
// node GUID, port and modifier.
func (x *index) blockKeys(attr mad.AttrID) []sm.BlockKey {
	keys := make([]sm.BlockKey, 0, len(x.v.Blocks))
	for k := range x.v.Blocks {
		if k.Attr == attr {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b sm.BlockKey) int {
		return cmp.Or(cmp.Compare(a.NodeGUID, b.NodeGUID), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Mod, b.Mod))
	})
	return keys
}
