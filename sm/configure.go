package sm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"ibfab/sm/routing"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Distribution and activation. Distribution reads every NodeDescription
// and writes what a switch needs to forward: SwitchInfo (LinearFDBTop, and
// PortStateChange cleared), the LFT blocks up to the top LID, the SLtoVL
// tables and the VL arbitration tables (unless Config.VLTables says to
// keep the devices' own). Activation then configures every cabled port
// (NeighborMTU and OperationalVLs from both ends, and on CA ports the LID
// and SM fields) while moving it from Init to Armed, and once every port
// is Armed, sets them Active. All of it is directed-route.
//
// The SM keeps a shadow of what it wrote to each device, and a later sweep
// sends only what differs: the LFT blocks that changed, ports whose
// configuration changed. On the first sweep every block and table goes.

// shadowKey names one attribute instance written to a device, through
// one of its ports (a CA's tables are per port).
type shadowKey struct {
	guid uint64
	port int
	attr mad.AttrID
	mod  uint32
}

// portPlan is what activation wants for one port.
type portPlan struct {
	node, port int
	mtu        mad.MTU
	vls        uint8            // OperationalVLs code
	ext        mad.LinkSpeedExt // LinkSpeedExtEnabled to set; 0 none
	// noExt says the port supports none of the extended speeds
	// Config.LinkSpeedExt names, and is left as it is.
	noExt bool
}

// plan returns the cabled ports of sn with their MTU and VLs: the smaller
// capability of the two ends, VLs capped by the configuration.
func (s *SM) plan(sn *Subnet) []portPlan {
	var out []portPlan
	t := sn.Topo
	for _, l := range t.Links() {
		for _, end := range []topologies.PortRef{l.A, l.B} {
			peer := l.B
			if end == l.B {
				peer = l.A
			}
			if !sn.Have[end.Node][end.Port] || !sn.Have[peer.Node][peer.Port] {
				continue
			}
			a, b := sn.PortInfo[end.Node][end.Port], sn.PortInfo[peer.Node][peer.Port]
			mtu := min(a.MTUCap, b.MTUCap)
			vls := min(a.VLCap, b.VLCap, s.cfg.OpVLs)
			if mad.NumDataVLs(vls) == 0 {
				vls = 1
			}
			pp := portPlan{node: end.Node, port: end.Port, mtu: mtu, vls: vls}
			if extSpeeds(sn, end.Node, end.Port) && extSpeeds(sn, peer.Node, peer.Port) {
				pp.ext, pp.noExt = s.extFor(&a)
			}
			out = append(out, pp)
		}
	}
	slices.SortFunc(out, func(a, b portPlan) int {
		if a.node != b.node {
			return a.node - b.node
		}
		return a.port - b.port
	})
	return out
}

// extSpeeds reports whether port p of node i has the LinkSpeedExt fields:
// its CapabilityMask says IsExtendedSpeedsSupported, a switch's in port 0
// (the one port of a switch whose mask the spec defines; OpenSM's link
// manager reads it there too).
func extSpeeds(sn *Subnet, i, p int) bool {
	if sn.IsSwitch(i) {
		p = 0
	}
	return sn.Have[i][p] && sn.PortInfo[i][p].CapabilityMask&mad.PortCapIsExtendedSpeedsSupported != 0
}

// extFor is the LinkSpeedExtEnabled to set in a port reading pi: the
// configuration's, less the speeds the port does not support (a Set
// naming one is refused); none, and true, when that leaves nothing.
func (s *SM) extFor(pi *mad.PortInfoFields) (mad.LinkSpeedExt, bool) {
	e := s.cfg.LinkSpeedExt
	if e == mad.LinkSpeedExtNoChange || e >= mad.LinkSpeedExtDisabled {
		return e, false
	}
	if e &= pi.LinkSpeedExtSupported; e == 0 {
		return 0, true
	}
	return e, false
}

// extOK reports whether a port reading pi enables the extended speeds
// want asks for (0: any).
func extOK(pi *mad.PortInfoFields, want mad.LinkSpeedExt) bool {
	switch want {
	case mad.LinkSpeedExtNoChange:
		return true
	case mad.LinkSpeedExtSetToSupported:
		return pi.LinkSpeedExtEnabled == pi.LinkSpeedExtSupported
	}
	return pi.LinkSpeedExtEnabled == want
}

