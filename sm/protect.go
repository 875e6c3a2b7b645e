package sm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"ibfab/sm/routing"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Distribution of a change's tables, thesis chapter 7. The old tables and
// the new ones are each deadlock-free, but while some switches hold new
// tables and others old ones, the mix can close a cycle of channel
// dependencies (the cut node of a cycle moving from one switch to
// another leaves "zombie" dependencies behind). The strategies:
//
//   - full deactivation: every active switch link is set Down (one end:
//     the link retrains, and both ends come back in Init, passing nothing
//     but SMPs; deactivate.go); the tables go; then activation brings
//     every port back (Armed, then Active);
//   - ports at cut nodes: at every cut node of the new up*/down* graph (a
//     switch with two or more up-going ports) every up-going port but one
//     (the lowest-numbered active one) is set Down the same way: no route
//     can then turn from down to up anywhere; tables; activation;
//   - dependencies at cut nodes: one SLtoVL Set per forbidden (input,
//     output) pair of every new cut node (both up-going, in either
//     order) maps every SL to VL15, on which data is dropped; no port
//     stops. Every turn still possible, old or new, is then legal in the
//     new graph, whose dependency graph is acyclic. The blocks stay (the
//     new routes never take those turns); the SM tracks them, sets only
//     those not set yet, and undoes, with the tables, those a new graph
//     makes legal (on ports that still have a link), and forgets those
//     of switches that left;
//   - none: tables only, asynchronously.
//
// Before the protection, what no strategy needs to protect goes: the
// descriptions of new nodes, port 0 fixes, SLtoVL and VL arbitration of
// new ports. Tables are only what changed: the LFT blocks that differ
// from the shadow of what each switch holds.

// turnKey names one (input, output) port pair of a switch.
type turnKey struct {
	guid    uint64
	in, out int
}

// distributeChange distributes rt over sn under the configured strategy.
// stage prefixes the TableState stages it reports.
func (s *SM) distributeChange(ctx context.Context, sn *Subnet, rt *routing.Routes, plan []portPlan, res *Result, stage string) error {
	problem := func(format string, args ...any) { res.Problems = append(res.Problems, fmt.Sprintf(format, args...)) }
	strategy := s.cfg.Distribution
	if (strategy == DistCutPorts || strategy == DistCutDeps) && rt.Up == nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s needs up*/down* routes: %s routes go with %s",
			strategy, rt.Engine, DistFullDeactivation))
		strategy = DistFullDeactivation
		res.Distribution = strategy
	}

	// What needs no protection.
	s.readDescriptions(sn, true, res)
	vlsOf := vlsByPort(plan)
	for _, sw := range sn.Switches() {
		s.fixPort0(sn, sw, problem)
		s.switchSL2VL(sn, sw, vlsOf, problem)
	}
	for _, p := range plan {
		s.caSL2VL(sn, p, problem)
		s.vlArb(sn, p, problem)
	}
	if err := s.tx.Run(ctx); err != nil || len(res.Problems) > 0 {
		return err
	}

	// Protection.
	s.ownChanges = nil
	switch strategy {
	case DistFullDeactivation:
		if err := s.deactivatePorts(ctx, sn, activeSwitchPorts(sn), res); err != nil {
			return err
		}
	case DistCutPorts:
		if err := s.deactivatePorts(ctx, sn, cutPorts(sn, rt), res); err != nil {
			return err
		}
	case DistCutDeps:
		s.blockCutDeps(sn, rt, res, problem)
	}
	if err := s.tx.Run(ctx); err != nil || len(res.Problems) > 0 {
		return err
	}
	s.emitTables(stage+"protected", sn, rt)

	// Tables, and with them the undoing of the blocks the new graph makes
	// legal: with every turn it forbids blocked, a turn it allows may open
	// at any time, so the undos need no round trip of their own (before
	// the protection is in, they could close a cycle with old routes).
	onLFT := func() { s.emitTables(stage+"tables", sn, rt) }
	if s.cfg.OnTables == nil {
		onLFT = nil
	}
	if strategy == DistCutDeps {
		s.reconcileBlocks(sn, rt, vlsOf, res, problem)
	}
	for _, sw := range sn.Switches() {
		s.switchTables(sn, rt, sw, res, problem, onLFT)
	}
	return s.tx.Run(ctx)
}

// portActive reports whether a port's last known state passes data.
func portActive(pi *mad.PortInfoFields) bool {
	return pi.PortState == mad.PortStateArmed || pi.PortState == mad.PortStateActive
}

// activeSwitchPorts returns every cabled switch port that passes data.
func activeSwitchPorts(sn *Subnet) [][2]int {
	var out [][2]int
	for _, sw := range sn.Switches() {
		for _, a := range sn.Arcs(sw) {
			if sn.Have[sw][a.Port] && portActive(&sn.PortInfo[sw][a.Port]) {
				out = append(out, [2]int{sw, a.Port})
			}
		}
	}
	return out
}

