package mad

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// GID is a 128-bit global identifier: subnet prefix, then interface ID
// (the port GUID for a port's default GID).
type GID [16]byte

// MakeGID returns the GID of prefix and guid.
func MakeGID(prefix, guid uint64) GID {
	var g GID
	binary.BigEndian.PutUint64(g[:8], prefix)
	binary.BigEndian.PutUint64(g[8:], guid)
	return g
}

// Prefix returns the subnet prefix (the top 64 bits).
func (g GID) Prefix() uint64 { return binary.BigEndian.Uint64(g[:8]) }

// GUID returns the interface ID (the low 64 bits).
func (g GID) GUID() uint64 { return binary.BigEndian.Uint64(g[8:]) }

// IsMulticast reports whether g is a multicast GID (first byte 0xff).
func (g GID) IsMulticast() bool { return g[0] == 0xff }

// IsZero reports whether g is all zeros.
func (g GID) IsZero() bool { return g == GID{} }

// String spells g as an IPv6 address, as saquery does.
func (g GID) String() string { return netip.AddrFrom16(g).String() }

// DefaultGIDPrefix is the link-local subnet prefix fe80::/64.
const DefaultGIDPrefix uint64 = 0xfe80000000000000

// recW writes and reads the components of one record by index.
type recW struct {
	b []byte
	c []SAComponent
}

func (w recW) put(i int, v uint64) { w.c[i].SetUint(w.b, v) }
func (w recW) get(i int) uint64    { return w.c[i].Uint(w.b) }
func (w recW) flag(i int, v bool) {
	if v {
		w.put(i, 1)
	} else {
		w.put(i, 0)
	}
}
func (w recW) isSet(i int) bool { return w.get(i) != 0 }
func (w recW) gid(i int) GID {
	var g GID
	copy(g[:], w.b[w.c[i].Bit/8:])
	return g
}
func (w recW) putGID(i int, g GID) { copy(w.b[w.c[i].Bit/8:], g[:]) }

// decodeRecord checks b's length for layout l.
func decodeRecord(l *SARecordLayout, b []byte) error {
	if len(b) < l.Size {
		return truncated(l.Name, len(b), l.Size)
	}
	return nil
}

// appendRecord grows dst by l.Size zero bytes and returns the writer.
func appendRecord(dst []byte, l *SARecordLayout) ([]byte, recW) {
	dst, b := grow(dst, l.Size)
	clear(b)
	return dst, recW{b, l.Components}
}

// NodeRecordFields is a NodeRecord (IBA 15.2.5.2): a node's NodeInfo and
// NodeDescription as seen through one of its ports.
type NodeRecordFields struct {
	LID             uint16
	NodeInfo        NodeInfoFields
	NodeDescription string
}

// AppendNodeRecord appends the record f to dst.
func AppendNodeRecord(dst []byte, f *NodeRecordFields) []byte {
	dst, w := appendRecord(dst, SANodeRecordLayout)
	w.put(0, uint64(f.LID))
	NodeInfo(w.b[4:]).Encode(&f.NodeInfo)
	NodeDescription(w.b[44:]).Encode(&NodeDescriptionFields{Text: f.NodeDescription})
	return dst
}

// DecodeNodeRecord returns the NodeRecord in b.
func DecodeNodeRecord(b []byte) (NodeRecordFields, error) {
	if err := decodeRecord(SANodeRecordLayout, b); err != nil {
		return NodeRecordFields{}, err
	}
	return NodeRecordFields{LID: binary.BigEndian.Uint16(b), NodeInfo: NodeInfo(b[4:]).Fields(),
		NodeDescription: NodeDescription(b[44:]).Text()}, nil
}

// PortInfoRecordFields is a PortInfoRecord (IBA 15.2.5.3).
type PortInfoRecordFields struct {
	EndportLID uint16
	PortNum    uint8
	Options    uint8
	PortInfo   PortInfoFields
}

// AppendPortInfoRecord appends the record f to dst.
func AppendPortInfoRecord(dst []byte, f *PortInfoRecordFields) []byte {
	dst, w := appendRecord(dst, SAPortInfoRecordLayout)
	w.put(0, uint64(f.EndportLID))
	w.put(1, uint64(f.PortNum))
	w.put(2, uint64(f.Options))
	PortInfo(w.b[4:]).Encode(&f.PortInfo)
	return dst
}

