package mad

import (
	"fmt"
	"strconv"
	"strings"
)

//go:generate go tool stringer -type=PortState,PhysState -linecomment

// PortState is the logical port state of PortInfo (IBA 14.2.5.6, 7.2).
//
//	Down --link up--> Init --SM Set--> Armed --SM Set, or first data--> Active
//	 ^                  |                |                                |
//	 +------------------+----------------+---------- link lost -----------+
type PortState uint8

// Port states. NoChange is only meaningful in a Set.
const (
	PortStateNoChange PortState = 0 // NoChange
	PortStateDown     PortState = 1 // Down
	PortStateInit     PortState = 2 // Init
	PortStateArmed    PortState = 3 // Armed
	PortStateActive   PortState = 4 // Active
)

// PhysState is the port physical state of PortInfo (IBA 14.2.5.6, 5.6.3);
// LinkDownDefaultState uses its first three codes.
type PhysState uint8

// Port physical states.
const (
	PhysStateNoChange                  PhysState = 0 // NoChange
	PhysStateSleep                     PhysState = 1 // Sleep
	PhysStatePolling                   PhysState = 2 // Polling
	PhysStateDisabled                  PhysState = 3 // Disabled
	PhysStatePortConfigurationTraining PhysState = 4 // PortConfigurationTraining
	PhysStateLinkUp                    PhysState = 5 // LinkUp
	PhysStateLinkErrorRecovery         PhysState = 6 // LinkErrorRecovery
	PhysStatePhyTest                   PhysState = 7 // PhyTest
)

// MTU is an IBA MTU code (IBA 14.2.5.6, 9.7.1: NeighborMTU, MTUCap).
type MTU uint8

// MTU codes.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes returns the payload size m stands for, or 0 for a reserved code.
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// String returns the MTU in bytes, e.g. "2048", or "MTU(n)" when reserved.
func (m MTU) String() string {
	if n := m.Bytes(); n != 0 {
		return strconv.Itoa(n)
	}
	return "MTU(" + strconv.Itoa(int(m)) + ")"
}

// MTUFromBytes returns the code of an MTU of n bytes and whether n is one of
// 256, 512, 1024, 2048 and 4096.
func MTUFromBytes(n int) (MTU, bool) {
	for m := MTU256; m <= MTU4096; m++ {
		if m.Bytes() == n {
			return m, true
		}
	}
	return 0, false
}

// NumDataVLs returns the number of data VLs a VLCap or OperationalVLs code
// stands for (1: VL0, 2: VL0-1, 3: VL0-3, 4: VL0-7, 5: VL0-14), or 0 for a
// reserved code.
func NumDataVLs(code uint8) int {
	switch code {
	case 1, 2, 3, 4:
		return 1 << (code - 1)
	case 5:
		return 15
	}
	return 0
}

// PortInfo CapabilityMask bits (IBA 14.2.5.6), those this fabric's agents
// set or test.
const (
	PortCapIsSM                            uint32 = 1 << 1
	PortCapIsNoticeSupported               uint32 = 1 << 2
	PortCapIsTrapSupported                 uint32 = 1 << 3
	PortCapIsAutomaticMigrationSupported   uint32 = 1 << 5
	PortCapIsSLMappingSupported            uint32 = 1 << 6
	PortCapIsSMDisabled                    uint32 = 1 << 10
	PortCapIsSystemImageGUIDSupported      uint32 = 1 << 11
	PortCapIsExtendedSpeedsSupported       uint32 = 1 << 14 // IBA 1.3: LinkSpeedExt fields valid
	PortCapIsCapabilityMask2Supported      uint32 = 1 << 15 // IBA 1.3: CapabilityMask2 valid
	PortCapIsCommunicationManagementSupp   uint32 = 1 << 16
	PortCapIsDeviceManagementSupported     uint32 = 1 << 19
	PortCapIsCapabilityMaskNoticeSupported uint32 = 1 << 22
	PortCapIsLinkRoundTripLatencySupported uint32 = 1 << 24
	PortCapIsClientReregistrationSupported uint32 = 1 << 25
)

