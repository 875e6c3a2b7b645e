package softswitch_test

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/link"
	"ibfab/link/linktest"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/softswitch"
	"ibfab/topologies"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// epoch is where the manual clock starts.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// LIDs the tests' SM gives the nodes of line().
const (
	lidCA1 = 1 // the SM's own
	lidCA2 = 2
	lidSW1 = 3
	lidSW2 = 4
)

// line is ca1 - sw1 - sw2 - ca2: every port 1 faces ca1, port 2 faces ca2.
func line(t *testing.T) *topologies.Topology {
	t.Helper()
	return twoSwitches(t, func(ca1, sw1, sw2, ca2 int) [][2]topologies.PortRef {
		return [][2]topologies.PortRef{
			{{Node: ca1, Port: 1}, {Node: sw1, Port: 1}},
			{{Node: sw1, Port: 2}, {Node: sw2, Port: 1}},
			{{Node: sw2, Port: 2}, {Node: ca2, Port: 1}},
		}
	})
}

// twoSwitches returns the nodes of line() (ca1, 4-port sw1 and sw2, ca2,
// with its GUIDs) joined by the cables cabling gives for their indexes.
func twoSwitches(t *testing.T, cabling func(ca1, sw1, sw2, ca2 int) [][2]topologies.PortRef) *topologies.Topology {
	t.Helper()
	topo := topologies.New()
	add := func(typ topologies.NodeType, name string, ports int, guid uint64) int {
		i, err := topo.AddNode(topologies.Node{Type: typ, Name: name, NumPorts: ports, GUID: guid})
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	ca1 := add(topologies.CA, "ca1", 1, 0x0200)
	sw1 := add(topologies.Switch, "sw1", 4, 0x0100)
	sw2 := add(topologies.Switch, "sw2", 4, 0x0110)
	ca2 := add(topologies.CA, "ca2", 1, 0x0210)
	for _, l := range cabling(ca1, sw1, sw2, ca2) {
		if err := topo.Connect(l[0], l[1], topologies.Width4x, topologies.SpeedSDR); err != nil {
			t.Fatal(err)
		}
	}
	return topo
}

// hca is a fake CA: one port.Port with a CA agent behind it. MADs go to
// the agent (what it hands its SM lands in inbox); data packets are
// counted and, while hold is set, kept unreleased.
type hca struct {
	a *agent.Agent
	p atomic.Pointer[port.Port]

	mu    sync.Mutex
	inbox []agent.Outbound
	hold  bool
	held  []*port.Packet
	got   int
	fecn  map[fecnKind]int // packets received with FECN, by kind
	seen  map[arrival]int  // data packets received, by VL and adapted bit
	seqs  []byte           // first payload byte of each data packet, in order
}

// arrival is how a CA tells the data packets it received apart.
type arrival struct {
	vl      uint8
	adapted bool
}

// fecnKind tells the packets with FECN a CA counts apart.
type fecnKind int

const (
	fecnData fecnKind = iota // data VL, not a CNP
	fecnCNP                  // a CNP
	fecnVL15                 // an SMP
)

// noteFECN counts pkt if it carries FECN.
func (h *hca) noteFECN(pkt *port.Packet) {
	lrh := wire.LRH(pkt.Bytes)
	bth := wire.BTH(pkt.Bytes[wire.LRHSize:])
	if lrh.LNH() != wire.LNHLocal || !bth.IsValid() || !bth.FECN() {
		return
	}
	k := fecnData
	switch {
	case lrh.VL() == port.VL15:
		k = fecnVL15
	case bth.OpCode() == wire.CNP:
		k = fecnCNP
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fecn == nil {
		h.fecn = map[fecnKind]int{}
	}
	h.fecn[k]++
}

// fecnCount returns the packets of kind k received with FECN.
func (h *hca) fecnCount(k fecnKind) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fecn[k]
}

var (
	_ port.Receiver     = (*hca)(nil)
	_ agent.PortControl = (*hca)(nil)
)

func (h *hca) port() *port.Port { return h.p.Load() }

func (h *hca) Receive(p *port.Port, pkt *port.Packet) {
	h.noteFECN(pkt)
	if in, err := softswitch.ParseMAD(1, pkt.Bytes); err == nil {
		outs := h.a.HandleMAD(in)
		pkt.Release()
		h.out(outs)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got++
	var a arrival
	a.vl = wire.LRH(pkt.Bytes).VL()
	if bth, ok := wire.PacketBTH(pkt.Bytes); ok {
		a.adapted = bth.Adapted()
	}
	if h.seen == nil {
		h.seen = map[arrival]int{}
	}
	h.seen[a]++
	if off := wire.UDHeaderSize(false); len(pkt.Bytes) > off+wire.ICRCSize+wire.VCRCSize {
		h.seqs = append(h.seqs, pkt.Bytes[off])
	}
	if h.hold {
		h.held = append(h.held, pkt)
		return
	}
	pkt.Release()
}

// out sends the agent's Outbounds, or keeps the Local ones for the SM.
func (h *hca) out(outs []agent.Outbound) {
	for _, o := range outs {
		if o.Local {
			h.mu.Lock()
			h.inbox = append(h.inbox, o)
			h.mu.Unlock()
			continue
		}
		_ = h.port().Send(softswitch.NewOutboundPacket(&o))
	}
}

// arrivals returns the data packets received by VL and adapted bit.
func (h *hca) arrivals() map[arrival]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.seen)
}

