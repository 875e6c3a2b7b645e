package mad

import "fmt"

// The optional PMA counter attributes (IBA 16.1.4): each is a head of
// OpCode (or reserved), PortSelect and CounterSelect, then a row of
// counters of one width, as libibmad's field tables lay them out. Bit i of
// CounterSelect selects counter i, which a Set resets; for the per-VL
// attributes counter i is VL i. A counter stops at its largest value.
//
//	byte 0 +---------------+---------------+-------------------------------+
//	       | OpCode / rsv  |  PortSelect   |        CounterSelect          |
//	     4 +---------------+---------------+-------------------------------+
//	       |   counters, Width bits each, most significant bits first ...  |
const (
	pmaOptOpCode        = 0
	pmaOptPortSelect    = 1
	pmaOptCounterSelect = 2
	pmaOptCounters      = 4
	// PMAMaxCounters is the most counters an optional attribute has: one
	// per VL.
	PMAMaxCounters = 16
)

// Optional performance management attributes (IBA 16.1.4).
const (
	AttrPortRcvErrorDetails           AttrID = 0x0015
	AttrPortXmitDiscardDetails        AttrID = 0x0016
	AttrPortOpRcvCounters             AttrID = 0x0017
	AttrPortFlowCtlCounters           AttrID = 0x0018
	AttrPortVLOpPackets               AttrID = 0x0019
	AttrPortVLOpData                  AttrID = 0x001a
	AttrPortVLXmitFlowCtlUpdateErrors AttrID = 0x001b
	AttrPortVLXmitWaitCounters        AttrID = 0x001c
)

// The congestion control counter attributes of the PMA (IBA 16.1.4 and
// Annex A10; IDs as libibmad's mad.h, layouts as its fields.c).
const (
	AttrSwPortVLCongestion AttrID = 0x0030 // switch ports: congestion seen per VL
	AttrPortRcvConCtrl     AttrID = 0x0031 // packets received with FECN, with BECN
	AttrPortSLRcvFECN      AttrID = 0x0032 // packets received with FECN, per SL
	AttrPortSLRcvBECN      AttrID = 0x0033 // packets received with BECN, per SL
	AttrPortXmitConCtrl    AttrID = 0x0034 // time the port was congested
	AttrPortVLXmitTimeCong AttrID = 0x0035 // time each VL was congested (VL0-14)
)

// PMACounterLayout describes one optional counter attribute.
type PMACounterLayout struct {
	Attr   AttrID
	Name   string
	OpCode bool     // byte 0 is the OpCode the counters count
	Width  int      // bits per counter: 2, 16 or 32
	Names  []string // the counters, in order
	// SwitchOnly: the attribute counts what a switch port does (FECN
	// marking, congestion detection), which a CA port does not.
	SwitchOnly bool
}

func vlNames(prefix string) []string { return numberedNames(prefix, PMAMaxCounters) }