// path returns the directed route to port p of node i.
func (sn *Subnet) path(i, p int) []uint8 {
	if sn.Topo.Node(i).Type != topologies.Switch && p < len(sn.PortPaths[i]) && sn.PortPaths[i][p] != nil {
		return sn.PortPaths[i][p]
	}
	return sn.Paths[i]
}

// sendIfChanged sets an attribute unless the shadow says the device holds
// data already, and reports whether it did; the shadow is updated when
// the Set succeeds, and then done, if any, runs. A Set that timed out
// (every attempt of the transaction layer) goes again at once, up to
// liftRetries times, before fail hears of it: the tables are what the
// traffic needs, and one given up waited for the next sweep (a soak
// under 15 % SMP loss each way saw a destination LID unroutable at four
// switches for seconds after the loss, until a later sweep sent its LFT
// block again).
func (s *SM) sendIfChanged(sn *Subnet, node, port int, attr mad.AttrID, mod uint32, data []byte, fail func(error), done ...func()) bool {
	k := shadowKey{sn.Topo.Node(node).GUID, port, attr, mod}
	if old, ok := s.shadow[k]; ok && slices.Equal(old, data) {
		return false
	}
	s.setTable(txn.Request{DR: true, Path: sn.path(node, port), Attr: attr, Mod: mod, Data: data}, k, fail, done, liftRetries)
	return true
}

func (s *SM) setTable(req txn.Request, k shadowKey, fail func(error), done []func(), tries int) {
	s.tx.Set(req, func(r *txn.Response) {
		if errors.Is(r.Err, ErrTimeout) && tries > 0 {
			s.setTable(req, k, fail, done, tries-1)
			return
		}
		if r.Err != nil {
			fail(r.Err)
			return
		}
		s.shadow[k] = req.Data
		for _, f := range done {
			f()
		}
	})
}

// configuredBefore reports whether an SM had sn up before this one: a
// switch port Active before this SM's activation. Only then can a table
// hold an earlier SM's blocks; a subnet no SM brought up is not read
// back (the SLtoVL tables of a fat tree of 144 hosts are 4,464 Gets).
func configuredBefore(sn *Subnet) bool {
	for _, sw := range sn.Switches() {
		for _, pi := range sn.PortInfo[sw][1:] {
			if pi.PortState == mad.PortStateActive {
				return true
			}
		}
	}
	return false
}

// distribute sends descriptions, switch tables, SLtoVL and VL arbitration.
func (s *SM) distribute(ctx context.Context, sn *Subnet, rt *routing.Routes, plan []portPlan, res *Result) error {
	problem := func(format string, args ...any) { res.Problems = append(res.Problems, fmt.Sprintf(format, args...)) }
	s.readDescriptions(sn, false, res)
	vlsOf := vlsByPort(plan)
	// Port 0 first, in a round of its own: a Set that changes a switch's
	// M_Key must be answered before any other SMP to it is built, with
	// the new key.
	for _, sw := range sn.Switches() {
		s.fixPort0(sn, sw, problem)
	}
	if err := s.tx.Run(ctx); err != nil {
		return err
	}
	if s.comingOut || (!s.blocksKnown && configuredBefore(sn)) {
		s.readBlocks(sn, res)
		if err := s.tx.Run(ctx); err != nil {
			return err
		}
	}
	s.blocksKnown = true
	for _, sw := range sn.Switches() {
		s.switchTables(sn, rt, sw, res, problem, nil)
		s.switchSL2VL(sn, sw, vlsOf, problem)
	}
	s.reconcileBlocks(sn, rt, vlsOf, res, problem)
	for _, p := range plan {
		s.caSL2VL(sn, p, problem)
		s.vlArb(sn, p, problem)
	}
	return s.tx.Run(ctx)
}

// readDescriptions reads the NodeDescription of every node, or with
// onlyNew of those the SM has not read yet.
func (s *SM) readDescriptions(sn *Subnet, onlyNew bool, res *Result) {
	t := sn.Topo
	for i := range t.NumNodes() {
		n := t.Node(i)
		if d, ok := s.described[n.GUID]; ok && onlyNew {
			n.Description = d
			continue
		}
		s.tx.Get(txn.Request{DR: true, Path: sn.Paths[i], Attr: mad.AttrNodeDescription}, func(r *txn.Response) {
			if r.Err != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("no NodeDescription from %s: %v", n.Name, r.Err))
				return
			}
			n.Description = cleanDescription(mad.NodeDescription(r.Data).Text())
			s.described[n.GUID] = n.Description
		})
	}
}