// DecodePortInfoRecord returns the PortInfoRecord in b.
func DecodePortInfoRecord(b []byte) (PortInfoRecordFields, error) {
	if err := decodeRecord(SAPortInfoRecordLayout, b); err != nil {
		return PortInfoRecordFields{}, err
	}
	return PortInfoRecordFields{EndportLID: binary.BigEndian.Uint16(b), PortNum: b[2], Options: b[3],
		PortInfo: PortInfo(b[4:]).Fields()}, nil
}

// SwitchInfoRecordFields is a SwitchInfoRecord (IBA 15.2.5.4).
type SwitchInfoRecordFields struct {
	LID        uint16
	SwitchInfo SwitchInfoFields
}

// AppendSwitchInfoRecord appends the record f to dst.
func AppendSwitchInfoRecord(dst []byte, f *SwitchInfoRecordFields) []byte {
	dst, w := appendRecord(dst, SASwitchInfoRecordLayout)
	w.put(0, uint64(f.LID))
	SwitchInfo(w.b[4:]).Encode(&f.SwitchInfo)
	return dst
}

// DecodeSwitchInfoRecord returns the SwitchInfoRecord in b.
func DecodeSwitchInfoRecord(b []byte) (SwitchInfoRecordFields, error) {
	if err := decodeRecord(SASwitchInfoRecordLayout, b); err != nil {
		return SwitchInfoRecordFields{}, err
	}
	return SwitchInfoRecordFields{LID: binary.BigEndian.Uint16(b), SwitchInfo: SwitchInfo(b[4:]).Fields()}, nil
}

// LFTRecordFields is a LinearForwardingTableRecord (IBA 15.2.5.6): one
// 64-entry block of a switch's LFT.
type LFTRecordFields struct {
	LID      uint16
	BlockNum uint16
	LFT      LinearForwardingTableFields
}

// AppendLFTRecord appends the record f to dst.
func AppendLFTRecord(dst []byte, f *LFTRecordFields) []byte {
	dst, w := appendRecord(dst, SALFTRecordLayout)
	w.put(0, uint64(f.LID))
	w.put(1, uint64(f.BlockNum))
	LinearForwardingTable(w.b[8:]).Encode(&f.LFT)
	return dst
}

// DecodeLFTRecord returns the LinearForwardingTableRecord in b.
func DecodeLFTRecord(b []byte) (LFTRecordFields, error) {
	if err := decodeRecord(SALFTRecordLayout, b); err != nil {
		return LFTRecordFields{}, err
	}
	w := recW{b, SALFTRecordLayout.Components}
	return LFTRecordFields{LID: uint16(w.get(0)), BlockNum: uint16(w.get(1)),
		LFT: LinearForwardingTable(b[8:]).Fields()}, nil
}

// MFTRecordFields is a MulticastForwardingTableRecord (IBA 15.2.5.8):
// one block of 32 MLIDs' port masks at one position (16 ports each).
type MFTRecordFields struct {
	LID      uint16
	Position uint8  // 4 bits
	BlockNum uint16 // 9 bits
	MFT      MulticastForwardingTableFields
}

// AppendMFTRecord appends the record f to dst.
func AppendMFTRecord(dst []byte, f *MFTRecordFields) []byte {
	dst, w := appendRecord(dst, SAMFTRecordLayout)
	w.put(0, uint64(f.LID))
	w.put(1, uint64(f.Position))
	w.put(3, uint64(f.BlockNum))
	MulticastForwardingTable(w.b[8:]).Encode(&f.MFT)
	return dst
}

// DecodeMFTRecord returns the MulticastForwardingTableRecord in b.
func DecodeMFTRecord(b []byte) (MFTRecordFields, error) {
	if err := decodeRecord(SAMFTRecordLayout, b); err != nil {
		return MFTRecordFields{}, err
	}
	w := recW{b, SAMFTRecordLayout.Components}
	return MFTRecordFields{LID: uint16(w.get(0)), Position: uint8(w.get(1)), BlockNum: uint16(w.get(3)),
		MFT: MulticastForwardingTable(b[8:]).Fields()}, nil
}

