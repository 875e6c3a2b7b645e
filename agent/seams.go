package agent

import "ibfab/wire/mad"

// LinkState is what the data plane knows about a port's link right now:
// the facts an SMA reports in PortInfo but does not own.
type LinkState struct {
	State mad.PortState // logical state: Down, Init, Armed or Active
	Phys  mad.PhysState // physical state: Polling, Disabled, LinkUp, ...
	Width mad.LinkWidth // LinkWidthActive, meaningful when Phys is LinkUp
	Speed mad.LinkSpeed // LinkSpeedActive, meaningful when Phys is LinkUp
	// The widths and speeds the port supports and has enabled, when the
	// data plane keeps them (0: the agent's own, from Config).
	WidthSupported, WidthEnabled mad.LinkWidth
	SpeedSupported, SpeedEnabled mad.LinkSpeed
}

// PortConfig is what the SM configures on a port through Set(PortInfo) and
// the data plane applies: addressing, MTU, VLs and partition enforcement.
type PortConfig struct {
	LID                          uint16
	LMC                          uint8
	MasterSMLID                  uint16
	MasterSMSL                   uint8
	NeighborMTU                  mad.MTU
	OperationalVLs               uint8 // a VL-count code (mad.NumDataVLs)
	VLHighLimit                  uint8 // in 4096-byte units
	HOQLife                      uint8
	VLStallCount                 uint8
	PartitionEnforcementInbound  bool
	PartitionEnforcementOutbound bool
	// LinkWidthEnabled and LinkSpeedEnabled are set only in the Configure
	// call of a Set that named them (0 for NoChange; SetToSupported
	// resolved): the sets the port may train at from its next training
	// on, within what it supports.
	LinkWidthEnabled mad.LinkWidth
	LinkSpeedEnabled mad.LinkSpeed
}

// PortControl is the data plane seen from the SMA: the port state machine
// and the link facts. The agent calls it without holding its own lock, so
// an implementation may call back into the Agent (PortStateChanged) from
// inside a method.
type PortControl interface {
	// Link returns the live state of port (1..NumPorts). A port that does
	// not exist reports Phys Disabled and State Down.
	Link(port uint8) LinkState

	// SetState asks port to move to logical state s: Down, Armed or Active.
	// The agent has already checked that the transition is legal from the
	// state Link reported; an error makes the Set fail with an
	// invalid-field status. Down retrains the link, which comes back in
	// Init when the peer is still there.
	SetState(port uint8, s mad.PortState) error

	// SetPhysState asks port to go Disabled or back to Polling; an error
	// makes the Set fail with an invalid-field status.
	SetPhysState(port uint8, s mad.PhysState) error

	// Configure hands the port its new configuration after a Set(PortInfo)
	// that was accepted.
	Configure(port uint8, c PortConfig)
}

// ArbitrationControl is implemented by a PortControl whose ports run VL
// arbitration: the agent hands a port its VL arbitration setup (both
// tables and VLHighLimit) after every Set that may have changed it, so
// that what the SMA reports is what the port's arbiter runs. It is called
// like the PortControl methods, without the agent's lock.
type ArbitrationControl interface {
	SetVLArbitration(port uint8, c VLArbConfig)
}

// Counters is the PMA's source of port counters, kept by the data plane.
// Port 0 is a switch's management port.
type Counters interface {
	// PortCounters returns port's PortCounters (PortSelect and
	// CounterSelect are ignored).
	PortCounters(port uint8) mad.PortCountersFields
	// PortCountersExtended returns port's PortCountersExtended.
	PortCountersExtended(port uint8) mad.PortCountersExtendedFields
	// ResetPortCounters zeroes the counters sel (mad.PCSel* bits) and sel2
	// (mad.PCSel2* bits) select.
	ResetPortCounters(port uint8, sel uint16, sel2 uint8)
	// ResetPortCountersExtended zeroes the counters sel (mad.PCExtSel*
	// bits) selects.
	ResetPortCountersExtended(port uint8, sel uint16)
}

// Sender transmits the MADs the agent originates on its own, outside any
// HandleMAD call: traps and their repeats. It is called without the agent's
// lock held, from the goroutine of the call that caused the MAD
// (PortStateChanged, HandleMAD) or from a clock callback; it must not block
// for long.
type Sender interface {
	Send(o Outbound)
}

// SenderFunc adapts a function to Sender.
type SenderFunc func(o Outbound)

var _ Sender = SenderFunc(nil)

// Send implements Sender.
func (f SenderFunc) Send(o Outbound) { f(o) }

// OptionalCounters is what Counters may also provide: the counters of the
// optional PMA attributes (IBA 16.1.4, mad.PMAOptionalLayouts). The PMA
// serves an optional attribute only when its Counters implement this and
// say they count it.
type OptionalCounters interface {
	// OptionalCounters returns port's counters of attribute a as 64-bit
	// totals in the attribute's order, and whether the node counts a; op
	// is the OpCode of the OpCode-filtered attributes.
	OptionalCounters(port uint8, a mad.AttrID, op uint8) ([mad.PMAMaxCounters]uint64, bool)
	// ResetOptionalCounters zeroes the counters of a that sel selects.
	ResetOptionalCounters(port uint8, a mad.AttrID, op uint8, sel uint16)
}