// vlsByPort maps every planned port to its OperationalVLs code.
func vlsByPort(plan []portPlan) map[[2]int]uint8 {
	vlsOf := map[[2]int]uint8{}
	for _, p := range plan {
		vlsOf[[2]int{p.node, p.port}] = p.vls
	}
	return vlsOf
}

// switchTables sends switch sw its SwitchInfo (LinearFDBTop, and
// PortStateChange cleared) when it differs, and the LFT blocks that
// changed; onLFT, if any, runs as each block is taken.
func (s *SM) switchTables(sn *Subnet, rt *routing.Routes, sw int, res *Result, problem func(string, ...any), onLFT func()) {
	name := sn.Topo.Node(sw).Name
	si := sn.Switch[sw]
	if int(rt.MaxLID) >= int(si.LinearFDBCap) {
		problem("%s holds %d LFT entries, LIDs go up to %d", name, si.LinearFDBCap, rt.MaxLID)
		return
	}
	if si.LinearFDBTop != rt.MaxLID || si.PortStateChange {
		want := si
		want.LinearFDBTop = rt.MaxLID
		want.PortStateChange = true // writing 1 clears it
		s.tx.Set(txn.Request{DR: true, Path: sn.Paths[sw], Attr: mad.AttrSwitchInfo,
			Data: mad.AppendSwitchInfo(nil, &want)}, func(r *txn.Response) {
			if r.Err != nil {
				problem("SwitchInfo of %s: %v", name, r.Err)
				return
			}
			got := mad.SwitchInfo(r.Data).Fields()
			if got.LinearFDBTop != rt.MaxLID {
				problem("%s took LinearFDBTop %d, asked for %d", name, got.LinearFDBTop, rt.MaxLID)
			}
			sn.Switch[sw] = got
		})
	}
	guid := sn.Topo.Node(sw).GUID
	for b := 0; b <= int(rt.MaxLID)/mad.LFTEntriesPerBlock; b++ {
		block := make([]byte, mad.LFTEntriesPerBlock)
		old := s.shadow[shadowKey{guid, 0, mad.AttrLinearFwdTbl, uint32(b)}]
		for k := range block {
			lid := b*mad.LFTEntriesPerBlock + k
			block[k] = mad.LFTNoPort
			if lid <= int(rt.MaxLID) {
				block[k] = rt.LFT[sw][lid]
				if (old == nil && block[k] != mad.LFTNoPort) || (old != nil && old[k] != block[k]) {
					res.LFTEntriesChanged++
				}
			}
		}
		var done []func()
		if onLFT != nil {
			done = append(done, onLFT)
		}
		if s.sendIfChanged(sn, sw, 0, mad.AttrLinearFwdTbl, uint32(b), block, func(err error) {
			problem("LFT block %d of %s: %v", b, name, err)
		}, done...) {
			res.LFTBlocks++
		}
	}
}

// fixPort0 sets a switch's port 0 to its LID and this SM's, when
// discovery found it configured otherwise (by another SM, or with a LID
// another port has).
func (s *SM) fixPort0(sn *Subnet, sw int, problem func(string, ...any)) {
	cur := sn.PortInfo[sw][0]
	if !sn.Have[sw][0] || s.mgmtOK(sn, sw, 0, &cur) {
		return
	}
	pi := forSet(cur)
	s.setMgmt(sn, sw, 0, &pi)
	s.tx.Set(txn.Request{DR: true, Path: sn.Paths[sw], Attr: mad.AttrPortInfo, Data: mad.AppendPortInfo(nil, &pi)}, func(r *txn.Response) {
		if r.Err != nil {
			problem("PortInfo 0 of %s: %v", sn.Topo.Node(sw).Name, r.Err)
			s.setRefused(sn.Paths[sw], &cur, r.Err)
			return
		}
		got := mad.PortInfo(r.Data).Fields()
		s.mk.Set(sn.Topo.Node(sw).GUID, &got)
		sn.PortInfo[sw][0] = got
	})
}

// mgmtOK reports whether end port p of node i holds its LID and this
// SM's, and the M_Key fields the SM wants.
func (s *SM) mgmtOK(sn *Subnet, i, p int, pi *mad.PortInfoFields) bool {
	return pi.LID == sn.LID[i][p] && pi.LMC == sn.LMC[i][p] && pi.MasterSMLID == sn.SMLID &&
		pi.SubnetTimeOut == s.cfg.SubnetTimeOut && s.mk.FieldsOK(portGUID(sn, i, p), pi)
}

