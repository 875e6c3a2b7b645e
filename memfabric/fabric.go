package memfabric

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/link"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Fabric is an in-memory fabric of agents: one per node of a topology,
// each with Ports, Counters and the fabric's manual clock, joined
// by the topology's links. Packets move in FIFO order, one hop at a time,
// when Run (or Advance) is called, so a test is deterministic:
//
//   - an SMP arriving at a node whose DLID is permissive or one of the
//     node's LIDs goes to the node's agent, which forwards directed-route
//     SMPs by its own decisions;
//   - any other packet arriving at a switch is LID-routed by the switch
//     agent's LFT (no way back out of the arrival port), and at a CA it is
//     dropped;
//   - a packet crosses a link only when both ends are physically up, SMPs
//     only on VL15, other packets only between Active ports.
//
// What agents hand to their node's SM (Local Outbounds) waits in the
// node's inbox for Received.
type Fabric struct {
	topo  *topologies.Topology
	clock *clock.Manual
	nodes []*Node

	// mu protects queue, stats, every node's inbox and ready.
	mu sync.Mutex
	// queue holds the packets in flight from queue[head] on: a FIFO that
	// reuses its array (push), where popping by reslicing made append
	// reallocate it over and over (464 MB of garbage in one OpenSM sweep
	// of a 9,200-node fabric).
	queue []hop
	head  int
	stats Stats
	ready []int // nodes whose inbox has become non-empty, for ReceivedAll

	off map[int]bool // nodes powered off (changes.go)

	egress Egress // see SetEgress
}

// Egress sees a packet leaving port o.Port of node and says what becomes
// of it: sent on, dropped (drop), or held for delay and then sent on
// (without being shown to Egress again).
type Egress func(node int, o *agent.Outbound) (drop bool, delay time.Duration)

// SetEgress installs fn (nil: none), the management plane's faults.
// Call it while nothing runs the fabric.
func (f *Fabric) SetEgress(fn Egress) { f.egress = fn }

// Node is one node of a Fabric.
type Node struct {
	Index    int
	Name     string
	Agent    *agent.Agent
	Ports    *Ports
	Counters *Counters
	inbox    []Delivery
}

// Delivery is a MAD handed to the SM at a node: Outbound.Local is set and
// Outbound.Port says which attach point (0 on a switch).
type Delivery struct {
	Node int
	agent.Outbound
}

// Stats counts what the fabric's links and switch data planes did.
type Stats struct {
	Transmitted uint64 // packets that crossed a link
	Delivered   uint64 // packets given to an agent's HandleMAD (SMPs and GMPs)
	Switched    uint64 // LID-routed hops by a switch's LFT
	Local       uint64 // MADs handed to a node's SM
	Dropped     uint64 // lost: no link, link down, unroutable, wrong VL or state
}

// hop is a packet leaving a node.
type hop struct {
	node int
	out  agent.Outbound
	held bool // Egress delayed it already
}

// maxRunHops bounds Run, so that a routing loop ends the test instead of
// hanging it.
const maxRunHops = 1 << 20

// mgmtWords is the size, in 4-byte words, of a MAD packet from LRH to ICRC
// (8 + 12 + 8 + 256 + 4 bytes), what PortXmitData counts per MAD.
const mgmtWords = 72

// Option adjusts the Config of each node's agent.
type Option func(n *topologies.Node, c *agent.Config)

// NewFabric builds the agents of t's switches and CAs (routers are not
// supported) and trains every cabled link: both ends LinkUp and Init,
// at the link's width and speed, reported to the agents as the data plane
// would. The clock starts at a fixed time.
func NewFabric(t *topologies.Topology, opts ...Option) (*Fabric, error) {
	f := &Fabric{topo: t, clock: clock.NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))}
	for i, n := range t.Nodes() {
		if n.Type != topologies.CA && n.Type != topologies.Switch {
			return nil, fmt.Errorf("memfabric: node %q: %v nodes are not supported", n.Name, n.Type)
		}
		np := uint8(n.NumPorts)
		node := &Node{Index: i, Name: n.Name, Ports: NewPorts(np), Counters: NewCounters(np)}
		f.nodes = append(f.nodes, node)
		a, err := agent.New(f.agentConfig(i, opts))
		if err != nil {
			return nil, fmt.Errorf("memfabric: node %q: %w", n.Name, err)
		}
		node.Agent = a
		node.Ports.OnChange(func(port uint8) { f.portChanged(i, port) })
	}
	for _, l := range t.Links() {
		for _, end := range []topologies.PortRef{l.A, l.B} {
			f.nodes[end.Node].Ports.SetLink(uint8(end.Port), trained(l))
		}
	}
	for _, l := range t.Links() {
		for _, end := range []topologies.PortRef{l.A, l.B} {
			f.nodes[end.Node].Agent.PortStateChanged(uint8(end.Port))
		}
	}
	return f, nil
}

