package sm

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// The congestion control manager (IBA Annex A10), as OpenSM's: once the
// subnet is up, every switch gets SwitchCongestionSetting and every CA
// port CACongestionSetting and its CongestionControlTable up to
// CCTI_Limit, from the configuration (CCSettings, OpenSM's cc_* options),
// by class 0x21 Sets LID-routed to QP1 with the CC_Key in every MAD. A
// node is read first, the first time the manager meets it (its
// CongestionKeyInfo, then its settings); after that only what differs
// from what it last read or wrote is sent, which on an unchanged subnet
// is nothing. With cc_key given, a node whose CongestionKeyInfo holds
// another key gets it set; a node that does not answer with the key (it
// holds one the manager does not know, protected) is reported and left
// alone until the next sweep. SwitchPortCongestionSetting is written
// only where a port has an element of its own (Valid), which would
// override the switch-wide settings: the file has no per-port options,
// so the manager clears such elements.
//
// Each sweep, and every CCConfig.LogInterval while the SM watches, the
// manager reads every node's CongestionLog and hands each entry it has
// not seen in the node's last read to CCConfig.OnEvent.

// PhaseCC is the phase that programs congestion control and reads the
// logs.
const PhaseCC = "cc"

// CCConfig turns the congestion control manager on.
type CCConfig struct {
	CCSettings
	// LogInterval, when positive, has the SM read every node's
	// CongestionLog that often while it watches the subnet, besides
	// once per sweep.
	LogInterval time.Duration
	// OnEvent hears every new CongestionLog entry, on the SM's goroutine.
	OnEvent func(CCLogEvent)
}

// CCResult is what the manager did in a sweep.
type CCResult struct {
	Nodes       int `json:"nodes"`        // switches and CA ports managed
	Read        int `json:"read"`         // of them read for the first time
	Sets        int `json:"sets"`         // Sets of settings and table blocks that differed
	KeySets     int `json:"key_sets"`     // CongestionKeyInfo Sets
	KeyFailures int `json:"key_failures"` // nodes that did not answer with the CC_Key
	Failures    int `json:"failures"`     // other requests that failed
	LogEntries  int `json:"log_entries"`  // new CongestionLog entries
}

// CCLogEvent is one new CongestionLog entry of a node.
type CCLogEvent struct {
	Event string `json:"event"` // "cc_log"
	Node  string `json:"node"`
	GUID  string `json:"guid"`
	LID   uint16 `json:"lid"`
	Type  string `json:"type"` // "switch" or "ca"
	// Port is the CA port whose log it is; Ports a switch's PortMap
	// when the log was read: the ports that marked since the last read.
	Port  int   `json:"port,omitempty"`
	Ports []int `json:"ports,omitempty"`
	SL    uint8 `json:"sl"`
	// A switch's event: the marked packet's LIDs.
	SLID uint16 `json:"slid,omitempty"`
	DLID uint16 `json:"dlid,omitempty"`
	// A CA's event: the QP whose CCTI reached the trigger threshold.
	LocalQP     uint32 `json:"local_qp,omitempty"`
	RemoteQP    uint32 `json:"remote_qp,omitempty"`
	RemoteLID   uint16 `json:"remote_lid,omitempty"`
	ServiceType uint8  `json:"service_type,omitempty"`
	// TimeStamp is when the event was logged, LogTime the node's
	// TimeStamp when the log was read (both 1.024 µs units); Counter the
	// events the node counted since the log was last read.
	TimeStamp uint32 `json:"timestamp"`
	LogTime   uint32 `json:"log_time"`
	Counter   uint16 `json:"events_counter"`
}

// ccManager is the manager's state: what every node holds, as last read
// or written.
type ccManager struct {
	cfg     CCConfig
	cct     []mad.CongestionControlTableFields // cfg's table in blocks, as every CA port is sent it
	targets map[ccKey]*ccTarget
	nextLog time.Time // the next periodic log read (SM clock); zero: none due
}

// ccKey names a managed node: a switch (port 0) or a CA port.
type ccKey struct {
	guid uint64
	port int
}

// ccTarget is one managed node and what it holds.
type ccTarget struct {
	name     string
	lid      uint16
	port     int // the CA port; 0 for a switch
	sw       bool
	numPorts int
	ready    bool // read (and its key set): Sets go by the shadow
	swSet    mad.SwitchCongestionSettingFields
	swPort   []mad.SwitchPortCongestionSettingFields
	caSet    mad.CACongestionSettingFields
	tableCap int // CongestionControlTable blocks
	cct      []mad.CongestionControlTableFields
	seen     []ccLogEntry // the entries of the last log read
}

