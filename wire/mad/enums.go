package mad

// MgmtClass is the MAD management class (IBA 13.4.4).
type MgmtClass uint8

// Management classes.
const (
	ClassSubnLID      MgmtClass = 0x01 // subnet management, LID-routed
	ClassSubnAdm      MgmtClass = 0x03 // subnet administration
	ClassPerfMgt      MgmtClass = 0x04 // performance management
	ClassBM           MgmtClass = 0x05 // baseboard management
	ClassDevMgt       MgmtClass = 0x06 // device management
	ClassCM           MgmtClass = 0x07 // communication management
	ClassSNMP         MgmtClass = 0x08 // SNMP tunneling
	ClassCongestion   MgmtClass = 0x21 // congestion control
	ClassSubnDirected MgmtClass = 0x81 // subnet management, directed route
)

// Method is the MAD method (IBA 13.4.5), without the response bit.
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

	MethodGetResp    Method = 0x81 // GetResp: Get with the response bit
	MethodReportResp Method = 0x86

	// MethodResponse is the R bit of the method byte.
	MethodResponse Method = 0x80
)

// AttrID is a management attribute identifier.
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
