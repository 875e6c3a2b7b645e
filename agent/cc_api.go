package agent

import (
	"time"

	"ibfab/wire/mad"
)

// What the congestion mechanism of the engines reads from and writes to
// the congestion control agent: the switch's marking settings per port,
// the CA's per-SL settings and control table, and the events both log.
// The engines ask on every decision rather than keeping copies, so a Set
// from the manager takes effect with the next packet.

// CCMarking is how a switch port marks FECN (A10.2.1): Threshold 0 marks
// nothing, 15 the most; packets smaller than PacketSize 64-byte credits
// are not marked; MarkingRate is the mean number of eligible packets
// between two marks (0: every one); Victim marks also when the port is
// congested for lack of credits, not only as a root.
type CCMarking struct {
	Threshold   uint8
	PacketSize  uint8
	MarkingRate uint16
	Victim      bool
}

// CCMarkingGeneration returns a number that changes whenever a Set may
// have changed what CCSwitchMarking returns (SwitchCongestionSetting,
// SwitchPortCongestionSetting). It is one atomic load: a switch reads it
// per packet and asks CCSwitchMarking again only when it moved.
func (a *Agent) CCMarkingGeneration() uint64 { return a.ccGen.Load() }

// CCSwitchMarking returns the marking settings of switch port n: the
// port's own element of SwitchPortCongestionSetting when the manager made
// it valid (of congestion type), else SwitchCongestionSetting's, with
// Victim from its Victim_Mask. A CA, or a port it does not have, marks
// nothing.
func (a *Agent) CCSwitchMarking(n uint8) CCMarking {
	if !a.isSwitch() || n == 0 || n > a.cfg.NumPorts {
		return CCMarking{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.ccInitLocked()
	m := CCMarking{Threshold: c.sw.Threshold, PacketSize: c.sw.PacketSize, MarkingRate: c.sw.MarkingRate,
		Victim: c.sw.VictimMask[mad.PortMaskSize-1-int(n)/8]&(1<<(n%8)) != 0}
	if e := c.swPort[n]; e.Valid && !e.ControlType {
		m.Threshold, m.PacketSize, m.MarkingRate = e.Threshold, e.PacketSize, e.CongParm
	}
	return m
}

// CCCA is a CA port's congestion control: CACongestionSetting and the
// CongestionControlTable up to its CCTI_Limit.
type CCCA struct {
	// SLBased is Port_Control bit 0: congestion is controlled per SL of
	// the port rather than per QP.
	SLBased bool
	// SL holds each SL's CCTI_Timer, CCTI_Increase, Trigger_Threshold
	// and CCTI_Min.
	SL [mad.CACongestionSLs]mad.CACongestionEntry
	// Limit is CCTI_Limit; Table holds entries 0..Limit (shift:multiplier,
	// mad.CCTEntry).
	Limit uint16
	Table []uint16
}

// CCCASettings returns CA port n's congestion control settings.
func (a *Agent) CCCASettings(n uint8) CCCA {
	if a.isSwitch() || n == 0 || n > a.cfg.NumPorts {
		return CCCA{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.ccInitLocked()
	s, t := &c.ca[n], &c.cct[n]
	return CCCA{SLBased: s.PortControl&1 != 0, SL: s.Entries, Limit: t.limit,
		Table: append([]uint16(nil), t.entries[:int(t.limit)+1]...)}
}

// CCSwitchEvent is one entry of a switch's CongestionLog: a packet the
// switch marked, leaving by Port. The agent stamps it.
type CCSwitchEvent struct {
	Port       uint8
	SLID, DLID uint16
	SL         uint8
}

// CCCAEvent is one entry of a CA port's CongestionLog: a CCTI that
// reached the SL's Trigger_Threshold. The agent stamps it.
type CCCAEvent struct {
	LocalQP     uint32
	SL          uint8
	ServiceType uint8 // 0 RC, 1 UC, 2 RD, 3 UD
	RemoteQP    uint32
	RemoteLID   uint16
}

// ccLogCap bounds the events kept per log, as CongestionLog carries them.
const (
	ccSwitchLogCap = mad.CongestionLogSwitchEvents
	ccCALogCap     = mad.CongestionLogCAEvents
)

// ccLogEntry is a logged event and when, since the agent's TimeStamp
// epoch.
type ccLogEntry struct {
	sw CCSwitchEvent
	ca CCCAEvent
	at time.Duration
}

// ccEventLog is one log: the newest events, how many were logged since the
// log was last read, and the map of ports (switch) or SLs (CA) they came
// from since then.
//
// A Get of CongestionLog reports the newest events, oldest first, and
// clears the counter and the map but keeps the events: so does Linux
// hfi1's CongestionLog (OPA's, derived from IBA A10), the one public
// implementation, which resets its threshold_event_counter and event map
// "when log is read". A manager tells the new events from those it saw
// by the counter: the last min(counter, entries) are new. Events older
// than twice the TimeStamp's wrap are left out (CA10-49, as hfi1 cites
// it), since their stamp no longer tells their age.
type ccEventLog struct {
	entries []ccLogEntry
	count   uint16
	bits    [mad.PortMaskSize]byte // switch: PortMap, big-endian bit n = port n; CA: SL map in the low 16 bits
}

// ccMaxAge is the age past which an event's stamp is ambiguous: twice the
// 32-bit TimeStamp's wrap.
const ccMaxAge = 2 * (1 << 32) * ccTick

func (l *ccEventLog) add(e ccLogEntry, cap int, bit int) {
	if len(l.entries) == cap {
		l.entries = l.entries[1:]
	}
	l.entries = append(l.entries, e)
	l.count = mad.SatAdd(l.count, 1)
	l.bits[mad.PortMaskSize-1-bit/8] |= 1 << (bit % 8)
}

// read fills f with the log as of now and clears the counter and the map.
func (l *ccEventLog) read(f *mad.CongestionLogFields, now time.Duration) {
	f.EventsCounter = l.count
	if f.LogType == mad.CongestionLogSwitch {
		f.PortMap = l.bits
	} else {
		f.EventMap = uint16(l.bits[mad.PortMaskSize-2])<<8 | uint16(l.bits[mad.PortMaskSize-1])
	}
	n := 0
	for _, e := range l.entries {
		if now-e.at > ccMaxAge {
			continue
		}
		ts := ccStamp(e.at)
		if f.LogType == mad.CongestionLogSwitch {
			f.Switch[n] = mad.CongestionLogSwitchEvent{SLID: e.sw.SLID, DLID: e.sw.DLID, SL: e.sw.SL & 0xf, Timestamp: ts}
		} else {
			f.CA[n] = mad.CongestionLogCAEvent{LocalQP: e.ca.LocalQP, RemoteQP: e.ca.RemoteQP, SL: e.ca.SL & 0xf,
				ServiceType: e.ca.ServiceType, RemoteLID: e.ca.RemoteLID, Timestamp: ts}
		}
		n++
	}
	l.count, l.bits = 0, [mad.PortMaskSize]byte{}
}

// CCLogSwitch logs a marking event of the switch.
func (a *Agent) CCLogSwitch(ev CCSwitchEvent) {
	if !a.isSwitch() {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.ccInitLocked()
	c.swLog.add(ccLogEntry{sw: ev, at: a.cfg.Clock.Now().Sub(c.epoch)}, ccSwitchLogCap, int(ev.Port))
}

// CCLogCA logs a threshold event of CA port n.
func (a *Agent) CCLogCA(n uint8, ev CCCAEvent) {
	if a.isSwitch() || n == 0 || n > a.cfg.NumPorts {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.ccInitLocked()
	c.caLog[n].add(ccLogEntry{ca: ev, at: a.cfg.Clock.Now().Sub(c.epoch)}, ccCALogCap, int(ev.SL&0xf))
}
