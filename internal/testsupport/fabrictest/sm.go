package fabrictest

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"ibfab/nodeproc"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// SM is a minimal subnet manager played from one HCA of a Fabric through
// its control socket: directed-route paths, LIDs and shortest-path LFTs
// come from the known topology, every change is a hand-built SMP.
type SM struct {
	f    *Fabric
	Node string // the HCA it sends from (port 1)
	idx  int
	tid  atomic.Uint64
	// Path[i] is the directed route to node i (Path[i][0] unused, as in
	// mad.DRRequest), nil when unreachable.
	Path [][]uint8
	// LID[i] is node i's base LID once AssignLIDs ran.
	LID []uint16
}

// NewSM makes node (an HCA) the SM: IsSM set on its port 1, and the
// directed routes to every node computed by breadth-first search in port
// order.
func (f *Fabric) NewSM(node string) *SM {
	f.tb.Helper()
	s := &SM{f: f, Node: node, idx: f.Index(node)}
	s.tid.Store(uint64(0x1bf) << 32)
	s.Path = make([][]uint8, f.Topo.NumNodes())
	s.Path[s.idx] = []uint8{0}
	queue := []int{s.idx}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n != s.idx && f.Topo.Node(n).Type != topologies.Switch {
			continue // CAs do not forward directed routes
		}
		for p := 1; p <= f.Topo.Node(n).NumPorts; p++ {
			if n == s.idx && p != 1 {
				continue
			}
			peer, ok := f.Topo.Peer(topologies.PortRef{Node: n, Port: p})
			if !ok || s.Path[peer.Node] != nil {
				continue
			}
			s.Path[peer.Node] = append(append([]uint8(nil), s.Path[n]...), uint8(p))
			queue = append(queue, peer.Node)
		}
	}
	f.MustCall(node, "is-sm", map[string]any{"port": 1, "on": true}, nil)
	return s
}

func (s *SM) nextTID() uint64 { return s.tid.Add(1) }

// Send sends one MAD from the SM's port and returns the response.
func (s *SM) Send(dlid uint16, m []byte) (mad.MAD, error) {
	var r nodeproc.ReceivedMAD
	err := s.f.Call(s.Node, "mad", nodeproc.MADArgs{Port: 1, DLID: dlid, MAD: m, TimeoutMS: 2000}, &r)
	return mad.MAD(r.MAD), err
}

// DR sends a directed-route Get or Set of attr to node i and returns the
// response's attribute data; a non-OK status is an error.
func (s *SM) DR(method mad.Method, attr mad.AttrID, mod uint32, data []byte, i int) ([]byte, error) {
	if s.Path[i] == nil {
		return nil, fmt.Errorf("%s is unreachable", s.f.Topo.Node(i).Name)
	}
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: method, TransactionID: s.nextTID(),
		AttrID: attr, AttrModifier: mod, Path: s.Path[i], Data: data})
	if err != nil {
		return nil, err
	}
	resp, err := s.Send(mad.PermissiveLID, b)
	if err != nil {
		return nil, fmt.Errorf("DR %v %v to %s: %w", method, attr, s.f.Topo.Node(i).Name, err)
	}
	r := mad.DRSMP(resp)
	if st := r.Status(); st != mad.StatusOK {
		return nil, fmt.Errorf("DR %v %v mod %d to %s: status %v", method, attr, mod, s.f.Topo.Node(i).Name, st)
	}
	return append([]byte(nil), r.Data()...), nil
}

// LIDGet sends a LID-routed Get of attr to dlid and returns the response.
func (s *SM) LIDGet(dlid uint16, attr mad.AttrID, mod uint32) (mad.SMP, error) {
	b := mad.AppendSMP(nil, &mad.SMPFields{Method: mad.MethodGet, TransactionID: s.nextTID(), AttrID: attr, AttrModifier: mod})
	resp, err := s.Send(dlid, b)
	return mad.SMP(resp), err
}