// LinkRecordFields is a LinkRecord (IBA 15.2.5.13): one direction of a
// cable between two nodes, by their LIDs (a switch's port 0 LID).
type LinkRecordFields struct {
	FromLID  uint16
	FromPort uint8
	ToPort   uint8
	ToLID    uint16
}

// AppendLinkRecord appends the record f to dst.
func AppendLinkRecord(dst []byte, f *LinkRecordFields) []byte {
	dst, w := appendRecord(dst, SALinkRecordLayout)
	w.put(0, uint64(f.FromLID))
	w.put(1, uint64(f.FromPort))
	w.put(2, uint64(f.ToPort))
	w.put(3, uint64(f.ToLID))
	return dst
}

// DecodeLinkRecord returns the LinkRecord in b.
func DecodeLinkRecord(b []byte) (LinkRecordFields, error) {
	if err := decodeRecord(SALinkRecordLayout, b); err != nil {
		return LinkRecordFields{}, err
	}
	w := recW{b, SALinkRecordLayout.Components}
	return LinkRecordFields{FromLID: uint16(w.get(0)), FromPort: uint8(w.get(1)), ToPort: uint8(w.get(2)),
		ToLID: uint16(w.get(3))}, nil
}

// SMInfoRecordFields is an SMInfoRecord (IBA 15.2.5.11).
type SMInfoRecordFields struct {
	LID    uint16
	SMInfo SMInfoFields
}

// AppendSMInfoRecord appends the record f to dst.
func AppendSMInfoRecord(dst []byte, f *SMInfoRecordFields) []byte {
	dst, w := appendRecord(dst, SASMInfoRecordLayout)
	w.put(0, uint64(f.LID))
	SMInfo(w.b[4:]).Encode(&f.SMInfo)
	return dst
}

// DecodeSMInfoRecord returns the SMInfoRecord in b.
func DecodeSMInfoRecord(b []byte) (SMInfoRecordFields, error) {
	if err := decodeRecord(SASMInfoRecordLayout, b); err != nil {
		return SMInfoRecordFields{}, err
	}
	return SMInfoRecordFields{LID: binary.BigEndian.Uint16(b), SMInfo: SMInfo(b[4:]).Fields()}, nil
}

// GUIDInfoRecordFields is a GUIDInfoRecord (IBA 15.2.5.18).
type GUIDInfoRecordFields struct {
	LID      uint16
	BlockNum uint8
	GUIDInfo GUIDInfoFields
}

// AppendGUIDInfoRecord appends the record f to dst.
func AppendGUIDInfoRecord(dst []byte, f *GUIDInfoRecordFields) []byte {
	dst, w := appendRecord(dst, SAGUIDInfoRecordLayout)
	w.put(0, uint64(f.LID))
	w.put(1, uint64(f.BlockNum))
	GUIDInfo(w.b[8:]).Encode(&f.GUIDInfo)
	return dst
}

// DecodeGUIDInfoRecord returns the GUIDInfoRecord in b.
func DecodeGUIDInfoRecord(b []byte) (GUIDInfoRecordFields, error) {
	if err := decodeRecord(SAGUIDInfoRecordLayout, b); err != nil {
		return GUIDInfoRecordFields{}, err
	}
	return GUIDInfoRecordFields{LID: binary.BigEndian.Uint16(b), BlockNum: b[2], GUIDInfo: GUIDInfo(b[8:]).Fields()}, nil
}

// PKeyTableRecordFields is a P_KeyTableRecord (IBA 15.2.5.11): one block
// of 32 P_Keys of a CA port, or of a switch's port PortNum.
type PKeyTableRecordFields struct {
	LID      uint16
	BlockNum uint16
	PortNum  uint8
	PKeys    PKeyTableFields
}

// AppendPKeyTableRecord appends the record f to dst.
func AppendPKeyTableRecord(dst []byte, f *PKeyTableRecordFields) []byte {
	dst, w := appendRecord(dst, SAPKeyTableRecordLayout)
	w.put(0, uint64(f.LID))
	w.put(1, uint64(f.BlockNum))
	w.put(2, uint64(f.PortNum))
	PKeyTable(w.b[8:]).Encode(&f.PKeys)
	return dst
}