// agentConfig is the Config NewFabric gives node's agent.
func (f *Fabric) agentConfig(i int, opts []Option) agent.Config {
	n := f.topo.Node(i)
	node := f.nodes[i]
	cfg := agent.Config{
		Type:            mad.NodeType(n.Type),
		NumPorts:        uint8(n.NumPorts),
		NodeGUID:        n.GUID,
		SystemImageGUID: n.SystemImageGUID,
		Description:     n.Description,
		VendorID:        n.VendorID,
		DeviceID:        uint16(n.DeviceID),
		EnhancedPort0:   n.EnhancedPort0,
		Ports:           node.Ports,
		Counters:        node.Counters,
		Clock:           f.clock,
		Sender:          agent.SenderFunc(func(o agent.Outbound) { f.enqueue(i, []agent.Outbound{o}) }),
	}
	if n.Type == topologies.CA {
		for p := 1; p <= n.NumPorts; p++ {
			cfg.PortGUIDs = append(cfg.PortGUIDs, n.Ports[p].GUID)
		}
	}
	cfg.WidthSupported, cfg.SpeedSupported = f.silicon(i)
	for _, o := range opts {
		o(n, &cfg)
	}
	return cfg
}

// trained is the state of both ends of l once the link is up: its rate,
// and what ports of that rate support and enable after reset, as a node
// process's ports report them (topologies' Speed bits are mad's).
func trained(l topologies.Link) agent.LinkState {
	w, s := linkRate(l)
	ws, ss := link.Supported(w, s)
	return agent.LinkState{State: mad.PortStateInit, Phys: mad.PhysStateLinkUp, Width: w, Speed: s,
		WidthSupported: ws, WidthEnabled: ws, SpeedSupported: ss, SpeedEnabled: ss}
}

// linkRate is l's width and speed in PortInfo's terms; Mellanox's FDR10,
// outside PortInfo, reads as the QDR it reports there.
func linkRate(l topologies.Link) (mad.LinkWidth, mad.LinkSpeed) {
	w, s := mad.LinkWidth(l.Width), mad.LinkSpeed(l.Speed)
	if w == 0 {
		w = mad.LinkWidth(topologies.DefaultWidth)
	}
	switch l.Speed {
	case 0:
		s = mad.LinkSpeed(topologies.DefaultSpeed)
	case topologies.SpeedFDR10:
		s = mad.LinkSpeedQDR
	}
	return w, s
}

// silicon is the widths and speeds node i's ports support: those of its
// fastest link, what a switch says on port 0.
func (f *Fabric) silicon(i int) (mad.LinkWidth, mad.LinkSpeed) {
	var w mad.LinkWidth
	var s mad.LinkSpeed
	for p := 1; p <= f.topo.Node(i).NumPorts; p++ {
		if l, ok := f.topo.LinkAt(topologies.PortRef{Node: i, Port: p}); ok {
			lw, ls := linkRate(l)
			if lw.Lanes() > w.Lanes() {
				w = lw
			}
			s = max(s, ls)
		}
	}
	if w == 0 {
		return agent.DefaultWidthSupported, agent.DefaultSpeedSupported
	}
	return link.Supported(w, s)
}

// Close stops every agent's timers.
func (f *Fabric) Close() {
	for _, n := range f.nodes {
		n.Agent.Close()
	}
}

// Clock returns the fabric's manual clock.
func (f *Fabric) Clock() *clock.Manual { return f.clock }

// Topology returns the fabric's topology.
func (f *Fabric) Topology() *topologies.Topology { return f.topo }

// Nodes returns the nodes in topology order.
func (f *Fabric) Nodes() []*Node { return f.nodes }

// Node returns node i of the topology.
func (f *Fabric) Node(i int) *Node { return f.nodes[i] }

// Lookup returns the node called name.
func (f *Fabric) Lookup(name string) (*Node, bool) {
	i, ok := f.topo.Lookup(name)
	if !ok {
		return nil, false
	}
	return f.nodes[i], true
}

