package agent

import (
	"time"

	"ibfab/wire/mad"
)

// The congestion control agent, IBA Annex A10: class 0x21 Get and Set on
// CongestionInfo, CongestionKeyInfo, CongestionLog, SwitchCongestionSetting
// and SwitchPortCongestionSetting (switches), CACongestionSetting and
// CongestionControlTable (CA ports), TimeStamp and ClassPortInfo. The
// values are stored and read back, and the engines' congestion mechanism
// reads them (cc_api.go): switches mark FECN per the switch and port
// settings, CAs throttle per theirs, and both log events that
// CongestionLog reports. CongestionInfo claims no credit starvation (the
// switches do not implement Control_Type 1), and ControlTableCap is the
// table this agent stores.
//
// A request whose CC_Key differs from a non-zero CC_Key of the port is
// dropped without a response and counted in CC_KeyViolations, the M_Key
// rule carried over; with the protect bit clear a Get passes with any key
// and reads the CC_Key as zero. The lease period is stored, not run.

// ccTableBlocks is the CongestionControlTable a CA port stores, in
// 64-entry blocks: 128 entries, as many as OpenSM programs.
const ccTableBlocks = 2

// ccState is the congestion control state of a node. A switch keeps its
// settings at port 0; a CA has one of each per port.
type ccState struct {
	key    []mad.CongestionKeyInfoFields // by SMA port
	sw     mad.SwitchCongestionSettingFields
	swPort []mad.SwitchPortCongestionElement // by port, 0..NumPorts
	ca     []mad.CACongestionSettingFields   // by port
	cct    []ccTable                         // by port
	epoch  time.Time                         // TimeStamp's zero
	swLog  ccEventLog                        // a switch's events
	caLog  []ccEventLog                      // a CA's, by port
}

// ccTable is one CA port's CongestionControlTable.
type ccTable struct {
	limit   uint16
	entries [ccTableBlocks * mad.CCTEntriesPerBlock]uint16
}

// ccInitLocked sets up the state at first use.
func (a *Agent) ccInitLocked() *ccState {
	if a.cc == nil {
		a.cc = &ccState{}
	}
	c := a.cc
	if c.key == nil {
		n := int(a.cfg.NumPorts) + 1
		c.key = make([]mad.CongestionKeyInfoFields, n)
		c.swPort = make([]mad.SwitchPortCongestionElement, n)
		c.ca = make([]mad.CACongestionSettingFields, n)
		c.cct = make([]ccTable, n)
		c.caLog = make([]ccEventLog, n)
		c.epoch = a.cfg.Clock.Now()
	}
	return c
}

// ccServe serves one CC attribute on SMA port sma: data is the request's
// attribute data (the log data for CongestionLog), overwritten with the
// response's.
type ccServe func(a *Agent, c *ccState, sma uint8, set bool, mod uint32, data []byte) mad.Status

// ccAttr is one entry of the dispatch table: the handler and whether Set
// is valid.
type ccAttr struct {
	serve ccServe
	set   bool
}

// ccAttrs returns the attributes this node's agent serves: one table
// per node type, shared by every agent of that type (read only).
func (a *Agent) ccAttrs() map[mad.AttrID]ccAttr {
	if a.isSwitch() {
		return ccSwitchAttrs
	}
	return ccCAAttrs
}

// ccSwitchAttrs and ccCAAttrs are the CC dispatch tables of a switch and
// of a CA.
var ccSwitchAttrs, ccCAAttrs = ccAttrTable(true), ccAttrTable(false)

func ccAttrTable(sw bool) map[mad.AttrID]ccAttr {
	t := map[mad.AttrID]ccAttr{
		mad.AttrClassPortInfo:     {serve: ccClassPortInfo},
		mad.AttrCongestionInfo:    {serve: ccCongestionInfo},
		mad.AttrCongestionKeyInfo: {serve: ccKeyInfo, set: true},
		mad.AttrCongestionLog:     {serve: ccLog},
		mad.AttrTimeStamp:         {serve: ccTimeStamp},
	}
	if sw {
		t[mad.AttrSwitchCongestionSetting] = ccAttr{serve: ccSwitchSetting, set: true}
		t[mad.AttrSwitchPortCongestionSetting] = ccAttr{serve: ccSwitchPortSetting, set: true}
	} else {
		t[mad.AttrCACongestionSetting] = ccAttr{serve: ccCASetting, set: true}
		t[mad.AttrCongestionControlTable] = ccAttr{serve: ccControlTable, set: true}
	}
	return t
}

