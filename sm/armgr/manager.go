package armgr

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"ibfab/internal/enum"
	"ibfab/sm/routing"
	"ibfab/sm/routing/ftree"
	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// DefaultARThreshold is the threshold Config takes when it gives none:
// seed 003's 75 %.
const DefaultARThreshold = 75

// Config turns the adaptive routing manager on.
type Config struct {
	Mode mad.ARMode
	// Threshold is the downstream VL occupancy, in percent (1..100), at
	// which adaptive-th and afi adapt; 0 takes DefaultARThreshold.
	Threshold uint8
	// AFCVL is the Adapted Flow Channel of afi mode: a data VL of the
	// ports (below Config.OpVLs' count), or AFCVLHighest.
	AFCVL uint8
	// OnEvent hears the manager's events (control calls, a fabric that
	// is no fat tree), on the SM's goroutine.
	OnEvent func(Event)
}

// AFCVLHighest is Config.AFCVL's "the highest data VL every cabled
// port runs", found at each programming: the ports run what their VLCaps
// allow (Config.OpVLs bounds it), which only discovery tells.
const AFCVLHighest uint8 = 0xff

// Check returns an error for a field out of range; dataVLs is the
// most data VLs the ports run (Config.OpVLs', or the subnet's own).
func (c *Config) Check(dataVLs int) error {
	switch {
	case !c.Mode.IsValid():
		return fmt.Errorf("adaptive routing mode %d", c.Mode)
	case !mad.ValidThreshold(c.Threshold):
		return fmt.Errorf("adaptive routing threshold %d %%, want 1 to %d", c.Threshold, mad.ARThresholdMax)
	case c.AFCVL != AFCVLHighest && int(c.AFCVL) >= dataVLs:
		return fmt.Errorf("AFC VL %d, the ports run VL0-VL%d", c.AFCVL, dataVLs-1)
	}
	return nil
}

// Result is what the manager did in a sweep or a control call, and the
// configuration it programmed.
type Result struct {
	Mode      mad.ARMode `json:"mode"`
	Threshold uint8      `json:"threshold"`
	AFCVL     uint8      `json:"afc_vl"`
	Switches  int        `json:"switches"` // switches managed
	Enabled   int        `json:"enabled"`  // of them holding adaptive routing on, after
	Read      int        `json:"read"`     // read for the first time
	Sets      int        `json:"sets"`     // ARInfo, ARGroupTable and ARLIDTable Sets that differed
	Groups    int        `json:"groups"`   // the most groups a switch uses, "none" not counted
	Failures  int        `json:"failures"` // requests that failed, and switches that cannot hold the plan
	// Error says why adaptive routing is off on the subnet: it is not a
	// fat tree.
	Error string `json:"error,omitempty"`
}

// Event is one event of the manager: Action "set" (a control call
// applied), "pending" (applied when the subnet is up), "reject" (a bad
// call) or "error" (the subnet is no fat tree).
type Event struct {
	Event  string `json:"event"` // "ar"
	Action Action `json:"action"`
	Result
	SMPs     uint64   `json:"smps"`
	Reason   string   `json:"reason,omitempty"` // a rejected call's
	Warnings []string `json:"warnings,omitempty"`
}

//go:generate go tool stringer -type=Action -linecomment

// Action is what an Event reports.
type Action uint8

// AR actions.
const (
	ActionSet     Action = iota + 1 // set
	ActionPending                   // pending
	ActionReject                    // reject
	ActionError                     // error
)

var arActions = enum.New("AR action", ActionSet, ActionPending, ActionReject, ActionError)

// MarshalText implements encoding.TextMarshaler.
func (a Action) MarshalText() ([]byte, error) { return arActions.Marshal(a) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Action) UnmarshalText(b []byte) error { return arActions.Unmarshal(a, b) }

// Sender is what the manager sends its MADs through: the SM's transaction
// layer (txn.Layer), whose Run sends what was queued and runs the
// callbacks of the answers until none is pending, on the goroutine that
// calls it; Sends counts what went out, for an Event's SMPs.
type Sender interface {
	Get(r txn.Request, done func(*txn.Response))
	Set(r txn.Request, done func(*txn.Response))
	Run(ctx context.Context) error
	Sends() uint64
}

