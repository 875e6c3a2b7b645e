package ccmgr

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"ibfab/internal/clock"
	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// Config turns the congestion control manager on.
type Config struct {
	Settings
	// LogInterval, when positive, has the SM read every node's
	// CongestionLog that often while it watches the subnet, besides
	// once per sweep.
	LogInterval time.Duration
	// OnEvent hears every new CongestionLog entry, on the SM's goroutine.
	OnEvent func(LogEvent)
}

// Result is what the manager did in a sweep.
type Result struct {
	Nodes       int `json:"nodes"`        // switches and CA ports managed
	Read        int `json:"read"`         // of them read for the first time
	Sets        int `json:"sets"`         // Sets of settings and table blocks that differed
	KeySets     int `json:"key_sets"`     // CongestionKeyInfo Sets
	KeyFailures int `json:"key_failures"` // nodes that did not answer with the CC_Key
	Failures    int `json:"failures"`     // other requests that failed
	LogEntries  int `json:"log_entries"`  // new CongestionLog entries
}

// LogEvent is one new CongestionLog entry of a node.
type LogEvent struct {
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

// Sender is what the manager sends its MADs through: the SM's transaction
// layer (txn.Layer), whose Run sends what was queued and runs the
// callbacks of the answers until none is pending. Callbacks run on the
// goroutine that calls Run, so the manager needs no locks.
type Sender interface {
	Get(r txn.Request, done func(*txn.Response))
	Set(r txn.Request, done func(*txn.Response))
	Run(ctx context.Context) error
}

// Node is a node the manager programs, as the SM's sweep found it: a
// switch (Port 0) or a CA port, with its LID.
type Node struct {
	GUID     uint64
	Port     int    // the CA port; 0 for a switch
	Name     string // for warnings and events
	LID      uint16
	Switch   bool
	NumPorts int
}

// Manager is the congestion control manager: what every node holds, as
// last read or written. It runs on the SM's goroutine.
type Manager struct {
	cfg     Config
	tx      Sender
	clk     clock.Clock
	cct     []mad.CongestionControlTableFields // cfg's table in blocks, as every CA port is sent it
	targets map[key]*target
	nextLog time.Time // the next periodic log read (clk's); zero: none due
}

// key names a managed node: a switch (port 0) or a CA port.
type key struct {
	guid uint64
	port int
}

// target is one managed node and what it holds.
type target struct {
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
	seen     []logEntry // the entries of the last log read
}

// New returns a manager of configuration c that sends through tx and
// schedules its periodic log reads on clk.
func New(c *Config, tx Sender, clk clock.Clock) *Manager {
	return &Manager{cfg: *c, tx: tx, clk: clk, cct: c.cctBlocks(), targets: map[key]*target{}}
}

// Enabled reports whether the manager programs the subnet (the file's
// congestion_control).
func (m *Manager) Enabled() bool { return m.cfg.Enabled }

// Forget drops what the manager knows of every node, so that each is
// read again when next met: a standby SM does not see what the master
// changes.
func (m *Manager) Forget() { clear(m.targets) }

// Sweep programs the nodes of a subnet just brought up (those met before
// by what differs, new ones once read) and reads every node's log; warn
// hears what went wrong. The Result is never nil.
func (m *Manager) Sweep(ctx context.Context, nodes []Node, warn func(string, ...any)) (*Result, error) {
	r := &Result{}
	m.refresh(nodes)
	r.Nodes = len(m.targets)
	for _, k := range m.keys() {
		t := m.targets[k]
		if t.ready {
			m.apply(t, r, warn)
		} else {
			r.Read++
			m.intro(t, r, warn)
		}
	}
	if err := m.tx.Run(ctx); err != nil {
		return r, err
	}
	err := m.readLogs(ctx, r, warn)
	m.schedule()
	return r, err
}

// refresh makes the targets the nodes given: new ones to be read, gone
// ones forgotten.
func (m *Manager) refresh(nodes []Node) {
	live := map[key]bool{}
	for _, n := range nodes {
		k := key{n.GUID, n.Port}
		live[k] = true
		if t := m.targets[k]; t != nil {
			t.lid, t.name = n.LID, n.Name
			continue
		}
		m.targets[k] = &target{name: n.Name, lid: n.LID, port: n.Port, sw: n.Switch, numPorts: n.NumPorts}
	}
	for k := range m.targets {
		if !live[k] {
			delete(m.targets, k)
		}
	}
}

// keys returns the targets' keys in order, so that the MADs go out in an
// order that does not depend on the map's.
func (m *Manager) keys() []key {
	keys := make([]key, 0, len(m.targets))
	for k := range m.targets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.guid, b.guid), cmp.Compare(a.port, b.port)) })
	return keys
}

// request addresses a CC attribute of t.
func (m *Manager) request(t *target, attr mad.AttrID, mod uint32, data []byte) txn.Request {
	return txn.Request{LID: t.lid, Class: mad.ClassCongestion, CCKey: m.cfg.Key, Attr: attr, Mod: mod, Data: data}
}