func newCCManager(c *CCConfig) *ccManager {
	return &ccManager{cfg: *c, cct: c.cctBlocks(), targets: map[ccKey]*ccTarget{}}
}

// ccOn reports whether the manager programs the subnet.
func (s *SM) ccOn() bool { return s.cc != nil && s.cc.cfg.Enabled }

// ccPhase programs the subnet just brought up and reads the logs.
func (s *SM) ccPhase(ctx context.Context, res *Result) error {
	if !s.ccOn() || s.subnet == nil {
		return nil
	}
	return s.phase(res, PhaseCC, func() error {
		r := &CCResult{}
		res.CC = r
		warn := func(format string, args ...any) {
			res.Warnings = append(res.Warnings, "cc: "+fmt.Sprintf(format, args...))
		}
		s.ccRefresh()
		r.Nodes = len(s.cc.targets)
		for _, k := range s.ccKeys() {
			t := s.cc.targets[k]
			if t.ready {
				s.ccApply(t, r, warn)
			} else {
				r.Read++
				s.ccIntro(t, r, warn)
			}
		}
		if err := s.tx.Run(ctx); err != nil {
			return err
		}
		err := s.ccReadLogs(ctx, r, warn)
		s.ccSchedule()
		return err
	})
}

// ccRefresh makes the targets the subnet's switches and CA ports with a
// LID: new ones to be read, gone ones forgotten.
func (s *SM) ccRefresh() {
	sn := s.subnet
	live := map[ccKey]bool{}
	for i := range sn.Topo.NumNodes() {
		n := sn.Topo.Node(i)
		for p := 0; p < len(sn.LID[i]) && p <= n.NumPorts; p++ {
			lid := sn.LID[i][p]
			if lid == 0 || (sn.IsSwitch(i) && p != 0) {
				continue
			}
			k := ccKey{n.GUID, p}
			live[k] = true
			if t := s.cc.targets[k]; t != nil {
				t.lid, t.name = lid, portName(sn.Topo, portRef(i, p))
				continue
			}
			s.cc.targets[k] = &ccTarget{name: portName(sn.Topo, portRef(i, p)), lid: lid, port: p,
				sw: sn.IsSwitch(i), numPorts: n.NumPorts}
		}
	}
	for k := range s.cc.targets {
		if !live[k] {
			delete(s.cc.targets, k)
		}
	}
}

// ccKeys returns the targets' keys in order, so that the SMPs go out in
// an order that does not depend on the map's.
func (s *SM) ccKeys() []ccKey {
	keys := make([]ccKey, 0, len(s.cc.targets))
	for k := range s.cc.targets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ccKey) int { return cmp.Or(cmp.Compare(a.guid, b.guid), cmp.Compare(a.port, b.port)) })
	return keys
}

func portRef(i, p int) topologies.PortRef { return topologies.PortRef{Node: i, Port: p} }

// ccRequest addresses a CC attribute of t.
func (s *SM) ccRequest(t *ccTarget, attr mad.AttrID, mod uint32, data []byte) txn.Request {
	return txn.Request{LID: t.lid, Class: mad.ClassCongestion, CCKey: s.cc.cfg.Key, Attr: attr, Mod: mod, Data: data}
}

// ccIntro meets a node: it reads its CongestionKeyInfo with the CC_Key,
// sets the key when the file gives one the node does not hold, reads its
// settings, and then applies the file.
func (s *SM) ccIntro(t *ccTarget, r *CCResult, warn func(string, ...any)) {
	s.tx.Get(s.ccRequest(t, mad.AttrCongestionKeyInfo, 0, nil), func(resp *txn.Response) {
		if resp.Err != nil {
			r.KeyFailures++
			warn("%s: no CongestionKeyInfo with the CC_Key (%v): it may hold another key", t.name, resp.Err)
			return
		}
		k := mad.CongestionKeyInfo(resp.Data).Fields()
		if s.cc.cfg.Key == 0 || k.CCKey == s.cc.cfg.Key {
			s.ccReadSettings(t, r, warn)
			return
		}
		want := mad.CongestionKeyInfoFields{CCKey: s.cc.cfg.Key, ProtectBit: k.ProtectBit, LeasePeriod: k.LeasePeriod}
		s.tx.Set(s.ccRequest(t, mad.AttrCongestionKeyInfo, 0, mad.AppendCongestionKeyInfo(nil, &want)), func(resp *txn.Response) {
			if resp.Err != nil {
				r.KeyFailures++
				warn("%s: setting the CC_Key: %v: it may hold another key", t.name, resp.Err)
				return
			}
			r.KeySets++
			s.ccReadSettings(t, r, warn)
		})
	})
}

