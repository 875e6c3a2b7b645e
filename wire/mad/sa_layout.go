package mad

import (
	"bytes"
	"fmt"
)

// SA attribute IDs (IBA 15.2.5, table 174 of 1.2.1). InformInfo (0x0003)
// and Notice (0x0002) are shared with the other classes.
const (
	AttrSANodeRecord       AttrID = 0x0011
	AttrSAPortInfoRecord   AttrID = 0x0012
	AttrSASLtoVLRecord     AttrID = 0x0013
	AttrSASwitchInfoRecord AttrID = 0x0014
	AttrSALFTRecord        AttrID = 0x0015
	AttrSARFTRecord        AttrID = 0x0016
	AttrSAMFTRecord        AttrID = 0x0017
	AttrSASMInfoRecord     AttrID = 0x0018
	AttrSALinkRecord       AttrID = 0x0020
	AttrSAGUIDInfoRecord   AttrID = 0x0030
	AttrSAServiceRecord    AttrID = 0x0031
	AttrSAPKeyTableRecord  AttrID = 0x0033
	AttrSAPathRecord       AttrID = 0x0035
	AttrSAVLArbRecord      AttrID = 0x0036
	AttrSAMCMemberRecord   AttrID = 0x0038
	AttrSATraceRecord      AttrID = 0x0039
	AttrSAMultiPathRecord  AttrID = 0x003a
	AttrSAServiceAssocRec  AttrID = 0x003b
	AttrSAInformInfoRecord AttrID = 0x00f3
	AttrSAClassPortInfo    AttrID = AttrClassPortInfo
	AttrSAInformInfo       AttrID = AttrInformInfo
	AttrSANotice           AttrID = AttrNotice
)

// SAComponent is one component of an SA record: the bits that one
// component-mask bit selects (IBA 15.2.5: component i is the i-th field
// of the record's table, reserved fields included). Bit counts from the
// most significant bit of the record's first byte.
type SAComponent struct {
	Name     string
	Bit      int
	Bits     int
	Reserved bool
}

// Uint returns the component's value in rec, for components of at most
// 64 bits; wider components return their last 64 bits.
func (c SAComponent) Uint(rec []byte) uint64 {
	if c.Bits > 64 {
		return getBits(rec, c.Bit+c.Bits-64, 64)
	}
	return getBits(rec, c.Bit, c.Bits)
}

// SetUint stores v's low bits in the component of rec (components of at
// most 64 bits).
func (c SAComponent) SetUint(rec []byte, v uint64) { putBits(rec, c.Bit, min(c.Bits, 64), v) }

// Equal reports whether a and b hold the same value in the component.
func (c SAComponent) Equal(a, b []byte) bool {
	if c.Bit%8 == 0 && c.Bits%8 == 0 {
		s, e := c.Bit/8, (c.Bit+c.Bits)/8
		return bytes.Equal(a[s:e], b[s:e])
	}
	for off := 0; off < c.Bits; off += 64 {
		n := min(64, c.Bits-off)
		if getBits(a, c.Bit+off, n) != getBits(b, c.Bit+off, n) {
			return false
		}
	}
	return true
}

// SARecordLayout describes one SA record: its attribute, size and
// components.
type SARecordLayout struct {
	Attr       AttrID
	Name       string
	Size       int // bytes, padding included: a multiple of 8
	Components []SAComponent
}

// Words returns the record's size in 8-byte words, the AttributeOffset
// of a GetTable response.
func (l *SARecordLayout) Words() uint16 { return uint16(l.Size / 8) }

// Match reports whether rec agrees with query in every non-reserved
// component mask selects. Mask bits past the layout's components are
// ignored. Both slices must hold Size bytes.
func (l *SARecordLayout) Match(query, rec []byte, mask uint64) bool {
	for i, c := range l.Components {
		if mask&(1<<uint(i)) == 0 || c.Reserved {
			continue
		}
		if !c.Equal(query, rec) {
			return false
		}
	}
	return true
}