// Switch is a switch the manager programs, as the SM's sweep found it.
type Switch struct {
	GUID uint64
	Node int // its index in View.Fabric
	Name string
	LID  uint16
}

// View is what the manager needs of an up subnet: its fabric (whose fat
// tree ranks give the groups), its switches with a LID, and the fewest
// data VLs a cabled port runs (at least 1).
type View struct {
	Fabric   *routing.Fabric
	Switches []Switch
	DataVLs  int
}

// Manager is the adaptive routing manager: the configuration (a control
// call changes it) and what every switch holds as last read or written.
// It runs on the SM's goroutine.
type Manager struct {
	cfg     Config
	tx      Sender
	targets map[uint64]*target // by switch GUID
	last    *Result
}

// target is one switch and what it holds.
type target struct {
	name   string
	node   int
	lid    uint16
	ready  bool // read: Sets go by the shadow
	info   mad.ARInfoFields
	groups map[uint32]mad.ARGroupTableFields // blocks read or written
	lids   map[uint32]mad.ARLIDTableFields
	ok     bool // this round: the plan fits and its tables went in
}

// New returns a manager of configuration c (checked already) that sends
// through tx.
func New(c *Config, tx Sender) *Manager {
	return &Manager{cfg: *c, tx: tx, targets: map[uint64]*target{}}
}

// Forget drops what the manager knows of every switch, so that each is
// read again when next met: a standby SM does not see what the master
// changes.
func (m *Manager) Forget() { clear(m.targets) }

// Program brings every switch of v to the configuration and returns what
// it did and what went wrong.
func (m *Manager) Program(ctx context.Context, v *View) (*Result, []string, error) {
	return m.program(ctx, v)
}

// program brings every switch to the configuration and returns what it
// did and what went wrong.
func (m *Manager) program(ctx context.Context, v *View) (*Result, []string, error) {
	c := &m.cfg
	var warns []string
	warn := func(format string, args ...any) { warns = append(warns, fmt.Sprintf(format, args...)) }
	r := &Result{Mode: c.Mode, Threshold: c.Threshold, AFCVL: m.afcVL(v.DataVLs, warn)}
	plan, err := newPlan(v.Fabric)
	if err != nil {
		r.Error = "adaptive routing left off: " + err.Error()
		if c.Mode != mad.AROff {
			m.event(Event{Action: ActionError, Result: *r})
		}
	}
	m.refresh(v.Switches)
	r.Switches = len(m.targets)
	keys := m.keys()
	for _, k := range keys {
		t := m.targets[k]
		t.ok = plan != nil
		if plan != nil {
			r.Groups = max(r.Groups, len(plan.groups[t.node])-1)
		}
		if !t.ready {
			r.Read++
			m.intro(t, plan, r, warn)
		}
	}
	// The groups, then the LIDs that use them, then ARInfo that turns
	// them on: one round each.
	for _, write := range []func(*target, *arPlan, *Result, func(string, ...any)){m.writeGroups, m.writeLIDs, m.writeInfo} {
		if err := m.tx.Run(ctx); err != nil {
			return r, warns, err
		}
		for _, k := range keys {
			if t := m.targets[k]; t.ready {
				write(t, plan, r, warn)
			}
		}
	}
	if err := m.tx.Run(ctx); err != nil {
		return r, warns, err
	}
	for _, k := range keys {
		if t := m.targets[k]; t.ready && t.info.Enable {
			r.Enabled++
		}
	}
	m.last = r
	return r, warns, nil
}

// afcVL is the AFC VL to program: the configured one, or with
// AFCVLHighest the highest data VL of the subnet's fewest. An AFC VL some
// cabled port does not run is a warning: adapted packets would be
// dropped there (the switch checks it against its VLCap alone).
func (m *Manager) afcVL(n int, warn func(string, ...any)) uint8 {
	vl := m.cfg.AFCVL
	switch {
	case vl == AFCVLHighest:
		return uint8(n - 1)
	case int(vl) >= n:
		warn("AFC VL %d, but some cabled ports run VL0-VL%d only", vl, n-1)
	}
	return vl
}

