package memport

import (
	"context"
	"fmt"
	"sync"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/madport"
	"ibfab/memfabric"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Port is a madport.Port at one node's port of an memfabric.Fabric.
type Port struct {
	f    *memfabric.Fabric
	node int
	port uint8

	// mu serializes the fabric's use and protects everything below: the
	// port's own, or its Group's, shared by every port of the group.
	mu     *sync.Mutex
	group  *Group
	inbox  []madport.MAD
	closed bool
	wake   chan struct{} // closed and replaced when inbox grows, on Close, or (in a group) when time passes
	// idle: Recv waits with nothing queued, or (in a group) no goroutine
	// has used the port yet; a group moves the clock only when all its
	// open ports are idle. waiting: a Recv is blocked on wake.
	idle    bool
	waiting bool
	filter  func(madport.MAD) bool
	stats   Stats
}

var _ madport.Port = (*Port)(nil)

// Stats counts what went through a Port.
type Stats struct {
	Sent     uint64 // MADs given to Send and passed into the fabric
	Filtered uint64 // MADs given to Send that the filter dropped
	Received uint64 // MADs Recv returned
	Advances uint64 // times Recv moved the clock to its next timer
}

// New returns the Port of node (a topology index) at port: a CA port
// 1..NumPorts, or 0 on a switch.
func New(f *memfabric.Fabric, node int, port uint8) (*Port, error) {
	if node < 0 || node >= len(f.Nodes()) {
		return nil, fmt.Errorf("memport: no node %d", node)
	}
	n := f.Topology().Node(node)
	switch {
	case n.Type == topologies.Switch && port != 0:
		return nil, fmt.Errorf("memport: %s is a switch: its SM sits on port 0, not %d", n.Name, port)
	case n.Type == topologies.CA && (port == 0 || int(port) > n.NumPorts):
		return nil, fmt.Errorf("memport: %s has ports 1 to %d, not %d", n.Name, n.NumPorts, port)
	case n.Type != topologies.Switch && n.Type != topologies.CA:
		return nil, fmt.Errorf("memport: %s is a %v", n.Name, n.Type)
	}
	return &Port{f: f, node: node, port: port, mu: new(sync.Mutex), wake: make(chan struct{})}, nil
}

// Fabric returns the fabric the port belongs to.
func (p *Port) Fabric() *memfabric.Fabric { return p.f }

// Clock returns the fabric's manual clock, the one Recv advances: the
// clock a caller should schedule its timeouts on.
func (p *Port) Clock() clock.Clock { return p.f.Clock() }

// SetFilter makes Send pass a MAD into the fabric only when keep returns
// true for it, as a lossy link would; the others are counted and lost.
// nil keeps everything.
func (p *Port) SetFilter(keep func(m madport.MAD) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.filter = keep
}

// Stats returns the port's counters.
func (p *Port) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Send implements madport.Port: the MAD enters the node's SMI as its own
// SM's (m.LID is the DLID of a LID-routed MAD or prefix, or the SLID of
// the request a directed-route response answers), and the fabric runs
// until nothing is in flight.
func (p *Port) Send(m madport.MAD) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return madport.ErrClosed
	}
	if len(m.Data) != madport.MADSize {
		return fmt.Errorf("memport: MAD of %d bytes, want %d", len(m.Data), madport.MADSize)
	}
	p.idle = false // its goroutine is at work
	if p.filter != nil && !p.filter(m) {
		p.stats.Filtered++
		return nil
	}
	p.stats.Sent++
	p.f.Send(p.node, agent.Request{Port: p.port, DLID: m.LID, SL: m.SL, DestQP: m.QP,
		PKey: mad.PKey(m.PKey), MAD: m.Data})
	p.f.Run()
	p.collectLocked()
	return nil
}

// collectLocked moves what the fabric delivered into the inbox of the
// port, and in a group of every port of it; mu held.
func (p *Port) collectLocked() {
	if p.group == nil {
		p.collectOwnLocked()
		return
	}
	for _, q := range p.group.ports {
		q.collectOwnLocked()
	}
}