// numberedNames returns prefix0 … prefix(n-1).
func numberedNames(prefix string, count int) []string {
	n := make([]string, count)
	for i := range n {
		n[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return n
}

// PMAOptionalLayouts are the optional counter attributes this package
// lays out, by attribute.
var PMAOptionalLayouts = map[AttrID]*PMACounterLayout{
	AttrPortRcvErrorDetails: {Attr: AttrPortRcvErrorDetails, Name: "PortRcvErrorDetails", Width: 16,
		Names: []string{"PortLocalPhysicalErrors", "PortMalformedPktErrors", "PortBufferOverrunErrors",
			"PortDLIDMappingErrors", "PortVLMappingErrors", "PortLoopingErrors"}},
	AttrPortXmitDiscardDetails: {Attr: AttrPortXmitDiscardDetails, Name: "PortXmitDiscardDetails", Width: 16,
		Names: []string{"PortInactiveDiscards", "PortNeighborMTUDiscards", "PortSwLifetimeLimitDiscards",
			"PortSwHOQLifetimeLimitDiscards"}},
	AttrPortOpRcvCounters: {Attr: AttrPortOpRcvCounters, Name: "PortOpRcvCounters", OpCode: true, Width: 32,
		Names: []string{"PortOpRcvPkts", "PortOpRcvData"}},
	AttrPortFlowCtlCounters: {Attr: AttrPortFlowCtlCounters, Name: "PortFlowCtlCounters", Width: 32,
		Names: []string{"PortXmitFlowPkts", "PortRcvFlowPkts"}},
	AttrPortVLOpPackets: {Attr: AttrPortVLOpPackets, Name: "PortVLOpPackets", OpCode: true, Width: 16,
		Names: vlNames("PortVLOpPackets")},
	AttrPortVLOpData: {Attr: AttrPortVLOpData, Name: "PortVLOpData", OpCode: true, Width: 32,
		Names: vlNames("PortVLOpData")},
	AttrPortVLXmitFlowCtlUpdateErrors: {Attr: AttrPortVLXmitFlowCtlUpdateErrors,
		Name: "PortVLXmitFlowCtlUpdateErrors", Width: 2, Names: vlNames("PortVLXmitFlowCtlUpdateErrors")},
	AttrPortVLXmitWaitCounters: {Attr: AttrPortVLXmitWaitCounters, Name: "PortVLXmitWaitCounters", Width: 16,
		Names: vlNames("PortVLXmitWait")},
	AttrSwPortVLCongestion: {Attr: AttrSwPortVLCongestion, Name: "SwPortVLCongestion", Width: 16, SwitchOnly: true,
		Names: vlNames("SWPortVLCongestion")},
	AttrPortRcvConCtrl: {Attr: AttrPortRcvConCtrl, Name: "PortRcvConCtrl", Width: 32,
		Names: []string{"PortPktRcvFECN", "PortPktRcvBECN"}},
	AttrPortSLRcvFECN: {Attr: AttrPortSLRcvFECN, Name: "PortSLRcvFECN", Width: 32,
		Names: vlNames("PortSLRcvFECN")},
	AttrPortSLRcvBECN: {Attr: AttrPortSLRcvBECN, Name: "PortSLRcvBECN", Width: 32,
		Names: vlNames("PortSLRcvBECN")},
	AttrPortXmitConCtrl: {Attr: AttrPortXmitConCtrl, Name: "PortXmitConCtrl", Width: 32, SwitchOnly: true,
		Names: []string{"PortXmitTimeCong"}},
	// VL15 is not flow controlled and has no congestion: 15 counters.
	AttrPortVLXmitTimeCong: {Attr: AttrPortVLXmitTimeCong, Name: "PortVLXmitTimeCong", Width: 32, SwitchOnly: true,
		Names: numberedNames("PortVLXmitTimeCong", PMAMaxCounters-1)},
}

func init() {
	for a, l := range PMAOptionalLayouts {
		pmaAttrNames[a] = l.Name
	}
}

// Size returns the bytes the attribute uses of the PMA data.
func (l *PMACounterLayout) Size() int {
	return pmaOptCounters + (len(l.Names)*l.Width+7)/8
}

// Max returns a counter's largest value.
func (l *PMACounterLayout) Max() uint64 { return 1<<l.Width - 1 }

// PMACounterSetFields holds an optional counter attribute: the head and
// the counters, Counters[i] for Names[i].
type PMACounterSetFields struct {
	OpCode        uint8
	PortSelect    uint8
	CounterSelect uint16
	Counters      [PMAMaxCounters]uint64
}

// counterBits returns the bit offset of counter i from the start.
func (l *PMACounterLayout) counterBits(i int) int { return pmaOptCounters*8 + i*l.Width }

// getBits reads width bits at bit offset off, most significant first.
func getBits(b []byte, off, width int) uint64 {
	var v uint64
	for i := range width {
		bit := off + i
		v = v<<1 | uint64(b[bit/8]>>(7-bit%8)&1)
	}
	return v
}

// putBits writes v's low width bits at bit offset off.
func putBits(b []byte, off, width int, v uint64) {
	for i := range width {
		bit := off + i
		mask := byte(1) << (7 - bit%8)
		if v>>(width-1-i)&1 != 0 {
			b[bit/8] |= mask
		} else {
			b[bit/8] &^= mask
		}
	}
}

// Encode writes f into b[:l.Size()], each counter stuck at l.Max() when
// larger, reserved bits zero. b must hold l.Size() bytes.
func (l *PMACounterLayout) Encode(b []byte, f *PMACounterSetFields) {
	clear(b[:l.Size()])
	if l.OpCode {
		b[pmaOptOpCode] = f.OpCode
	}
	b[pmaOptPortSelect] = f.PortSelect
	attrPut16(b, pmaOptCounterSelect, f.CounterSelect)
	for i := range l.Names {
		putBits(b, l.counterBits(i), l.Width, min(f.Counters[i], l.Max()))
	}
}

// Fields returns the attribute in b. b must hold l.Size() bytes.
func (l *PMACounterLayout) Fields(b []byte) PMACounterSetFields {
	f := PMACounterSetFields{PortSelect: b[pmaOptPortSelect], CounterSelect: attrBE16(b, pmaOptCounterSelect)}
	if l.OpCode {
		f.OpCode = b[pmaOptOpCode]
	}
	for i := range l.Names {
		f.Counters[i] = getBits(b, l.counterBits(i), l.Width)
	}
	return f
}

// Append appends the encoding of f to dst.
func (l *PMACounterLayout) Append(dst []byte, f *PMACounterSetFields) []byte {
	dst, b := attrGrow(dst, l.Size())
	l.Encode(b, f)
	return dst
}

// Decode reads the attribute from b.
func (l *PMACounterLayout) Decode(b []byte) (PMACounterSetFields, error) {
	if len(b) < l.Size() {
		return PMACounterSetFields{}, truncated(l.Name, len(b), l.Size())
	}
	return l.Fields(b), nil
}
