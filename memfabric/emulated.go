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

// Counters is an in-memory agent.Counters for ports 0..n.
type Counters struct {
	// mu protects pc and ext.
	mu  sync.Mutex
	pc  []mad.PortCountersFields
	ext []mad.PortCountersExtendedFields
}

var _ agent.Counters = (*Counters)(nil)

// NewCounters returns zeroed counters for ports 0..n.
func NewCounters(n uint8) *Counters {
	return &Counters{pc: make([]mad.PortCountersFields, int(n)+1), ext: make([]mad.PortCountersExtendedFields, int(n)+1)}
}

// Set replaces port's counters.
func (c *Counters) Set(port uint8, pc mad.PortCountersFields, ext mad.PortCountersExtendedFields) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) < len(c.pc) {
		c.pc[port], c.ext[port] = pc, ext
	}
}

// CountXmit counts one packet of words 4-byte words sent from port.
func (c *Counters) CountXmit(port uint8, words uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) < len(c.pc) {
		p, x := &c.pc[port], &c.ext[port]
		p.PortXmitPkts = mad.SatAdd(p.PortXmitPkts, 1)
		p.PortXmitData = mad.SatAdd(p.PortXmitData, words)
		x.PortXmitPkts = mad.SatAdd(x.PortXmitPkts, 1)
		x.PortXmitData = mad.SatAdd(x.PortXmitData, words)
		x.PortUnicastXmitPkts = mad.SatAdd(x.PortUnicastXmitPkts, 1)
	}
}

// CountRcv counts one packet of words 4-byte words received on port.
func (c *Counters) CountRcv(port uint8, words uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) < len(c.pc) {
		p, x := &c.pc[port], &c.ext[port]
		p.PortRcvPkts = mad.SatAdd(p.PortRcvPkts, 1)
		p.PortRcvData = mad.SatAdd(p.PortRcvData, words)
		x.PortRcvPkts = mad.SatAdd(x.PortRcvPkts, 1)
		x.PortRcvData = mad.SatAdd(x.PortRcvData, words)
		x.PortUnicastRcvPkts = mad.SatAdd(x.PortUnicastRcvPkts, 1)
	}
}

// PortCounters implements agent.Counters.
func (c *Counters) PortCounters(port uint8) mad.PortCountersFields {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) >= len(c.pc) {
		return mad.PortCountersFields{}
	}
	return c.pc[port]
}

// PortCountersExtended implements agent.Counters.
func (c *Counters) PortCountersExtended(port uint8) mad.PortCountersExtendedFields {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) >= len(c.ext) {
		return mad.PortCountersExtendedFields{}
	}
	return c.ext[port]
}

// ResetPortCounters implements agent.Counters.
func (c *Counters) ResetPortCounters(port uint8, sel uint16, sel2 uint8) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) < len(c.pc) {
		c.pc[port].Reset(sel, sel2)
	}
}

// ResetPortCountersExtended implements agent.Counters.
func (c *Counters) ResetPortCountersExtended(port uint8, sel uint16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int(port) < len(c.ext) {
		c.ext[port].Reset(sel)
	}
}
