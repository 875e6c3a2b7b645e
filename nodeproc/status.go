package nodeproc

import (
	"fmt"

	"ibfab/agent"
	"ibfab/attach"
	"ibfab/hca"
	"ibfab/port"
	"ibfab/softswitch"
	"ibfab/umadep"
	"ibfab/wire/mad"
)

// Status is what the "status" op returns.
type Status struct {
	Name string `json:"name"`
	Type string `json:"type"` // "switch" or "hca"
	GUID string `json:"guid"`
	PID  int    `json:"pid"`
	// Goroutines is how many the process runs: a count that grows
	// while nothing new runs is a leak (ibfab fuzz, the soak check it).
	Goroutines int `json:"goroutines,omitempty"`
	// SysImageGUID and Desc are NodeInfo:SystemImageGUID and the
	// NodeDescription, for the node's sysfs tree (ibfab sysfs).
	SysImageGUID string       `json:"sys_image_guid,omitempty"`
	Desc         string       `json:"node_desc,omitempty"`
	Ports        []PortStatus `json:"ports"`
	Switch       *SwitchStats `json:"switch,omitempty"`
	// SwitchConfig is a switch's architecture, buffers, adaptive routing
	// and watched DLIDs.
	SwitchConfig *SwitchConfigStatus `json:"switch_config,omitempty"`
	// Agent is the node's SMA/PMA: what it did with the MADs it got and,
	// on a switch, its trap state.
	Agent *AgentStatus `json:"agent,omitempty"`
	// ClientDropped counts MADs for a local SM that no client took (HCA).
	ClientDropped uint64 `json:"client_dropped,omitempty"`
	// Sim is the HCA's ibsim-protocol attach point.
	Sim *attach.Stats `json:"sim,omitempty"`
	// UMAD is the HCA's kernel-semantics MAD endpoint.
	UMAD *umadep.StatsSnapshot `json:"umad,omitempty"`
}

// AgentStatus is the agent's counters and a switch's trap state.
type AgentStatus struct {
	agent.Stats
	PortStateChange bool `json:"port_state_change,omitempty"`
	TrapOutstanding bool `json:"trap_outstanding,omitempty"`
}

// SwitchStats is the crossbar's counters.
type SwitchStats = softswitch.Stats

// PortStatus is one physical port. Peer is filled in by the harness, which
// knows the cabling; a node only knows its veth.
type PortStatus struct {
	Port int `json:"port"`
	// GUID is an HCA port's port GUID ("0x…", as the node's); a switch's
	// ports 1..N have none (its one port GUID, on port 0, is the node's).
	GUID  string `json:"guid,omitempty"`
	Phys  string `json:"phys"`
	State string `json:"state"`
	LID   uint16 `json:"lid"`
	Peer  string `json:"peer,omitempty"`
	Width string `json:"width,omitempty"` // active: what the link last trained at
	Speed string `json:"speed,omitempty"`
	Rate  uint64 `json:"rate,omitempty"` // data rate at Width and Speed, bits/s
	// LMC, SMLID, SMSL and CapMask are the SMA's PortInfo fields of an
	// HCA port that its sysfs tree shows (lid_mask_count, sm_lid, sm_sl,
	// cap_mask).
	LMC     uint8  `json:"lmc,omitempty"`
	SMLID   uint16 `json:"sm_lid,omitempty"`
	SMSL    uint8  `json:"sm_sl,omitempty"`
	CapMask uint32 `json:"cap_mask,omitempty"`
	// PKeys is the port's P_Key table, the non-zero entries in table
	// order, as "0xffff" (the membership bit, 0x8000, included): what an
	// SM's partition manager wrote, or the reset table's default entry.
	PKeys    []string          `json:"pkeys,omitempty"`
	Counters Counters          `json:"counters"`
	Drops    map[string]uint64 `json:"drops,omitempty"`
	// Credits is the flow-control state of each operational data VL: what
	// shows a credit loop (queued packets, no credit, full buffers).
	Credits []VLCredits `json:"credits,omitempty"`
	// Arbitration is the VL arbitration the port's transmitter runs.
	Arbitration *Arbitration `json:"arbitration,omitempty"`
	// VLXmit is what the transmitter sent on each operational data VL
	// and on VL15: the share the arbiter gave each.
	VLXmit []VLXmit `json:"vl_xmit,omitempty"`
	// Traffic is the HCA data QP's accounting and generator.
	Traffic *hca.PortStats `json:"traffic,omitempty"`
	// Congestion is the port's congestion control counts (IBA A10).
	Congestion *CongestionStatus `json:"congestion,omitempty"`
	// Adapted counts, on a switch port, the packets adaptive routing sent
	// out of it instead of their LFT port, or marked adapted as they left
	// by it (softswitch.PortCounts).
	Adapted uint64 `json:"adapted,omitempty"`
}