// order returns the first payload byte of each data packet received.
func (h *hca) order() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seqs)
}

func (h *hca) received() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got
}

func (h *hca) setHold(on bool) {
	h.mu.Lock()
	h.hold = on
	rel := h.held
	if !on {
		h.held = nil
	}
	h.mu.Unlock()
	if !on {
		for _, pkt := range rel {
			pkt.Release()
		}
	}
}

// take returns, and forgets, the inbox MADs match accepts.
func (h *hca) take(match func(mad.MAD) bool) []agent.Outbound {
	h.mu.Lock()
	defer h.mu.Unlock()
	var got, rest []agent.Outbound
	for _, o := range h.inbox {
		if match(mad.MAD(o.MAD)) {
			got = append(got, o)
		} else {
			rest = append(rest, o)
		}
	}
	h.inbox = rest
	return got
}

func (h *hca) Link(uint8) agent.LinkState {
	p := h.port()
	if p == nil {
		return agent.LinkState{State: mad.PortStateDown, Phys: mad.PhysStatePolling}
	}
	st := p.State()
	return agent.LinkState{State: st.Port, Phys: st.Phys, Width: mad.LinkWidth4X, Speed: mad.LinkSpeedSDR}
}

func (h *hca) SetState(_ uint8, s mad.PortState) error     { return h.port().SetState(s) }
func (h *hca) SetPhysState(_ uint8, s mad.PhysState) error { return h.port().SetPhysState(s) }
func (h *hca) Configure(uint8, agent.PortConfig)           {}

// fabric is a topology of soft switches and fake CAs over pipes on one
// manual clock.
type fabric struct {
	clk   *clock.Manual
	topo  *topologies.Topology
	sw    map[string]*softswitch.Switch
	ca    map[string]*hca
	pipes map[topologies.PortRef]*pipe.Endpoint // each node port's own end
	extra []*pipe.Endpoint                      // one end of each pipe a test added
	ports []*port.Port
	tid   uint64
}

// newFabric builds topo with ports of config pc (RxBlocks etc.), all
// closed at cleanup, with a goroutine leak check, and lets the links train.
func newFabric(t *testing.T, topo *topologies.Topology, pc port.Config) *fabric {
	t.Helper()
	return newFabricWith(t, topo, pc, nil)
}

