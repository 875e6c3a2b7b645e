package memfabric

import (
	"errors"
	"sync"

	"ibfab/agent"
	"ibfab/wire/mad"
)

// Ports is an in-memory agent.PortControl: a port state machine that
// changes state at once when asked. Ports start Polling and Down, as
// uncabled ports are; SetLink sets what the link layer would report.
type Ports struct {
	// mu protects links, configs, calls and onChange.
	mu       sync.Mutex
	links    []agent.LinkState
	configs  []agent.PortConfig
	calls    []string
	record   bool // see RecordCalls
	onChange func(port uint8)
	refuse   bool // see Refuse
}

var _ agent.PortControl = (*Ports)(nil)

// ErrRefused is what Ports returns while refusing changes.
var ErrRefused = errors.New("memfabric: port refused the change")

// NewPorts returns the ports 1..n of a node (index 0 is a switch's
// port 0, which the agent does not ask about), all Polling and Down.
func NewPorts(n uint8) *Ports {
	f := &Ports{links: make([]agent.LinkState, int(n)+1), configs: make([]agent.PortConfig, int(n)+1)}
	for i := range f.links {
		f.links[i] = agent.LinkState{State: mad.PortStateDown, Phys: mad.PhysStatePolling,
			Width: mad.LinkWidth4X, Speed: mad.LinkSpeedSDR}
	}
	return f
}

// SetLink sets what Link reports for port. It does not tell the agent:
// call Agent.PortStateChanged, as the data plane would.
func (f *Ports) SetLink(port uint8, ls agent.LinkState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if int(port) < len(f.links) {
		f.links[port] = ls
	}
}

// OnChange registers fn, called (without Ports' lock) after SetState
// or SetPhysState changed port: the hook a fabric uses to tell the peer.
func (f *Ports) OnChange(fn func(port uint8)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onChange = fn
}

// Refuse makes later SetState and SetPhysState calls fail (on), as the
// ports of a node going away would, or succeed again.
func (f *Ports) Refuse(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse = on
}

// Link implements agent.PortControl.
func (f *Ports) Link(port uint8) agent.LinkState {
	f.mu.Lock()
	defer f.mu.Unlock()
	if int(port) >= len(f.links) {
		return agent.LinkState{State: mad.PortStateDown, Phys: mad.PhysStateDisabled}
	}
	return f.links[port]
}

// SetState implements agent.PortControl. Down retrains at once: a port
// whose physical link is up comes back in Init.
func (f *Ports) SetState(port uint8, s mad.PortState) error {
	f.mu.Lock()
	if f.refuse || int(port) >= len(f.links) {
		f.mu.Unlock()
		return ErrRefused
	}
	l := &f.links[port]
	switch {
	case s == mad.PortStateDown && l.Phys == mad.PhysStateLinkUp:
		l.State = mad.PortStateInit
	default:
		l.State = s
	}
	f.logCall("SetState " + s.String())
	fn := f.onChange
	f.mu.Unlock()
	if fn != nil {
		fn(port)
	}
	return nil
}

// SetPhysState implements agent.PortControl. Disabled takes the link
// down; Polling re-enables a disabled port, which the fabric brings up
// again when it is cabled.
func (f *Ports) SetPhysState(port uint8, s mad.PhysState) error {
	f.mu.Lock()
	if f.refuse || int(port) >= len(f.links) {
		f.mu.Unlock()
		return ErrRefused
	}
	l := &f.links[port]
	switch s {
	case mad.PhysStateDisabled:
		l.Phys, l.State = mad.PhysStateDisabled, mad.PortStateDown
	case mad.PhysStatePolling:
		if l.Phys == mad.PhysStateDisabled {
			l.Phys = mad.PhysStatePolling
		}
	}
	f.logCall("SetPhysState " + s.String())
	fn := f.onChange
	f.mu.Unlock()
	if fn != nil {
		fn(port)
	}
	return nil
}