// CongestionStatus is a port's congestion control counts since it
// started (PMA resets do not touch them): the FECN marks the switch made
// with the port as the output, in all and per operational data VL, and
// the data packets the port received with FECN and with BECN set.
type CongestionStatus struct {
	Marked     uint64   `json:"marked"`
	MarkedByVL []uint64 `json:"marked_by_vl"`
	RcvFECN    uint64   `json:"rcv_fecn"`
	RcvBECN    uint64   `json:"rcv_becn"`
}

// portCongestion returns a port's congestion counts for its status.
func portCongestion(p *port.Port) *CongestionStatus {
	c := p.Congestion()
	return &CongestionStatus{Marked: c.Marked(), MarkedByVL: append([]uint64(nil), c.MarkedByVL[:p.OperationalVLs()]...),
		RcvFECN: c.RcvFECNTotal(), RcvBECN: c.RcvBECNTotal()}
}

// Counters are a port's PMA counters by their IBA names, the data and
// packet counters at 64 bits (PortXmitData and PortRcvData in 4-byte
// words, as the PMA counts them).
type Counters struct {
	SymbolErrorCounter           uint16 `json:"SymbolErrorCounter"`
	LinkErrorRecoveryCounter     uint8  `json:"LinkErrorRecoveryCounter"`
	LinkDownedCounter            uint8  `json:"LinkDownedCounter"`
	PortRcvErrors                uint16 `json:"PortRcvErrors"`
	PortRcvRemotePhysicalErrors  uint16 `json:"PortRcvRemotePhysicalErrors"`
	PortRcvSwitchRelayErrors     uint16 `json:"PortRcvSwitchRelayErrors"`
	PortXmitDiscards             uint16 `json:"PortXmitDiscards"`
	PortXmitConstraintErrors     uint8  `json:"PortXmitConstraintErrors"`
	PortRcvConstraintErrors      uint8  `json:"PortRcvConstraintErrors"`
	LocalLinkIntegrityErrors     uint8  `json:"LocalLinkIntegrityErrors"`
	ExcessiveBufferOverrunErrors uint8  `json:"ExcessiveBufferOverrunErrors"`
	VL15Dropped                  uint16 `json:"VL15Dropped"`
	PortXmitWait                 uint32 `json:"PortXmitWait"`
	PortXmitData                 uint64 `json:"PortXmitData"`
	PortRcvData                  uint64 `json:"PortRcvData"`
	PortXmitPkts                 uint64 `json:"PortXmitPkts"`
	PortRcvPkts                  uint64 `json:"PortRcvPkts"`
	FCSent                       uint64 `json:"fc_sent"`
	FCReceived                   uint64 `json:"fc_received"`
}

// VLCredits is one data VL's flow control (port.VLCredits), in 64-byte
// blocks: the sender's side (FCTBS, the peer's FCCL, what may be sent
// now, packets queued) and the receiver's (ABR, blocks held, buffer);
// with the downstream view adaptive routing reads (port.Downstream: the
// peer's buffer as the credits show it, occupancy = down_used /
// down_capacity), the VL's PortVLXmitWait, and on a switch the data
// packets the port received on the VL and of those the ones for watched
// DLIDs.
type VLCredits struct {
	VL         int    `json:"vl"`
	FCTBS      uint16 `json:"fctbs"`
	FCCL       uint16 `json:"fccl"`
	Available  int    `json:"available"`
	Queued     int    `json:"queued"`
	ABR        uint16 `json:"abr"`
	RxUsed     int    `json:"rx_used"`
	RxCapacity int    `json:"rx_capacity"`
	// DownUsed and DownCapacity are the peer's buffer of the VL, blocks
	// held or in flight and its size, from this port's credits.
	DownUsed     int `json:"down_used"`
	DownCapacity int `json:"down_capacity"`
	// XmitWait is PortVLXmitWaitCounters' count for the VL, in
	// PortXmitWait ticks (1 µs of emulated time): how long the port
	// waited, unable to send anything, with data queued on the VL.
	XmitWait uint64 `json:"xmit_wait"`
	// RcvPkts (switch) counts the data packets to switch the port
	// received on the VL, Watched those of them for a watched DLID.
	RcvPkts uint64 `json:"rcv_pkts,omitempty"`
	Watched uint64 `json:"watched,omitempty"`
}