// receiveCC answers a class 0x21 request addressed to the node, or drops
// it on a CC_Key violation.
func (a *Agent) receiveCC(in Inbound, m []byte) []Outbound {
	h := mad.MAD(m)
	cc := mad.CCMAD(m)
	sma := a.smaPort(in.Port)
	st, ok := a.serveCC(h, cc, sma)
	if !ok {
		return nil
	}
	a.respondGMP(m, st)
	return a.gmpReply(in, m)
}

// serveCC serves a CC request in place and returns its status, or false
// when the CC_Key check drops it.
func (a *Agent) serveCC(h mad.MAD, cc mad.CCMAD, sma uint8) (mad.Status, bool) {
	set, st := getOrSet(h, mad.CCVersion)
	if st != mad.StatusOK {
		return st, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.ccInitLocked()
	hideKey := false
	if k := &c.key[sma]; k.CCKey != 0 && cc.CCKey() != k.CCKey {
		if set || k.ProtectBit {
			k.Violations = mad.SatAdd(k.Violations, 1)
			a.stats.ccKeyViolations.Add(1)
			return 0, false
		}
		hideKey = true
	}
	attr, ok := a.ccAttrs()[h.AttrID()]
	if !ok || set && !attr.set {
		return mad.StatusMethodAttrUnsupported, true
	}
	data := cc.Data()
	if h.AttrID() == mad.AttrCongestionLog {
		data = cc.LogData()
	}
	st = attr.serve(a, c, sma, set, h.AttrModifier(), data)
	if hideKey && h.AttrID() == mad.AttrCongestionKeyInfo {
		k := mad.CongestionKeyInfo(data).Fields()
		k.CCKey = 0
		mad.CongestionKeyInfo(data).Encode(&k)
	}
	return st, true
}

// ccClassPortInfo: versions and RespTimeValue; no capabilities, no
// redirection, no traps.
func ccClassPortInfo(a *Agent, _ *ccState, _ uint8, _ bool, _ uint32, data []byte) mad.Status {
	clear(data)
	mad.ClassPortInfo(data).Encode(&mad.ClassPortInfoFields{BaseVersion: mad.BaseVersion,
		ClassVersion: mad.CCVersion, RespTimeValue: a.cfg.RespTimeValue})
	return mad.StatusOK
}

func ccCongestionInfo(a *Agent, _ *ccState, _ uint8, _ bool, _ uint32, data []byte) mad.Status {
	f := mad.CongestionInfoFields{}
	if !a.isSwitch() {
		f.ControlTableCap = ccTableBlocks
	}
	clear(data)
	mad.CongestionInfo(data).Encode(&f)
	return mad.StatusOK
}

func ccKeyInfo(_ *Agent, c *ccState, sma uint8, set bool, _ uint32, data []byte) mad.Status {
	k := &c.key[sma]
	if set {
		n := mad.CongestionKeyInfo(data).Fields()
		k.CCKey, k.ProtectBit, k.LeasePeriod = n.CCKey, n.ProtectBit, n.LeasePeriod
		// Violations is a counter the manager may clear, like
		// M_KeyViolations.
		k.Violations = n.Violations
	}
	clear(data)
	mad.CongestionKeyInfo(data).Encode(k)
	return mad.StatusOK
}

// ccTick is TimeStamp's unit.
const ccTick = 1024 * time.Nanosecond

// ccNow returns TimeStamp's value: 1.024 µs units since the agent's
// congestion control state was set up, wrapping at 32 bits.
func (a *Agent) ccNow(c *ccState) uint32 { return ccStamp(a.cfg.Clock.Now().Sub(c.epoch)) }

// ccStamp returns the TimeStamp value of d since the epoch.
func ccStamp(d time.Duration) uint32 { return uint32(d / ccTick) }

// ccLog answers CongestionLog: the switch's log, or that of the CA port
// the request came by. See ccEventLog for what a Get clears.
func ccLog(a *Agent, c *ccState, sma uint8, _ bool, _ uint32, data []byte) mad.Status {
	now := a.cfg.Clock.Now().Sub(c.epoch)
	f := mad.CongestionLogFields{LogType: mad.CongestionLogCA, CurrentTimeStamp: ccStamp(now)}
	if a.isSwitch() {
		f.LogType = mad.CongestionLogSwitch
		c.swLog.read(&f, now)
	} else {
		c.caLog[sma].read(&f, now)
	}
	clear(data)
	mad.CongestionLog(data).Encode(&f)
	return mad.StatusOK
}

func ccTimeStamp(a *Agent, c *ccState, _ uint8, _ bool, _ uint32, data []byte) mad.Status {
	clear(data)
	mad.TimeStamp(data).SetValue(a.ccNow(c))
	return mad.StatusOK
}

func ccSwitchSetting(a *Agent, c *ccState, _ uint8, set bool, _ uint32, data []byte) mad.Status {
	if set {
		n := mad.SwitchCongestionSetting(data).Fields()
		c.sw.Merge(&n)
		a.ccGen.Add(1)
	}
	clear(data)
	mad.SwitchCongestionSetting(data).Encode(&c.sw)
	return mad.StatusOK
}

// ccSwitchPortSetting: the modifier is the block of 32 ports; a block past
// the switch's ports is an invalid field, elements of ports it does not
// have read as zero and are not stored.
func ccSwitchPortSetting(a *Agent, c *ccState, _ uint8, set bool, mod uint32, data []byte) mad.Status {
	first := int(mod) * mad.SwitchPortCongestionPorts
	if mod > uint32(a.cfg.NumPorts)/mad.SwitchPortCongestionPorts {
		return mad.StatusInvalidField
	}
	if set {
		n := mad.SwitchPortCongestionSetting(data).Fields()
		for i, e := range n.Ports {
			if p := first + i; p < len(c.swPort) {
				c.swPort[p] = e
			}
		}
		a.ccGen.Add(1)
	}
	var f mad.SwitchPortCongestionSettingFields
	for i := range f.Ports {
		if p := first + i; p < len(c.swPort) {
			f.Ports[i] = c.swPort[p]
		}
	}
	clear(data)
	mad.SwitchPortCongestionSetting(data).Encode(&f)
	return mad.StatusOK
}

func ccCASetting(_ *Agent, c *ccState, sma uint8, set bool, _ uint32, data []byte) mad.Status {
	s := &c.ca[sma]
	if set {
		n := mad.CACongestionSetting(data).Fields()
		s.Merge(&n)
	}
	clear(data)
	mad.CACongestionSetting(data).Encode(s)
	return mad.StatusOK
}

// ccControlTable: the modifier is the 64-entry block; a block or a
// CCTI_Limit beyond the stored table is an invalid field.
func ccControlTable(_ *Agent, c *ccState, sma uint8, set bool, mod uint32, data []byte) mad.Status {
	if mod >= ccTableBlocks {
		return mad.StatusInvalidField
	}
	t := &c.cct[sma]
	first := int(mod) * mad.CCTEntriesPerBlock
	if set {
		n := mad.CongestionControlTable(data).Fields()
		if int(n.CCTILimit) >= len(t.entries) {
			return mad.StatusInvalidField
		}
		t.limit = n.CCTILimit
		copy(t.entries[first:], n.Entries[:])
	}
	f := mad.CongestionControlTableFields{CCTILimit: t.limit}
	copy(f.Entries[:], t.entries[first:])
	clear(data)
	mad.CongestionControlTable(data).Encode(&f)
	return mad.StatusOK
}