// refresh makes the targets the switches given: new ones to be read,
// gone ones forgotten.
func (m *Manager) refresh(switches []Switch) {
	live := map[uint64]bool{}
	for _, sw := range switches {
		live[sw.GUID] = true
		if t := m.targets[sw.GUID]; t != nil {
			t.node, t.lid, t.name = sw.Node, sw.LID, sw.Name
			continue
		}
		m.targets[sw.GUID] = &target{name: sw.Name, node: sw.Node, lid: sw.LID,
			groups: map[uint32]mad.ARGroupTableFields{}, lids: map[uint32]mad.ARLIDTableFields{}}
	}
	for k := range m.targets {
		if !live[k] {
			delete(m.targets, k)
		}
	}
}

// keys returns the targets' GUIDs in order.
func (m *Manager) keys() []uint64 {
	keys := make([]uint64, 0, len(m.targets))
	for k := range m.targets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	return keys
}

// arRequest addresses an AR attribute of t.
func request(t *target, attr mad.AttrID, mod uint32, data []byte) txn.Request {
	return txn.Request{LID: t.lid, Class: mad.ClassVendorAR, Attr: attr, Mod: mod, Data: data}
}

// intro meets a switch: it reads ARInfo, then the blocks the plan
// writes; t is ready once all came in.
func (m *Manager) intro(t *target, plan *arPlan, r *Result, warn func(string, ...any)) {
	m.tx.Get(request(t, mad.AttrARInfo, 0, nil), func(resp *txn.Response) {
		if resp.Err != nil {
			r.Failures++
			warn("%s: no ARInfo (%v): no adaptive routing there", t.name, resp.Err)
			return
		}
		t.info = mad.ARInfo(resp.Data).Fields()
		pending, failed := 0, false
		read := func(attr mad.AttrID, mod uint32, take func([]byte)) {
			pending++
			m.tx.Get(request(t, attr, mod, nil), func(resp *txn.Response) {
				pending--
				if resp.Err != nil {
					failed = true
					r.Failures++
					warn("%s: reading %v %d: %v", t.name, attr.Name(mad.ClassVendorAR), mod, resp.Err)
				} else {
					take(resp.Data)
				}
				if pending == 0 && !failed {
					t.ready = true
				}
			})
		}
		if plan == nil {
			t.ready = true // only ARInfo is written, to turn it off
			return
		}
		gb, lb := plan.blocks(t.node)
		gb = min(gb, blockCount(int(t.info.GroupCap), mad.ARGroupsPerBlock))
		lb = min(lb, blockCount(int(t.info.LIDCap), mad.ARLIDsPerBlock))
		for b := range uint32(gb) {
			read(mad.AttrARGroupTable, b, func(d []byte) { t.groups[b] = mad.ARGroupTable(d).Fields() })
		}
		for b := range uint32(lb) {
			read(mad.AttrARLIDTable, b, func(d []byte) { t.lids[b] = mad.ARLIDTable(d).Fields() })
		}
		if pending == 0 {
			t.ready = true
		}
	})
}

// blockCount is the blocks of per entries that hold n entries.
func blockCount(n, per int) int { return (n + per - 1) / per }

// set sends an AR Set; took runs with the answer's data.
func (m *Manager) set(t *target, attr mad.AttrID, mod uint32, data []byte, r *Result,
	warn func(string, ...any), took func([]byte)) {
	m.tx.Set(request(t, attr, mod, data), func(resp *txn.Response) {
		if resp.Err != nil {
			t.ok = false
			r.Failures++
			warn("%s: setting %v %d: %v", t.name, attr.Name(mad.ClassVendorAR), mod, resp.Err)
			return
		}
		r.Sets++
		took(resp.Data)
	})
}

// writeGroups writes t's group blocks that differ from the plan; a switch
// whose GroupCap cannot hold the plan is left off.
func (m *Manager) writeGroups(t *target, plan *arPlan, r *Result, warn func(string, ...any)) {
	if !t.ok {
		return
	}
	groups := plan.groups[t.node]
	if len(groups) > int(t.info.GroupCap) {
		t.ok = false
		r.Failures++
		warn("%s: holds %d adaptive routing groups, the plan has %d: left off", t.name, t.info.GroupCap, len(groups))
		return
	}
	gb, _ := plan.blocks(t.node)
	for _, b := range blockList(gb, t.groups) {
		var want mad.ARGroupTableFields
		for i := range want.Groups {
			if g := int(b)*mad.ARGroupsPerBlock + i; g > 0 && g < len(groups) {
				want.Groups[i] = groups[g]
			}
		}
		if have, ok := t.groups[b]; ok && have == want {
			continue
		}
		m.set(t, mad.AttrARGroupTable, b, mad.AppendARGroupTable(nil, &want), r, warn, func(d []byte) {
			t.groups[b] = mad.ARGroupTable(d).Fields()
		})
	}
}