// DecodePKeyTableRecord returns the P_KeyTableRecord in b.
func DecodePKeyTableRecord(b []byte) (PKeyTableRecordFields, error) {
	if err := decodeRecord(SAPKeyTableRecordLayout, b); err != nil {
		return PKeyTableRecordFields{}, err
	}
	return PKeyTableRecordFields{LID: binary.BigEndian.Uint16(b), BlockNum: binary.BigEndian.Uint16(b[2:]),
		PortNum: b[4], PKeys: PKeyTable(b[8:]).Fields()}, nil
}

// SLtoVLRecordFields is an SLtoVLMappingTableRecord (IBA 15.2.5.4).
type SLtoVLRecordFields struct {
	LID           uint16
	InputPortNum  uint8
	OutputPortNum uint8
	Table         SLtoVLMappingTableFields
}

// AppendSLtoVLRecord appends the record f to dst.
func AppendSLtoVLRecord(dst []byte, f *SLtoVLRecordFields) []byte {
	dst, w := appendRecord(dst, SASLtoVLRecordLayout)
	w.put(0, uint64(f.LID))
	w.put(1, uint64(f.InputPortNum))
	w.put(2, uint64(f.OutputPortNum))
	SLtoVLMappingTable(w.b[8:]).Encode(&f.Table)
	return dst
}

// DecodeSLtoVLRecord returns the SLtoVLMappingTableRecord in b.
func DecodeSLtoVLRecord(b []byte) (SLtoVLRecordFields, error) {
	if err := decodeRecord(SASLtoVLRecordLayout, b); err != nil {
		return SLtoVLRecordFields{}, err
	}
	return SLtoVLRecordFields{LID: binary.BigEndian.Uint16(b), InputPortNum: b[2], OutputPortNum: b[3],
		Table: SLtoVLMappingTable(b[8:]).Fields()}, nil
}

// VLArbRecordFields is a VLArbitrationTableRecord (IBA 15.2.5.9).
type VLArbRecordFields struct {
	LID           uint16
	OutputPortNum uint8
	BlockNum      uint8
	Table         VLArbitrationTableFields
}

// AppendVLArbRecord appends the record f to dst.
func AppendVLArbRecord(dst []byte, f *VLArbRecordFields) []byte {
	dst, w := appendRecord(dst, SAVLArbRecordLayout)
	w.put(0, uint64(f.LID))
	w.put(1, uint64(f.OutputPortNum))
	w.put(2, uint64(f.BlockNum))
	VLArbitrationTable(w.b[8:]).Encode(&f.Table)
	return dst
}

// DecodeVLArbRecord returns the VLArbitrationTableRecord in b.
func DecodeVLArbRecord(b []byte) (VLArbRecordFields, error) {
	if err := decodeRecord(SAVLArbRecordLayout, b); err != nil {
		return VLArbRecordFields{}, err
	}
	return VLArbRecordFields{LID: binary.BigEndian.Uint16(b), OutputPortNum: b[2], BlockNum: b[3],
		Table: VLArbitrationTable(b[8:]).Fields()}, nil
}

// Selectors of PathRecord and MCMemberRecord rate, MTU and packet
// lifetime (IBA 15.2.5.16): how the value given compares with the one
// wanted.
const (
	SelectorGreater = 0
	SelectorLess    = 1
	SelectorExactly = 2
	SelectorLargest = 3 // the largest available (smallest for a lifetime)
)

// PathRecordFields is a PathRecord (IBA 15.2.5.16).
type PathRecordFields struct {
	ServiceID              uint64
	DGID, SGID             GID
	DLID, SLID             uint16
	RawTraffic             bool
	FlowLabel              uint32 // 20 bits
	HopLimit               uint8
	TClass                 uint8
	Reversible             bool
	NumbPath               uint8 // 7 bits
	PKey                   uint16
	QoSClass               uint16 // 12 bits
	SL                     uint8
	MTUSelector            uint8
	MTU                    uint8 // 6 bits: an MTU code
	RateSelector           uint8
	Rate                   uint8 // 6 bits: a rate code
	PacketLifeTimeSelector uint8
	PacketLifeTime         uint8 // 6 bits
	Preference             uint8
}