// PortInfo CapabilityMask2 bits (IBA 1.3-1.5 14.2.5.6; the numbering of
// libibmad's and OpenSM's tables), those that say which widths and speeds
// a port has.
const (
	PortCap2IsLinkWidth2xSupported     uint16 = 1 << 4
	PortCap2IsLinkSpeedHDRSupported    uint16 = 1 << 5
	PortCap2IsLinkSpeedNDRSupported    uint16 = 1 << 10
	PortCap2IsExtendedSpeeds2Supported uint16 = 1 << 11
	PortCap2IsLinkSpeedXDRSupported    uint16 = 1 << 12
	portCap2Rate                              = PortCap2IsLinkWidth2xSupported | PortCap2IsLinkSpeedHDRSupported |
		PortCap2IsLinkSpeedNDRSupported | PortCap2IsExtendedSpeeds2Supported | PortCap2IsLinkSpeedXDRSupported
)

// PortInfoSMSupportsExtendedSpeeds is bit 31 of a PortInfo attribute
// modifier (IBA 1.3 14.2.5.6): the SM knows the extended speed fields.
// A Set without it leaves LinkSpeedExtEnabled and LinkSpeedExtEnabled2
// alone, since an SM of IBA 1.2.1 sends those bytes as reserved zeros
// (agent/ follows it; Gets answer every field either way, as the
// silicon infiniband-diags reads without the bit does).
const PortInfoSMSupportsExtendedSpeeds uint32 = 1 << 31

// RateCapabilities returns the CapabilityMask and CapabilityMask2 bits
// that say a port supports the widths w and speeds s: IsExtendedSpeeds-
// Supported for FDR and faster, IsCapabilityMask2Supported with any
// CapabilityMask2 bit, the HDR, NDR and XDR bits for exactly the speeds
// in s (XDR with IsExtendedSpeeds2Supported), IsLinkWidth2xSupported for
// 2X. A port of SDR to QDR only gets none, as IBA 1.2.1 silicon.
func RateCapabilities(w LinkWidth, s LinkSpeed) (uint32, uint16) {
	var c uint32
	var c2 uint16
	if s.Ext() != 0 || s.Ext2() != 0 {
		c |= PortCapIsExtendedSpeedsSupported
	}
	if w&LinkWidth2X != 0 {
		c2 |= PortCap2IsLinkWidth2xSupported
	}
	if s&LinkSpeedHDR != 0 {
		c2 |= PortCap2IsLinkSpeedHDRSupported
	}
	if s&LinkSpeedNDR != 0 {
		c2 |= PortCap2IsLinkSpeedNDRSupported
	}
	if s&LinkSpeedXDR != 0 {
		c2 |= PortCap2IsExtendedSpeeds2Supported | PortCap2IsLinkSpeedXDRSupported
	}
	if c2 != 0 {
		c |= PortCapIsCapabilityMask2Supported
	}
	return c, c2
}

// WithRateCapabilities returns the masks c and c2 with their rate bits
// (RateCapabilities' bits) replaced by those of widths w and speeds s.
func WithRateCapabilities(c uint32, c2 uint16, w LinkWidth, s LinkSpeed) (uint32, uint16) {
	rc, rc2 := RateCapabilities(w, s)
	c = c&^PortCapIsExtendedSpeedsSupported | rc&PortCapIsExtendedSpeedsSupported
	if c2 = c2&^portCap2Rate | rc2; c2 != 0 {
		c |= PortCapIsCapabilityMask2Supported // other CapabilityMask2 bits keep it too
	}
	return c, c2
}

// bitNames joins the names of v's set bits with "|"; unnamed bits print
// as "kind(0xNN)"; zero prints as "0".
func bitNames(v uint8, names []string, kind string) string {
	if v == 0 {
		return "0"
	}
	var parts []string
	for i, n := range names {
		if v&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := v &^ (1<<len(names) - 1); rest != 0 {
		parts = append(parts, fmt.Sprintf("%s(%#x)", kind, rest))
	}
	return strings.Join(parts, "|")
}