// writeLIDs writes t's LID blocks that differ from the plan; a switch whose
// LIDCap cannot hold the subnet's LIDs is left off.
func (m *Manager) writeLIDs(t *target, plan *arPlan, r *Result, warn func(string, ...any)) {
	if !t.ok {
		return
	}
	lids := plan.lids[t.node]
	if len(lids) > int(t.info.LIDCap) {
		t.ok = false
		r.Failures++
		warn("%s: holds adaptive routing for %d LIDs, LIDs go up to %d: left off", t.name, t.info.LIDCap, len(lids)-1)
		return
	}
	_, lb := plan.blocks(t.node)
	for _, b := range blockList(lb, t.lids) {
		var want mad.ARLIDTableFields
		first := int(b) * mad.ARLIDsPerBlock
		for i := range want.Groups {
			if lid := first + i; lid < len(lids) {
				want.Groups[i] = lids[lid]
			}
		}
		if have, ok := t.lids[b]; ok && have == want {
			continue
		}
		m.set(t, mad.AttrARLIDTable, b, mad.AppendARLIDTable(nil, &want), r, warn, func(d []byte) {
			t.lids[b] = mad.ARLIDTable(d).Fields()
		})
	}
}

// blockList returns the blocks to bring to the plan: the n it fills,
// and the others known to hold something, to be emptied.
func blockList[T comparable](n int, known map[uint32]T) []uint32 {
	var zero T
	out := make([]uint32, 0, n)
	for b := range uint32(n) {
		out = append(out, b)
	}
	for b, v := range known {
		if int(b) >= n && v != zero {
			out = append(out, b)
		}
	}
	slices.Sort(out)
	return out
}

// writeInfo writes t's ARInfo when its configuration differs: on in the
// configured mode when the tables went in, else off.
func (m *Manager) writeInfo(t *target, plan *arPlan, r *Result, warn func(string, ...any)) {
	c := &m.cfg
	want := t.info
	want.Mode, want.Threshold, want.AFCVL = c.Mode, c.Threshold, r.AFCVL
	want.Enable = t.ok && c.Mode != mad.AROff
	if !t.ok {
		want.Mode = mad.AROff
	} else {
		want.GroupTop = uint16(len(plan.groups[t.node]) - 1)
	}
	if want == t.info {
		return
	}
	m.set(t, mad.AttrARInfo, 0, mad.AppendARInfo(nil, &want), r, warn, func(d []byte) {
		t.info = mad.ARInfo(d).Fields()
	})
}

// plan is what every switch should hold: its groups (0 empty, 1 all
// its up ports, others only where some destination is reached minimally
// through a subset) and the group of every LID up to the subnet's top.
type arPlan struct {
	groups [][]mad.PortMask // by node; nil for a CA
	lids   [][]uint16       // by node, indexed by LID
}

// newPlan builds the plan from the fat tree's up ports
// (FatTreeUpPorts); an error for a fabric that is not a fat tree.
func newPlan(f *routing.Fabric) (*arPlan, error) {
	u, err := ftree.FatTreeUpPorts(f)
	if err != nil {
		return nil, err
	}
	n := f.Topo.NumNodes()
	p := &arPlan{groups: make([][]mad.PortMask, n), lids: make([][]uint16, n)}
	top := int(f.MaxLID())
	for _, s := range f.Switches() {
		p.groups[s] = []mad.PortMask{{}}
		if all := portMask(u.Up(s)); !all.IsZero() {
			p.groups[s] = append(p.groups[s], all)
		}
		p.lids[s] = make([]uint16, top+1)
	}
	// The CA ports of one leaf have the same alternatives everywhere:
	// their groups are found once, leaf by leaf in the order the ports
	// come, which numbers the further groups.
	byLeaf := make([][]uint16, u.Leaves())
	for i, e := range f.Ends() {
		li := u.Leaf(i)
		if li < 0 {
			continue
		}
		if byLeaf[li] == nil {
			byLeaf[li] = p.leafGroups(f, u, li)
		}
		for _, s := range f.Switches() {
			for k := range e.NumLIDs() {
				p.lids[s][int(e.LID)+k] = byLeaf[li][s]
			}
		}
	}
	return p, nil
}