// Stats returns the fabric's counters.
func (f *Fabric) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// Send hands r to the SMI of node from, as the SM attached there sends
// it; call Run to move what it produces.
func (f *Fabric) Send(from int, r agent.Request) {
	f.enqueue(from, f.nodes[from].Agent.Send(r))
}

// Inject queues o as leaving node from, as if the node's agent had
// produced it; call Run to move it.
func (f *Fabric) Inject(from int, o agent.Outbound) {
	// The agents may answer in the MAD (Inbound.Owned): a copy, so the
	// caller's stays as it was.
	o.MAD = slices.Clone(o.MAD)
	f.enqueue(from, []agent.Outbound{o})
}

// Received returns, and forgets, the MADs handed to the SM at node.
func (f *Fabric) Received(node int) []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.nodes[node]
	d := n.inbox
	n.inbox = nil
	return d
}

// ReceivedAll returns, and forgets, the MADs handed to the SM at every
// node, node by node in the order their first MAD came; its cost is that
// of the nodes holding some, however large the fabric.
func (f *Fabric) ReceivedAll() []Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Delivery
	for _, i := range f.ready {
		out = append(out, f.nodes[i].inbox...)
		f.nodes[i].inbox = nil
	}
	f.ready = f.ready[:0]
	return out
}

// Advance moves the clock by d, running the agents' timers, then Run.
func (f *Fabric) Advance(d time.Duration) int {
	f.clock.Advance(d)
	return f.Run()
}

// Run moves packets until none is in flight and returns how many hops it
// made. It stops after a large bound, counting the rest as dropped, so a
// forwarding loop cannot hang a test.
func (f *Fabric) Run() int {
	hops := 0
	for {
		f.mu.Lock()
		if f.head == len(f.queue) {
			f.queue, f.head = f.queue[:0], 0
			f.mu.Unlock()
			return hops
		}
		if hops >= maxRunHops {
			f.stats.Dropped += uint64(len(f.queue) - f.head)
			f.queue, f.head = nil, 0
			f.mu.Unlock()
			return hops
		}
		h := f.queue[f.head]
		f.queue[f.head] = hop{} // the array is reused: let the MAD go
		f.head++
		f.mu.Unlock()
		hops++
		f.transmit(h.node, h.out, h.held)
	}
}

func (f *Fabric) enqueue(node int, outs []agent.Outbound) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range outs {
		if o.Local {
			f.stats.Local++
			n := f.nodes[node]
			if len(n.inbox) == 0 {
				f.ready = append(f.ready, node)
			}
			n.inbox = append(n.inbox, Delivery{Node: node, Outbound: o})
			continue
		}
		f.push(hop{node: node, out: o})
	}
}

// push appends h to the queue, moving what is in flight to the front of
// the array first when it is full and at least half of it popped; mu held.
func (f *Fabric) push(h hop) {
	if len(f.queue) == cap(f.queue) && f.head >= len(f.queue)/2 {
		n := copy(f.queue, f.queue[f.head:])
		clear(f.queue[n:])
		f.queue, f.head = f.queue[:n], 0
	}
	f.queue = append(f.queue, h)
}

func (f *Fabric) count(field *uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	*field++
}

// transmit sends o out of port o.Port of node from across its link,
// past Egress unless held says it was.
func (f *Fabric) transmit(from int, o agent.Outbound, held bool) {
	if f.egress != nil && !held {
		var gone bool
		if o, gone = f.applyEgress(from, o); gone {
			return
		}
	}
	l, ok := f.topo.LinkAt(topologies.PortRef{Node: from, Port: int(o.Port)})
	if !ok {
		f.count(&f.stats.Dropped)
		return
	}
	peer := l.A
	if peer == (topologies.PortRef{Node: from, Port: int(o.Port)}) {
		peer = l.B
	}
	src, dst := f.nodes[from], f.nodes[peer.Node]
	sl, dl := src.Ports.Link(o.Port), dst.Ports.Link(uint8(peer.Port))
	smp := mad.MAD(o.MAD).MgmtClass().IsSubn()
	switch {
	case sl.Phys != mad.PhysStateLinkUp || dl.Phys != mad.PhysStateLinkUp,
		smp != (o.VL == 15),
		!smp && (sl.State != mad.PortStateActive || dl.State != mad.PortStateActive):
		f.count(&f.stats.Dropped)
		return
	}
	f.count(&f.stats.Transmitted)
	src.Counters.CountXmit(o.Port, mgmtWords)
	dst.Counters.CountRcv(uint8(peer.Port), mgmtWords)
	f.arrive(dst, uint8(peer.Port), o)
}

