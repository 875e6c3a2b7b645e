package softswitch

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/link"
	"ibfab/port"
	"ibfab/portagent"
	"ibfab/wire/mad"
)

// ErrConfig is wrapped by the errors New returns for a bad Config.
var ErrConfig = errors.New("softswitch: bad config")

// Config describes one soft switch.
type Config struct {
	// Name names the switch in errors (a net file's node id).
	Name string
	// NumPorts counts the physical ports, 1..254; port 0 is the
	// management port.
	NumPorts int
	// NodeGUID must not be 0; SystemImageGUID 0 means NodeGUID.
	NodeGUID, SystemImageGUID uint64
	Description               string
	VendorID                  uint32
	DeviceID                  uint16
	// EnhancedPort0 makes the management port an enhanced port 0.
	EnhancedPort0 bool
	// Ports holds the endpoint of each physical port, indexed by port
	// number (index 0, the management port, is ignored); nil or missing
	// entries are uncabled ports. The switch owns the endpoints: Close
	// closes them.
	Ports []link.Endpoint
	// PortConfig is the template of every port's configuration. Its
	// Clock, OnStateChange, OnRelease and TxQueueLimit are the switch's
	// own.
	PortConfig port.Config
	// PortRates are the cable rates of ports by number where they differ
	// from PortConfig's, the silicon's (a switch of NDR with HDR cables
	// to its hosts); missing or zero entries are PortConfig's.
	PortRates []port.Rate
	// Clock is the time source of the ports and the agent; nil means
	// clock.Real().
	Clock clock.Clock
	// Arch is the switch architecture (arch.go); the zero value is
	// ArchVOQ. SetArch changes it at run time.
	Arch Arch
}

// Stats counts what the crossbar did. Drops are counted on the ports.
type Stats struct {
	Forwarded   uint64 // unicast packets handed to an output port
	Multicast   uint64 // multicast packets handed to at least one output port
	ToAgent     uint64 // MADs given to the agent
	FromAgent   uint64 // packets the agent's Outbounds were sent as
	LocalMADs   uint64 // Outbounds for a local SM, which a switch has not: discarded
	SendFailed  uint64 // packets an output port refused (counted there by cause)
	BadOutbound uint64 // Outbounds naming a port that does not exist or is uncabled
	FECNMarked  uint64 // packets marked with FECN (cc.go)
}

// stats is Stats kept with atomics.
type stats struct {
	forwarded, multicast, toAgent, fromAgent, localMADs, sendFailed, badOutbound, fecnMarked atomic.Uint64
}

// Switch is one soft switch: its ports, its agent and the crossbar between
// them. All methods are safe for concurrent use.
type Switch struct {
	agent *agent.Agent
	// ports[n] is physical port n, nil when uncabled; stored once, in New
	// or by AddPort (a hot-added cable), never replaced.
	ports []atomic.Pointer[port.Port]
	pc    port.Config // the template AddPort completes
	stats stats
	cc    ccState // FECN marking (cc.go)

	arch   atomic.Uint32 // Arch
	iq     []inQueue     // by input port: the IQ architecture's FIFOs (arch.go)
	counts []portCounts  // by port: adapted, received, watched (adaptive.go)
	watch  atomic.Pointer[lidSet]

	// mu orders AddPort against Close, so that no port is added to a
	// closed switch and left running.
	mu     sync.Mutex
	closed bool
}