// ccReadSettings reads what t holds of what the manager programs, then
// applies the file.
func (s *SM) ccReadSettings(t *ccTarget, r *CCResult, warn func(string, ...any)) {
	pending, failed := 0, false
	read := func(attr mad.AttrID, mod uint32, take func([]byte)) {
		pending++
		s.tx.Get(s.ccRequest(t, attr, mod, nil), func(resp *txn.Response) {
			pending--
			if resp.Err != nil {
				failed = true
				r.Failures++
				warn("%s: reading %v %d: %v", t.name, attr, mod, resp.Err)
			} else {
				take(resp.Data)
			}
			if pending == 0 && !failed {
				t.ready = true
				s.ccApply(t, r, warn)
			}
		})
	}
	if t.sw {
		read(mad.AttrSwitchCongestionSetting, 0, func(b []byte) { t.swSet = mad.SwitchCongestionSetting(b).Fields() })
		t.swPort = make([]mad.SwitchPortCongestionSettingFields, t.numPorts/mad.SwitchPortCongestionPorts+1)
		for b := range t.swPort {
			read(mad.AttrSwitchPortCongestionSetting, uint32(b), func(d []byte) {
				t.swPort[b] = mad.SwitchPortCongestionSetting(d).Fields()
			})
		}
		return
	}
	read(mad.AttrCACongestionSetting, 0, func(b []byte) { t.caSet = mad.CACongestionSetting(b).Fields() })
	read(mad.AttrCongestionInfo, 0, func(b []byte) {
		t.tableCap = int(mad.CongestionInfo(b).Fields().ControlTableCap)
		t.cct = make([]mad.CongestionControlTableFields, min(t.tableCap, len(s.cc.cct)))
		for blk := range t.cct {
			read(mad.AttrCongestionControlTable, uint32(blk), func(d []byte) {
				t.cct[blk] = mad.CongestionControlTable(d).Fields()
			})
		}
	})
}

// ccApply sends t what differs from the file.
func (s *SM) ccApply(t *ccTarget, r *CCResult, warn func(string, ...any)) {
	set := func(attr mad.AttrID, mod uint32, data []byte, took func([]byte)) {
		s.tx.Set(s.ccRequest(t, attr, mod, data), func(resp *txn.Response) {
			if resp.Err != nil {
				r.Failures++
				warn("%s: setting %v %d: %v", t.name, attr, mod, resp.Err)
				return
			}
			r.Sets++
			took(resp.Data)
		})
	}
	c := &s.cc.cfg
	if t.sw {
		if !switchSettingHolds(&t.swSet, &c.Switch) {
			set(mad.AttrSwitchCongestionSetting, 0, mad.AppendSwitchCongestionSetting(nil, &c.Switch),
				func(b []byte) { t.swSet = mad.SwitchCongestionSetting(b).Fields() })
		}
		var none mad.SwitchPortCongestionSettingFields
		for b := range t.swPort {
			if t.swPort[b] != none {
				set(mad.AttrSwitchPortCongestionSetting, uint32(b), mad.AppendSwitchPortCongestionSetting(nil, &none),
					func(d []byte) { t.swPort[b] = mad.SwitchPortCongestionSetting(d).Fields() })
			}
		}
		return
	}
	if !caSettingHolds(&t.caSet, &c.CA) {
		set(mad.AttrCACongestionSetting, 0, mad.AppendCACongestionSetting(nil, &c.CA),
			func(b []byte) { t.caSet = mad.CACongestionSetting(b).Fields() })
	}
	want := s.cc.cct
	if len(want) > t.tableCap {
		warn("%s: a CongestionControlTable of %d entries, the port holds %d", t.name, len(c.CCT), t.tableCap*mad.CCTEntriesPerBlock)
		return
	}
	for b := range want {
		if t.cct[b] != want[b] {
			set(mad.AttrCongestionControlTable, uint32(b), mad.AppendCongestionControlTable(nil, &want[b]),
				func(d []byte) { t.cct[b] = mad.CongestionControlTable(d).Fields() })
		}
	}
}

