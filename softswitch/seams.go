package softswitch

import (
	"errors"

	"ibfab/agent"
	"ibfab/internal/port"
	"ibfab/wire/mad"
)

// errNoPort is what the agent gets for a state change of an uncabled port.
var errNoPort = errors.New("softswitch: port not cabled")

// portControl is the switch seen by its agent as agent.PortControl.
type portControl Switch

// counters is the switch seen by its agent's PMA as agent.Counters.
type counters Switch

var (
	_ agent.PortControl = (*portControl)(nil)
	_ agent.Counters    = (*counters)(nil)
)

// Link implements agent.PortControl.
func (c *portControl) Link(n uint8) agent.LinkState {
	p := (*Switch)(c).Port(n)
	if p == nil {
		return agent.LinkState{State: mad.PortStateDown, Phys: mad.PhysStateDisabled}
	}
	st := p.State()
	return agent.LinkState{State: st.Port, Phys: st.Phys, Width: c.width, Speed: c.speed}
}

// SetState implements agent.PortControl.
func (c *portControl) SetState(n uint8, s mad.PortState) error {
	p := (*Switch)(c).Port(n)
	if p == nil {
		return errNoPort
	}
	return p.SetState(s)
}

// SetPhysState implements agent.PortControl.
func (c *portControl) SetPhysState(n uint8, s mad.PhysState) error {
	p := (*Switch)(c).Port(n)
	if p == nil {
		return errNoPort
	}
	return p.SetPhysState(s)
}

// Configure implements agent.PortControl: it applies the operational VLs
// and the VL arbitration the SM set. Addressing needs nothing here: the
// crossbar reads LIDs and tables from the agent per packet.
func (c *portControl) Configure(n uint8, pc agent.PortConfig) {
	p := (*Switch)(c).Port(n)
	if p == nil {
		return
	}
	if vls := mad.NumDataVLs(pc.OperationalVLs); vls > 0 {
		// The agent checked the code against VLCap; a port with fewer
		// VLs than the agent advertises keeps what it has.
		_ = p.SetOperationalVLs(min(vls, p.Config().DataVLs))
	}
	(*Switch)(c).syncArbitration(n)
}

// syncArbitration pushes the agent's VL arbitration tables of port n to
// the port once the SM has programmed them. Until then (every weight 0,
// the agent's state after reset) the port keeps its default round robin,
// which serves what an empty table would starve.
func (s *Switch) syncArbitration(n uint8) {
	p := s.Port(n)
	if p == nil {
		return
	}
	cfg := s.agent.VLArbitration(n)
	a := port.Arbitration{HighLimit: cfg.VLHighLimit}
	programmed := false
	for i := range cfg.High {
		if i < int(cfg.HighCap) {
			a.High[i] = cfg.High[i]
			programmed = programmed || cfg.High[i].Weight != 0
		}
		if i < int(cfg.LowCap) {
			a.Low[i] = cfg.Low[i]
			programmed = programmed || cfg.Low[i].Weight != 0
		}
	}
	if programmed && a != p.VLArbitration() {
		p.SetVLArbitration(a)
	}
}

// PortCounters implements agent.Counters; port 0 has no link and counts
// nothing.
func (c *counters) PortCounters(n uint8) mad.PortCountersFields {
	if p := (*Switch)(c).Port(n); p != nil {
		return p.Counters()
	}
	return mad.PortCountersFields{}
}

// PortCountersExtended implements agent.Counters.
func (c *counters) PortCountersExtended(n uint8) mad.PortCountersExtendedFields {
	if p := (*Switch)(c).Port(n); p != nil {
		return p.CountersExtended()
	}
	return mad.PortCountersExtendedFields{}
}

// ResetPortCounters implements agent.Counters.
func (c *counters) ResetPortCounters(n uint8, sel uint16, sel2 uint8) {
	if p := (*Switch)(c).Port(n); p != nil {
		p.ResetCounters(sel, sel2)
	}
}

// ResetPortCountersExtended implements agent.Counters.
func (c *counters) ResetPortCountersExtended(n uint8, sel uint16) {
	if p := (*Switch)(c).Port(n); p != nil {
		p.ResetCountersExtended(sel)
	}
}