// AppendPathRecord appends the record f to dst.
func AppendPathRecord(dst []byte, f *PathRecordFields) []byte {
	dst, w := appendRecord(dst, SAPathRecordLayout)
	binary.BigEndian.PutUint64(w.b, f.ServiceID)
	w.putGID(2, f.DGID)
	w.putGID(3, f.SGID)
	w.put(4, uint64(f.DLID))
	w.put(5, uint64(f.SLID))
	w.flag(6, f.RawTraffic)
	w.put(8, uint64(f.FlowLabel))
	w.put(9, uint64(f.HopLimit))
	w.put(10, uint64(f.TClass))
	w.flag(11, f.Reversible)
	w.put(12, uint64(f.NumbPath))
	w.put(13, uint64(f.PKey))
	w.put(14, uint64(f.QoSClass))
	w.put(15, uint64(f.SL))
	w.put(16, uint64(f.MTUSelector))
	w.put(17, uint64(f.MTU))
	w.put(18, uint64(f.RateSelector))
	w.put(19, uint64(f.Rate))
	w.put(20, uint64(f.PacketLifeTimeSelector))
	w.put(21, uint64(f.PacketLifeTime))
	w.put(22, uint64(f.Preference))
	return dst
}

// DecodePathRecord returns the PathRecord in b.
func DecodePathRecord(b []byte) (PathRecordFields, error) {
	if err := decodeRecord(SAPathRecordLayout, b); err != nil {
		return PathRecordFields{}, err
	}
	w := recW{b, SAPathRecordLayout.Components}
	return PathRecordFields{ServiceID: binary.BigEndian.Uint64(b), DGID: w.gid(2), SGID: w.gid(3),
		DLID: uint16(w.get(4)), SLID: uint16(w.get(5)), RawTraffic: w.isSet(6), FlowLabel: uint32(w.get(8)),
		HopLimit: uint8(w.get(9)), TClass: uint8(w.get(10)), Reversible: w.isSet(11), NumbPath: uint8(w.get(12)),
		PKey: uint16(w.get(13)), QoSClass: uint16(w.get(14)), SL: uint8(w.get(15)), MTUSelector: uint8(w.get(16)),
		MTU: uint8(w.get(17)), RateSelector: uint8(w.get(18)), Rate: uint8(w.get(19)),
		PacketLifeTimeSelector: uint8(w.get(20)), PacketLifeTime: uint8(w.get(21)), Preference: uint8(w.get(22))}, nil
}

// MultiPathRecordFields is a MultiPathRecord (IBA 15.2.5.20): the fixed
// part, then SGIDCount source GIDs and DGIDCount destination GIDs.
type MultiPathRecordFields struct {
	RawTraffic             bool
	FlowLabel              uint32
	HopLimit               uint8
	TClass                 uint8
	Reversible             bool
	NumbPath               uint8
	PKey                   uint16
	QoSClass               uint16
	SL                     uint8
	MTUSelector, MTU       uint8
	RateSelector, Rate     uint8
	PacketLifeTimeSelector uint8
	PacketLifeTime         uint8
	ServiceID              uint64
	IndependenceSelector   uint8
	SGIDCount, DGIDCount   uint8
	GIDs                   []GID // SGIDCount sources, then DGIDCount destinations
}

// MultiPathMaxGIDs is how many GIDs fit a MultiPathRecord in one MAD's
// SA data.
const MultiPathMaxGIDs = (SADataSize - 24) / 16