// setMgmt writes the LID and M_Key fields of end port p of node i into
// pi.
func (s *SM) setMgmt(sn *Subnet, i, p int, pi *mad.PortInfoFields) {
	pi.LID, pi.LMC, pi.MasterSMLID = sn.LID[i][p], sn.LMC[i][p], sn.SMLID
	pi.SubnetTimeOut = s.cfg.SubnetTimeOut
	s.mk.SetFields(portGUID(sn, i, p), pi)
}

// keyFields writes into pi, a PortInfo Set to port p of node i, the
// M_Key fields of the node's management port: a switch's external ports
// carry its port 0's (which they do not hold), so that no Set asks a
// change of them.
func (s *SM) keyFields(sn *Subnet, i, p int, pi *mad.PortInfoFields) {
	if sn.IsSwitch(i) {
		p = 0
	}
	s.mk.SetFields(portGUID(sn, i, p), pi)
}

// sl2vl returns the SLtoVL table spreading the 16 SLs over the data VLs
// of code vls: SL s on VL s mod n.
func sl2vl(vls uint8) []byte { return sl2vlSpread(mad.NumDataVLs(vls)) }

// sl2vlSpread returns the SLtoVL table mapping SL s to VL s mod n.
func sl2vlSpread(n int) []byte {
	var f mad.SLtoVLMappingTableFields
	for sl := range f.VL {
		f.VL[sl] = uint8(sl % n)
	}
	return mad.AppendSLtoVLMappingTable(nil, &f)
}

// switchSL2VL writes a switch's SLtoVL tables: one Set for every
// (input, output) pair when its ports all run the same VLs and the switch
// takes the all-ports modifiers, else one per output port (for every
// input) or, without them, one per pair.
func (s *SM) switchSL2VL(sn *Subnet, sw int, vlsOf map[[2]int]uint8, problem func(string, ...any)) {
	if s.cfg.VLTables == VLTablesKeep {
		return
	}
	n := sn.Topo.Node(sw)
	ports := []int{0}
	minVLs := uint8(0)
	same := true
	for p := 1; p <= n.NumPorts; p++ {
		v, ok := vlsOf[[2]int{sw, p}]
		if !ok {
			continue
		}
		ports = append(ports, p)
		if minVLs != 0 && v != minVLs {
			same = false
		}
		if minVLs == 0 || v < minVLs {
			minVLs = v
		}
	}
	if minVLs == 0 {
		minVLs = 1
	}
	vlsAt := func(p int) uint8 {
		if v, ok := vlsOf[[2]int{sw, p}]; ok {
			return v
		}
		return minVLs // port 0
	}
	set := func(m mad.SLtoVLModifier, vls uint8) {
		if s.sendIfChanged(sn, sw, 0, mad.AttrSLtoVLMapping, m.Modifier(), s.sl2vlTable(vls), func(err error) {
			problem("SLtoVL %#x of %s: %v", m.Modifier(), n.Name, err)
		}) {
			// The new table overwrites the cut-node blocks it covers.
			for k := range s.blocked {
				if k.guid == n.GUID && (m.AllInPorts || int(m.InPort) == k.in) && (m.AllOutPorts || int(m.OutPort) == k.out) {
					delete(s.blocked, k)
				}
			}
		}
	}
	optimized := sn.Switch[sw].OptimizedSLtoVLMappingProgramming != 0
	switch {
	case optimized && same:
		set(mad.SLtoVLModifier{AllInPorts: true, AllOutPorts: true}, minVLs)
	case optimized:
		for _, out := range ports {
			set(mad.SLtoVLModifier{AllInPorts: true, OutPort: uint8(out)}, vlsAt(out))
		}
	default:
		for _, in := range ports {
			for _, out := range ports {
				if in != out {
					set(mad.SLtoVLModifier{InPort: uint8(in), OutPort: uint8(out)}, vlsAt(out))
				}
			}
		}
	}
}