// Component returns the index of the component named name, or -1.
func (l *SARecordLayout) Component(name string) int {
	for i, c := range l.Components {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// Bit returns the component-mask bit of the component named name; it
// panics on a name the layout lacks (a programming error).
func (l *SARecordLayout) Bit(name string) uint64 {
	i := l.Component(name)
	if i < 0 {
		panic(fmt.Sprintf("mad: %s has no component %q", l.Name, name))
	}
	return 1 << uint(i)
}

// SALayout returns the layout of the SA record with attribute id.
func SALayout(id AttrID) (*SARecordLayout, bool) {
	for _, l := range saLayouts {
		if l.Attr == id {
			return l, true
		}
	}
	return nil, false
}

// SALayouts returns the layouts of every SA record this package knows.
func SALayouts() []*SARecordLayout { return append([]*SARecordLayout(nil), saLayouts...) }

// comp builds a component at byte off, bit (from the MSB) within it.
func comp(name string, off, bit, bits int) SAComponent {
	return SAComponent{Name: name, Bit: off*8 + bit, Bits: bits}
}

// rsvd builds a reserved component.
func rsvd(off, bit, bits int) SAComponent {
	return SAComponent{Name: "reserved", Bit: off*8 + bit, Bits: bits, Reserved: true}
}

// bytesComp builds a byte-aligned component of n bytes.
func bytesComp(name string, off, n int) SAComponent { return comp(name, off, 0, n*8) }

// The record layouts (IBA 15.2.5.x; the component numbering is the one
// saquery and OpenSM use).
var (
	SANodeRecordLayout = &SARecordLayout{Attr: AttrSANodeRecord, Name: "NodeRecord", Size: 112,
		Components: []SAComponent{
			bytesComp("LID", 0, 2), rsvd(2, 0, 16),
			bytesComp("BaseVersion", 4, 1), bytesComp("ClassVersion", 5, 1), bytesComp("NodeType", 6, 1),
			bytesComp("NumPorts", 7, 1), bytesComp("SystemImageGUID", 8, 8), bytesComp("NodeGUID", 16, 8),
			bytesComp("PortGUID", 24, 8), bytesComp("PartitionCap", 32, 2), bytesComp("DeviceID", 34, 2),
			bytesComp("Revision", 36, 4), bytesComp("LocalPortNum", 40, 1), bytesComp("VendorID", 41, 3),
			bytesComp("NodeDescription", 44, 64),
		}}

	SAPortInfoRecordLayout = &SARecordLayout{Attr: AttrSAPortInfoRecord, Name: "PortInfoRecord", Size: 72,
		Components: portInfoRecordComponents()}

	SASwitchInfoRecordLayout = &SARecordLayout{Attr: AttrSASwitchInfoRecord, Name: "SwitchInfoRecord", Size: 24,
		Components: []SAComponent{bytesComp("LID", 0, 2), rsvd(2, 0, 16)}}

	SALFTRecordLayout = &SARecordLayout{Attr: AttrSALFTRecord, Name: "LinearForwardingTableRecord", Size: 72,
		Components: []SAComponent{bytesComp("LID", 0, 2), bytesComp("BlockNum", 2, 2), rsvd(4, 0, 32)}}

	SAMFTRecordLayout = &SARecordLayout{Attr: AttrSAMFTRecord, Name: "MulticastForwardingTableRecord", Size: 72,
		Components: []SAComponent{bytesComp("LID", 0, 2), comp("Position", 2, 0, 4), rsvd(2, 4, 3),
			comp("BlockNum", 2, 7, 9), rsvd(4, 0, 32)}}

	SALinkRecordLayout = &SARecordLayout{Attr: AttrSALinkRecord, Name: "LinkRecord", Size: 8,
		Components: []SAComponent{bytesComp("FromLID", 0, 2), bytesComp("FromPort", 2, 1),
			bytesComp("ToPort", 3, 1), bytesComp("ToLID", 4, 2), rsvd(6, 0, 16)}}

	SASMInfoRecordLayout = &SARecordLayout{Attr: AttrSASMInfoRecord, Name: "SMInfoRecord", Size: 32,
		Components: []SAComponent{bytesComp("LID", 0, 2), rsvd(2, 0, 16), bytesComp("GUID", 4, 8),
			bytesComp("SM_Key", 12, 8), bytesComp("ActCount", 20, 4), comp("Priority", 24, 0, 4),
			comp("SMState", 24, 4, 4)}}

	SAGUIDInfoRecordLayout = &SARecordLayout{Attr: AttrSAGUIDInfoRecord, Name: "GUIDInfoRecord", Size: 72,
		Components: append([]SAComponent{bytesComp("LID", 0, 2), bytesComp("BlockNum", 2, 1),
			rsvd(3, 0, 8), rsvd(4, 0, 32)}, indexed("GUID", 8, 8, 8)...)}

	SAPKeyTableRecordLayout = &SARecordLayout{Attr: AttrSAPKeyTableRecord, Name: "P_KeyTableRecord", Size: 72,
		Components: []SAComponent{bytesComp("LID", 0, 2), bytesComp("BlockNum", 2, 2), bytesComp("PortNum", 4, 1),
			rsvd(5, 0, 24)}}

	SASLtoVLRecordLayout = &SARecordLayout{Attr: AttrSASLtoVLRecord, Name: "SLtoVLMappingTableRecord", Size: 16,
		Components: []SAComponent{bytesComp("LID", 0, 2), bytesComp("InputPortNum", 2, 1),
			bytesComp("OutputPortNum", 3, 1), rsvd(4, 0, 32)}}

	SAVLArbRecordLayout = &SARecordLayout{Attr: AttrSAVLArbRecord, Name: "VLArbitrationTableRecord", Size: 72,
		Components: []SAComponent{bytesComp("LID", 0, 2), bytesComp("OutputPortNum", 2, 1),
			bytesComp("BlockNum", 3, 1), rsvd(4, 0, 32)}}

	SAPathRecordLayout = &SARecordLayout{Attr: AttrSAPathRecord, Name: "PathRecord", Size: 64,
		Components: []SAComponent{bytesComp("ServiceID_MSB", 0, 4), bytesComp("ServiceID_LSB", 4, 4),
			bytesComp("DGID", 8, 16), bytesComp("SGID", 24, 16), bytesComp("DLID", 40, 2), bytesComp("SLID", 42, 2),
			comp("RawTraffic", 44, 0, 1), rsvd(44, 1, 3), comp("FlowLabel", 44, 4, 20), bytesComp("HopLimit", 47, 1),
			bytesComp("TClass", 48, 1), comp("Reversible", 49, 0, 1), comp("NumbPath", 49, 1, 7),
			bytesComp("P_Key", 50, 2), comp("QoSClass", 52, 0, 12), comp("SL", 53, 4, 4),
			comp("MTUSelector", 54, 0, 2), comp("MTU", 54, 2, 6), comp("RateSelector", 55, 0, 2), comp("Rate", 55, 2, 6),
			comp("PacketLifeTimeSelector", 56, 0, 2), comp("PacketLifeTime", 56, 2, 6),
			bytesComp("Preference", 57, 1), rsvd(58, 0, 48)}}

	SAMultiPathRecordLayout = &SARecordLayout{Attr: AttrSAMultiPathRecord, Name: "MultiPathRecord", Size: 24,
		Components: []SAComponent{comp("RawTraffic", 0, 0, 1), rsvd(0, 1, 3), comp("FlowLabel", 0, 4, 20),
			bytesComp("HopLimit", 3, 1), bytesComp("TClass", 4, 1), comp("Reversible", 5, 0, 1), comp("NumbPath", 5, 1, 7),
			bytesComp("P_Key", 6, 2), comp("QoSClass", 8, 0, 12), comp("SL", 9, 4, 4),
			comp("MTUSelector", 10, 0, 2), comp("MTU", 10, 2, 6), comp("RateSelector", 11, 0, 2), comp("Rate", 11, 2, 6),
			comp("PacketLifeTimeSelector", 12, 0, 2), comp("PacketLifeTime", 12, 2, 6),
			bytesComp("ServiceID_MSB", 13, 1), comp("IndependenceSelector", 14, 0, 2), rsvd(14, 2, 6),
			bytesComp("SGIDCount", 15, 1), bytesComp("DGIDCount", 16, 1), bytesComp("ServiceID_LSB", 17, 7)}}

	SAServiceRecordLayout = &SARecordLayout{Attr: AttrSAServiceRecord, Name: "ServiceRecord", Size: 176,
		Components: slicesConcat(
			[]SAComponent{bytesComp("ServiceID", 0, 8), bytesComp("ServiceGID", 8, 16), bytesComp("ServiceP_Key", 24, 2),
				rsvd(26, 0, 16), bytesComp("ServiceLease", 28, 4), bytesComp("ServiceKey", 32, 16),
				bytesComp("ServiceName", 48, 64)},
			indexed("ServiceData8_", 112, 1, 16), indexed("ServiceData16_", 128, 2, 8),
			indexed("ServiceData32_", 144, 4, 4), indexed("ServiceData64_", 160, 8, 2))}

	SAMCMemberRecordLayout = &SARecordLayout{Attr: AttrSAMCMemberRecord, Name: "MCMemberRecord", Size: 56,
		Components: []SAComponent{bytesComp("MGID", 0, 16), bytesComp("PortGID", 16, 16), bytesComp("Q_Key", 32, 4),
			bytesComp("MLID", 36, 2), comp("MTUSelector", 38, 0, 2), comp("MTU", 38, 2, 6), bytesComp("TClass", 39, 1),
			bytesComp("P_Key", 40, 2), comp("RateSelector", 42, 0, 2), comp("Rate", 42, 2, 6),
			comp("PacketLifeTimeSelector", 43, 0, 2), comp("PacketLifeTime", 43, 2, 6),
			comp("SL", 44, 0, 4), comp("FlowLabel", 44, 4, 20), bytesComp("HopLimit", 47, 1),
			comp("Scope", 48, 0, 4), comp("JoinState", 48, 4, 4), comp("ProxyJoin", 49, 0, 1), rsvd(49, 1, 23)}}

	SAInformInfoRecordLayout = &SARecordLayout{Attr: AttrSAInformInfoRecord, Name: "InformInfoRecord", Size: 64,
		Components: []SAComponent{bytesComp("SubscriberGID", 0, 16), bytesComp("Enum", 16, 2), rsvd(18, 0, 48),
			bytesComp("GID", 24, 16), bytesComp("LIDRangeBegin", 40, 2), bytesComp("LIDRangeEnd", 42, 2),
			rsvd(44, 0, 16), bytesComp("IsGeneric", 46, 1), bytesComp("Subscribe", 47, 1), bytesComp("Type", 48, 2),
			bytesComp("TrapNumber", 50, 2), comp("QPN", 52, 0, 24), rsvd(55, 0, 3), comp("RespTimeValue", 55, 3, 5),
			rsvd(56, 0, 8), comp("ProducerType", 57, 0, 24)}}
)

var saLayouts = []*SARecordLayout{SANodeRecordLayout, SAPortInfoRecordLayout, SASwitchInfoRecordLayout,
	SALFTRecordLayout, SAMFTRecordLayout, SALinkRecordLayout, SASMInfoRecordLayout, SAGUIDInfoRecordLayout,
	SAPKeyTableRecordLayout, SASLtoVLRecordLayout, SAVLArbRecordLayout, SAPathRecordLayout,
	SAMultiPathRecordLayout, SAServiceRecordLayout, SAMCMemberRecordLayout, SAInformInfoRecordLayout}

// indexed returns n byte-aligned components name0, name1, … of size bytes
// from off.
func indexed(name string, off, size, n int) []SAComponent {
	c := make([]SAComponent, n)
	for i := range c {
		c[i] = bytesComp(fmt.Sprintf("%s%d", name, i), off+i*size, size)
	}
	return c
}

func slicesConcat(parts ...[]SAComponent) []SAComponent {
	var all []SAComponent
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

// portInfoRecordComponents lists the PortInfoRecord's components: the
// record's LID, port and options, then every PortInfo field (at 4).
// Byte 56 stays one reserved component (bit 51, OpenSM's RESV5), though
// IBA 1.5 puts the LinkSpeedExt2 fields in it: splitting it would renumber
// every component after it.
func portInfoRecordComponents() []SAComponent {
	const o = 4
	return []SAComponent{bytesComp("EndportLID", 0, 2), bytesComp("PortNum", 2, 1), bytesComp("Options", 3, 1),
		bytesComp("M_Key", o+0, 8), bytesComp("GIDPrefix", o+8, 8), bytesComp("LID", o+16, 2),
		bytesComp("MasterSMLID", o+18, 2), bytesComp("CapabilityMask", o+20, 4), bytesComp("DiagCode", o+24, 2),
		bytesComp("M_KeyLeasePeriod", o+26, 2), bytesComp("LocalPortNum", o+28, 1),
		bytesComp("LinkWidthEnabled", o+29, 1), bytesComp("LinkWidthSupported", o+30, 1),
		bytesComp("LinkWidthActive", o+31, 1), comp("LinkSpeedSupported", o+32, 0, 4), comp("PortState", o+32, 4, 4),
		comp("PortPhysicalState", o+33, 0, 4), comp("LinkDownDefaultState", o+33, 4, 4),
		comp("M_KeyProtectBits", o+34, 0, 2), rsvd(o+34, 2, 3), comp("LMC", o+34, 5, 3),
		comp("LinkSpeedActive", o+35, 0, 4), comp("LinkSpeedEnabled", o+35, 4, 4),
		comp("NeighborMTU", o+36, 0, 4), comp("MasterSMSL", o+36, 4, 4), comp("VLCap", o+37, 0, 4),
		comp("InitType", o+37, 4, 4), bytesComp("VLHighLimit", o+38, 1), bytesComp("VLArbitrationHighCap", o+39, 1),
		bytesComp("VLArbitrationLowCap", o+40, 1), comp("InitTypeReply", o+41, 0, 4), comp("MTUCap", o+41, 4, 4),
		comp("VLStallCount", o+42, 0, 3), comp("HOQLife", o+42, 3, 5), comp("OperationalVLs", o+43, 0, 4),
		comp("PartitionEnforcementInbound", o+43, 4, 1), comp("PartitionEnforcementOutbound", o+43, 5, 1),
		comp("FilterRawInbound", o+43, 6, 1), comp("FilterRawOutbound", o+43, 7, 1),
		bytesComp("M_KeyViolations", o+44, 2), bytesComp("P_KeyViolations", o+46, 2),
		bytesComp("Q_KeyViolations", o+48, 2), bytesComp("GUIDCap", o+50, 1), comp("ClientReregister", o+51, 0, 1),
		rsvd(o+51, 1, 2), comp("SubnetTimeOut", o+51, 3, 5), rsvd(o+52, 0, 3), comp("RespTimeValue", o+52, 3, 5),
		comp("LocalPhyErrors", o+53, 0, 4), comp("OverrunErrors", o+53, 4, 4), bytesComp("MaxCreditHint", o+54, 2),
		rsvd(o+56, 0, 8), comp("LinkRoundTripLatency", o+57, 0, 24), bytesComp("CapabilityMask2", o+60, 2),
		comp("LinkSpeedExtActive", o+62, 0, 4), comp("LinkSpeedExtSupported", o+62, 4, 4), rsvd(o+63, 0, 3),
		comp("LinkSpeedExtEnabled", o+63, 3, 5)}
}