// intro meets a node: it reads its CongestionKeyInfo with the CC_Key,
// sets the key when the file gives one the node does not hold, reads its
// settings, and then applies the file.
func (m *Manager) intro(t *target, r *Result, warn func(string, ...any)) {
	m.tx.Get(m.request(t, mad.AttrCongestionKeyInfo, 0, nil), func(resp *txn.Response) {
		if resp.Err != nil {
			r.KeyFailures++
			warn("%s: no CongestionKeyInfo with the CC_Key (%v): it may hold another key", t.name, resp.Err)
			return
		}
		k := mad.CongestionKeyInfo(resp.Data).Fields()
		if m.cfg.Key == 0 || k.CCKey == m.cfg.Key {
			m.readSettings(t, r, warn)
			return
		}
		want := mad.CongestionKeyInfoFields{CCKey: m.cfg.Key, ProtectBit: k.ProtectBit, LeasePeriod: k.LeasePeriod}
		m.tx.Set(m.request(t, mad.AttrCongestionKeyInfo, 0, mad.AppendCongestionKeyInfo(nil, &want)), func(resp *txn.Response) {
			if resp.Err != nil {
				r.KeyFailures++
				warn("%s: setting the CC_Key: %v: it may hold another key", t.name, resp.Err)
				return
			}
			r.KeySets++
			m.readSettings(t, r, warn)
		})
	})
}

// readSettings reads what t holds of what the manager programs, then
// applies the file.
func (m *Manager) readSettings(t *target, r *Result, warn func(string, ...any)) {
	pending, failed := 0, false
	read := func(attr mad.AttrID, mod uint32, take func([]byte)) {
		pending++
		m.tx.Get(m.request(t, attr, mod, nil), func(resp *txn.Response) {
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
				m.apply(t, r, warn)
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
		t.cct = make([]mad.CongestionControlTableFields, min(t.tableCap, len(m.cct)))
		for blk := range t.cct {
			read(mad.AttrCongestionControlTable, uint32(blk), func(d []byte) {
				t.cct[blk] = mad.CongestionControlTable(d).Fields()
			})
		}
	})
}

// apply sends t what differs from the file.
func (m *Manager) apply(t *target, r *Result, warn func(string, ...any)) {
	set := func(attr mad.AttrID, mod uint32, data []byte, took func([]byte)) {
		m.tx.Set(m.request(t, attr, mod, data), func(resp *txn.Response) {
			if resp.Err != nil {
				r.Failures++
				warn("%s: setting %v %d: %v", t.name, attr, mod, resp.Err)
				return
			}
			r.Sets++
			took(resp.Data)
		})
	}
	c := &m.cfg
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
	want := m.cct
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

// readLogs reads the CongestionLog of every node met and hands on the
// entries it has not seen.
func (m *Manager) readLogs(ctx context.Context, r *Result, warn func(string, ...any)) error {
	for _, k := range m.keys() {
		t := m.targets[k]
		if !t.ready {
			continue
		}
		m.tx.Get(m.request(t, mad.AttrCongestionLog, 0, nil), func(resp *txn.Response) {
			if resp.Err != nil {
				r.Failures++
				warn("%s: reading CongestionLog: %v", t.name, resp.Err)
				return
			}
			l := decodeLog(resp.Data)
			if l == nil {
				r.Failures++
				warn("%s: CongestionLog of unknown type %d", t.name, resp.Data[0])
				return
			}
			r.LogEntries += m.emit(k, t, l)
		})
	}
	return m.tx.Run(ctx)
}

// emit hands on the entries of l that t's last log did not hold, and
// returns how many.
func (m *Manager) emit(k key, t *target, l *congestionLog) int {
	n := 0
	for _, e := range l.Entries {
		if slices.Contains(t.seen, e) {
			continue
		}
		n++
		ev := LogEvent{Event: "cc_log", Node: t.name, GUID: fmt.Sprintf("%#016x", k.guid), LID: t.lid,
			SL: e.SL, TimeStamp: e.Time, LogTime: l.Now, Counter: l.Counter}
		if t.sw {
			ev.Type, ev.Ports, ev.SLID, ev.DLID = "switch", l.Ports, e.SLID, e.DLID
		} else {
			ev.Type, ev.Port = "ca", t.port
			ev.LocalQP, ev.RemoteQP, ev.RemoteLID, ev.ServiceType = e.LocalQP, e.RemoteQP, e.RemoteLID, e.ServiceType
		}
		if m.cfg.OnEvent != nil {
			m.cfg.OnEvent(ev)
		}
	}
	t.seen = l.Entries
	return n
}

// schedule sets the next periodic log read.
func (m *Manager) schedule() {
	if m.cfg.LogInterval > 0 {
		m.nextLog = m.clk.Now().Add(m.cfg.LogInterval)
	}
}

// LogDue returns when the next periodic log read is due, if one is.
func (m *Manager) LogDue() (time.Time, bool) {
	if !m.cfg.Enabled || m.nextLog.IsZero() {
		return time.Time{}, false
	}
	return m.nextLog, true
}

// ReadLogs is the periodic log read: every node met is read, and the
// next read scheduled. What goes wrong is dropped: the events are what
// count, and the next sweep reports what still fails.
func (m *Manager) ReadLogs(ctx context.Context) error {
	err := m.readLogs(ctx, &Result{}, func(string, ...any) {})
	m.schedule()
	return err
}