// New builds the switch cfg describes and starts its ports: each trains as
// soon as its peer is there. The switch starts as after reset (no LIDs,
// empty forwarding tables), waiting for the SM.
func New(cfg Config) (*Switch, error) {
	n := &cfg
	switch {
	case n.NodeGUID == 0:
		return nil, fmt.Errorf("%w: node %q has no GUID", ErrConfig, n.Name)
	case n.NumPorts < 1 || n.NumPorts > 254:
		return nil, fmt.Errorf("%w: node %q has %d ports", ErrConfig, n.Name, n.NumPorts)
	case len(cfg.Ports) > n.NumPorts+1:
		return nil, fmt.Errorf("%w: %d endpoints for %d ports", ErrConfig, len(cfg.Ports)-1, n.NumPorts)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	pc := cfg.PortConfig
	pc.Clock = cfg.Clock
	pc.TxQueueLimit = 0
	pc.VLBlocks = slices.Clone(pc.VLBlocks)
	s := &Switch{ports: make([]atomic.Pointer[port.Port], n.NumPorts+1), pc: pc,
		iq: make([]inQueue, n.NumPorts+1), counts: make([]portCounts, n.NumPorts+1)}
	if err := s.SetArch(cfg.Arch); err != nil {
		return nil, err
	}
	s.cc.seen = make([][port.MaxDataVLs]atomic.Uint64, n.NumPorts+1)
	// The silicon: every width and speed its ports' cable rate trains at.
	wsup, ssup := link.Supported(pc.CableRate())
	a, err := agent.New(agent.Config{
		Type:            mad.NodeTypeSwitch,
		NumPorts:        uint8(n.NumPorts),
		NodeGUID:        n.NodeGUID,
		SystemImageGUID: n.SystemImageGUID,
		Description:     n.Description,
		VendorID:        n.VendorID,
		DeviceID:        n.DeviceID,
		EnhancedPort0:   n.EnhancedPort0,
		// External ports hold P_Key tables and enforce them when the
		// SM sets PartitionEnforcementInbound/Outbound (forward.go).
		PartitionEnforcementCap: agent.DefaultPartitionEnforcementCap,
		VLCap:                   portagent.VLCap(pc.DataVLs),
		WidthSupported:          wsup, SpeedSupported: ssup,
		Ports: &portagent.Control{Silicon: port.Rate{Width: pc.Width, Speed: pc.Speed}, Ports: s.Port, OnConfigure: func(n uint8, _ *port.Port, _ agent.PortConfig) {
			s.syncArbitration(n)
		}},
		Counters: portagent.Counters(s.Port),
		Clock:    cfg.Clock,
		Sender:   agent.SenderFunc(s.sendOutbound),
	})
	if err != nil {
		return nil, fmt.Errorf("softswitch: node %q: %w", n.Name, err)
	}
	s.agent = a
	for i, ep := range cfg.Ports {
		if i == 0 || ep == nil {
			continue
		}
		c := pc
		if i < len(cfg.PortRates) {
			c = pc.WithRate(cfg.PortRates[i])
		}
		if err := s.startPort(uint8(i), ep, c); err != nil {
			s.Close()
			return nil, fmt.Errorf("softswitch: node %q port %d: %w", n.Name, i, err)
		}
	}
	return s, nil
}

// startPort runs physical port num on ep with configuration c.
func (s *Switch) startPort(num uint8, ep link.Endpoint, c port.Config) error {
	c.OnStateChange = func(_ *port.Port, from, to port.State) {
		if to.Port == mad.PortStateDown && from.Port != mad.PortStateDown {
			s.dropInput(num)
			s.dropOrphans()
		}
		s.agent.PortStateChanged(num)
	}
	c.OnRelease = func(pkt *port.Packet) { s.released(num, pkt) }
	c.Num = num
	p, err := port.New(ep, c, port.ReceiverFunc(func(p *port.Port, pkt *port.Packet) { s.receive(num, p, pkt) }))
	if err != nil {
		return err
	}
	s.ports[num].Store(p)
	// A port cabled after the marking table was built gets its
	// Threshold here; a table built from now on finds the port.
	p.SetCongestionThreshold(s.agent.CCSwitchMarking(num).Threshold)
	// The port may have changed state before it was stored, when the
	// agent could not read it yet.
	s.agent.PortStateChanged(num)
	return nil
}

// dropOrphans drops, from every port's queues, the packets whose input
// port has gone Down since they arrived: the input buffer they stand for
// is gone, and with it the dependency on their output that the old routes
// made (port.Port.DropOrphans).
func (s *Switch) dropOrphans() {
	for i := range s.ports {
		if p := s.ports[i].Load(); p != nil {
			p.DropOrphans()
		}
	}
}

// ErrPortInUse is wrapped by AddPort's error for a port that is cabled.
var ErrPortInUse = errors.New("softswitch: port is cabled")

// AddPort cables physical port n, uncabled until now, to ep: a link added
// to the running switch. The port starts training with its peer at once;
// its state change reaches the agent (PortStateChange, Trap 128) like any
// other. Width and Speed come from rate, the rest of the port's
// configuration from the switch's template. The switch owns ep from then
// on; when AddPort fails, ep is closed.
func (s *Switch) AddPort(n uint8, ep link.Endpoint, width mad.LinkWidth, speed mad.LinkSpeed) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fail := func(err error) error {
		ep.Close()
		return err
	}
	switch {
	case s.closed:
		return fail(errors.New("softswitch: switch closed"))
	case n == 0 || int(n) >= len(s.ports):
		return fail(fmt.Errorf("softswitch: no port %d (the switch has ports 1-%d)", n, len(s.ports)-1))
	case s.ports[n].Load() != nil:
		return fail(fmt.Errorf("%w: port %d", ErrPortInUse, n))
	}
	c := s.pc
	c.Width, c.Speed = width, speed
	if err := s.startPort(n, ep, c); err != nil {
		return fail(fmt.Errorf("softswitch: port %d: %w", n, err))
	}
	// What the SM programmed on the uncabled port applies now.
	s.syncArbitration(n)
	return nil
}