// cutNodes returns the up-going ports of every cut node of the up*/down*
// graph up ([node][port]: up-going) on f: the switches with two or more,
// by switch.
func cutNodes(f *routing.Fabric, up [][]bool) map[int][]int {
	m := map[int][]int{}
	for _, sw := range f.Switches() {
		var ups []int
		for _, a := range f.Arcs(sw) {
			if up[sw][a.Port] {
				ups = append(ups, a.Port)
			}
		}
		if len(ups) >= 2 {
			m[sw] = ups
		}
	}
	return m
}

// CutNodes returns, for the up*/down* route set rt on f, every cut node's
// forbidden turns: (switch, input port, output port), both ports
// up-going. The distribution strategies protect exactly these.
func CutNodes(f *routing.Fabric, rt *routing.Routes) [][3]int {
	if rt.Up == nil {
		return nil
	}
	return cutTurns(f, rt.Up)
}

// cutTurns returns the forbidden turns of the cut nodes of graph up on f,
// as CutNodes.
func cutTurns(f *routing.Fabric, up [][]bool) [][3]int {
	var out [][3]int
	m := cutNodes(f, up)
	for _, sw := range f.Switches() {
		for _, in := range m[sw] {
			for _, o := range m[sw] {
				if in != o {
					out = append(out, [3]int{sw, in, o})
				}
			}
		}
	}
	return out
}

// cutPorts returns, at every cut node, the active up-going ports but the
// lowest-numbered active one.
func cutPorts(sn *Subnet, rt *routing.Routes) [][2]int {
	var out [][2]int
	m := cutNodes(&sn.Fabric, rt.Up)
	for _, sw := range sn.Switches() {
		kept := false
		for _, p := range m[sw] {
			if !sn.Have[sw][p] || !portActive(&sn.PortInfo[sw][p]) {
				continue
			}
			if !kept {
				kept = true
				continue
			}
			out = append(out, [2]int{sw, p})
		}
	}
	return out
}

// forbidden returns the turns rt's graph forbids at its cut nodes.
func forbidden(sn *Subnet, rt *routing.Routes) map[turnKey]bool {
	return forbiddenBy(&sn.Fabric, rt.Up)
}

// forbiddenBy returns the turns graph up (nil: none) forbids at its cut
// nodes on f.
func forbiddenBy(f *routing.Fabric, up [][]bool) map[turnKey]bool {
	m := map[turnKey]bool{}
	if up == nil {
		return m
	}
	for _, t := range cutTurns(f, up) {
		m[turnKey{f.Topo.Node(t[0]).GUID, t[1], t[2]}] = true
	}
	return m
}

// blockCutDeps maps every SL to VL15 on each forbidden turn of rt's cut
// nodes not blocked yet.
func (s *SM) blockCutDeps(sn *Subnet, rt *routing.Routes, res *Result, problem func(string, ...any)) {
	want := forbidden(sn, rt)
	keys := make([]turnKey, 0, len(want))
	for k := range want {
		if !s.blocked[k] {
			keys = append(keys, k)
		}
	}
	sortTurns(keys)
	for _, k := range keys {
		sw, _ := sn.Topo.LookupGUID(k.guid)
		res.SL2VLSets++
		s.blockTurn(txn.Request{DR: true, Path: sn.Paths[sw]}, k, nil, func(err error) {
			if err != nil {
				problem("SLtoVL %d→%d of %s: %v", k.in, k.out, sn.Topo.Node(sw).Name, err)
			}
		})
	}
}

// blockTurn maps every SL to VL15 on turn k, sent the way to says (its
// route fields: directed, or with a LID-routed prefix); done hears how
// it went. With VLTables keep the
// table is read first, to be written back when the block is undone: it
// is the device's own. tag tags the SMPs (for a cancel).
func (s *SM) blockTurn(to txn.Request, k turnKey, tag any, done func(error)) {
	m := mad.SLtoVLModifier{InPort: uint8(k.in), OutPort: uint8(k.out)}
	to.Attr, to.Mod, to.Tag = mad.AttrSLtoVLMapping, m.Modifier(), tag
	set := func() {
		r := to
		r.Data = blockTable(s.layers)
		s.tx.Set(r,
			func(r *txn.Response) {
				if r.Err == nil {
					s.blocked[k] = true
				}
				done(r.Err)
			})
	}
	if s.cfg.VLTables != VLTablesKeep {
		set()
		return
	}
	s.tx.Get(to, func(r *txn.Response) {
		if r.Err != nil {
			done(r.Err)
			return
		}
		s.kept[k] = r.Data[:mad.SLtoVLMappingTableSize]
		set()
	})
}