// AppendMultiPathRecord appends the record f to dst: the fixed part and
// its GIDs (len(f.GIDs) of them).
func AppendMultiPathRecord(dst []byte, f *MultiPathRecordFields) []byte {
	dst, w := appendRecord(dst, SAMultiPathRecordLayout)
	w.flag(0, f.RawTraffic)
	w.put(2, uint64(f.FlowLabel))
	w.put(3, uint64(f.HopLimit))
	w.put(4, uint64(f.TClass))
	w.flag(5, f.Reversible)
	w.put(6, uint64(f.NumbPath))
	w.put(7, uint64(f.PKey))
	w.put(8, uint64(f.QoSClass))
	w.put(9, uint64(f.SL))
	w.put(10, uint64(f.MTUSelector))
	w.put(11, uint64(f.MTU))
	w.put(12, uint64(f.RateSelector))
	w.put(13, uint64(f.Rate))
	w.put(14, uint64(f.PacketLifeTimeSelector))
	w.put(15, uint64(f.PacketLifeTime))
	w.put(16, f.ServiceID>>56)
	w.put(17, uint64(f.IndependenceSelector))
	w.put(19, uint64(f.SGIDCount))
	w.put(20, uint64(f.DGIDCount))
	w.put(21, f.ServiceID&(1<<56-1))
	for _, g := range f.GIDs {
		dst = append(dst, g[:]...)
	}
	return dst
}

// DecodeMultiPathRecord returns the MultiPathRecord in b with the GIDs
// its counts give that b holds; it fails when b is shorter than the fixed
// part or than the GIDs counted.
func DecodeMultiPathRecord(b []byte) (MultiPathRecordFields, error) {
	if err := decodeRecord(SAMultiPathRecordLayout, b); err != nil {
		return MultiPathRecordFields{}, err
	}
	w := recW{b, SAMultiPathRecordLayout.Components}
	f := MultiPathRecordFields{RawTraffic: w.isSet(0), FlowLabel: uint32(w.get(2)), HopLimit: uint8(w.get(3)),
		TClass: uint8(w.get(4)), Reversible: w.isSet(5), NumbPath: uint8(w.get(6)), PKey: uint16(w.get(7)),
		QoSClass: uint16(w.get(8)), SL: uint8(w.get(9)), MTUSelector: uint8(w.get(10)), MTU: uint8(w.get(11)),
		RateSelector: uint8(w.get(12)), Rate: uint8(w.get(13)), PacketLifeTimeSelector: uint8(w.get(14)),
		PacketLifeTime: uint8(w.get(15)), ServiceID: w.get(16)<<56 | w.get(21),
		IndependenceSelector: uint8(w.get(17)), SGIDCount: uint8(w.get(19)), DGIDCount: uint8(w.get(20))}
	n := int(f.SGIDCount) + int(f.DGIDCount)
	if len(b) < SAMultiPathRecordLayout.Size+16*n {
		return MultiPathRecordFields{}, fmt.Errorf("mad: MultiPathRecord counts %d GIDs, %d bytes hold %d",
			n, len(b), (len(b)-SAMultiPathRecordLayout.Size)/16)
	}
	for i := range n {
		var g GID
		copy(g[:], b[SAMultiPathRecordLayout.Size+16*i:])
		f.GIDs = append(f.GIDs, g)
	}
	return f, nil
}

// ServiceRecordFields is a ServiceRecord (IBA 15.2.5.14).
type ServiceRecordFields struct {
	ID     uint64
	GID    GID
	PKey   uint16
	Lease  uint32 // seconds; 0xFFFFFFFF: indefinite
	Key    [16]byte
	Name   string // at most 64 bytes, NUL padded
	Data8  [16]uint8
	Data16 [8]uint16
	Data32 [4]uint32
	Data64 [2]uint64
}

// ServiceLeaseIndefinite is the lease of a record that never expires.
const ServiceLeaseIndefinite = 0xffffffff

// AppendServiceRecord appends the record f to dst.
func AppendServiceRecord(dst []byte, f *ServiceRecordFields) []byte {
	dst, w := appendRecord(dst, SAServiceRecordLayout)
	w.put(0, f.ID)
	w.putGID(1, f.GID)
	w.put(2, uint64(f.PKey))
	w.put(4, uint64(f.Lease))
	copy(w.b[32:48], f.Key[:])
	copy(w.b[48:112], f.Name)
	for i, v := range f.Data8 {
		w.put(7+i, uint64(v))
	}
	for i, v := range f.Data16 {
		w.put(23+i, uint64(v))
	}
	for i, v := range f.Data32 {
		w.put(31+i, uint64(v))
	}
	for i, v := range f.Data64 {
		w.put(35+i, v)
	}
	return dst
}

