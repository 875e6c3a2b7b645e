package mad

import (
	"errors"
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

// LinkWidth is a set of link widths: LinkWidthSupported and
// LinkWidthEnabled may hold several bits, LinkWidthActive exactly one.
type LinkWidth uint8

// Link widths (IBA 14.2.5.6). LinkWidthEnabled also takes the two special
// values LinkWidthNoChange and LinkWidthSetToSupported.
const (
	LinkWidth1X  LinkWidth = 1 << 0
	LinkWidth4X  LinkWidth = 1 << 1
	LinkWidth8X  LinkWidth = 1 << 2
	LinkWidth12X LinkWidth = 1 << 3

	LinkWidthNoChange       LinkWidth = 0
	LinkWidthSetToSupported LinkWidth = 0xff
)

// Lanes returns the number of physical lanes of a single width, or 0 when w
// is not exactly one known width.
func (w LinkWidth) Lanes() int {
	switch w {
	case LinkWidth1X:
		return 1
	case LinkWidth4X:
		return 4
	case LinkWidth8X:
		return 8
	case LinkWidth12X:
		return 12
	}
	return 0
}

// String lists the widths in w, e.g. "1X|4X".
func (w LinkWidth) String() string {
	return bitNames(uint8(w), []string{"1X", "4X", "8X", "12X"}, "LinkWidth")
}

// LinkSpeed is a set of link speeds: LinkSpeedSupported and
// LinkSpeedEnabled may hold several bits, LinkSpeedActive exactly one.
type LinkSpeed uint8

// Link speeds (IBA 14.2.5.6), 4-bit fields. LinkSpeedEnabled also takes
// the two special values LinkSpeedNoChange and LinkSpeedSetToSupported.
const (
	LinkSpeedSDR LinkSpeed = 1 << 0 // 2.5 Gbaud per lane
	LinkSpeedDDR LinkSpeed = 1 << 1 // 5 Gbaud per lane
	LinkSpeedQDR LinkSpeed = 1 << 2 // 10 Gbaud per lane

	LinkSpeedNoChange       LinkSpeed = 0
	LinkSpeedSetToSupported LinkSpeed = 0x0f
)

// Baud returns the signalling rate of one lane at a single speed, in
// symbols per second, or 0 when s is not exactly one known speed.
func (s LinkSpeed) Baud() uint64 {
	switch s {
	case LinkSpeedSDR:
		return 2_500_000_000
	case LinkSpeedDDR:
		return 5_000_000_000
	case LinkSpeedQDR:
		return 10_000_000_000
	}
	return 0
}

// String lists the speeds in s, e.g. "SDR|DDR".
func (s LinkSpeed) String() string {
	return bitNames(uint8(s), []string{"SDR", "DDR", "QDR"}, "LinkSpeed")
}

// errNoRate is returned by DataRate for a width or speed that is not a
// single known value.
var errNoRate = errors.New("mad: data rate needs a single known width and speed")

// DataRate returns the data rate of a link of width w and speed s in bits
// per second: lanes × baud × 8/10, since SDR, DDR and QDR use 8b/10b
// coding (4X SDR = 8 Gb/s). Active width and speed are single values; a set
// of several, or a reserved one, is an error.
func DataRate(w LinkWidth, s LinkSpeed) (uint64, error) {
	lanes, baud := w.Lanes(), s.Baud()
	if lanes == 0 || baud == 0 {
		return 0, fmt.Errorf("%w: width %v, speed %v", errNoRate, w, s)
	}
	return uint64(lanes) * baud / 10 * 8, nil
}

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
	PortCapIsCommunicationManagementSupp   uint32 = 1 << 16
	PortCapIsDeviceManagementSupported     uint32 = 1 << 19
	PortCapIsCapabilityMaskNoticeSupported uint32 = 1 << 22
	PortCapIsLinkRoundTripLatencySupported uint32 = 1 << 24
	PortCapIsClientReregistrationSupported uint32 = 1 << 25
)

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