// blockTable is the SLtoVL table of a blocked turn: the SLs of VL layer 0
// go to VL15, where data is dropped, and with LMC multipath in layers
// (layers > 1) every other SL keeps its layer's VL, s mod layers. The
// turns blocked at cut nodes are those the engine's up*/down* graph
// forbids, which only layer 0's routes (switch and base LIDs) keep; an
// alias layer routes by a graph of its own, acyclic on its own VL, and
// may take such a turn: blocking its SLs too dropped that alias's
// traffic for as long as the block stood.
func blockTable(layers int) []byte {
	var t mad.SLtoVLMappingTableFields
	for sl := range t.VL {
		t.VL[sl] = 15
		if layers > 1 && sl%layers != 0 {
			t.VL[sl] = uint8(sl % layers)
		}
	}
	return mad.AppendSLtoVLMappingTable(nil, &t)
}

// readBlocks reads back, from every switch of sn, the SLtoVL table of
// each turn between two linked ports, and takes a table that sends a
// data SL to VL15 (where data is dropped: a cut-node block) for a block
// of its own, so that reconcileBlocks undoes it unless rt's graph
// forbids that turn too. An SM that starts, or leaves standby, does not
// know the blocks a dead ibsm left (a live one lifts its own before it
// hands over); the next SM, OpenSM without QoS above all, would never
// write those tables and keep losing what takes the turns. A table that
// cannot be read is a warning: its turn is left as it is.
func (s *SM) readBlocks(sn *Subnet, res *Result) {
	for _, sw := range sn.Switches() {
		var linked []int
		for p := 1; p <= sn.Topo.Node(sw).NumPorts; p++ {
			if linkedPort(sn, sw, p) {
				linked = append(linked, p)
			}
		}
		for _, in := range linked {
			for _, out := range linked {
				if in != out {
					s.readTurn(sn, sw, turnKey{guid: sn.Topo.Node(sw).GUID, in: in, out: out}, res)
				}
			}
		}
	}
}

func (s *SM) readTurn(sn *Subnet, sw int, k turnKey, res *Result) {
	m := mad.SLtoVLModifier{InPort: uint8(k.in), OutPort: uint8(k.out)}
	res.SL2VLReads++
	s.tx.Get(txn.Request{DR: true, Path: sn.Paths[sw], Attr: mad.AttrSLtoVLMapping, Mod: m.Modifier()}, func(r *txn.Response) {
		if r.Err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("reading SLtoVL %d→%d of %s: %v", k.in, k.out, sn.Topo.Node(sw).Name, r.Err))
			return
		}
		t, err := mad.DecodeSLtoVLMappingTable(r.Data)
		if err == nil && slices.Contains(t.VL[:], 15) {
			s.blocked[k] = true
		}
	})
}

func linkedPort(sn *Subnet, sw, p int) bool {
	_, ok := sn.Topo.Peer(topologies.PortRef{Node: sw, Port: p})
	return ok
}

// reconcileBlocks undoes the cut-node blocks rt's graph does not forbid,
// and forgets those of switches that are gone. A block on a port with no
// link stays: no data takes that turn, and undoing it would only hold up
// the tables (a cut link's far end, which lost its up-going port, held
// two of the six SLtoVL Sets of its cut); it is undone once a link is
// there again, if that graph does not forbid it.
func (s *SM) reconcileBlocks(sn *Subnet, rt *routing.Routes, vlsOf map[[2]int]uint8, res *Result, problem func(string, ...any)) {
	s.keepBlocks(sn, forbidden(sn, rt), vlsOf, res, problem)
}

// liftBlocks undoes every cut-node block on a linked turn, as
// reconcileBlocks does for a graph that forbids none. Another SM taking
// the subnet over would not undo them: OpenSM without QoS never writes
// SLtoVL, and its routes may take those turns.
func (s *SM) liftBlocks(ctx context.Context, sn *Subnet, res *Result) error {
	s.keepBlocks(sn, nil, nil, res, func(format string, args ...any) {
		res.Warnings = append(res.Warnings, "lifting a cut-node block: "+fmt.Sprintf(format, args...))
	})
	return s.tx.Run(ctx)
}

// liftIdleBlocks is protectionPhase's lifting for an SM that assimilates:
// a sweep for changes (trigger TriggerSweep) that found none, a sweep
// interval or more after the last change, undoes the cut-node blocks
// the changes left while another SM is about. Without it only a full
// Sweep lifts them, and an SM that assimilates does not sweep again: the
// blocks stayed until it died, and the SM that took over routed into
// them (a soak saw OpenSM's routes drop data at the thesis network's
// sw10 twenty seconds after the change that blocked it). What fails to
// be undone stays in the blocks, for the next check.
func (s *SM) liftIdleBlocks(ctx context.Context, trigger Trigger) error {
	if trigger != TriggerSweep || len(s.remotes) == 0 || len(s.blocked) == 0 || s.subnet == nil ||
		s.clk.Now().Sub(s.lastChange) < s.cfg.SweepInterval {
		return nil
	}
	return s.liftBlocks(ctx, s.subnet, &Result{})
}