// switchSettingHolds reports whether have holds the components of want
// its Control_Map selects.
func switchSettingHolds(have, want *mad.SwitchCongestionSettingFields) bool {
	m := want.ControlMap
	return (m&mad.SwitchCongVictimMask == 0 || have.VictimMask == want.VictimMask) &&
		(m&mad.SwitchCongCreditMask == 0 || have.CreditMask == want.CreditMask) &&
		(m&mad.SwitchCongThreshold == 0 || (have.Threshold == want.Threshold && have.PacketSize == want.PacketSize)) &&
		(m&mad.SwitchCongCSThreshold == 0 || (have.CSThreshold == want.CSThreshold && have.CSReturnDelay == want.CSReturnDelay)) &&
		(m&mad.SwitchCongMarkingRate == 0 || have.MarkingRate == want.MarkingRate)
}

// caSettingHolds reports whether have holds want's Port_Control and the
// entries of the SLs its Control_Map selects.
func caSettingHolds(have, want *mad.CACongestionSettingFields) bool {
	if have.PortControl != want.PortControl {
		return false
	}
	for sl := range want.Entries {
		if want.ControlMap&(1<<sl) != 0 && have.Entries[sl] != want.Entries[sl] {
			return false
		}
	}
	return true
}

// ccReadLogs reads the CongestionLog of every node met and hands on the
// entries it has not seen.
func (s *SM) ccReadLogs(ctx context.Context, r *CCResult, warn func(string, ...any)) error {
	for _, k := range s.ccKeys() {
		t := s.cc.targets[k]
		if !t.ready {
			continue
		}
		s.tx.Get(s.ccRequest(t, mad.AttrCongestionLog, 0, nil), func(resp *txn.Response) {
			if resp.Err != nil {
				r.Failures++
				warn("%s: reading CongestionLog: %v", t.name, resp.Err)
				return
			}
			l := decodeCCLog(resp.Data)
			if l == nil {
				r.Failures++
				warn("%s: CongestionLog of unknown type %d", t.name, resp.Data[0])
				return
			}
			r.LogEntries += s.ccEmit(k, t, l)
		})
	}
	return s.tx.Run(ctx)
}

// ccEmit hands on the entries of l that t's last log did not hold, and
// returns how many.
func (s *SM) ccEmit(k ccKey, t *ccTarget, l *ccLog) int {
	n := 0
	for _, e := range l.Entries {
		if slices.Contains(t.seen, e) {
			continue
		}
		n++
		ev := CCLogEvent{Event: "cc_log", Node: t.name, GUID: fmt.Sprintf("%#016x", k.guid), LID: t.lid,
			SL: e.SL, TimeStamp: e.Time, LogTime: l.Now, Counter: l.Counter}
		if t.sw {
			ev.Type, ev.Ports, ev.SLID, ev.DLID = "switch", l.Ports, e.SLID, e.DLID
		} else {
			ev.Type, ev.Port = "ca", t.port
			ev.LocalQP, ev.RemoteQP, ev.RemoteLID, ev.ServiceType = e.LocalQP, e.RemoteQP, e.RemoteLID, e.ServiceType
		}
		if s.cc.cfg.OnEvent != nil {
			s.cc.cfg.OnEvent(ev)
		}
	}
	t.seen = l.Entries
	return n
}

// ccSchedule sets the next periodic log read.
func (s *SM) ccSchedule() {
	if s.cc.cfg.LogInterval > 0 {
		s.cc.nextLog = s.clk.Now().Add(s.cc.cfg.LogInterval)
	}
}

// ccLogDue returns when the next periodic log read is due, if one is.
func (s *SM) ccLogDue() (time.Time, bool) {
	if !s.ccOn() || s.cc.nextLog.IsZero() || !s.installed {
		return time.Time{}, false
	}
	return s.cc.nextLog, true
}

// ccPoll reads the logs when the periodic read is due; what went wrong
// is reported as the sweep's would be, in a Result of event "cc_log" to
// nobody: the events are what count.
func (s *SM) ccPoll(ctx context.Context) error {
	due, ok := s.ccLogDue()
	if !ok || s.clk.Now().Before(due) {
		return nil
	}
	s.tx.SetPhase(PhaseCC)
	defer s.tx.SetPhase(PhaseWatch)
	err := s.ccReadLogs(ctx, &CCResult{}, func(string, ...any) {})
	s.ccSchedule()
	return err
}
