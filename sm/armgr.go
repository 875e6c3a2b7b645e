package sm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"ibfab/internal/enum"
	"ibfab/sm/routing"
	"ibfab/sm/routing/ftree"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// The adaptive routing manager (seed 003, docs/adaptive-routing.md). Once
// the subnet is up, every switch gets, through ibfab's vendor class 0x0A
// (LID-routed to QP1, as the congestion control manager's class 0x21):
//
//   - ARGroupTable: group 1 is all the switch's up ports (the fat-tree
//     ranks of ftree.go: a port to a switch one rank higher); a further
//     group only where, on a fat tree with links missing, a destination
//     is reached minimally through some of them alone, so an adapted
//     packet never goes where it cannot arrive: the groups are the
//     alternatives of FatTreeUpPorts. On an RLFT or a k-ary n-tree group
//     1 is the only one.
//   - ARLIDTable: every CA LID, base and LMC aliases, whose leaf is not
//     below the switch → its group; LIDs below it (one way down) and
//     switch LIDs → 0, forwarded by the LFT alone.
//   - ARInfo: the mode, threshold and AFC VL of the configuration, Enable
//     unless the mode is off, GroupTop the switch's last group.
//
// The tables are written even with the mode off, so that a mode change at
// run time (ARCall, `ibsm ar set`) is one ARInfo Set per switch. A switch
// met for the first time is read (ARInfo, then the blocks the manager
// writes); after that only what differs from what it last read or wrote
// is sent, the groups first, then the LIDs, then ARInfo, so a switch
// never enables a group before its ports are in place. Every route an
// adaptive choice makes stays up*/down* on the ranks, so adaptive routing
// closes no credit loop.
//
// A fabric that is not a fat tree (ftree's ranks refuse it) gets adaptive
// routing off on every switch that answers, and, when a mode was asked
// for, an "error" AREvent saying why. With the manager on, the SM also
// sets SLtoVL (SL s on VL s mod the port's data VLs) and equal-weight VL
// arbitration on every port (Config.VLTables is VLTablesSet): the static
// queuing schemes choose the VL by the SL, and the AFC VL is arbitrated
// as the others are.

// PhaseAR is the phase that programs adaptive routing.
const PhaseAR = "ar"

// DefaultARThreshold is the threshold ARConfig takes when it gives none:
// seed 003's 75 %.
const DefaultARThreshold = 75

// ARConfig turns the adaptive routing manager on.
type ARConfig struct {
	Mode mad.ARMode
	// Threshold is the downstream VL occupancy, in percent (1..100), at
	// which adaptive-th and afi adapt; 0 takes DefaultARThreshold.
	Threshold uint8
	// AFCVL is the Adapted Flow Channel of afi mode: a data VL of the
	// ports (below Config.OpVLs' count), or AFCVLHighest.
	AFCVL uint8
	// OnEvent hears the manager's events (control calls, a fabric that
	// is no fat tree), on the SM's goroutine.
	OnEvent func(AREvent)
}

// AFCVLHighest is ARConfig.AFCVL's "the highest data VL every cabled
// port runs", found at each programming: the ports run what their VLCaps
// allow (Config.OpVLs bounds it), which only discovery tells.
const AFCVLHighest uint8 = 0xff

// check returns an ErrConfig for a field out of range; dataVLs is the
// most data VLs the ports run (Config.OpVLs', or the subnet's own).
func (c *ARConfig) check(dataVLs int) error {
	switch {
	case !c.Mode.IsValid():
		return fmt.Errorf("%w: adaptive routing mode %d", ErrConfig, c.Mode)
	case !mad.ValidThreshold(c.Threshold):
		return fmt.Errorf("%w: adaptive routing threshold %d %%, want 1 to %d", ErrConfig, c.Threshold, mad.ARThresholdMax)
	case c.AFCVL != AFCVLHighest && int(c.AFCVL) >= dataVLs:
		return fmt.Errorf("%w: AFC VL %d, the ports run VL0-VL%d", ErrConfig, c.AFCVL, dataVLs-1)
	}
	return nil
}

