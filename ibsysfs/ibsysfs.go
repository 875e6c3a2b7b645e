package ibsysfs

import (
	"fmt"
	"strconv"

	"ibfab/wire/mad"
)

// GUID renders a GUID as node_guid, sys_image_guid and a GID's lower half
// do: "0002:c903:0000:1234".
func GUID(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

// GID renders a port GID from its subnet prefix and port GUID, as the
// gids/N files do.
func GID(prefix, guid uint64) string { return GUID(prefix) + ":" + GUID(guid) }

// LID renders a LID as the lid and sm_lid files do.
func LID(l uint16) string { return "0x" + strconv.FormatUint(uint64(l), 16) }

// CapMask renders PortInfo:CapabilityMask as the cap_mask file does.
func CapMask(m uint32) string { return fmt.Sprintf("0x%08x", m) }

// stateNames are the kernel's names of the logical states, by code;
// ACTIVE_DEFER is a verbs state the IBA PortInfo has no code of.
var stateNames = [...]string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

// State renders a logical port state as the state file does: "4: ACTIVE".
func State(s mad.PortState) string {
	name := "UNKNOWN"
	if int(s) < len(stateNames) {
		name = stateNames[s]
	}
	return fmt.Sprintf("%d: %s", uint8(s), name)
}

// physNames are the kernel's names of the physical states, by code; the
// kernel has no name for 0 (NoChange is only meaningful in a Set).
var physNames = [...]string{"<unknown>", "Sleep", "Polling", "Disabled", "PortConfigurationTraining",
	"LinkUp", "LinkErrorRecovery", "Phy Test"}

// PhysState renders a physical port state as the phys_state file does:
// "5: LinkUp".
func PhysState(s mad.PhysState) string {
	name := "<unknown>"
	if int(s) < len(physNames) {
		name = physNames[s]
	}
	return fmt.Sprintf("%d: %s", uint8(s), name)
}

// Rate renders a port's rate as the rate file does: the nominal
// signalling rate (lanes × 2.5, 5, 10, 14, 25, 50, 100 or 200 Gb/s),
// then width and speed: "10 Gb/sec (4X SDR)", "400 Gb/sec (4X NDR)". The
// number comes first, which is what libibumad and node_exporter read. A
// port that has not trained (no width) has no rate: "0 Gb/sec", where
// the kernel would fail the read.
func Rate(w mad.LinkWidth, sp mad.LinkSpeed) string {
	tenths := mad.NominalRate(w, sp)
	if tenths == 0 {
		return "0 Gb/sec"
	}
	half := ""
	if tenths%10 != 0 {
		half = ".5" // 1X SDR, 2.5 Gb/s, is the one
	}
	return fmt.Sprintf("%d%s Gb/sec (%dX %s)", tenths/10, half, w.Lanes(), sp)
}

// ParsePortState returns the state whose String is name (as
// `ibfab status` gives it), or false.
func ParsePortState(name string) (mad.PortState, bool) {
	for s := range mad.PortState(8) {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// ParsePhysState returns the physical state whose String is name, or
// false.
func ParsePhysState(name string) (mad.PhysState, bool) {
	for s := range mad.PhysState(8) {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// ParseWidth returns the single width whose String is name ("4X"), or
// false.
func ParseWidth(name string) (mad.LinkWidth, bool) {
	for b := range 8 {
		if w := mad.LinkWidth(1 << b); w.String() == name {
			return w, true
		}
	}
	return 0, false
}

// ParseSpeed returns the single speed whose String is name ("NDR"), or
// false.
func ParseSpeed(name string) (mad.LinkSpeed, bool) {
	for b := range 16 {
		if s := mad.LinkSpeed(1 << b); s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// Counters are the PMA counters a port's sysfs directory shows, at the
// widths the PMA keeps them (the data and packet counts at 64 bits, from
// PortCountersExtended).
type Counters struct {
	SymbolErrors, LinkErrorRecovery, LinkDowned, RcvErrors            uint64
	RcvRemotePhysicalErrors, RcvSwitchRelayErrors, XmitDiscards       uint64
	XmitConstraintErrors, RcvConstraintErrors, LocalLinkIntegrityErrs uint64
	ExcessiveBufferOverruns, VL15Dropped, XmitWait                    uint64
	XmitData, RcvData, XmitPkts, RcvPkts                              uint64
}

// File is one file of a directory: its name and content, newline ended.
type File struct {
	Name    string
	Content string
}

// dec renders a count as the counter files do.
func dec(v uint64) string { return strconv.FormatUint(v, 10) + "\n" }

// CounterFiles returns the files of a port's counters/ directory, by the
// kernel's names. The data and packet files are the 64-bit counts (the
// kernel reads PortCountersExtended for them when the port has it, as
// ours do).
func CounterFiles(c Counters) []File {
	return []File{
		{"symbol_error", dec(c.SymbolErrors)},
		{"link_error_recovery", dec(c.LinkErrorRecovery)},
		{"link_downed", dec(c.LinkDowned)},
		{"port_rcv_errors", dec(c.RcvErrors)},
		{"port_rcv_remote_physical_errors", dec(c.RcvRemotePhysicalErrors)},
		{"port_rcv_switch_relay_errors", dec(c.RcvSwitchRelayErrors)},
		{"port_xmit_discards", dec(c.XmitDiscards)},
		{"port_xmit_constraint_errors", dec(c.XmitConstraintErrors)},
		{"port_rcv_constraint_errors", dec(c.RcvConstraintErrors)},
		{"local_link_integrity_errors", dec(c.LocalLinkIntegrityErrs)},
		{"excessive_buffer_overrun_errors", dec(c.ExcessiveBufferOverruns)},
		{"VL15_dropped", dec(c.VL15Dropped)},
		{"port_xmit_wait", dec(c.XmitWait)},
		{"port_xmit_data", dec(c.XmitData)},
		{"port_rcv_data", dec(c.RcvData)},
		{"port_xmit_packets", dec(c.XmitPkts)},
		{"port_rcv_packets", dec(c.RcvPkts)},
	}
}

// CounterExtFiles returns the files of a port's counters_ext/ directory:
// the 64-bit data and packet counts under the kernel's *_64 names.
func CounterExtFiles(c Counters) []File {
	return []File{
		{"port_xmit_data_64", dec(c.XmitData)},
		{"port_rcv_data_64", dec(c.RcvData)},
		{"port_xmit_packets_64", dec(c.XmitPkts)},
		{"port_rcv_packets_64", dec(c.RcvPkts)},
	}
}

// Port is what a port directory shows besides its counters.
type Port struct {
	State     mad.PortState
	Phys      mad.PhysState
	Width     mad.LinkWidth
	Speed     mad.LinkSpeed
	LID       uint16
	LMC       uint8
	SMLID     uint16
	SMSL      uint8
	CapMask   uint32
	GIDPrefix uint64
	GUID      uint64
}

// PortFiles returns the attribute files of a port directory and its GID
// 0 (gids/0), by the kernel's names; not pkeys/ or the counters.
func PortFiles(p Port) []File {
	line := func(s string) string { return s + "\n" }
	return []File{
		{"lid", line(LID(p.LID))},
		{"lid_mask_count", dec(uint64(p.LMC))},
		{"sm_lid", line(LID(p.SMLID))},
		{"sm_sl", dec(uint64(p.SMSL))},
		{"state", line(State(p.State))},
		{"phys_state", line(PhysState(p.Phys))},
		{"rate", line(Rate(p.Width, p.Speed))},
		{"cap_mask", line(CapMask(p.CapMask))},
		{"link_layer", "InfiniBand\n"},
		{"gids/0", line(GID(p.GIDPrefix, p.GUID))},
	}
}

// Node is what a device directory shows about the node.
type Node struct {
	GUID, SysImageGUID uint64
	Desc               string
}

// Fixed identity of a soft HCA: what firmware, board and type it reports.
const (
	FWVer   = "1.0.0"
	BoardID = "ibfab"
	HCAType = "ibfab"
	HWRev   = "0"
)

// NodeFiles returns a CA device directory's node files.
func NodeFiles(n Node) []File {
	return []File{
		{"node_type", "1: CA\n"},
		{"node_guid", GUID(n.GUID) + "\n"},
		{"sys_image_guid", GUID(n.SysImageGUID) + "\n"},
		{"node_desc", n.Desc + "\n"},
		{"fw_ver", FWVer + "\n"},
		{"hw_rev", HWRev + "\n"},
		{"hca_type", HCAType + "\n"},
		{"board_id", BoardID + "\n"},
	}
}

// DeviceName is the device name an HCA's directory has under
// class/infiniband: the node's name, each byte other than a letter, a
// digit, '_', '-' or '.' replaced by '_' (a name is a file name there, and
// tools split on spaces), so "ca4" is ca4/ and "rack 1/h2" rack_1_h2/.
// The node_exporter metrics of ibfab's exporter use the same name in their
// device label, so that both say the same.
func DeviceName(node string) string {
	b := []byte(node)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	if s := string(b); s != "." && s != ".." {
		return s
	}
	return "_"
}