// keepBlocks undoes the blocks not in want (on linked turns) and forgets
// those of switches that are gone.
func (s *SM) keepBlocks(sn *Subnet, want map[turnKey]bool, vlsOf map[[2]int]uint8, res *Result, problem func(string, ...any)) {
	var undo []turnKey
	for k := range s.blocked {
		sw, ok := sn.Topo.LookupGUID(k.guid)
		switch {
		case !ok || !sn.IsSwitch(sw) || k.in > sn.Topo.Node(sw).NumPorts || k.out > sn.Topo.Node(sw).NumPorts:
			delete(s.blocked, k)
			delete(s.kept, k)
		case !want[k] && linkedPort(sn, sw, k.in) && linkedPort(sn, sw, k.out):
			undo = append(undo, k)
		}
	}
	sortTurns(undo)
	for _, k := range undo {
		sw, _ := sn.Topo.LookupGUID(k.guid)
		vls, ok := vlsOf[[2]int{sw, k.out}]
		if !ok {
			vls = max(sn.PortInfo[sw][k.out].OperationalVLs, 1)
		}
		data := sl2vl(vls)
		if old, ok := s.kept[k]; ok {
			data = old
		}
		s.setTurn(sn, sw, k, data, res, problem)
	}
}

// liftRetries is how many times a lifting SLtoVL Set that failed (every
// attempt of the transaction layer timed out, or the answer shows another
// table) is sent again at once. While a block stands the traffic of its
// turn is dropped (once the new tables are in, routes take turns their
// graph allows again): a lift given up waited for the next change or
// sweep, and a soak, with 10-15 % of the SMPs lost each way on the SM's
// link, saw a switch's blocked turns drop some 4,100 packets over tens of
// seconds that way. With the retries a loss costs a few timeouts, and a
// lift fails only when the switch does not answer at all. The table Sets
// of sendIfChanged (LFT blocks above all) go again as many times.
const liftRetries = 3

// setTurn writes the restored SLtoVL table data of turn k of switch sw,
// undoing its block. The answer must show data (the table the switch now
// holds); otherwise, or without one, the Set goes again, up to
// liftRetries times, and then is a problem, the block kept for the next
// attempt.
func (s *SM) setTurn(sn *Subnet, sw int, k turnKey, data []byte, res *Result, problem func(string, ...any)) {
	s.liftTurn(sn, sw, k, data, res, problem, liftRetries)
}

func (s *SM) liftTurn(sn *Subnet, sw int, k turnKey, data []byte, res *Result, problem func(string, ...any), tries int) {
	m := mad.SLtoVLModifier{InPort: uint8(k.in), OutPort: uint8(k.out)}
	res.SL2VLSets++
	s.tx.Set(txn.Request{DR: true, Path: sn.Paths[sw], Attr: mad.AttrSLtoVLMapping, Mod: m.Modifier(), Data: data}, func(r *txn.Response) {
		err := r.Err
		if err == nil && !tableTaken(r.Data, data) {
			err = errors.New("the answer shows another table")
		}
		if err != nil {
			if tries > 0 && !errors.Is(err, ErrStatus) {
				res.SL2VLRetries++
				s.liftTurn(sn, sw, k, data, res, problem, tries-1)
				return
			}
			problem("SLtoVL %d→%d of %s: %v", k.in, k.out, sn.Topo.Node(sw).Name, err)
			return
		}
		delete(s.blocked, k)
		delete(s.kept, k)
	})
}

// tableTaken reports whether got, a Set's answer, shows the SLtoVL table
// sent.
func tableTaken(got, sent []byte) bool {
	n := mad.SLtoVLMappingTableSize
	return len(got) >= n && len(sent) >= n && bytes.Equal(got[:n], sent[:n])
}

func sortTurns(ks []turnKey) {
	slices.SortFunc(ks, func(a, b turnKey) int {
		switch {
		case a.guid != b.guid:
			if a.guid < b.guid {
				return -1
			}
			return 1
		case a.in != b.in:
			return a.in - b.in
		}
		return a.out - b.out
	})
}

// Blocked returns the cut-node turns the SM holds blocked, as (switch
// GUID, input port, output port), sorted.
func (s *SM) Blocked() [][3]uint64 {
	ks := make([]turnKey, 0, len(s.blocked))
	for k := range s.blocked {
		ks = append(ks, k)
	}
	sortTurns(ks)
	out := make([][3]uint64, len(ks))
	for i, k := range ks {
		out[i] = [3]uint64{k.guid, uint64(k.in), uint64(k.out)}
	}
	return out
}
