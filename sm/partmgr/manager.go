package partmgr

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"ibfab/sm/partition"
	"ibfab/sm/routing"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// ErrConfig is the error of a configuration the manager refuses: the
// SM's (sm.ErrConfig), so that a caller of sm.New tells it by one error.
var ErrConfig = routing.ErrConfig

// Config turns the partition manager on.
type Config struct {
	// File is the partitions.conf, parsed; nil, or one that defines
	// nothing, is OpenSM without a file: every end port a full member
	// of the Default partition.
	File *partition.Config
	// Enforce is the switch ports' enforcement (OpenSM's part_enforce);
	// the zero value is OpenSM's default, both.
	Enforce partition.Enforce
	// OnEvent hears of every port whose table or enforcement the
	// manager changed, on the SM's goroutine.
	OnEvent func(Event)
}

// Result is what the manager did in a sweep or assimilation.
type Result struct {
	Partitions  int `json:"partitions"`   // in effect
	Ports       int `json:"ports"`        // end ports managed
	SwitchPorts int `json:"switch_ports"` // switch ports cabled to them that enforce
	BlocksRead  int `json:"blocks_read"`  // P_KeyTable blocks read (ports met for the first time)
	BlocksSet   int `json:"blocks_set"`   // P_KeyTable blocks that differed and were set
	Enforcement int `json:"enforcement"`  // PortInfo Sets of enforcement bits
	Failures    int `json:"failures"`     // requests that failed (warnings say which)
}

// Event is a port whose P_Key table or enforcement the manager
// changed.
type Event struct {
	Event string `json:"event"` // "partition"
	Port  string `json:"port"`  // as the QoS manager names ports: "node[port]"
	GUID  string `json:"guid"`  // the end port's GUID; a switch port's switch's
	// Type is "ca", "router", "switch" (port 0) or "switch-port" (an
	// external port cabled to an end port).
	Type string `json:"type"`
	// Blocks are the blocks set; Table the table now, its entries up to
	// the last key, "0x0000" for a free one.
	Blocks []int    `json:"blocks,omitempty"`
	Table  []string `json:"table,omitempty"`
	// Enforce is a switch port's enforcement when it was set: "in",
	// "out", "both" or "off".
	Enforce *partition.Enforce `json:"enforce,omitempty"`
}

// Sender is what the manager sends its MADs through: the SM's
// transaction layer (txn.Layer), whose Run sends what was queued and
// runs the callbacks of the answers until none is pending, on the
// goroutine that calls it.
type Sender interface {
	Get(r txn.Request, done func(*txn.Response))
	Set(r txn.Request, done func(*txn.Response))
	Run(ctx context.Context) error
}

// PortInfos is the PortInfo the SM keeps of every port, as it last read
// or set it: partition enforcement is two of its bits, and a Set of it
// carries the SM's M_Key fields, which only the SM knows.
type PortInfos interface {
	// PortInfo is what the port holds; false when it is not known.
	PortInfo(node, port int) (mad.PortInfoFields, bool)
	// ForSet is the port's PortInfo ready for a Set that changes nothing
	// else, with the SM's M_Key fields.
	ForSet(node, port int) mad.PortInfoFields
	// Took records what a Set's answer says the port now holds.
	Took(node, port int, pi mad.PortInfoFields)
}

// Key names a port's table: its node's GUID and the port number.
type Key struct {
	Node uint64
	Port int
}

// Port addresses one P_Key table: an end port's or a switch port's.
type Port struct {
	Key  Key    // the table's name; Key.Port is the port number
	Node int    // the node's index in the SM's topology, for PortInfos
	Name string // "node[port]", for warnings and events
	Cap  int    // table entries (end ports) or PartitionEnforcementCap (switch ports)
	Path []uint8
	Mod  uint32 // the block number's high bits: port<<16 on a switch's external port
	Type string // Event.Type
	GUID uint64 // the end port's GUID (the switch's for a switch port)
}