// caSL2VL writes the SLtoVL table of a planned CA or router port.
func (s *SM) caSL2VL(sn *Subnet, p portPlan, problem func(string, ...any)) {
	if sn.IsSwitch(p.node) || s.cfg.VLTables == VLTablesKeep {
		return
	}
	s.sendIfChanged(sn, p.node, p.port, mad.AttrSLtoVLMapping, 0, s.sl2vlTable(p.vls), func(err error) {
		problem("SLtoVL of %s port %d: %v", sn.Topo.Node(p.node).Name, p.port, err)
	})
}

// vlArb writes the arbitration tables of a port that runs more than one
// data VL: every data VL once in the low-priority table with the
// configured weight, an empty high-priority table. With one data VL
// there is nothing to arbitrate.
func (s *SM) vlArb(sn *Subnet, p portPlan, problem func(string, ...any)) {
	n := mad.NumDataVLs(p.vls)
	if n < 2 || s.cfg.VLTables == VLTablesKeep {
		return
	}
	pi := sn.PortInfo[p.node][p.port]
	var low, high [mad.VLArbMaxEntries]mad.VLArbEntry
	if s.qos != nil {
		low, high = s.qosArbTables(sn, p)
	} else {
		for vl := range min(n, mad.VLArbEntriesPerBlock) {
			low[vl] = mad.VLArbEntry{VL: uint8(vl), Weight: s.cfg.VLArbWeight}
		}
	}
	for _, t := range []struct {
		first mad.VLArbBlock
		cap   uint8
		table *[mad.VLArbMaxEntries]mad.VLArbEntry
	}{{mad.VLArbLow0, pi.VLArbitrationLowCap, &low}, {mad.VLArbHigh0, pi.VLArbitrationHighCap, &high}} {
		// An empty block of entries past the port's cap is not sent (the
		// port would refuse it), nor, without QoS, an empty second block:
		// the spread tables fit in the first.
		for k := range mad.VLArbMaxEntries / mad.VLArbEntriesPerBlock {
			var data mad.VLArbitrationTableFields
			copy(data.Entries[:], t.table[k*mad.VLArbEntriesPerBlock:])
			empty := data == (mad.VLArbitrationTableFields{})
			if empty && k > 0 && (s.qos == nil || k*mad.VLArbEntriesPerBlock >= int(t.cap)) {
				continue
			}
			blk := t.first + mad.VLArbBlock(k)
			mod := mad.VLArbModifier(blk, uint8(p.port))
			if s.sendIfChanged(sn, p.node, p.port, mad.AttrVLArbitration, mod, mad.AppendVLArbitrationTable(nil, &data), func(err error) {
				problem("VLArbitration %v of %s port %d: %v", blk, sn.Topo.Node(p.node).Name, p.port, err)
			}) && s.qos != nil {
				s.qos.blocks++
			}
		}
	}
}

// activate configures every planned port while arming it, then activates
// them all: two passes over the plan, Armed then Active, each run to its
// end before the next, as a port goes Active only once its neighbour is
// Armed.
func (s *SM) activate(ctx context.Context, sn *Subnet, plan []portPlan, res *Result) error {
	for _, want := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		for _, p := range plan {
			s.activatePort(sn, p, want, res)
		}
		if err := s.tx.Run(ctx); err != nil {
			return err
		}
	}
	return nil
}

// activatePort queues the PortInfo Set that moves planned port p towards
// want, configuring it on the way; nothing for a port configured already
// and in the state the pass wants, a problem for one gone Down.
func (s *SM) activatePort(sn *Subnet, p portPlan, want mad.PortState, res *Result) {
	cur := sn.PortInfo[p.node][p.port]
	mgmt := !sn.IsSwitch(p.node)
	pi := s.activationPortInfo(sn, p, want, &cur, mgmt, res)
	if cur.PortState == mad.PortStateDown {
		// Never "configured already": the link is in the plan.
		res.Problems = append(res.Problems, fmt.Sprintf("%s port %d went Down", sn.Topo.Node(p.node).Name, p.port))
		return
	}
	if !s.activationMoves(sn, p, want, &cur, &pi, mgmt) {
		return
	}
	s.sendActivation(sn, p, &cur, &pi, mgmt, res)
}