// ARResult is what the manager did in a sweep or a control call, and the
// configuration it programmed.
type ARResult struct {
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

// AREvent is one event of the manager: Action "set" (a control call
// applied), "pending" (applied when the subnet is up), "reject" (a bad
// call) or "error" (the subnet is no fat tree).
type AREvent struct {
	Event  string   `json:"event"` // "ar"
	Action ARAction `json:"action"`
	ARResult
	SMPs     uint64   `json:"smps"`
	Reason   string   `json:"reason,omitempty"` // a rejected call's
	Warnings []string `json:"warnings,omitempty"`
}

//go:generate go tool stringer -type=ARAction -linecomment

// ARAction is what an AREvent reports.
type ARAction uint8

// AR actions.
const (
	ARActionSet     ARAction = iota + 1 // set
	ARActionPending                     // pending
	ARActionReject                      // reject
	ARActionError                       // error
)

var arActions = enum.New("AR action", ARActionSet, ARActionPending, ARActionReject, ARActionError)

// MarshalText implements encoding.TextMarshaler.
func (a ARAction) MarshalText() ([]byte, error) { return arActions.Marshal(a) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *ARAction) UnmarshalText(b []byte) error { return arActions.Unmarshal(a, b) }

// arManager is the manager's state: the configuration (a control call
// changes it), what every switch holds as last read or written, the
// calls of other goroutines.
type arManager struct {
	cfg     ARConfig
	targets map[uint64]*arTarget // by switch GUID
	inbox   chan arCall
	last    *ARResult
}

// arTarget is one switch and what it holds.
type arTarget struct {
	name   string
	node   int
	lid    uint16
	ready  bool // read: Sets go by the shadow
	info   mad.ARInfoFields
	groups map[uint32]mad.ARGroupTableFields // blocks read or written
	lids   map[uint32]mad.ARLIDTableFields
	ok     bool // this round: the plan fits and its tables went in
}

func newARManager(c *ARConfig) *arManager {
	return &arManager{cfg: *c, targets: map[uint64]*arTarget{}, inbox: make(chan arCall, 4)}
}

// arPhase programs the subnet just brought up.
func (s *SM) arPhase(ctx context.Context, res *Result) error {
	if s.ar == nil || s.subnet == nil {
		return nil
	}
	return s.phase(res, PhaseAR, func() error {
		r, warns, err := s.arProgram(ctx)
		res.AR = r
		for _, w := range warns {
			res.Warnings = append(res.Warnings, "ar: "+w)
		}
		return err
	})
}

// arProgram brings every switch to the configuration and returns what it
// did and what went wrong.
func (s *SM) arProgram(ctx context.Context) (*ARResult, []string, error) {
	c := &s.ar.cfg
	var warns []string
	warn := func(format string, args ...any) { warns = append(warns, fmt.Sprintf(format, args...)) }
	r := &ARResult{Mode: c.Mode, Threshold: c.Threshold, AFCVL: s.arAFCVL(warn)}
	plan, err := newARPlan(&s.subnet.Fabric)
	if err != nil {
		r.Error = "adaptive routing left off: " + err.Error()
		if c.Mode != mad.AROff {
			s.arEvent(AREvent{Action: ARActionError, ARResult: *r})
		}
	}
	s.arRefresh()
	r.Switches = len(s.ar.targets)
	keys := s.arKeys()
	for _, k := range keys {
		t := s.ar.targets[k]
		t.ok = plan != nil
		if plan != nil {
			r.Groups = max(r.Groups, len(plan.groups[t.node])-1)
		}
		if !t.ready {
			r.Read++
			s.arIntro(t, plan, r, warn)
		}
	}
	// The groups, then the LIDs that use them, then ARInfo that turns
	// them on: one round each.
	for _, write := range []func(*arTarget, *arPlan, *ARResult, func(string, ...any)){s.arGroups, s.arLIDs, s.arInfo} {
		if err := s.tx.Run(ctx); err != nil {
			return r, warns, err
		}
		for _, k := range keys {
			if t := s.ar.targets[k]; t.ready {
				write(t, plan, r, warn)
			}
		}
	}
	if err := s.tx.Run(ctx); err != nil {
		return r, warns, err
	}
	for _, k := range keys {
		if t := s.ar.targets[k]; t.ready && t.info.Enable {
			r.Enabled++
		}
	}
	s.ar.last = r
	return r, warns, nil
}

// arAFCVL is the AFC VL to program: the configured one, or with
// AFCVLHighest the highest data VL of the subnet's fewest. An AFC VL some
// cabled port does not run is a warning: adapted packets would be
// dropped there (the switch checks it against its VLCap alone).
func (s *SM) arAFCVL(warn func(string, ...any)) uint8 {
	n := subnetDataVLs(s.subnet)
	vl := s.ar.cfg.AFCVL
	switch {
	case vl == AFCVLHighest:
		return uint8(n - 1)
	case int(vl) >= n:
		warn("AFC VL %d, but some cabled ports run VL0-VL%d only", vl, n-1)
	}
	return vl
}

// subnetDataVLs is the fewest data VLs a cabled port of sn runs (its
// PortInfo as last read or set), at least 1.
func subnetDataVLs(sn *Subnet) int {
	n := 0
	for _, l := range sn.Topo.Links() {
		for _, e := range []topologies.PortRef{l.A, l.B} {
			if !sn.Have[e.Node][e.Port] {
				continue
			}
			if v := mad.NumDataVLs(sn.PortInfo[e.Node][e.Port].OperationalVLs); v > 0 && (n == 0 || v < n) {
				n = v
			}
		}
	}
	return max(n, 1)
}

// arRefresh makes the targets the subnet's switches with a LID: new ones
// to be read, gone ones forgotten.
func (s *SM) arRefresh() {
	sn := s.subnet
	live := map[uint64]bool{}
	for _, i := range sn.Switches() {
		lid := sn.LID[i][0]
		if lid == 0 {
			continue
		}
		n := sn.Topo.Node(i)
		live[n.GUID] = true
		name := portName(sn.Topo, portRef(i, 0))
		if t := s.ar.targets[n.GUID]; t != nil {
			t.node, t.lid, t.name = i, lid, name
			continue
		}
		s.ar.targets[n.GUID] = &arTarget{name: name, node: i, lid: lid,
			groups: map[uint32]mad.ARGroupTableFields{}, lids: map[uint32]mad.ARLIDTableFields{}}
	}
	for k := range s.ar.targets {
		if !live[k] {
			delete(s.ar.targets, k)
		}
	}
}

// arKeys returns the targets' GUIDs in order.
func (s *SM) arKeys() []uint64 {
	keys := make([]uint64, 0, len(s.ar.targets))
	for k := range s.ar.targets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	return keys
}

// arRequest addresses an AR attribute of t.
func arRequest(t *arTarget, attr mad.AttrID, mod uint32, data []byte) txn.Request {
	return txn.Request{LID: t.lid, Class: mad.ClassVendorAR, Attr: attr, Mod: mod, Data: data}
}

// arIntro meets a switch: it reads ARInfo, then the blocks the plan
// writes; t is ready once all came in.
func (s *SM) arIntro(t *arTarget, plan *arPlan, r *ARResult, warn func(string, ...any)) {
	s.tx.Get(arRequest(t, mad.AttrARInfo, 0, nil), func(resp *txn.Response) {
		if resp.Err != nil {
			r.Failures++
			warn("%s: no ARInfo (%v): no adaptive routing there", t.name, resp.Err)
			return
		}
		t.info = mad.ARInfo(resp.Data).Fields()
		pending, failed := 0, false
		read := func(attr mad.AttrID, mod uint32, take func([]byte)) {
			pending++
			s.tx.Get(arRequest(t, attr, mod, nil), func(resp *txn.Response) {
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
		gb = min(gb, arBlocks(int(t.info.GroupCap), mad.ARGroupsPerBlock))
		lb = min(lb, arBlocks(int(t.info.LIDCap), mad.ARLIDsPerBlock))
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

// arBlocks is the blocks of per entries that hold n entries.
func arBlocks(n, per int) int { return (n + per - 1) / per }

// arSet sends an AR Set; took runs with the answer's data.
func (s *SM) arSet(t *arTarget, attr mad.AttrID, mod uint32, data []byte, r *ARResult,
	warn func(string, ...any), took func([]byte)) {
	s.tx.Set(arRequest(t, attr, mod, data), func(resp *txn.Response) {
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

// arGroups writes t's group blocks that differ from the plan; a switch
// whose GroupCap cannot hold the plan is left off.
func (s *SM) arGroups(t *arTarget, plan *arPlan, r *ARResult, warn func(string, ...any)) {
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
	for _, b := range arBlockList(gb, t.groups) {
		var want mad.ARGroupTableFields
		for i := range want.Groups {
			if g := int(b)*mad.ARGroupsPerBlock + i; g > 0 && g < len(groups) {
				want.Groups[i] = groups[g]
			}
		}
		if have, ok := t.groups[b]; ok && have == want {
			continue
		}
		s.arSet(t, mad.AttrARGroupTable, b, mad.AppendARGroupTable(nil, &want), r, warn, func(d []byte) {
			t.groups[b] = mad.ARGroupTable(d).Fields()
		})
	}
}

// arLIDs writes t's LID blocks that differ from the plan; a switch whose
// LIDCap cannot hold the subnet's LIDs is left off.
func (s *SM) arLIDs(t *arTarget, plan *arPlan, r *ARResult, warn func(string, ...any)) {
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
	for _, b := range arBlockList(lb, t.lids) {
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
		s.arSet(t, mad.AttrARLIDTable, b, mad.AppendARLIDTable(nil, &want), r, warn, func(d []byte) {
			t.lids[b] = mad.ARLIDTable(d).Fields()
		})
	}
}

// arBlockList returns the blocks to bring to the plan: the n it fills,
// and the others known to hold something, to be emptied.
func arBlockList[T comparable](n int, known map[uint32]T) []uint32 {
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

// arInfo writes t's ARInfo when its configuration differs: on in the
// configured mode when the tables went in, else off.
func (s *SM) arInfo(t *arTarget, plan *arPlan, r *ARResult, warn func(string, ...any)) {
	c := &s.ar.cfg
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
	s.arSet(t, mad.AttrARInfo, 0, mad.AppendARInfo(nil, &want), r, warn, func(d []byte) {
		t.info = mad.ARInfo(d).Fields()
	})
}

// arPlan is what every switch should hold: its groups (0 empty, 1 all
// its up ports, others only where some destination is reached minimally
// through a subset) and the group of every LID up to the subnet's top.
type arPlan struct {
	groups [][]mad.PortMask // by node; nil for a CA
	lids   [][]uint16       // by node, indexed by LID
}

// newARPlan builds the plan from the fat tree's up ports
// (FatTreeUpPorts); an error for a fabric that is not a fat tree.
func newARPlan(f *routing.Fabric) (*arPlan, error) {
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
	return arBlocks(len(p.groups[s]), mad.ARGroupsPerBlock), arBlocks(len(p.lids[s]), mad.ARLIDsPerBlock)
}

// arEvent sends an event out and returns it as sent.
func (s *SM) arEvent(e AREvent) *AREvent {
	e.Event = "ar"
	if s.ar.cfg.OnEvent != nil {
		s.ar.cfg.OnEvent(e)
	}
	return &e
}

// ARSetting is a run-time change of the adaptive routing configuration
// (ARCall; ibsm's "ar-set" control request): a field left out keeps its
// value.
type ARSetting struct {
	Mode      *mad.ARMode `json:"mode,omitempty"`
	Threshold *uint8      `json:"threshold,omitempty"`
	AFCVL     *uint8      `json:"afc_vl,omitempty"`
}

// ARReply answers a control call: the configuration and the last
// programming's outcome, and for a setting its event.
type ARReply struct {
	Mode      mad.ARMode `json:"mode"`
	Threshold uint8      `json:"threshold"`
	AFCVL     uint8      `json:"afc_vl"`
	// Installed says the subnet is up and the switches hold Last.
	Installed bool      `json:"installed"`
	Last      *ARResult `json:"last,omitempty"`
	Event     *AREvent  `json:"event,omitempty"`
}

// arCall is a control call waiting for the SM's goroutine; set nil is a
// show.
type arCall struct {
	set   *ARSetting
	reply chan ARReply
}

// ErrNoAR is ARCall's error on an SM without the manager.
var ErrNoAR = errors.New("adaptive routing is not managed (ibsm --ar-mode)")

// ARCall hands a control call to the SM's goroutine and waits for its
// answer: set nil reads the configuration, else set changes it and the
// switches are reprogrammed at once (when the subnet is up; else at the
// next sweep). It is safe for concurrent use; the SM serves calls while
// it watches the subnet (Run), not during a sweep. A rejected setting is
// an error, with the reply saying why.
func (s *SM) ARCall(ctx context.Context, set *ARSetting) (ARReply, error) {
	if s.ar == nil {
		return ARReply{}, ErrNoAR
	}
	c := arCall{set: set, reply: make(chan ARReply, 1)}
	r, err := handOff(ctx, s, s.ar.inbox, c, c.reply)
	if err == nil && r.Event != nil && r.Event.Action == ARActionReject {
		return r, errors.New(r.Event.Reason)
	}
	return r, err
}

// serveAR answers the control calls that came in.
func (s *SM) serveAR(ctx context.Context) error {
	if s.ar == nil {
		return nil
	}
	return serveInbox(ctx, s.ar.inbox, s.arServe)
}

// arServe carries out one call.
func (s *SM) arServe(ctx context.Context, c arCall) error {
	var err error
	var ev *AREvent
	if c.set != nil {
		ev, err = s.arApply(ctx, c.set)
	}
	cfg := &s.ar.cfg
	afc := cfg.AFCVL
	if afc == AFCVLHighest && s.ar.last != nil {
		afc = s.ar.last.AFCVL // what the switches were given
	}
	c.reply <- ARReply{Mode: cfg.Mode, Threshold: cfg.Threshold, AFCVL: afc, Installed: s.installed,
		Last: s.ar.last, Event: ev}
	return err
}

// arApply takes a new setting and programs the switches with it.
func (s *SM) arApply(ctx context.Context, set *ARSetting) (*AREvent, error) {
	next := s.ar.cfg
	if set.Mode != nil {
		next.Mode = *set.Mode
	}
	if set.Threshold != nil {
		next.Threshold = *set.Threshold
	}
	if set.AFCVL != nil {
		next.AFCVL = *set.AFCVL
	}
	n := mad.NumDataVLs(s.cfg.OpVLs)
	if s.installed && s.subnet != nil {
		n = min(n, subnetDataVLs(s.subnet)) // what the ports run now
	}
	if err := next.check(n); err != nil {
		r := ARResult{Mode: next.Mode, Threshold: next.Threshold, AFCVL: next.AFCVL}
		return s.arEvent(AREvent{Action: ARActionReject, ARResult: r,
			Reason: strings.TrimPrefix(err.Error(), ErrConfig.Error()+": ")}), nil
	}
	s.ar.cfg = next
	if !s.installed || s.subnet == nil {
		r := ARResult{Mode: next.Mode, Threshold: next.Threshold, AFCVL: next.AFCVL}
		return s.arEvent(AREvent{Action: ARActionPending, ARResult: r, Reason: "subnet not up"}), nil
	}
	smps := s.tx.Sends()
	s.tx.SetPhase(PhaseAR)
	r, warns, err := s.arProgram(ctx)
	s.tx.SetPhase(PhaseWatch)
	return s.arEvent(AREvent{Action: ARActionSet, ARResult: *r, SMPs: s.tx.Sends() - smps, Warnings: warns}), err
}