// End is an end port and the switch port it is cabled to, if any.
type End struct {
	Self     Port
	NodeType topologies.NodeType
	Peer     *Port
}

// View is the subnet a sweep found, as the manager addresses it.
type View struct {
	SM          uint64 // the SM's port GUID
	Ends        []End
	SwitchLinks []Port // the switch ports cabled to switches
	PortInfos   PortInfos
}

// Manager is the partition manager. It is not safe for concurrent use:
// the SM calls it from its goroutine only.
type Manager struct {
	cfg Config
	tx  Sender
	// tables are what the ports hold, as read or set: whole blocks.
	tables map[Key][]mad.PKey
	mem    *partition.Memory
	// portGUIDs are the end port GUIDs met on each node, for Forget.
	portGUIDs map[uint64][]uint64
}

// New returns the manager of c over tx. An error wraps ErrConfig.
func New(c *Config, tx Sender) (*Manager, error) {
	if !c.Enforce.Valid() {
		return nil, fmt.Errorf("%w: partition enforcement %d", ErrConfig, c.Enforce)
	}
	// What fails for the file alone (no P_Key left to generate) fails
	// now, not at the first sweep.
	if _, err := partition.Compute(c.File, partition.Fabric{}, c.Enforce, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return &Manager{cfg: *c, tx: tx, tables: map[Key][]mad.PKey{}, mem: &partition.Memory{},
		portGUIDs: map[uint64][]uint64{}}, nil
}

// Forget drops what the manager knows of node guid's ports.
func (m *Manager) Forget(guid uint64) {
	for k := range m.tables {
		if k.Node == guid {
			delete(m.tables, k)
		}
	}
	for _, g := range m.portGUIDs[guid] {
		m.mem.Forget(g)
	}
	delete(m.portGUIDs, guid)
}

// ForgetAll drops what the manager knows of every node.
func (m *Manager) ForgetAll() {
	guids := map[uint64]bool{}
	for k := range m.tables {
		guids[k.Node] = true
	}
	for g := range m.portGUIDs {
		guids[g] = true
	}
	for g := range guids {
		m.Forget(g)
	}
}

// Tables returns what the ports hold, by port: the tables themselves,
// to read only.
func (m *Manager) Tables() map[Key][]mad.PKey { return maps.Clone(m.tables) }

// Sweep brings every end port's P_Key table, and the tables and
// enforcement of the switch ports cabled to them, to what the file says,
// in its steps: read the tables not known, compute the plan from them,
// write what differs, and report each port written. What fails is a
// warning: the subnet is up without it, and the next sweep tries again.
// The Result is never nil.
func (m *Manager) Sweep(ctx context.Context, v *View, warn func(string, ...any)) (*Result, error) {
	r := &Result{}
	for _, e := range v.Ends {
		m.portGUIDs[e.Self.Key.Node] = appendNew(m.portGUIDs[e.Self.Key.Node], e.Self.GUID)
	}
	// With enforcement off the switch ports' tables are left alone: not
	// even read.
	peers := m.cfg.Enforce != partition.EnforceOff
	for _, e := range v.Ends {
		m.read(&e.Self, r, warn)
		if peers && e.Peer != nil && e.Peer.Cap > 0 {
			m.read(e.Peer, r, warn)
		}
	}
	if err := m.tx.Run(ctx); err != nil {
		return r, err
	}
	plan, err := partition.Compute(m.cfg.File, m.fabric(v, peers), m.cfg.Enforce, m.mem)
	if err != nil {
		warn("%v", err)
		return r, nil
	}
	m.mem = plan.Memory
	r.Partitions = len(plan.Partitions)
	for _, w := range plan.Warnings {
		warn("%s", w)
	}
	ev := &events{byKey: map[Key]*Event{}}
	m.apply(v, plan, r, warn, ev)
	if err := m.tx.Run(ctx); err != nil {
		return r, err
	}
	m.report(ev)
	return r, nil
}

func appendNew(s []uint64, g uint64) []uint64 {
	if slices.Contains(s, g) {
		return s
	}
	return append(s, g)
}

// fabric is the subnet's end ports as partition.Compute takes them, with
// the tables read. A switch port whose table enforcement needs but was
// not read is left out: alone until the next sweep reads it.
func (m *Manager) fabric(v *View, peers bool) partition.Fabric {
	f := partition.Fabric{SM: v.SM}
	for _, e := range v.Ends {
		p := partition.Port{GUID: e.Self.GUID, Type: e.NodeType, Cap: e.Self.Cap, Table: m.tables[e.Self.Key]}
		if e.Peer != nil {
			p.Peer = &partition.SwitchPort{Cap: e.Peer.Cap, Table: m.tables[e.Peer.Key]}
			if peers && p.Peer.Table == nil && p.Peer.Cap > 0 {
				p.Peer = nil
			}
		}
		f.Ports = append(f.Ports, p)
	}
	return f
}

// events gathers the Events of one pass, one per port written, and the
// order the ports were written in.
type events struct {
	byKey map[Key]*Event
	order []Key
}

// event returns p's event, made the first time.
func (ev *events) event(p *Port) *Event {
	if e := ev.byKey[p.Key]; e != nil {
		return e
	}
	e := &Event{Event: "partition", Port: p.Name, GUID: fmt.Sprintf("0x%016x", p.GUID), Type: p.Type}
	ev.byKey[p.Key] = e
	return e
}

// apply queues what plan changes: each end port's table, and its switch
// port's table and enforcement when the plan manages that port; the
// switch ports cabled to switches enforce nothing.
func (m *Manager) apply(v *View, plan *partition.Plan, r *Result, warn func(string, ...any), ev *events) {
	for i, e := range v.Ends {
		pp := plan.Ports[i]
		if pp.Table == nil {
			continue
		}
		r.Ports++
		ev.order = append(ev.order, e.Self.Key)
		m.write(&e.Self, pp.Table, r, warn, ev.event)
		if !pp.PeerManaged {
			continue
		}
		r.SwitchPorts++
		ev.order = append(ev.order, e.Peer.Key)
		if pp.Peer != nil {
			m.write(e.Peer, pp.Peer, r, warn, ev.event)
		}
		m.enforce(v.PortInfos, e.Peer, pp.PeerEnforce, r, warn, ev.event)
	}
	for _, p := range v.SwitchLinks {
		ev.order = append(ev.order, p.Key)
		m.enforce(v.PortInfos, &p, partition.EnforceOff, r, warn, ev.event)
	}
}

// report hands each port's event to Config.OnEvent, in the order the
// ports were written, with the table as it now is when blocks of it were
// set.
func (m *Manager) report(ev *events) {
	for _, k := range ev.order {
		if e := ev.byKey[k]; e != nil && m.cfg.OnEvent != nil {
			if len(e.Blocks) > 0 {
				e.Table = pkeyStrings(m.tables[k])
			}
			m.cfg.OnEvent(*e)
			delete(ev.byKey, k)
		}
	}
}

// read reads all the blocks of p's table unless the manager knows them;
// the table is known once every block came in.
func (m *Manager) read(p *Port, r *Result, warn func(string, ...any)) {
	if _, ok := m.tables[p.Key]; ok {
		return
	}
	n := (p.Cap + mad.PKeysPerBlock - 1) / mad.PKeysPerBlock
	if n == 0 {
		warn("%s: no P_Key table (capacity 0)", p.Name)
		return
	}
	table := make([]mad.PKey, n*mad.PKeysPerBlock)
	pending, failed := n, false
	for b := range n {
		r.BlocksRead++
		m.tx.Get(txn.Request{DR: true, Path: p.Path, Attr: mad.AttrPKeyTable, Mod: p.Mod | uint32(b)}, func(resp *txn.Response) {
			pending--
			if resp.Err != nil {
				if !failed {
					r.Failures++
					warn("reading block %d of %s's P_Key table: %v", b, p.Name, resp.Err)
				}
				failed = true
				return
			}
			blk := mad.PKeyTable(resp.Data)
			for i := range mad.PKeysPerBlock {
				table[b*mad.PKeysPerBlock+i] = blk.PKey(i)
			}
			if pending == 0 && !failed {
				m.tables[p.Key] = table
			}
		})
	}
}

// write sets the blocks of p's table that differ from what p holds.
func (m *Manager) write(p *Port, want []mad.PKey, r *Result, warn func(string, ...any), event func(*Port) *Event) {
	cur := m.tables[p.Key]
	for b := 0; b*mad.PKeysPerBlock < len(want) && b*mad.PKeysPerBlock < len(cur); b++ {
		lo, hi := b*mad.PKeysPerBlock, (b+1)*mad.PKeysPerBlock
		if slices.Equal(cur[lo:hi], want[lo:hi]) {
			continue
		}
		var f mad.PKeyTableFields
		copy(f.PKeys[:], want[lo:hi])
		m.tx.Set(txn.Request{DR: true, Path: p.Path, Attr: mad.AttrPKeyTable, Mod: p.Mod | uint32(b), Data: mad.AppendPKeyTable(nil, &f)},
			func(resp *txn.Response) {
				if resp.Err != nil {
					r.Failures++
					warn("setting block %d of %s's P_Key table: %v", b, p.Name, resp.Err)
					delete(m.tables, p.Key) // what it holds is not known: read it again
					return
				}
				r.BlocksSet++
				t := m.tables[p.Key]
				if t == nil {
					return
				}
				blk := mad.PKeyTable(resp.Data)
				for i := range mad.PKeysPerBlock {
					t[lo+i] = blk.PKey(i)
				}
				e := event(p)
				e.Blocks = append(e.Blocks, b)
			})
	}
}

// enforce sets switch port p's PartitionEnforcementInbound and Outbound
// to e's, unless it has them.
func (m *Manager) enforce(pis PortInfos, p *Port, e partition.Enforce, r *Result, warn func(string, ...any),
	event func(*Port) *Event) {
	port := p.Key.Port
	cur, ok := pis.PortInfo(p.Node, port)
	if !ok || (cur.PartitionEnforcementInbound == e.Inbound() && cur.PartitionEnforcementOutbound == e.Outbound()) {
		return
	}
	pi := pis.ForSet(p.Node, port)
	pi.PartitionEnforcementInbound, pi.PartitionEnforcementOutbound = e.Inbound(), e.Outbound()
	m.tx.Set(txn.Request{DR: true, Path: p.Path, Attr: mad.AttrPortInfo, Mod: uint32(port), Data: mad.AppendPortInfo(nil, &pi)},
		func(resp *txn.Response) {
			if resp.Err != nil {
				r.Failures++
				warn("setting %s's partition enforcement to %v: %v", p.Name, e, resp.Err)
				return
			}
			r.Enforcement++
			got := mad.PortInfo(resp.Data).Fields()
			pis.Took(p.Node, port, got)
			if got.PartitionEnforcementInbound != e.Inbound() || got.PartitionEnforcementOutbound != e.Outbound() {
				r.Failures++
				warn("%s did not take partition enforcement %v", p.Name, e)
				return
			}
			event(p).Enforce = &e
		})
}

// pkeyStrings writes a table's entries up to its last key.
func pkeyStrings(t []mad.PKey) []string {
	n := len(t)
	for n > 0 && t[n-1].Base() == 0 {
		n--
	}
	out := make([]string, n)
	for i, k := range t[:n] {
		out[i] = fmt.Sprintf("0x%04x", uint16(k))
	}
	return out
}