// NodeGUID reads node i's NodeInfo by directed route.
func (s *SM) NodeGUID(i int) (uint64, error) {
	d, err := s.DR(mad.MethodGet, mad.AttrNodeInfo, 0, nil, i)
	if err != nil {
		return 0, err
	}
	ni, err := mad.DecodeNodeInfo(d)
	return ni.NodeGUID, err
}

// SetPortInfo reads PortInfo of port p of node i, lets change edit it and
// sets it (states NoChange unless change sets them).
func (s *SM) SetPortInfo(i int, p uint8, change func(*mad.PortInfoFields)) error {
	d, err := s.DR(mad.MethodGet, mad.AttrPortInfo, uint32(p), nil, i)
	if err != nil {
		return err
	}
	pi, err := mad.DecodePortInfo(d)
	if err != nil {
		return err
	}
	pi.PortState, pi.PortPhysicalState = mad.PortStateNoChange, mad.PhysStateNoChange
	change(&pi)
	_, err = s.DR(mad.MethodSet, mad.AttrPortInfo, uint32(p), mad.AppendPortInfo(nil, &pi), i)
	return err
}

// AssignLIDs gives node i LID i+1 (the switch's on port 0, each HCA's on
// port 1), with the SM's LID as MasterSMLID everywhere.
func (s *SM) AssignLIDs() error {
	t := s.f.Topo
	s.LID = make([]uint16, t.NumNodes())
	for i := range s.LID {
		s.LID[i] = uint16(i + 1)
	}
	smLID := s.LID[s.idx]
	for i := range t.NumNodes() {
		if s.Path[i] == nil {
			continue
		}
		lid := s.LID[i]
		var ports []uint8
		if t.Node(i).Type == topologies.Switch {
			ports = []uint8{0}
		} else {
			for p := 1; p <= t.Node(i).NumPorts; p++ {
				ports = append(ports, uint8(p))
			}
		}
		for _, p := range ports {
			if err := s.SetPortInfo(i, p, func(pi *mad.PortInfoFields) { pi.LID, pi.MasterSMLID = lid, smLID }); err != nil {
				return err
			}
		}
	}
	return nil
}

// Routes returns the LFT of switch i: for each destination node's LID the
// lowest-numbered port on a shortest path through switches; its own LID
// maps to port 0.
func (s *SM) Routes(i int) map[uint16]uint8 {
	t := s.f.Topo
	lft := map[uint16]uint8{}
	for d := range t.NumNodes() {
		if s.LID[d] == 0 {
			continue
		}
		if d == i {
			lft[s.LID[d]] = 0
			continue
		}
		dist := distances(t, d)
		if dist[i] < 0 {
			continue
		}
		for p := 1; p <= t.Node(i).NumPorts; p++ {
			peer, ok := t.Peer(topologies.PortRef{Node: i, Port: p})
			if ok && dist[peer.Node] == dist[i]-1 {
				lft[s.LID[d]] = uint8(p)
				break
			}
		}
	}
	return lft
}

// distances returns the hop count from every node to d through switches
// (-1: unreachable); only d itself may be a CA on the way.
func distances(t *topologies.Topology, d int) []int {
	dist := make([]int, t.NumNodes())
	for i := range dist {
		dist[i] = -1
	}
	dist[d] = 0
	queue := []int{d}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n != d && t.Node(n).Type != topologies.Switch {
			continue
		}
		for p := 1; p <= t.Node(n).NumPorts; p++ {
			peer, ok := t.Peer(topologies.PortRef{Node: n, Port: p})
			if ok && dist[peer.Node] < 0 {
				dist[peer.Node] = dist[n] + 1
				queue = append(queue, peer.Node)
			}
		}
	}
	return dist
}

