package sm

import (
	"context"
	"fmt"
	"slices"

	"ibfab/sm/partition"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// The partition manager, as OpenSM's P_Key manager: every end port (CA
// and router ports, switch port 0) gets the P_Keys of the partitions a
// partitions.conf (package partition) gives it, placed where OpenSM would
// place them, and with enforcement on, the switch port cabled to a CA or
// router port gets that port's keys and PartitionEnforcementInbound/
// Outbound; switch ports cabled to switches have their enforcement
// cleared. A port's table is read, all its blocks, the first time the
// manager meets the port; after that the manager keeps a shadow of what
// the port holds (what it read, and what its Sets' answers said) and
// sends only the blocks that differ, which on an unchanged subnet is
// nothing. A device that leaves, or is reset, is forgotten (forget), and
// read again when it comes back.
//
// A sweep runs the phase after distribution, before activation, so that
// ports come up partitioned, as under OpenSM; an assimilation runs it
// after the change is installed, with the other managers, so that the
// ports a change brings in get their tables in the same assimilation
// without delaying connectivity.

// PhasePartition is the phase that reads and writes P_Key tables and
// partition enforcement.
const PhasePartition = "partition"

// PartitionConfig turns the partition manager on.
type PartitionConfig struct {
	// File is the partitions.conf, parsed; nil, or one that defines
	// nothing, is OpenSM without a file: every end port a full member
	// of the Default partition.
	File *partition.Config
	// Enforce is the switch ports' enforcement (OpenSM's part_enforce);
	// the zero value is OpenSM's default, both.
	Enforce partition.Enforce
	// OnEvent hears of every port whose table or enforcement the
	// manager changed, on the SM's goroutine.
	OnEvent func(PartitionEvent)
}

// PartitionResult is what the manager did in a sweep or assimilation.
type PartitionResult struct {
	Partitions  int `json:"partitions"`   // in effect
	Ports       int `json:"ports"`        // end ports managed
	SwitchPorts int `json:"switch_ports"` // switch ports cabled to them that enforce
	BlocksRead  int `json:"blocks_read"`  // P_KeyTable blocks read (ports met for the first time)
	BlocksSet   int `json:"blocks_set"`   // P_KeyTable blocks that differed and were set
	Enforcement int `json:"enforcement"`  // PortInfo Sets of enforcement bits
	Failures    int `json:"failures"`     // requests that failed (warnings say which)
}

// PartitionEvent is a port whose P_Key table or enforcement the manager
// changed.
type PartitionEvent struct {
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

// partKey names a port's table: its node's GUID and the port number.
type partKey struct {
	node uint64
	port int
}

// partManager is the manager's state.
type partManager struct {
	cfg PartitionConfig
	// tables are what the ports hold, as read or set: whole blocks.
	tables map[partKey][]mad.PKey
	mem    *partition.Memory
	// portGUIDs are the end port GUIDs met on each node, for forget.
	portGUIDs map[uint64][]uint64
}

func newPartManager(c *PartitionConfig) (*partManager, error) {
	if !c.Enforce.Valid() {
		return nil, fmt.Errorf("%w: partition enforcement %d", ErrConfig, c.Enforce)
	}
	// What fails for the file alone (no P_Key left to generate) fails
	// now, not at the first sweep.
	if _, err := partition.Compute(c.File, partition.Fabric{}, c.Enforce, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return &partManager{cfg: *c, tables: map[partKey][]mad.PKey{}, mem: &partition.Memory{},
		portGUIDs: map[uint64][]uint64{}}, nil
}

// partForget drops what the manager knows of node guid's ports.
func (s *SM) partForget(guid uint64) {
	if s.part == nil {
		return
	}
	for k := range s.part.tables {
		if k.node == guid {
			delete(s.part.tables, k)
		}
	}
	for _, g := range s.part.portGUIDs[guid] {
		s.part.mem.Forget(g)
	}
	delete(s.part.portGUIDs, guid)
}

// partPort addresses one P_Key table: an end port's or a switch port's.
type partPort struct {
	key  partKey
	node int
	port int
	cap  int
	path []uint8
	mod  uint32 // the block number's high bits: port<<16 on a switch's external port
	typ  string // PartitionEvent.Type
	guid uint64 // the end port's GUID (the switch's for a switch port)
}

// partEnd is an end port and the switch port it is cabled to, if that
// one enforces.
type partEnd struct {
	self partPort
	peer *partPort
}

// partTargets returns the subnet's end ports as the manager addresses
// them.
func (s *SM) partTargets(sn *Subnet) []partEnd {
	var out []partEnd
	t := sn.Topo
	for _, e := range sn.EndPorts() {
		n := t.Node(e.Node)
		var capacity uint16
		if e.Node < len(sn.PartitionCap) {
			capacity = sn.PartitionCap[e.Node]
		}
		end := partEnd{self: partPort{key: partKey{n.GUID, e.Port}, node: e.Node, port: e.Port, cap: int(capacity),
			path: sn.path(e.Node, e.Port), guid: n.GUID, typ: map[topologies.NodeType]string{
				topologies.CA: "ca", topologies.Router: "router", topologies.Switch: "switch"}[n.Type]}}
		if n.Type != topologies.Switch {
			end.self.guid = n.Ports[e.Port].GUID
		}
		s.part.portGUIDs[n.GUID] = appendNew(s.part.portGUIDs[n.GUID], end.self.guid)
		if n.Type != topologies.Switch && e.Switch >= 0 {
			sw := t.Node(e.Switch)
			end.peer = &partPort{key: partKey{sw.GUID, e.SwitchPort}, node: e.Switch, port: e.SwitchPort,
				cap: int(sn.Switch[e.Switch].PartitionEnforcementCap), path: sn.Paths[e.Switch],
				mod: uint32(e.SwitchPort) << 16, typ: "switch-port", guid: sw.GUID}
		}
		out = append(out, end)
	}
	return out
}

func appendNew(s []uint64, g uint64) []uint64 {
	if slices.Contains(s, g) {
		return s
	}
	return append(s, g)
}

// partitionPhase brings every end port's P_Key table, and the tables and
// enforcement of the switch ports cabled to them, to what the file says.
// What fails is a warning: the subnet is up without it, and the next
// sweep tries again.
func (s *SM) partitionPhase(ctx context.Context, res *Result) error {
	if s.part == nil || s.subnet == nil {
		return nil
	}
	return s.phase(res, PhasePartition, func() error { return s.partitionPass(ctx, res) })
}

// partitionPass is the partition phase's work, in its steps: read the
// tables not known, compute the plan from them, write what differs, and
// report each port written.
func (s *SM) partitionPass(ctx context.Context, res *Result) error {
	r := &PartitionResult{}
	res.Partitions = r
	warn := func(format string, args ...any) {
		res.Warnings = append(res.Warnings, "partitions: "+fmt.Sprintf(format, args...))
	}
	sn := s.subnet
	ends := s.partTargets(sn)
	// With enforcement off the switch ports' tables are left alone: not
	// even read.
	peers := s.part.cfg.Enforce != partition.EnforceOff
	for _, e := range ends {
		s.partRead(&e.self, r, warn)
		if peers && e.peer != nil && e.peer.cap > 0 {
			s.partRead(e.peer, r, warn)
		}
	}
	if err := s.tx.Run(ctx); err != nil {
		return err
	}
	plan, err := partition.Compute(s.part.cfg.File, s.partFabric(sn, ends, peers), s.part.cfg.Enforce, s.part.mem)
	if err != nil {
		warn("%v", err)
		return nil
	}
	s.part.mem = plan.Memory
	r.Partitions = len(plan.Partitions)
	for _, w := range plan.Warnings {
		warn("%s", w)
	}
	ev := &partEvents{topo: sn.Topo, byKey: map[partKey]*PartitionEvent{}}
	s.partApply(sn, ends, plan, r, warn, ev)
	if err := s.tx.Run(ctx); err != nil {
		return err
	}
	s.partReport(ev)
	return nil
}

// partFabric is the subnet's end ports as partition.Compute takes them,
// with the tables read. A switch port whose table enforcement needs but
// was not read is left out: alone until the next sweep reads it.
func (s *SM) partFabric(sn *Subnet, ends []partEnd, peers bool) partition.Fabric {
	f := partition.Fabric{SM: s.guid}
	for _, e := range ends {
		p := partition.Port{GUID: e.self.guid, Type: sn.Topo.Node(e.self.node).Type, Cap: e.self.cap,
			Table: s.part.tables[e.self.key]}
		if e.peer != nil {
			p.Peer = &partition.SwitchPort{Cap: e.peer.cap, Table: s.part.tables[e.peer.key]}
			if peers && p.Peer.Table == nil && p.Peer.Cap > 0 {
				p.Peer = nil
			}
		}
		f.Ports = append(f.Ports, p)
	}
	return f
}

// partEvents gathers the PartitionEvents of one pass, one per port
// written, and the order the ports were written in.
type partEvents struct {
	topo  *topologies.Topology
	byKey map[partKey]*PartitionEvent
	order []partKey
}

// event returns p's event, made the first time.
func (ev *partEvents) event(p *partPort) *PartitionEvent {
	if e := ev.byKey[p.key]; e != nil {
		return e
	}
	e := &PartitionEvent{Event: "partition", Port: portName(ev.topo, portRef(p.node, p.port)),
		GUID: fmt.Sprintf("0x%016x", p.guid), Type: p.typ}
	ev.byKey[p.key] = e
	return e
}

// partApply queues what plan changes: each end port's table, and its
// switch port's table and enforcement when the plan manages that port;
// the switch ports cabled to switches enforce nothing.
func (s *SM) partApply(sn *Subnet, ends []partEnd, plan *partition.Plan, r *PartitionResult,
	warn func(string, ...any), ev *partEvents) {
	for i, e := range ends {
		pp := plan.Ports[i]
		if pp.Table == nil {
			continue
		}
		r.Ports++
		ev.order = append(ev.order, e.self.key)
		s.partWrite(&e.self, pp.Table, r, warn, ev.event)
		if !pp.PeerManaged {
			continue
		}
		r.SwitchPorts++
		ev.order = append(ev.order, e.peer.key)
		if pp.Peer != nil {
			s.partWrite(e.peer, pp.Peer, r, warn, ev.event)
		}
		s.partEnforce(e.peer, pp.PeerEnforce, r, warn, ev.event)
	}
	for _, p := range s.partSwitchLinks(sn) {
		ev.order = append(ev.order, p.key)
		s.partEnforce(&p, partition.EnforceOff, r, warn, ev.event)
	}
}

// partReport hands each port's event to Config.Partitions.OnEvent, in the
// order the ports were written, with the table as it now is when blocks
// of it were set.
func (s *SM) partReport(ev *partEvents) {
	for _, k := range ev.order {
		if e := ev.byKey[k]; e != nil && s.part.cfg.OnEvent != nil {
			if len(e.Blocks) > 0 {
				e.Table = pkeyStrings(s.part.tables[k])
			}
			s.part.cfg.OnEvent(*e)
			delete(ev.byKey, k)
		}
	}
}

// partRead reads all the blocks of p's table unless the manager knows
// them; the table is known once every block came in.
func (s *SM) partRead(p *partPort, r *PartitionResult, warn func(string, ...any)) {
	if _, ok := s.part.tables[p.key]; ok {
		return
	}
	n := (p.cap + mad.PKeysPerBlock - 1) / mad.PKeysPerBlock
	if n == 0 {
		warn("%s: no P_Key table (capacity 0)", portName(s.subnet.Topo, portRef(p.node, p.port)))
		return
	}
	table := make([]mad.PKey, n*mad.PKeysPerBlock)
	pending, failed := n, false
	for b := range n {
		r.BlocksRead++
		s.tx.Get(txn.Request{DR: true, Path: p.path, Attr: mad.AttrPKeyTable, Mod: p.mod | uint32(b)}, func(resp *txn.Response) {
			pending--
			if resp.Err != nil {
				if !failed {
					r.Failures++
					warn("reading block %d of %s's P_Key table: %v", b, portName(s.subnet.Topo, portRef(p.node, p.port)), resp.Err)
				}
				failed = true
				return
			}
			blk := mad.PKeyTable(resp.Data)
			for i := range mad.PKeysPerBlock {
				table[b*mad.PKeysPerBlock+i] = blk.PKey(i)
			}
			if pending == 0 && !failed {
				s.part.tables[p.key] = table
			}
		})
	}
}

// partWrite sets the blocks of p's table that differ from what p holds.
func (s *SM) partWrite(p *partPort, want []mad.PKey, r *PartitionResult, warn func(string, ...any),
	event func(*partPort) *PartitionEvent) {
	cur := s.part.tables[p.key]
	for b := 0; b*mad.PKeysPerBlock < len(want) && b*mad.PKeysPerBlock < len(cur); b++ {
		lo, hi := b*mad.PKeysPerBlock, (b+1)*mad.PKeysPerBlock
		if slices.Equal(cur[lo:hi], want[lo:hi]) {
			continue
		}
		var f mad.PKeyTableFields
		copy(f.PKeys[:], want[lo:hi])
		s.tx.Set(txn.Request{DR: true, Path: p.path, Attr: mad.AttrPKeyTable, Mod: p.mod | uint32(b), Data: mad.AppendPKeyTable(nil, &f)},
			func(resp *txn.Response) {
				if resp.Err != nil {
					r.Failures++
					warn("setting block %d of %s's P_Key table: %v", b, portName(s.subnet.Topo, portRef(p.node, p.port)), resp.Err)
					delete(s.part.tables, p.key) // what it holds is not known: read it again
					return
				}
				r.BlocksSet++
				t := s.part.tables[p.key]
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

// partEnforce sets switch port p's PartitionEnforcementInbound and
// Outbound to e's, unless it has them.
func (s *SM) partEnforce(p *partPort, e partition.Enforce, r *PartitionResult, warn func(string, ...any),
	event func(*partPort) *PartitionEvent) {
	sn := s.subnet
	cur := sn.PortInfo[p.node][p.port]
	if !sn.Have[p.node][p.port] || (cur.PartitionEnforcementInbound == e.Inbound() && cur.PartitionEnforcementOutbound == e.Outbound()) {
		return
	}
	pi := forSet(cur)
	s.keyFields(sn, p.node, p.port, &pi) // a protected port may have read it back as 0
	pi.PartitionEnforcementInbound, pi.PartitionEnforcementOutbound = e.Inbound(), e.Outbound()
	s.tx.Set(txn.Request{DR: true, Path: p.path, Attr: mad.AttrPortInfo, Mod: uint32(p.port), Data: mad.AppendPortInfo(nil, &pi)},
		func(resp *txn.Response) {
			name := portName(sn.Topo, portRef(p.node, p.port))
			if resp.Err != nil {
				r.Failures++
				warn("setting %s's partition enforcement to %v: %v", name, e, resp.Err)
				return
			}
			r.Enforcement++
			got := mad.PortInfo(resp.Data).Fields()
			sn.PortInfo[p.node][p.port] = got
			if got.PartitionEnforcementInbound != e.Inbound() || got.PartitionEnforcementOutbound != e.Outbound() {
				r.Failures++
				warn("%s did not take partition enforcement %v", name, e)
				return
			}
			event(p).Enforce = &e
		})
}

// partSwitchLinks returns the switch ports cabled to switches.
func (s *SM) partSwitchLinks(sn *Subnet) []partPort {
	var out []partPort
	t := sn.Topo
	for _, l := range t.Links() {
		if !sn.IsSwitch(l.A.Node) || !sn.IsSwitch(l.B.Node) {
			continue
		}
		for _, end := range []topologies.PortRef{l.A, l.B} {
			n := t.Node(end.Node)
			out = append(out, partPort{key: partKey{n.GUID, end.Port}, node: end.Node, port: end.Port,
				path: sn.Paths[end.Node], typ: "switch-port", guid: n.GUID})
		}
	}
	return out
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