// newFabricWith is newFabric with node's ports configured by per, when
// set, from pc: buffers that differ from node to node from the start.
func newFabricWith(t *testing.T, topo *topologies.Topology, pc port.Config, per func(node string, c *port.Config)) *fabric {
	t.Helper()
	linktest.LeakCheck(t)
	f := &fabric{clk: clock.NewManual(epoch), topo: topo, sw: map[string]*softswitch.Switch{},
		ca: map[string]*hca{}, pipes: map[topologies.PortRef]*pipe.Endpoint{}}
	for _, l := range topo.Links() {
		a, b := pipe.NewPairWith(pipe.Options{QueueLen: 8192,
			NameA: fmt.Sprintf("%s/%d", topo.Node(l.A.Node).Name, l.A.Port),
			NameB: fmt.Sprintf("%s/%d", topo.Node(l.B.Node).Name, l.B.Port)})
		f.pipes[l.A], f.pipes[l.B] = a, b
	}
	pc.Clock = f.clk
	base := pc
	for i, n := range topo.Nodes() {
		pc := base
		if per != nil {
			per(n.Name, &pc)
		}
		switch n.Type {
		case topologies.Switch:
			eps := make([]link.Endpoint, n.NumPorts+1)
			for p := 1; p <= n.NumPorts; p++ {
				if e, ok := f.pipes[topologies.PortRef{Node: i, Port: p}]; ok {
					eps[p] = e
				}
			}
			s, err := softswitch.New(softswitch.Config{Name: n.Name, NumPorts: n.NumPorts, NodeGUID: n.GUID, Description: n.Description, Ports: eps, PortConfig: pc, Clock: f.clk})
			if err != nil {
				t.Fatalf("softswitch.New(%s): %v", n.Name, err)
			}
			t.Cleanup(s.Close)
			f.sw[n.Name] = s
			for p := uint8(1); p <= s.NumPorts(); p++ {
				if sp := s.Port(p); sp != nil {
					f.ports = append(f.ports, sp)
				}
			}
		case topologies.CA:
			h := &hca{}
			a, err := agent.New(agent.Config{Type: mad.NodeTypeCA, NumPorts: 1, NodeGUID: n.GUID,
				Description: n.Name, Ports: h, Clock: f.clk})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(a.Close)
			h.a = a
			c := pc
			c.OnStateChange = func(*port.Port, port.State, port.State) { a.PortStateChanged(1) }
			p, err := port.New(f.pipes[topologies.PortRef{Node: i, Port: 1}], c, h)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			h.p.Store(p)
			a.PortStateChanged(1)
			f.ca[n.Name] = h
			f.ports = append(f.ports, p)
		}
	}
	f.settle()
	return f
}

// settle waits until nothing moves without the clock.
func (f *fabric) settle() {
	var ends []*pipe.Endpoint
	for _, l := range f.topo.Links() {
		ends = append(ends, f.pipes[l.A])
	}
	ends = append(ends, f.extra...)
	porttest.Settle(f.ports, ends...)
}

// run lets the fabric work, advancing the clock from timer to timer when
// it is quiet, until done.
func (f *fabric) run(t *testing.T, done func() bool) {
	t.Helper()
	for range 20_000 {
		f.settle()
		if done() {
			return
		}
		if !f.clk.AdvanceToNext() {
			t.Fatal("no timer pending and not done")
		}
	}
	t.Fatal("not done after 20000 timer steps")
}

// sm sends r from ca1's SMI and waits for the response to it.
func (f *fabric) sm(t *testing.T, r agent.Request) mad.MAD {
	t.Helper()
	h := f.ca["ca1"]
	tid := mad.MAD(r.MAD).TransactionID()
	h.out(h.a.Send(r))
	var got []agent.Outbound
	match := func(m mad.MAD) bool { return m.IsResponse() && m.TransactionID() == tid }
	f.run(t, func() bool { got = append(got, h.take(match)...); return len(got) > 0 })
	return mad.MAD(got[0].MAD)
}

// dr sends a directed-route Get or Set along path (output ports from ca1,
// ca1's port 1 first; empty: ca1 itself) and returns the response's
// attribute data, failing t unless the status is OK.
func (f *fabric) dr(t *testing.T, m mad.Method, attr mad.AttrID, mod uint32, data []byte, path ...uint8) []byte {
	t.Helper()
	f.tid++
	var p []uint8
	if len(path) > 0 {
		p = append([]uint8{0}, path...)
	}
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: m, TransactionID: f.tid, AttrID: attr,
		AttrModifier: mod, Path: p, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	r := mad.DRSMP(f.sm(t, agent.Request{Port: 1, MAD: b}))
	if st := r.Status(); st != mad.StatusOK {
		t.Fatalf("DR %v %v mod %d via %v: status %v", m, attr, mod, path, st)
	}
	return r.Data()
}