// Configure implements agent.PortControl. Enabled widths and speeds are
// what Link reports from now on, as a port's (port.SetLinkEnabled); the
// active ones change at the next training.
func (f *Ports) Configure(port uint8, c agent.PortConfig) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if int(port) < len(f.configs) {
		f.configs[port] = c
		if c.LinkWidthEnabled != 0 {
			f.links[port].WidthEnabled = c.LinkWidthEnabled
		}
		if c.LinkSpeedEnabled != 0 {
			f.links[port].SpeedEnabled = c.LinkSpeedEnabled
		}
	}
	f.logCall("Configure")
}

// Config returns the configuration last given to port.
func (f *Ports) Config(port uint8) agent.PortConfig {
	f.mu.Lock()
	defer f.mu.Unlock()
	if int(port) >= len(f.configs) {
		return agent.PortConfig{}
	}
	return f.configs[port]
}

// RecordCalls makes the Ports keep the state-changing calls made from now
// on, for Calls. Only tests ask: a fabric's ports keep none, since the log
// grows with every Set an SM sends (7.5 MB on a 9,200-node plane after one
// OpenSM sweep, the second largest item of its heap).
func (f *Ports) RecordCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record = true
}

// logCall appends c to the calls when they are recorded; mu held.
func (f *Ports) logCall(c string) {
	if f.record {
		f.calls = append(f.calls, c)
	}
}

// Calls returns the state-changing calls made since RecordCalls, e.g.
// "SetState Armed", in order.
func (f *Ports) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Counters is an in-memory agent.Counters for ports 0..n. The fabric
// counts only packets and data, so a port keeps those ten counters
// (64 B); one given other values by Set keeps the whole PortCounters and
// PortCountersExtended (120 B) instead. A 9,200-node fabric has 74,400
// ports: the whole records were 8.5 MB of its heap.
type Counters struct {
	// mu protects counts and full.
	mu     sync.Mutex
	counts []portCounts
	full   map[uint8]*fullCounts // ports Set with more than counts holds
}

// portCounts is one port's packet and data counters.
type portCounts struct {
	pc  [4]uint32 // PortCounters: XmitData, RcvData, XmitPkts, RcvPkts
	ext [6]uint64 // PortCountersExtended: the same, then UnicastXmitPkts, UnicastRcvPkts
}

// fullCounts is every counter of a port.
type fullCounts struct {
	pc  mad.PortCountersFields
	ext mad.PortCountersExtendedFields
}

var _ agent.Counters = (*Counters)(nil)

// NewCounters returns zeroed counters for ports 0..n.
func NewCounters(n uint8) *Counters {
	return &Counters{counts: make([]portCounts, int(n)+1)}
}

// fields returns the whole counters of port as counts c holds them.
func (c *portCounts) fields() fullCounts {
	return fullCounts{
		pc: mad.PortCountersFields{PortXmitData: c.pc[0], PortRcvData: c.pc[1], PortXmitPkts: c.pc[2], PortRcvPkts: c.pc[3]},
		ext: mad.PortCountersExtendedFields{PortXmitData: c.ext[0], PortRcvData: c.ext[1], PortXmitPkts: c.ext[2],
			PortRcvPkts: c.ext[3], PortUnicastXmitPkts: c.ext[4], PortUnicastRcvPkts: c.ext[5]},
	}
}

// compact returns f as counts, and false when f has more than they hold.
func compact(f fullCounts) (portCounts, bool) {
	c := portCounts{
		pc: [4]uint32{f.pc.PortXmitData, f.pc.PortRcvData, f.pc.PortXmitPkts, f.pc.PortRcvPkts},
		ext: [6]uint64{f.ext.PortXmitData, f.ext.PortRcvData, f.ext.PortXmitPkts, f.ext.PortRcvPkts,
			f.ext.PortUnicastXmitPkts, f.ext.PortUnicastRcvPkts},
	}
	return c, c.fields() == f
}