// applyEgress shows o to Egress: it returns o as Egress left it, and gone
// when Egress dropped it or held it back. Apart from transmit, whose o
// would otherwise escape to the heap on every hop, faults or not.
func (f *Fabric) applyEgress(from int, o agent.Outbound) (agent.Outbound, bool) {
	drop, delay := f.egress(from, &o)
	switch {
	case drop:
		f.count(&f.stats.Dropped)
		return o, true
	case delay > 0:
		f.clock.AfterFunc(delay, func() {
			f.mu.Lock()
			f.push(hop{node: from, out: o, held: true})
			f.mu.Unlock()
		})
		return o, true
	}
	return o, false
}

// arrive takes a packet in at port of node n: to the agent, or on through
// the switch.
func (f *Fabric) arrive(n *Node, port uint8, o agent.Outbound) {
	a := n.Agent
	if o.DLID == mad.PermissiveLID || a.HasLID(port, o.DLID) {
		f.count(&f.stats.Delivered)
		f.enqueue(n.Index, a.HandleMAD(agent.Inbound{
			Port: port, SLID: o.SLID, DLID: o.DLID, SL: o.SL,
			SrcQP: o.SrcQP, DstQP: o.DestQP, PKey: o.PKey, MAD: o.MAD,
			Owned: len(o.MAD) >= mad.MADSize, // a packet has one owner: this hop's
		}))
		return
	}
	out, ok := a.OutPort(o.DLID)
	if a.Type() != mad.NodeTypeSwitch || !ok || out == 0 || out == port {
		f.count(&f.stats.Dropped)
		return
	}
	f.count(&f.stats.Switched)
	o.Port = out
	f.enqueue(n.Index, []agent.Outbound{o})
}

// SetLink takes the link at port of node down (up false: both ends lose
// the physical link and go Down) or up again (both ends LinkUp and Init),
// and reports the change to both agents, as the data planes would.
func (f *Fabric) SetLink(node int, port uint8, up bool) error {
	l, ok := f.topo.LinkAt(topologies.PortRef{Node: node, Port: int(port)})
	if !ok {
		return fmt.Errorf("memfabric: %s port %d is not cabled", f.nodes[node].Name, port)
	}
	ls := trained(l)
	if !up {
		ls.State, ls.Phys = mad.PortStateDown, mad.PhysStatePolling
	}
	for _, end := range []topologies.PortRef{l.A, l.B} {
		f.nodes[end.Node].Ports.SetLink(uint8(end.Port), ls)
	}
	for _, end := range []topologies.PortRef{l.A, l.B} {
		f.nodes[end.Node].Agent.PortStateChanged(uint8(end.Port))
	}
	return nil
}

// portChanged follows an SM-made change of a port to the link's other
// end: a port set Down retrains, which the peer sees as Down then Init;
// a disabled port takes the link down, an enabled one brings it back.
func (f *Fabric) portChanged(node int, port uint8) {
	l, ok := f.topo.LinkAt(topologies.PortRef{Node: node, Port: int(port)})
	if !ok {
		return
	}
	peer := l.A
	if peer == (topologies.PortRef{Node: node, Port: int(port)}) {
		peer = l.B
	}
	self, other := f.nodes[node], f.nodes[peer.Node]
	ls, ps := self.Ports.Link(port), other.Ports.Link(uint8(peer.Port))
	switch {
	case ls.Phys == mad.PhysStateDisabled || ps.Phys == mad.PhysStateDisabled:
		if ps.Phys == mad.PhysStateLinkUp {
			other.Ports.SetLink(uint8(peer.Port), agent.LinkState{State: mad.PortStateDown, Phys: mad.PhysStatePolling,
				Width: ps.Width, Speed: ps.Speed})
			other.Agent.PortStateChanged(uint8(peer.Port))
		}
	case ls.Phys == mad.PhysStatePolling:
		_ = f.SetLink(node, port, true) // re-enabled: train again
	case ls.State == mad.PortStateInit:
		// This end was set Down and retrained: the peer went Down with
		// it and came back in Init.
		down := ps
		down.State = mad.PortStateDown
		other.Ports.SetLink(uint8(peer.Port), down)
		other.Agent.PortStateChanged(uint8(peer.Port))
		other.Ports.SetLink(uint8(peer.Port), trained(l))
		other.Agent.PortStateChanged(uint8(peer.Port))
	}
}