// SetVLBlocks resizes the receive buffers of every port, cabled now or
// later, per data VL (port.Config.VLBlocks' meaning; port.SetVLBlocks
// says what happens to a buffer that holds packets).
func (s *Switch) SetVLBlocks(blocks []int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.pc.CheckVLBlocks(blocks); err != nil {
		return err
	}
	s.pc.VLBlocks = slices.Clone(blocks)
	for i := range s.ports {
		if p := s.ports[i].Load(); p != nil {
			if err := p.SetVLBlocks(blocks); err != nil {
				return fmt.Errorf("port %d: %w", i, err) // cannot happen: same template
			}
		}
	}
	return nil
}

// SetCreditSlack sets every port's credit slack (port.Config.CreditSlack),
// and the template's for ports cabled later; n must not be negative.
func (s *Switch) SetCreditSlack(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pc.CreditSlack = max(n, 0)
	for i := range s.ports {
		if p := s.ports[i].Load(); p != nil {
			p.SetCreditSlack(s.pc.CreditSlack) // cannot fail: not negative
		}
	}
}

// CreditSlack returns the ports' credit slack.
func (s *Switch) CreditSlack() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pc.CreditSlack
}

// VLBlocks returns the per-VL receive buffer sizes the ports were last
// given (nil: RxBlocks on every VL).
func (s *Switch) VLBlocks() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pc.VLBlocks)
}

// ResetDownstream makes every port learn its peer's buffers afresh
// (port.ResetDownstream): after the buffers of the switch's neighbours
// changed at run time, on an idle fabric.
func (s *Switch) ResetDownstream() {
	for i := range s.ports {
		if p := s.ports[i].Load(); p != nil {
			p.ResetDownstream()
		}
	}
}

// Close stops the agent's timers and closes every port and its endpoint.
// It must not be called from a port's callbacks.
func (s *Switch) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if s.agent != nil {
		s.agent.Close()
	}
	for i := range s.ports {
		if p := s.ports[i].Load(); p != nil {
			p.Close()
		}
	}
}

// Agent returns the switch's SMA and PMA.
func (s *Switch) Agent() *agent.Agent { return s.agent }

// Port returns physical port n, or nil when it is uncabled or does not
// exist.
func (s *Switch) Port(n uint8) *port.Port {
	if int(n) >= len(s.ports) {
		return nil
	}
	return s.ports[n].Load()
}

// NumPorts returns the number of physical ports.
func (s *Switch) NumPorts() uint8 { return uint8(len(s.ports) - 1) }

// Stats returns a snapshot of the crossbar's counters.
func (s *Switch) Stats() Stats {
	return Stats{
		Forwarded:   s.stats.forwarded.Load(),
		Multicast:   s.stats.multicast.Load(),
		ToAgent:     s.stats.toAgent.Load(),
		FromAgent:   s.stats.fromAgent.Load(),
		LocalMADs:   s.stats.localMADs.Load(),
		SendFailed:  s.stats.sendFailed.Load(),
		BadOutbound: s.stats.badOutbound.Load(),
		FECNMarked:  s.stats.fecnMarked.Load(),
	}
}

// Drops returns the drops by cause summed over all ports.
func (s *Switch) Drops() port.DropCounts {
	var d port.DropCounts
	for i := range s.ports {
		if p := s.ports[i].Load(); p != nil {
			pd := p.Drops()
			for c := range d {
				d[c] += pd[c]
			}
		}
	}
	return d
}