// activationPortInfo is the PortInfo to Set on planned port p, read as
// cur: its MTU, VLs, high limit and extended speeds, and an end port's
// LIDs and M_Key fields, or a switch port's M_Key fields, its port 0's
// (a protected port may have read them back as 0). A port that supports
// none of the extended speeds asked for is a warning in the Armed pass.
func (s *SM) activationPortInfo(sn *Subnet, p portPlan, want mad.PortState, cur *mad.PortInfoFields, mgmt bool, res *Result) mad.PortInfoFields {
	pi := forSet(*cur)
	pi.NeighborMTU, pi.OperationalVLs = p.mtu, p.vls
	pi.VLHighLimit = s.qosHighLimit(p.mtu)
	if p.noExt && want == mad.PortStateArmed {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s port %d supports none of the extended speeds %v; left as it is",
			sn.Topo.Node(p.node).Name, p.port, s.cfg.LinkSpeedExt))
	}
	if !extOK(cur, p.ext) {
		pi.LinkSpeedExtEnabled = p.ext
	}
	if mgmt {
		s.setMgmt(sn, p.node, p.port, &pi)
	} else {
		s.keyFields(sn, p.node, p.port, &pi)
	}
	return pi
}

// activationMoves sets the state pi moves port p to in the pass towards
// want and reports whether the port needs a Set: Init to Armed in the
// Armed pass, Armed to Active in the Active one; a port in another state
// needs one in the Armed pass only, and only when it is not configured
// already.
func (s *SM) activationMoves(sn *Subnet, p portPlan, want mad.PortState, cur, pi *mad.PortInfoFields, mgmt bool) bool {
	switch {
	case want == mad.PortStateArmed && cur.PortState == mad.PortStateInit:
		pi.PortState = mad.PortStateArmed
	case want == mad.PortStateActive && cur.PortState == mad.PortStateArmed:
		pi.PortState = mad.PortStateActive
	case cur.NeighborMTU == p.mtu && cur.OperationalVLs == p.vls && cur.VLHighLimit == pi.VLHighLimit &&
		extOK(cur, p.ext) && (!mgmt || s.mgmtOK(sn, p.node, p.port, cur)):
		return false // configured already, nothing to move
	case want == mad.PortStateActive:
		return false // configured with the Armed pass
	}
	return true
}

// sendActivation queues the Set of pi on planned port p, read as cur;
// its answer is what the SM keeps of the port (and of a management
// port's M_Key), and a port not in the state asked for is a problem.
func (s *SM) sendActivation(sn *Subnet, p portPlan, cur, pi *mad.PortInfoFields, mgmt bool, res *Result) {
	t := sn.Topo
	problem := func(format string, args ...any) { res.Problems = append(res.Problems, fmt.Sprintf(format, args...)) }
	req := s.activationRequest(sn, p.node, p.port)
	if pi.LinkSpeedExtEnabled != mad.LinkSpeedExtNoChange {
		req.Mod |= mad.PortInfoSMSupportsExtendedSpeeds // else the port ignores the field
	}
	req.Data = mad.AppendPortInfo(nil, pi)
	asked := pi.PortState
	s.tx.Set(req, func(r *txn.Response) {
		if r.Err != nil {
			problem("PortInfo %d of %s to %v: %v", p.port, t.Node(p.node).Name, asked, r.Err)
			if mgmt {
				s.setRefused(sn.path(p.node, p.port), cur, r.Err)
			}
			return
		}
		got := mad.PortInfo(r.Data).Fields()
		if mgmt {
			s.mk.Set(portGUID(sn, p.node, p.port), &got)
		}
		if asked != mad.PortStateNoChange && got.PortState != asked {
			problem("%s port %d is %v, asked for %v", t.Node(p.node).Name, p.port, got.PortState, asked)
		}
		sn.PortInfo[p.node][p.port] = got
	})
}

// activationRequest addresses PortInfo of port p of node i for
// activation: LID-routed to the node with Config.LIDActivation, when it
// has a LID and the SM one, else directed.
func (s *SM) activationRequest(sn *Subnet, i, p int) txn.Request {
	lid := sn.LID[i][0]
	if !sn.IsSwitch(i) {
		lid = sn.LID[i][p]
	}
	if s.cfg.LIDActivation && lid != 0 && sn.SMLID != 0 {
		return txn.Request{LID: lid, Attr: mad.AttrPortInfo, Mod: uint32(p)}
	}
	return txn.Request{DR: true, Path: sn.path(i, p), Attr: mad.AttrPortInfo, Mod: uint32(p)}
}

// cleanDescription makes a NodeDescription fit the topology's rules: no
// quotes or control characters.
func cleanDescription(d string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '"' {
			return ' '
		}
		return r
	}, d)
}