// Route programs every switch's LinearFDBTop and LFT blocks.
func (s *SM) Route() error {
	t := s.f.Topo
	top := uint16(0)
	for _, l := range s.LID {
		top = max(top, l)
	}
	for i := range t.NumNodes() {
		if t.Node(i).Type != topologies.Switch || s.Path[i] == nil {
			continue
		}
		d, err := s.DR(mad.MethodGet, mad.AttrSwitchInfo, 0, nil, i)
		if err != nil {
			return err
		}
		si, err := mad.DecodeSwitchInfo(d)
		if err != nil {
			return err
		}
		si.LinearFDBTop = top
		if _, err := s.DR(mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &si), i); err != nil {
			return err
		}
		lft := s.Routes(i)
		for blk := 0; blk <= int(top)/mad.LFTEntriesPerBlock; blk++ {
			var f mad.LinearForwardingTableFields
			for j := range f.Ports {
				f.Ports[j] = mad.LFTNoPort
				if p, ok := lft[uint16(blk*mad.LFTEntriesPerBlock+j)]; ok {
					f.Ports[j] = p
				}
			}
			if _, err := s.DR(mad.MethodSet, mad.AttrLinearFwdTbl, uint32(blk), mad.AppendLinearForwardingTable(nil, &f), i); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetAllPorts moves every cabled port of every reachable node to state.
func (s *SM) SetAllPorts(state mad.PortState) error {
	t := s.f.Topo
	for i := range t.NumNodes() {
		if s.Path[i] == nil {
			continue
		}
		for p := 1; p <= t.Node(i).NumPorts; p++ {
			if _, ok := t.LinkAt(topologies.PortRef{Node: i, Port: p}); !ok {
				continue
			}
			if err := s.SetPortInfo(i, uint8(p), func(pi *mad.PortInfoFields) { pi.PortState = state }); err != nil {
				return err
			}
		}
	}
	return nil
}

// Configure brings the subnet up: LIDs, routes, then every port Armed and
// Active.
func (s *SM) Configure() error {
	if err := s.AssignLIDs(); err != nil {
		return err
	}
	if err := s.Route(); err != nil {
		return err
	}
	if err := s.SetAllPorts(mad.PortStateArmed); err != nil {
		return err
	}
	return s.SetAllPorts(mad.PortStateActive)
}

// Traps returns the traps the SM's HCA received after seq after, waiting
// up to waitMS for the first.
func (s *SM) Traps(after uint64, waitMS int) ([]nodeproc.ReceivedMAD, error) {
	var all []nodeproc.ReceivedMAD
	err := s.f.Call(s.Node, "mads", map[string]any{"after": after, "wait_ms": waitMS}, &all)
	var traps []nodeproc.ReceivedMAD
	for _, m := range all {
		if mad.MAD(m.MAD).Method() == mad.MethodTrap {
			traps = append(traps, m)
		}
	}
	return traps, err
}

// TrapLID returns the LID in the details of a Trap 128 (the reporting
// switch's) and whether m is one.
func TrapLID(m []byte) (uint16, bool) {
	if len(m) < mad.MADSize || mad.MAD(m).AttrID() != mad.AttrNotice {
		return 0, false
	}
	n, err := mad.DecodeNotice(mad.SMP(m).Data())
	if err != nil || n.TrapNumber != 128 {
		return 0, false
	}
	return binary.BigEndian.Uint16(n.DataDetails[0:2]), true
}

// Repress answers trap m with a TrapRepress, as an SM does, so that the
// sender stops repeating it.
func (s *SM) Repress(m nodeproc.ReceivedMAD) error {
	b := append([]byte(nil), m.MAD...)
	mm := mad.MAD(b)
	mm.SetMethod(mad.MethodTrapRepress)
	return s.f.Call(s.Node, "mad", nodeproc.MADArgs{Port: 1, DLID: m.SLID, MAD: b, NoWait: true}, nil)
}

// DrainTraps represses every trap until none has come for quiet (longer
// than the agents' repeat interval), and returns the last sequence number
// seen: traps after it are new.
func (s *SM) DrainTraps(quiet time.Duration) (uint64, error) {
	var last uint64
	for {
		traps, err := s.Traps(last, int(quiet/time.Millisecond))
		if err != nil {
			return last, err
		}
		if len(traps) == 0 {
			return last, nil
		}
		for _, m := range traps {
			last = max(last, m.Seq)
			if err := s.Repress(m); err != nil {
				return last, err
			}
		}
	}
}