// DecodeServiceRecord returns the ServiceRecord in b.
func DecodeServiceRecord(b []byte) (ServiceRecordFields, error) {
	if err := decodeRecord(SAServiceRecordLayout, b); err != nil {
		return ServiceRecordFields{}, err
	}
	w := recW{b, SAServiceRecordLayout.Components}
	f := ServiceRecordFields{ID: w.get(0), GID: w.gid(1), PKey: uint16(w.get(2)), Lease: uint32(w.get(4)),
		Name: cString(b[48:112])}
	copy(f.Key[:], b[32:48])
	for i := range f.Data8 {
		f.Data8[i] = uint8(w.get(7 + i))
	}
	for i := range f.Data16 {
		f.Data16[i] = uint16(w.get(23 + i))
	}
	for i := range f.Data32 {
		f.Data32[i] = uint32(w.get(31 + i))
	}
	for i := range f.Data64 {
		f.Data64[i] = w.get(35 + i)
	}
	return f, nil
}

// cString returns b up to its first NUL.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// Multicast join states (IBA 15.2.5.17 JoinState bits).
const (
	JoinFullMember    = 1 << 0
	JoinNonMember     = 1 << 1
	JoinSendOnly      = 1 << 2
	JoinSendOnlyFull  = 1 << 3
	joinStateAllKnown = JoinFullMember | JoinNonMember | JoinSendOnly | JoinSendOnlyFull
)

// JoinStateValid reports whether s names only known join states.
func JoinStateValid(s uint8) bool { return s&^joinStateAllKnown == 0 }

// MCMemberRecordFields is an MCMemberRecord (IBA 15.2.5.17).
type MCMemberRecordFields struct {
	MGID, PortGID          GID
	QKey                   uint32
	MLID                   uint16
	MTUSelector, MTU       uint8
	TClass                 uint8
	PKey                   uint16
	RateSelector, Rate     uint8
	PacketLifeTimeSelector uint8
	PacketLifeTime         uint8
	SL                     uint8
	FlowLabel              uint32
	HopLimit               uint8
	Scope                  uint8
	JoinState              uint8
	ProxyJoin              bool
}

// AppendMCMemberRecord appends the record f to dst.
func AppendMCMemberRecord(dst []byte, f *MCMemberRecordFields) []byte {
	dst, w := appendRecord(dst, SAMCMemberRecordLayout)
	w.putGID(0, f.MGID)
	w.putGID(1, f.PortGID)
	w.put(2, uint64(f.QKey))
	w.put(3, uint64(f.MLID))
	w.put(4, uint64(f.MTUSelector))
	w.put(5, uint64(f.MTU))
	w.put(6, uint64(f.TClass))
	w.put(7, uint64(f.PKey))
	w.put(8, uint64(f.RateSelector))
	w.put(9, uint64(f.Rate))
	w.put(10, uint64(f.PacketLifeTimeSelector))
	w.put(11, uint64(f.PacketLifeTime))
	w.put(12, uint64(f.SL))
	w.put(13, uint64(f.FlowLabel))
	w.put(14, uint64(f.HopLimit))
	w.put(15, uint64(f.Scope))
	w.put(16, uint64(f.JoinState))
	w.flag(17, f.ProxyJoin)
	return dst
}

// DecodeMCMemberRecord returns the MCMemberRecord in b.
func DecodeMCMemberRecord(b []byte) (MCMemberRecordFields, error) {
	if err := decodeRecord(SAMCMemberRecordLayout, b); err != nil {
		return MCMemberRecordFields{}, err
	}
	w := recW{b, SAMCMemberRecordLayout.Components}
	return MCMemberRecordFields{MGID: w.gid(0), PortGID: w.gid(1), QKey: uint32(w.get(2)), MLID: uint16(w.get(3)),
		MTUSelector: uint8(w.get(4)), MTU: uint8(w.get(5)), TClass: uint8(w.get(6)), PKey: uint16(w.get(7)),
		RateSelector: uint8(w.get(8)), Rate: uint8(w.get(9)), PacketLifeTimeSelector: uint8(w.get(10)),
		PacketLifeTime: uint8(w.get(11)), SL: uint8(w.get(12)), FlowLabel: uint32(w.get(13)),
		HopLimit: uint8(w.get(14)), Scope: uint8(w.get(15)), JoinState: uint8(w.get(16)), ProxyJoin: w.isSet(17)}, nil
}