// VLXmit is the packets and bytes (LRH through VCRC) a port sent on one
// VL since it started (port.VLXmit).
type VLXmit struct {
	VL      int    `json:"vl"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

// portVLXmit lists the operational data VLs, then VL15.
func portVLXmit(p *port.Port) []VLXmit {
	all := p.XmitByVL()
	n := p.OperationalVLs()
	out := make([]VLXmit, 0, n+1)
	for vl := range n {
		out = append(out, VLXmit{VL: vl, Packets: all[vl].Packets, Bytes: all[vl].Bytes})
	}
	return append(out, VLXmit{VL: port.VL15, Packets: all[port.VL15].Packets, Bytes: all[port.VL15].Bytes})
}

func portCredits(p *port.Port) []VLCredits {
	n := p.OperationalVLs()
	out := make([]VLCredits, n)
	wait, _ := p.OptionalCounters(mad.AttrPortVLXmitWaitCounters, 0)
	for vl := range n {
		c := p.Credits(vl)
		used, capacity, _ := p.Downstream(vl)
		out[vl] = VLCredits{VL: vl, FCTBS: c.FCTBS, FCCL: c.FCCL, Available: c.Available, Queued: c.Queued,
			ABR: c.ABR, RxUsed: c.RxUsed, RxCapacity: c.RxCapacity, DownUsed: used, DownCapacity: capacity,
			XmitWait: wait[vl]}
	}
	return out
}

func portCounters(p *port.Port) Counters {
	c, x, l := p.Counters(), p.CountersExtended(), p.LinkCounters()
	return Counters{
		SymbolErrorCounter:           c.SymbolErrorCounter,
		LinkErrorRecoveryCounter:     c.LinkErrorRecoveryCounter,
		LinkDownedCounter:            c.LinkDownedCounter,
		PortRcvErrors:                c.PortRcvErrors,
		PortRcvRemotePhysicalErrors:  c.PortRcvRemotePhysicalErrors,
		PortRcvSwitchRelayErrors:     c.PortRcvSwitchRelayErrors,
		PortXmitDiscards:             c.PortXmitDiscards,
		PortXmitConstraintErrors:     c.PortXmitConstraintErrors,
		PortRcvConstraintErrors:      c.PortRcvConstraintErrors,
		LocalLinkIntegrityErrors:     c.LocalLinkIntegrityErrors,
		ExcessiveBufferOverrunErrors: c.ExcessiveBufferOverrunErrors,
		VL15Dropped:                  c.VL15Dropped,
		PortXmitWait:                 c.PortXmitWait,
		PortXmitData:                 x.PortXmitData,
		PortRcvData:                  x.PortRcvData,
		PortXmitPkts:                 x.PortXmitPkts,
		PortRcvPkts:                  x.PortRcvPkts,
		FCSent:                       l.FCSent,
		FCReceived:                   l.FCReceived,
	}
}

// Arbitration is a port's running VL arbitration: the entries of each
// table up to the last of non-zero weight, and LimitOfHighPriority.
type Arbitration struct {
	High      []ArbEntry `json:"high"`
	Low       []ArbEntry `json:"low"`
	HighLimit uint8      `json:"high_limit"`
}

// ArbEntry is one VL arbitration table entry.
type ArbEntry struct {
	VL     uint8 `json:"vl"`
	Weight uint8 `json:"weight"`
}

// arbitration returns a port's running arbitration for its status.
func arbitration(a port.Arbitration) *Arbitration {
	table := func(t *[port.ArbTableSize]mad.VLArbEntry) []ArbEntry {
		n := len(t)
		for n > 0 && t[n-1].Weight == 0 {
			n--
		}
		es := make([]ArbEntry, n)
		for i := range es {
			es[i] = ArbEntry{VL: t[i].VL, Weight: t[i].Weight}
		}
		return es
	}
	return &Arbitration{High: table(&a.High), Low: table(&a.Low), HighLimit: a.HighLimit}
}

// PKeyStrings lists a P_Key table's non-zero entries as PortStatus.PKeys
// has them.
func PKeyStrings(keys []mad.PKey) []string {
	var out []string
	for _, k := range keys {
		if k != mad.InvalidPKey {
			out = append(out, fmt.Sprintf("0x%04x", uint16(k)))
		}
	}
	return out
}

// portStatus fills the link-layer part of one port's status; p may be nil
// for an uncabled switch port.
func portStatus(num int, p *port.Port, lid uint16) PortStatus {
	ps := PortStatus{Port: num, LID: lid, Phys: mad.PhysStatePolling.String(), State: mad.PortStateDown.String()}
	if p == nil {
		return ps
	}
	s := p.State()
	ps.Phys, ps.State = s.Phys.String(), s.Port.String()
	r := p.LinkRate()
	ps.Width, ps.Speed = r.WidthActive.String(), r.SpeedActive.String()
	ps.Rate = p.Rate()
	ps.Counters = portCounters(p)
	ps.Drops = p.Drops().Map()
	ps.Credits = portCredits(p)
	ps.Arbitration = arbitration(p.VLArbitration())
	ps.VLXmit = portVLXmit(p)
	ps.Congestion = portCongestion(p)
	return ps
}
