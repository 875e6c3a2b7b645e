package portagent

import (
	"errors"

	"ibfab/agent"
	"ibfab/link"
	"ibfab/port"
	"ibfab/wire/mad"
)

// ErrNoPort is what the agent gets for a state change of a port the node
// does not have (or has not cabled).
var ErrNoPort = errors.New("portagent: no such port")

// Ports returns port n (1..NumPorts) of a node, nil when there is none.
type Ports func(n uint8) *port.Port

// Control is agent.PortControl over a node's ports.
type Control struct {
	Ports Ports
	// OnConfigure, when set, is called after Configure applied the
	// operational VLs, for the node's own part of a PortInfo Set.
	OnConfigure func(n uint8, p *port.Port, c agent.PortConfig)
	// Silicon is the rate of the node's ports, what an uncabled one
	// supports; zero means port.DefaultWidth and DefaultSpeed.
	Silicon port.Rate
}

// Counters is agent.Counters over a node's ports; ports the node does not
// have count nothing.
type Counters Ports

var (
	_ agent.PortControl        = (*Control)(nil)
	_ agent.ArbitrationControl = (*Control)(nil)
	_ agent.Counters           = Counters(nil)
)

// Link implements agent.PortControl.
func (c *Control) Link(n uint8) agent.LinkState {
	p := c.Ports(n)
	if p == nil {
		// An uncabled port polls for a peer, as on silicon (and as the
		// node's status reports it), and reports the valid widths and
		// speeds of a port of the node's silicon, never 0.
		cw, cs := port.Config{}.WithRate(c.Silicon).CableRate()
		w, s := link.Supported(cw, cs)
		return agent.LinkState{State: mad.PortStateDown, Phys: mad.PhysStatePolling,
			Width: cw, Speed: cs, WidthSupported: w, WidthEnabled: w, SpeedSupported: s, SpeedEnabled: s}
	}
	st, r := p.State(), p.LinkRate()
	return agent.LinkState{State: st.Port, Phys: st.Phys, Width: r.WidthActive, Speed: r.SpeedActive,
		WidthSupported: r.WidthSupported, WidthEnabled: r.WidthEnabled,
		SpeedSupported: r.SpeedSupported, SpeedEnabled: r.SpeedEnabled}
}

// SetState implements agent.PortControl.
func (c *Control) SetState(n uint8, s mad.PortState) error {
	p := c.Ports(n)
	if p == nil {
		return ErrNoPort
	}
	return p.SetState(s)
}

// SetPhysState implements agent.PortControl.
func (c *Control) SetPhysState(n uint8, s mad.PhysState) error {
	p := c.Ports(n)
	if p == nil {
		return ErrNoPort
	}
	return p.SetPhysState(s)
}

// VLCap returns the PortInfo VLCap code of ports built with dataVLs data
// VLs (0: port.DefaultDataVLs), and 0 for a count IBA does not allow. A
// node's agent advertises it, so that a port runs exactly the VLs its
// PortInfo offers and the SM can never ask for one it lacks.
func VLCap(dataVLs int) uint8 {
	if dataVLs == 0 {
		dataVLs = port.DefaultDataVLs
	}
	for code := uint8(1); code <= 5; code++ {
		if mad.NumDataVLs(code) == dataVLs {
			return code
		}
	}
	return 0
}

// Configure implements agent.PortControl: it applies OperationalVLs, then
// calls OnConfigure. The agent checked the code against VLCap, the port's
// own data VLs (see VLCap), so the port takes it.
func (c *Control) Configure(n uint8, pc agent.PortConfig) {
	p := c.Ports(n)
	if p == nil {
		return
	}
	if vls := mad.NumDataVLs(pc.OperationalVLs); vls > 0 {
		_ = p.SetOperationalVLs(vls) // 1, 2, 4, 8 or 15, at most VLCap's
	}
	if pc.LinkWidthEnabled != 0 || pc.LinkSpeedEnabled != 0 {
		// Checked by the agent against what Link reported supported; the
		// link trains at them the next time it trains.
		_ = p.SetLinkEnabled(pc.LinkWidthEnabled, pc.LinkSpeedEnabled)
	}
	if c.OnConfigure != nil {
		c.OnConfigure(n, p, pc)
	}
}

// SetVLArbitration implements agent.ArbitrationControl: port n's arbiter
// runs the tables and VLHighLimit the SM set, exactly (a table of zero
// weights sends nothing, as on silicon).
func (c *Control) SetVLArbitration(n uint8, cfg agent.VLArbConfig) {
	p := c.Ports(n)
	if p == nil {
		return
	}
	a := port.Arbitration{High: cfg.High, Low: cfg.Low, HighLimit: cfg.VLHighLimit}
	if a != p.VLArbitration() {
		p.SetVLArbitration(a)
	}
}

// PortCounters implements agent.Counters.
func (c Counters) PortCounters(n uint8) mad.PortCountersFields {
	if p := c(n); p != nil {
		return p.Counters()
	}
	return mad.PortCountersFields{}
}

// PortCountersExtended implements agent.Counters.
func (c Counters) PortCountersExtended(n uint8) mad.PortCountersExtendedFields {
	if p := c(n); p != nil {
		return p.CountersExtended()
	}
	return mad.PortCountersExtendedFields{}
}

// ResetPortCounters implements agent.Counters.
func (c Counters) ResetPortCounters(n uint8, sel uint16, sel2 uint8) {
	if p := c(n); p != nil {
		p.ResetCounters(sel, sel2)
	}
}

// ResetPortCountersExtended implements agent.Counters.
func (c Counters) ResetPortCountersExtended(n uint8, sel uint16) {
	if p := c(n); p != nil {
		p.ResetCountersExtended(sel)
	}
}

var _ agent.OptionalCounters = Counters(nil)

// OptionalCounters implements agent.OptionalCounters.
func (c Counters) OptionalCounters(n uint8, a mad.AttrID, op uint8) ([mad.PMAMaxCounters]uint64, bool) {
	if p := c(n); p != nil {
		return p.OptionalCounters(a, op)
	}
	return [mad.PMAMaxCounters]uint64{}, port.CountsOptional(a)
}

// ResetOptionalCounters implements agent.OptionalCounters.
func (c Counters) ResetOptionalCounters(n uint8, a mad.AttrID, op uint8, sel uint16) {
	if p := c(n); p != nil {
		p.ResetOptionalCounters(a, op, sel)
	}
}