// collectOwnLocked moves what the fabric delivered to the port's node into
// its inbox, and wakes its Recv; mu held. Deliveries for another port of
// the node are dropped.
func (p *Port) collectOwnLocked() {
	if p.closed {
		p.f.Received(p.node) // nobody reads there any more
		return
	}
	got := false
	for _, d := range p.f.Received(p.node) {
		if d.Port != p.port {
			continue
		}
		p.inbox = append(p.inbox, madport.MAD{LID: d.SLID, QP: d.SrcQP, QKey: d.QKey, SL: d.SL,
			PKey: uint16(d.PKey), Data: d.MAD})
		got = true
	}
	if got {
		p.idle = false
		p.wakeLocked()
	}
}

// wakeLocked wakes a Recv waiting on the port; mu held.
func (p *Port) wakeLocked() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// Recv implements madport.Port. It returns a queued MAD even when ctx has
// ended, so a Recv with an ended context polls. With nothing queued it
// advances the fabric's clock to the next timer and looks again (in a
// Group, only once every open port of the group waits so); it blocks only
// when no timer is pending, until a Send from another goroutine, ctx's end
// or Close.
func (p *Port) Recv(ctx context.Context) (madport.MAD, error) {
	advances := 0
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return madport.MAD{}, madport.ErrClosed
		}
		// Whatever was injected into the fabric from elsewhere moves now.
		p.f.Run()
		p.collectLocked()
		if len(p.inbox) > 0 {
			m := p.inbox[0]
			p.inbox = p.inbox[1:]
			p.stats.Received++
			p.idle = false
			p.mu.Unlock()
			return m, nil
		}
		if err := ctx.Err(); err != nil {
			p.idle = false
			p.mu.Unlock()
			return madport.MAD{}, err
		}
		p.idle = true
		if advances < maxAdvances && p.mayAdvanceLocked() && p.f.Clock().AdvanceToNext() {
			advances++
			// Time passes only while the fabric is idle: timers fire (the
			// caller's timeouts, agents' trap repeats), then the fabric
			// moves what they sent.
			p.stats.Advances++
			p.f.Run()
			p.collectLocked()
			p.timePassedLocked()
			p.mu.Unlock()
			continue
		}
		wake := p.wake
		p.waiting = true
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.idle, p.waiting = false, false
			p.mu.Unlock()
			return madport.MAD{}, ctx.Err()
		case <-wake:
			p.mu.Lock()
			p.waiting = false
			p.mu.Unlock()
		}
	}
}

// maxAdvances bounds the clock advances of one Recv: timers that keep
// rescheduling themselves without ever reaching the caller (a trap the
// fabric cannot route, repeated forever) must not spin Recv.
const maxAdvances = 1 << 16

// Info implements madport.Port from the node's agent and ports.
func (p *Port) Info() (madport.Info, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return madport.Info{}, madport.ErrClosed
	}
	n := p.f.Node(p.node)
	tn := p.f.Topology().Node(p.node)
	c := n.Agent.PortConfig(p.port)
	state := mad.PortStateActive // a switch's port 0
	if p.port != 0 {
		state = n.Ports.Link(p.port).State
	}
	return madport.Info{NodeGUID: tn.GUID, PortGUID: tn.Ports[p.port].GUID, PortNum: p.port,
		LID: c.LID, SMLID: c.MasterSMLID, State: uint8(state)}, nil
}

// SetIsSM implements madport.Port: the IsSM capability of the node's port.
func (p *Port) SetIsSM(on bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return madport.ErrClosed
	}
	return p.f.Node(p.node).Agent.SetIsSM(p.port, on)
}

// Close implements madport.Port. It does not close the fabric.
func (p *Port) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.wake)
		if p.group != nil {
			// The others may now be all that is left waiting.
			p.group.wakeLocked()
		}
	}
	return nil
}
