package mad

import "fmt"

// MgmtClass is the MAD management class (IBA 13.4.4).
type MgmtClass uint8

// Management classes.
const (
	ClassSubnLID MgmtClass = 0x01 // subnet management, LID-routed
	ClassSubnAdm MgmtClass = 0x03 // subnet administration
	ClassPerfMgt MgmtClass = 0x04 // performance management
	ClassBM      MgmtClass = 0x05 // baseboard management
	ClassDevMgt  MgmtClass = 0x06 // device management
	ClassCM      MgmtClass = 0x07 // communication management
	ClassSNMP    MgmtClass = 0x08 // SNMP tunneling
	// ClassVendorAR is ibfab's adaptive routing class, in the first
	// vendor range (ar.go).
	ClassVendorAR     MgmtClass = 0x0a
	ClassCongestion   MgmtClass = 0x21 // congestion control
	ClassSubnDirected MgmtClass = 0x81 // subnet management, directed route
)

// String returns the class's short name, or its number in hex. The
// protocol numbers of this file (classes, methods, attributes) keep
// hand-written names rather than stringer's: a value no name covers is
// read off the wire, and prints in hex as OpenSM, ibdump and Wireshark
// print it (stringer would print it in decimal); bpf's rule text relies
// on that form.
func (c MgmtClass) String() string {
	switch c {
	case ClassSubnLID:
		return "SubnLID"
	case ClassSubnAdm:
		return "SubnAdm"
	case ClassPerfMgt:
		return "PerfMgt"
	case ClassBM:
		return "BM"
	case ClassDevMgt:
		return "DevMgt"
	case ClassCM:
		return "CM"
	case ClassSNMP:
		return "SNMP"
	case ClassVendorAR:
		return "VendorAR"
	case ClassCongestion:
		return "CongestionControl"
	case ClassSubnDirected:
		return "SubnDirected"
	}
	return fmt.Sprintf("MgmtClass(%#02x)", uint8(c))
}

// IsSubn reports whether c is one of the two subnet management classes,
// whose MADs are SMPs carried on QP0 and VL15.
func (c MgmtClass) IsSubn() bool { return c == ClassSubnLID || c == ClassSubnDirected }

// Method is the MAD method byte (IBA 13.4.5): the method in the low seven
// bits and the response bit R on top. Responses are spelled with R set
// (MethodGetResp); Request and IsResponse split the two.
type Method uint8

// Methods.
const (
	MethodGet         Method = 0x01
	MethodSet         Method = 0x02
	MethodSend        Method = 0x03
	MethodTrap        Method = 0x05
	MethodReport      Method = 0x06
	MethodTrapRepress Method = 0x07
	MethodGetTable    Method = 0x12
	MethodDelete      Method = 0x15

	MethodGetResp    Method = 0x81 // GetResp: Get with the response bit; also answers Set
	MethodReportResp Method = 0x86

	// MethodResponse is the R bit of the method byte.
	MethodResponse Method = 0x80
)

// IsResponse reports whether the R bit is set.
func (m Method) IsResponse() bool { return m&MethodResponse != 0 }

// Request returns m without the R bit.
func (m Method) Request() Method { return m &^ MethodResponse }

// String returns the method's name (GetResp for 0x81), or its number in hex.
func (m Method) String() string {
	switch m {
	case MethodGet:
		return "Get"
	case MethodSet:
		return "Set"
	case MethodSend:
		return "Send"
	case MethodTrap:
		return "Trap"
	case MethodReport:
		return "Report"
	case MethodTrapRepress:
		return "TrapRepress"
	case MethodGetTable:
		return "GetTable"
	case MethodDelete:
		return "Delete"
	case MethodGetResp:
		return "GetResp"
	case MethodReportResp:
		return "ReportResp"
	case MethodGetTable | MethodResponse:
		return "GetTableResp"
	case MethodDelete | MethodResponse:
		return "DeleteResp"
	}
	return fmt.Sprintf("Method(%#02x)", uint8(m))
}

// AttrID is a management attribute identifier. Its meaning depends on the
// management class: String names the subnet management attributes, Name
// picks the table for a given class.
type AttrID uint16

// Subnet management attributes (IBA 14.2.5, table 145).
const (
	AttrClassPortInfo   AttrID = 0x0001
	AttrNotice          AttrID = 0x0002
	AttrInformInfo      AttrID = 0x0003
	AttrNodeDescription AttrID = 0x0010
	AttrNodeInfo        AttrID = 0x0011
	AttrSwitchInfo      AttrID = 0x0012
	AttrGUIDInfo        AttrID = 0x0014
	AttrPortInfo        AttrID = 0x0015
	AttrPKeyTable       AttrID = 0x0016
	AttrSLtoVLMapping   AttrID = 0x0017
	AttrVLArbitration   AttrID = 0x0018
	AttrLinearFwdTbl    AttrID = 0x0019
	AttrRandomFwdTbl    AttrID = 0x001a
	AttrMulticastFwdTbl AttrID = 0x001b
	AttrSMInfo          AttrID = 0x0020
	AttrVendorDiag      AttrID = 0x0030
	AttrLedInfo         AttrID = 0x0031
)

// Performance management attributes (IBA 16.1.3).
const (
	AttrPortSamplesControl   AttrID = 0x0010
	AttrPortSamplesResult    AttrID = 0x0011
	AttrPortCounters         AttrID = 0x0012
	AttrPortCountersExtended AttrID = 0x001d
)

var smAttrNames = map[AttrID]string{
	AttrClassPortInfo:   "ClassPortInfo",
	AttrNotice:          "Notice",
	AttrInformInfo:      "InformInfo",
	AttrNodeDescription: "NodeDescription",
	AttrNodeInfo:        "NodeInfo",
	AttrSwitchInfo:      "SwitchInfo",
	AttrGUIDInfo:        "GUIDInfo",
	AttrPortInfo:        "PortInfo",
	AttrPKeyTable:       "P_KeyTable",
	AttrSLtoVLMapping:   "SLtoVLMappingTable",
	AttrVLArbitration:   "VLArbitrationTable",
	AttrLinearFwdTbl:    "LinearForwardingTable",
	AttrRandomFwdTbl:    "RandomForwardingTable",
	AttrMulticastFwdTbl: "MulticastForwardingTable",
	AttrSMInfo:          "SMInfo",
	AttrVendorDiag:      "VendorDiag",
	AttrLedInfo:         "LedInfo",
}

var pmaAttrNames = map[AttrID]string{
	AttrClassPortInfo:        "ClassPortInfo",
	AttrPortSamplesControl:   "PortSamplesControl",
	AttrPortSamplesResult:    "PortSamplesResult",
	AttrPortCounters:         "PortCounters",
	AttrPortCountersExtended: "PortCountersExtended",
}

// String returns the subnet management name of a, or its number in hex.
func (a AttrID) String() string { return a.Name(ClassSubnLID) }

// Name returns the name a has in management class c: PMA attributes reuse
// the numbers of SM attributes (0x0012 is SwitchInfo and PortCounters).
func (a AttrID) Name(c MgmtClass) string {
	names := smAttrNames
	switch c {
	case ClassPerfMgt:
		names = pmaAttrNames
	case ClassCongestion:
		names = ccAttrNames
	case ClassVendorAR:
		names = arAttrNames
	}
	if s, ok := names[a]; ok {
		return s
	}
	return fmt.Sprintf("AttrID(%#04x)", uint16(a))
}