// leafGroups returns, per switch node, the group of the CA ports on the
// leaf of index li: 0 where they have no alternatives, else the group of
// their alternatives, added to the switch's groups when new.
func (p *arPlan) leafGroups(f *routing.Fabric, u *ftree.UpPorts, li int) []uint16 {
	g := make([]uint16, len(p.groups))
	for _, s := range f.Switches() {
		m := portMask(u.LeafAlternatives(s, li))
		if m.IsZero() {
			continue
		}
		i := slices.Index(p.groups[s], m)
		if i < 0 {
			i = len(p.groups[s])
			p.groups[s] = append(p.groups[s], m)
		}
		g[s] = uint16(i)
	}
	return g
}

// portMask returns the mask of ports.
func portMask(ports []int) mad.PortMask {
	var m mad.PortMask
	for _, p := range ports {
		m.Add(uint8(p))
	}
	return m
}

// blocks returns the group and LID blocks the plan fills on switch s.
func (p *arPlan) blocks(s int) (groups, lids int) {
	return blockCount(len(p.groups[s]), mad.ARGroupsPerBlock), blockCount(len(p.lids[s]), mad.ARLIDsPerBlock)
}

// event sends an event out and returns it as sent.
func (m *Manager) event(e Event) *Event {
	e.Event = "ar"
	if m.cfg.OnEvent != nil {
		m.cfg.OnEvent(e)
	}
	return &e
}

// Setting is a run-time change of the adaptive routing configuration
// (sm.SM.ARCall; ibsm's "ar-set" control request): a field left out keeps its
// value.
type Setting struct {
	Mode      *mad.ARMode `json:"mode,omitempty"`
	Threshold *uint8      `json:"threshold,omitempty"`
	AFCVL     *uint8      `json:"afc_vl,omitempty"`
}

// Reply answers a control call: the configuration and the last
// programming's outcome, and for a setting its event.
type Reply struct {
	Mode      mad.ARMode `json:"mode"`
	Threshold uint8      `json:"threshold"`
	AFCVL     uint8      `json:"afc_vl"`
	// Installed says the subnet is up and the switches hold Last.
	Installed bool    `json:"installed"`
	Last      *Result `json:"last,omitempty"`
	Event     *Event  `json:"event,omitempty"`
}

// Apply takes a control call's setting: one that does not check (dataVLs
// is the most data VLs the ports run) is rejected, else it becomes the
// configuration and, with the subnet up (v not nil), every switch is
// programmed with it at once; without, at the next Program.
func (m *Manager) Apply(ctx context.Context, set *Setting, dataVLs int, v *View) (*Event, error) {
	next := m.cfg
	if set.Mode != nil {
		next.Mode = *set.Mode
	}
	if set.Threshold != nil {
		next.Threshold = *set.Threshold
	}
	if set.AFCVL != nil {
		next.AFCVL = *set.AFCVL
	}
	if err := next.Check(dataVLs); err != nil {
		r := Result{Mode: next.Mode, Threshold: next.Threshold, AFCVL: next.AFCVL}
		return m.event(Event{Action: ActionReject, Result: r, Reason: err.Error()}), nil
	}
	m.cfg = next
	if v == nil {
		r := Result{Mode: next.Mode, Threshold: next.Threshold, AFCVL: next.AFCVL}
		return m.event(Event{Action: ActionPending, Result: r, Reason: "subnet not up"}), nil
	}
	smps := m.tx.Sends()
	r, warns, err := m.program(ctx, v)
	return m.event(Event{Action: ActionSet, Result: *r, SMPs: m.tx.Sends() - smps, Warnings: warns}), err
}

// Reply is the answer to a control call: the configuration (the AFC VL
// the switches were given when AFCVLHighest), the last programming's
// outcome, and ev, the setting's event if any; installed says the subnet
// is up.
func (m *Manager) Reply(installed bool, ev *Event) Reply {
	afc := m.cfg.AFCVL
	if afc == AFCVLHighest && m.last != nil {
		afc = m.last.AFCVL
	}
	return Reply{Mode: m.cfg.Mode, Threshold: m.cfg.Threshold, AFCVL: afc, Installed: installed, Last: m.last, Event: ev}
}