// lid sends a LID-routed Get to dlid and returns the response.
func (f *fabric) lid(t *testing.T, dlid uint16, attr mad.AttrID, mod uint32) mad.SMP {
	t.Helper()
	f.tid++
	b := mad.AppendSMP(nil, &mad.SMPFields{Method: mad.MethodGet, TransactionID: f.tid, AttrID: attr, AttrModifier: mod})
	return mad.SMP(f.sm(t, agent.Request{Port: 1, DLID: dlid, MAD: b}))
}

// setPortInfo reads PortInfo of port n at path, lets change adjust it and
// sets it.
func (f *fabric) setPortInfo(t *testing.T, n uint8, change func(*mad.PortInfoFields), path ...uint8) {
	t.Helper()
	pi := mad.PortInfo(f.dr(t, mad.MethodGet, mad.AttrPortInfo, uint32(n), nil, path...)).Fields()
	pi.PortState, pi.PortPhysicalState = mad.PortStateNoChange, mad.PhysStateNoChange
	change(&pi)
	f.dr(t, mad.MethodSet, mad.AttrPortInfo, uint32(n), mad.AppendPortInfo(nil, &pi), path...)
}

// route programs a switch at path: its LID, the SM's LID, LinearFDBTop
// and LFT block 0 (lft maps LIDs to ports).
func (f *fabric) route(t *testing.T, lid uint16, lft map[uint16]uint8, path ...uint8) {
	t.Helper()
	f.setPortInfo(t, 0, func(pi *mad.PortInfoFields) { pi.LID, pi.MasterSMLID = lid, lidCA1 }, path...)
	f.dr(t, mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{LinearFDBTop: 63}), path...)
	var blk mad.LinearForwardingTableFields
	for i := range blk.Ports {
		blk.Ports[i] = mad.LFTNoPort
	}
	for l, p := range lft {
		blk.Ports[l] = p
	}
	f.dr(t, mad.MethodSet, mad.AttrLinearFwdTbl, 0, mad.AppendLinearForwardingTable(nil, &blk), path...)
}

// setState moves port n at path to state s.
func (f *fabric) setState(t *testing.T, n uint8, s mad.PortState, path ...uint8) {
	t.Helper()
	f.setPortInfo(t, n, func(pi *mad.PortInfoFields) { pi.PortState = s }, path...)
}

// Paths from ca1 of line().
var (
	toSW1 = []uint8{1}
	toSW2 = []uint8{1, 2}
	toCA2 = []uint8{1, 2, 2}
)

// configure does what an SM does to line(): LIDs, routes, and, with
// activate, every port Armed then Active.
func (f *fabric) configure(t *testing.T, activate bool) {
	t.Helper()
	if err := f.ca["ca1"].a.SetIsSM(1, true); err != nil {
		t.Fatal(err)
	}
	f.setPortInfo(t, 1, func(pi *mad.PortInfoFields) { pi.LID, pi.MasterSMLID = lidCA1, lidCA1 })
	f.setPortInfo(t, 1, func(pi *mad.PortInfoFields) { pi.LID, pi.MasterSMLID = lidCA2, lidCA1 }, toCA2...)
	f.route(t, lidSW1, map[uint16]uint8{lidCA1: 1, lidCA2: 2, lidSW1: 0, lidSW2: 2}, toSW1...)
	f.route(t, lidSW2, map[uint16]uint8{lidCA1: 1, lidCA2: 2, lidSW1: 1, lidSW2: 0}, toSW2...)
	if !activate {
		return
	}
	for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		f.setState(t, 1, s)
		f.setState(t, 1, s, toSW1...)
		f.setState(t, 2, s, toSW1...)
		f.setState(t, 1, s, toSW2...)
		f.setState(t, 2, s, toSW2...)
		f.setState(t, 1, s, toCA2...)
	}
}

// noDrops fails t if any port of f dropped anything.
func (f *fabric) noDrops(t *testing.T) {
	t.Helper()
	for _, p := range f.ports {
		if d := p.Drops(); d.Total() != 0 {
			t.Errorf("%s: drops %v, want none", p.Name(), d.Map())
		}
	}
}
