// Package agent is the subnet management agent (SMA) and performance
// management agent (PMA) of a soft switch or HCA: pure logic over MAD
// bytes, with no sockets and no goroutines of its own. The switch and HCA
// processes own the ports; they hand the agent the MADs that arrive for
// the node and transmit what it returns.
//
//	           HandleMAD(Inbound)           Send(Request)
//	port p ─────────────────────►  Agent  ◄────────────── local SM (attach point)
//	       ◄─────────────────────    │    ──────────────► Local Outbounds
//	            []Outbound           │ PortControl: Link, SetState, SetPhysState, Configure
//	                                 │ Counters:    PortCounters(Extended), Reset…
//	                                 │ Clock:       Now, AfterFunc (M_Key lease, trap repeats)
//	                                 │ Sender:      traps, sent outside any call
//	                                 ▼
//	         OutPort, MulticastPorts, VLFor, VLArbitration, PKeyMatch, PortConfig
//	                (the data plane's lock-free reads of the device state)
//
// # Device state
//
// The agent holds the state the SM reads and writes: NodeInfo,
// NodeDescription, PortInfo per port (port 0 is a switch's management
// port), SwitchInfo, the linear and multicast forwarding tables, SLtoVL
// per (input, output) port pair on a switch and per port on a CA, VL
// arbitration tables, P_Key tables and GUIDInfo. Control-path state sits
// under one mutex; the tables the data plane reads per packet are
// immutable values behind atomic pointers that a Set replaces (an LFT
// block, one input port's SLtoVL row, one port's P_Key table), so a lookup
// costs two atomic loads and no lock (an LFT lookup three: its slice of
// block pointers grows as the SM sets blocks). Being immutable, the reset
// values (SLtoVL row, VL arbitration setup, P_Key table, a port's
// configuration) are shared by every port alike, in the agent and across
// agents, and a Set stores a new value only when it changes something:
// on the management plane, where one process holds every node, that is
// most of a fabric's memory. For the same reason state few nodes use
// (congestion control, adaptive routing, a management port's M_Key lease,
// Trap 256 and alias GUIDs) is made at first use. Live link facts (PortState,
// PortPhysicalState, active width and speed) are not stored: PortInfo
// reads them from PortControl, which owns the port state machine.
//
// After New the device is as after reset: no LIDs, LinearFDBTop 0 and an
// empty LFT (nothing routes until the SM sets SwitchInfo and LFT blocks,
// as OpenSM does), P_Key 0xffff at index 0, every SL on VL0, OperationalVLs
// VL0 only.
//
// # MADs
//
// HandleMAD takes SMPs (QP0: LID-routed class 0x01, directed-route class
// 0x81) and GMPs (QP1). Directed-route SMPs are processed at every node
// they cross, by the rules of IBA 14.2.2 (see dr.go); the outcome is a
// forwarded SMP, a response, a drop, or a MAD for the local SM. Requests
// for the SMA answer with GetResp and a proper status: bad base or class
// version → bad version; a method other than Get, Set, TrapRepress →
// method unsupported; an unknown attribute, or a method the attribute does
// not take (Set(NodeInfo), SwitchInfo on a CA) → unsupported
// method/attribute; a bad modifier or field value → invalid field, with
// nothing of the Set applied. Responses and traps reaching the node, and
// SMInfo requests and TrapRepresses of no trap of the SMA's where an SM is
// attached (SetIsSM: the repress of the SM's own trap, OpenSM's Trap 144),
// are handed to the SM as Local Outbounds; without one SMInfo is answered
// as unsupported and such a TrapRepress is consumed.
// Silent drops are those the spec asks for (directed-route checks, M_Key
// and P_Key violations, misaddressed MADs); every one is counted in Stats.
//
// Send is the other way in: MADs the node's own SM transmits, which take
// the originator's side of the directed-route rules, or loop back into the
// node when addressed to it.
//
// The PMA serves PortCounters and PortCountersExtended (Get, and Set with
// CounterSelect to zero counters; PortSelect 0xff sums all ports) and
// ClassPortInfo. GMPs whose P_Key the receiving port's table does not
// match are dropped and counted in PortInfo.P_KeyViolations. GMPs of other
// classes go to the SM when one is attached; on a node whose MAD client
// takes GMPs (Config.LocalGMP: an HCA's attach point) they go there, and
// so does every GMP response, whatever its class, for the client whose
// request it answers (an SA response to saquery, a PMA one to perfquery).
//
// # M_Key and traps
//
// M_Key protection levels 0-3 and the lease follow IBA 14.2.4 (mkey.go).
// A switch sets SwitchInfo.PortStateChange and sends Trap 128 to the SM
// when the data plane reports a port state change it made itself, and
// repeats the trap every TrapRepeatInterval until the SM represses it
// (trap.go). CAs raise no traps.
//
// # Concurrency
//
// All methods are safe for concurrent use. The agent never calls
// PortControl, Counters or Sender with its lock held, so they may call
// back into it; Clock callbacks take the lock themselves.
package agent