// update applies fn to port's whole counters and stores the result, in
// the compact form when it fits; mu held, port valid.
func (c *Counters) update(port uint8, fn func(f *fullCounts)) {
	f := c.get(port)
	fn(&f)
	if pc, ok := compact(f); ok {
		c.counts[port] = pc
		delete(c.full, port)
		return
	}
	if c.full == nil {
		c.full = map[uint8]*fullCounts{}
	}
	c.full[port] = &f
}

// get returns port's whole counters; mu held, port valid.
func (c *Counters) get(port uint8) fullCounts {
	if f, ok := c.full[port]; ok {
		return *f
	}
	return c.counts[port].fields()
}

// Set replaces port's counters.
func (c *Counters) Set(port uint8, pc mad.PortCountersFields, ext mad.PortCountersExtendedFields) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) < len(c.counts) {
		c.update(port, func(f *fullCounts) { *f = fullCounts{pc: pc, ext: ext} })
	}
}

// CountXmit counts one packet of words 4-byte words sent from port.
func (c *Counters) CountXmit(port uint8, words uint64) { c.count(port, words, false) }

// CountRcv counts one packet of words 4-byte words received on port.
func (c *Counters) CountRcv(port uint8, words uint64) { c.count(port, words, true) }

// count counts one packet of words 4-byte words on port, received or
// sent.
func (c *Counters) count(port uint8, words uint64, rcv bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) >= len(c.counts) {
		return
	}
	if f, ok := c.full[port]; ok {
		data, pkts, xdata, xpkts, xuni := f.dir(rcv)
		*data = mad.SatAdd(*data, words)
		*pkts = mad.SatAdd(*pkts, 1)
		*xdata = mad.SatAdd(*xdata, words)
		*xpkts = mad.SatAdd(*xpkts, 1)
		*xuni = mad.SatAdd(*xuni, 1)
		return
	}
	// portCounts keeps a direction's counters at these indices, the
	// received one after the sent one.
	d := 0
	if rcv {
		d = 1
	}
	p := &c.counts[port]
	p.pc[0+d] = mad.SatAdd(p.pc[0+d], words)
	p.pc[2+d] = mad.SatAdd(p.pc[2+d], 1)
	p.ext[0+d] = mad.SatAdd(p.ext[0+d], words)
	p.ext[2+d] = mad.SatAdd(p.ext[2+d], 1)
	p.ext[4+d] = mad.SatAdd(p.ext[4+d], 1)
}

// dir returns the counters of one direction of f: data and packets, and
// their extended and unicast packet counterparts.
func (f *fullCounts) dir(rcv bool) (data, pkts *uint32, xdata, xpkts, xuni *uint64) {
	p, x := &f.pc, &f.ext
	if rcv {
		return &p.PortRcvData, &p.PortRcvPkts, &x.PortRcvData, &x.PortRcvPkts, &x.PortUnicastRcvPkts
	}
	return &p.PortXmitData, &p.PortXmitPkts, &x.PortXmitData, &x.PortXmitPkts, &x.PortUnicastXmitPkts
}

// PortCounters implements agent.Counters.
func (c *Counters) PortCounters(port uint8) mad.PortCountersFields {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) >= len(c.counts) {
		return mad.PortCountersFields{}
	}
	return c.get(port).pc
}

// PortCountersExtended implements agent.Counters.
func (c *Counters) PortCountersExtended(port uint8) mad.PortCountersExtendedFields {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) >= len(c.counts) {
		return mad.PortCountersExtendedFields{}
	}
	return c.get(port).ext
}

// ResetPortCounters implements agent.Counters.
func (c *Counters) ResetPortCounters(port uint8, sel uint16, sel2 uint8) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) < len(c.counts) {
		c.update(port, func(f *fullCounts) { f.pc.Reset(sel, sel2) })
	}
}

// ResetPortCountersExtended implements agent.Counters.
func (c *Counters) ResetPortCountersExtended(port uint8, sel uint16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) < len(c.counts) {
		c.update(port, func(f *fullCounts) { f.ext.Reset(sel) })
	}
}