// InformInfoSize is the length of the InformInfo attribute.
const InformInfoSize = 36

// InformInfoFields is an InformInfo (IBA 13.4.8.3): a subscription to the
// traps of a type, number and LID range. For a generic trap TrapNumber
// and ProducerType apply; for a vendor's, DeviceID and VendorID (the same
// bits).
type InformInfoFields struct {
	GID           GID
	LIDRangeBegin uint16 // 0xFFFF: every LID
	LIDRangeEnd   uint16
	IsGeneric     bool
	Subscribe     bool
	Type          uint16 // 0xFFFF: every type
	TrapNumber    uint16 // 0xFFFF: every trap
	QPN           uint32 // 24 bits
	RespTimeValue uint8  // 5 bits
	ProducerType  uint32 // 24 bits
}

// informInfoPut writes f as an InformInfo into b; informInfoGet reads
// one. Both need InformInfoSize bytes.
func informInfoPut(b []byte, f *InformInfoFields) {
	copy(b, f.GID[:])
	binary.BigEndian.PutUint16(b[16:], f.LIDRangeBegin)
	binary.BigEndian.PutUint16(b[18:], f.LIDRangeEnd)
	b[20], b[21] = 0, 0
	b[22], b[23] = boolByte(f.IsGeneric), boolByte(f.Subscribe)
	binary.BigEndian.PutUint16(b[24:], f.Type)
	binary.BigEndian.PutUint16(b[26:], f.TrapNumber)
	binary.BigEndian.PutUint32(b[28:], f.QPN<<8|uint32(f.RespTimeValue&0x1f))
	binary.BigEndian.PutUint32(b[32:], f.ProducerType&0xffffff)
}

func informInfoGet(b []byte) InformInfoFields {
	f := InformInfoFields{LIDRangeBegin: binary.BigEndian.Uint16(b[16:]), LIDRangeEnd: binary.BigEndian.Uint16(b[18:]),
		IsGeneric: b[22] != 0, Subscribe: b[23] != 0, Type: binary.BigEndian.Uint16(b[24:]),
		TrapNumber: binary.BigEndian.Uint16(b[26:]), QPN: binary.BigEndian.Uint32(b[28:]) >> 8,
		RespTimeValue: b[31] & 0x1f, ProducerType: binary.BigEndian.Uint32(b[32:]) & 0xffffff}
	copy(f.GID[:], b)
	return f
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// AppendInformInfo appends the InformInfo f to dst.
func AppendInformInfo(dst []byte, f *InformInfoFields) []byte {
	dst, b := grow(dst, InformInfoSize)
	informInfoPut(b, f)
	return dst
}

// DecodeInformInfo returns the InformInfo in b.
func DecodeInformInfo(b []byte) (InformInfoFields, error) {
	if len(b) < InformInfoSize {
		return InformInfoFields{}, truncated("InformInfo", len(b), InformInfoSize)
	}
	return informInfoGet(b), nil
}

// InformInfoRecordFields is an InformInfoRecord (IBA 15.2.5.12): a
// subscription as the SA keeps it.
type InformInfoRecordFields struct {
	SubscriberGID GID
	Enum          uint16
	InformInfo    InformInfoFields
}

// AppendInformInfoRecord appends the record f to dst.
func AppendInformInfoRecord(dst []byte, f *InformInfoRecordFields) []byte {
	dst, w := appendRecord(dst, SAInformInfoRecordLayout)
	w.putGID(0, f.SubscriberGID)
	w.put(1, uint64(f.Enum))
	informInfoPut(w.b[24:], &f.InformInfo)
	return dst
}

// DecodeInformInfoRecord returns the InformInfoRecord in b.
func DecodeInformInfoRecord(b []byte) (InformInfoRecordFields, error) {
	if err := decodeRecord(SAInformInfoRecordLayout, b); err != nil {
		return InformInfoRecordFields{}, err
	}
	w := recW{b, SAInformInfoRecordLayout.Components}
	return InformInfoRecordFields{SubscriberGID: w.gid(0), Enum: uint16(w.get(1)), InformInfo: informInfoGet(b[24:])}, nil
}
