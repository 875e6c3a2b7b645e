package hca

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/link"
	"ibfab/port"
	"ibfab/portagent"
	"ibfab/wire/mad"
)

// Errors of New and of the send paths.
var (
	ErrConfig   = errors.New("hca: bad config")
	ErrPort     = errors.New("hca: no such port")
	ErrClosed   = errors.New("hca: closed")
	ErrUnmapped = errors.New("hca: SL not mapped to a data VL")
	ErrPayload  = errors.New("hca: payload too large")
)

// Config describes one soft HCA: the node facts its SMA reports, one link
// endpoint per port, the template every port is built from and the clock.
type Config struct {
	NodeGUID        uint64
	SystemImageGUID uint64   // 0: NodeGUID
	PortGUIDs       []uint64 // nil: NodeGUID+port, ibsim's rule
	Description     string

	// Ports are the endpoints of ports 1..len(Ports); the HCA owns them
	// from New on (Close closes them). 1..254 ports.
	Ports []link.Endpoint
	// PortConfig is the template of every port. Its Clock is replaced by
	// Config.Clock and its OnStateChange by the HCA's own.
	PortConfig port.Config
	// PortRates are the cable rates of ports 1.. (index 0 is port 1) where
	// they differ from PortConfig's, the silicon's; missing or zero
	// entries are PortConfig's.
	PortRates []port.Rate
	// Clock is the time source of the ports, the agent, the generators and
	// the latency stamps; nil means clock.Real().
	Clock clock.Clock
	// MADClient receives the MADs for an SM attached to this HCA; nil
	// drops them (counted in Stats as ClientDropped).
	MADClient MADClient
}

// HCA is one soft channel adapter: a port.Port per endpoint, one CA agent
// (SMA and PMA) for the node, the QP0/QP1 demux, a UD data QP and the
// traffic generators. All methods are safe for concurrent use.
type HCA struct {
	clk   clock.Clock
	agent *agent.Agent
	// ports[i] is port i+1. The pointers are set once in New, but a port
	// may report a state change (and the agent read the ports) while later
	// ports are still being built, hence atomics.
	ports []atomic.Pointer[port.Port]
	pstat []portStats // receive accounting, per port
	lids  []atomic.Uint32
	lmcs  []atomic.Uint32 // the LMC the SM gave each port
	ccas  []*cca          // each port's congestion control agent
	mc    MADClient

	clientDropped atomic.Uint64

	mu struct {
		sync.Mutex
		closed bool
		gens   map[uint8]*Generator
		flows  map[uint32]*flow
	}
	// flowBucket is the interval of the receivers' per-flow time series,
	// in ns, for records created from now on.
	flowBucket atomic.Int64
}

// New builds the HCA: its agent, then one port per endpoint. The ports start
// Down and train to Init as soon as their peers answer.
func New(cfg Config) (*HCA, error) {
	n := len(cfg.Ports)
	if n == 0 || n > 254 {
		return nil, fmt.Errorf("%w: %d ports", ErrConfig, n)
	}
	if cfg.NodeGUID == 0 {
		return nil, fmt.Errorf("%w: zero node GUID", ErrConfig)
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real()
	}
	h := &HCA{
		clk:   clk,
		ports: make([]atomic.Pointer[port.Port], n),
		pstat: make([]portStats, n),
		lids:  make([]atomic.Uint32, n),
		lmcs:  make([]atomic.Uint32, n),
		mc:    cfg.MADClient,
	}
	h.mu.gens = make(map[uint8]*Generator)
	h.mu.flows = make(map[uint32]*flow)
	h.flowBucket.Store(int64(DefaultFlowBucket))
	for i := range h.pstat {
		h.pstat[i].hist = newHistogram()
	}
	// The silicon: every width and speed its ports' cable rate trains at.
	wsup, ssup := link.Supported(cfg.PortConfig.CableRate())
	a, err := agent.New(agent.Config{
		Type:            mad.NodeTypeCA,
		NumPorts:        uint8(n),
		NodeGUID:        cfg.NodeGUID,
		SystemImageGUID: cfg.SystemImageGUID,
		PortGUIDs:       cfg.PortGUIDs,
		Description:     cfg.Description,
		VLCap:           portagent.VLCap(cfg.PortConfig.DataVLs),
		WidthSupported:  wsup, SpeedSupported: ssup,
		Ports: &portagent.Control{Silicon: port.Rate{Width: cfg.PortConfig.Width, Speed: cfg.PortConfig.Speed}, Ports: h.Port, OnConfigure: func(n uint8, _ *port.Port, pc agent.PortConfig) {
			h.lids[n-1].Store(uint32(pc.LID)) // the SLID of what the HCA sends
			h.lmcs[n-1].Store(uint32(pc.LMC)) // how many aliases DRB spreads over
		}},
		Counters: portagent.Counters(h.Port),
		Clock:    clk,
		// Repeated traps (Trap 256 until the SM represses it).
		Sender: agent.SenderFunc(func(o agent.Outbound) { _ = h.dispatch([]agent.Outbound{o}) }),
		// The attach point's clients (saquery, perfquery, an SM) take the
		// GMPs the agent does not serve, responses of every class first.
		LocalGMP: cfg.MADClient != nil,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	h.agent = a
	h.ccas = make([]*cca, n)
	for i := range h.ccas {
		h.ccas[i] = h.newPortCCA(uint8(i + 1))
	}
	for i, ep := range cfg.Ports {
		num := uint8(i + 1)
		pc := cfg.PortConfig
		if i < len(cfg.PortRates) {
			pc = pc.WithRate(cfg.PortRates[i])
		}
		pc.Clock = clk
		pc.Num = num
		pc.OnStateChange = func(_ *port.Port, _, to port.State) {
			// The agent reads the new state back through PortControl.
			h.agent.PortStateChanged(num)
			if g := h.generator(num); g != nil && to.Port == mad.PortStateActive {
				g.Resume()
			}
		}
		p, err := port.New(ep, pc, port.ReceiverFunc(func(p *port.Port, pkt *port.Packet) {
			h.receive(num, p, pkt)
		}))
		if err != nil {
			// Endpoints not yet handed to a port are still ours to close.
			for _, rest := range cfg.Ports[i:] {
				rest.Close()
			}
			h.Close()
			return nil, fmt.Errorf("%w: port %d: %w", ErrConfig, num, err)
		}
		h.ports[i].Store(p)
	}
	return h, nil
}

// Close stops the generators, the ports (closing their endpoints) and the
// agent's timers. It is idempotent and must not be called from a MADClient
// call.
func (h *HCA) Close() error {
	h.mu.Lock()
	if h.mu.closed {
		h.mu.Unlock()
		return nil
	}
	h.mu.closed = true
	gens, flows := h.mu.gens, h.mu.flows
	h.mu.gens, h.mu.flows = nil, nil
	h.mu.Unlock()
	for _, g := range gens {
		g.Stop()
	}
	for _, f := range flows {
		f.stop()
	}
	for _, c := range h.ccas {
		if c != nil {
			c.setMode(CCOff, 0) // stops the timers
		}
	}
	var errs []error
	for i := range h.ports {
		if p := h.ports[i].Load(); p != nil {
			errs = append(errs, p.Close())
		}
	}
	h.agent.Close()
	return errors.Join(errs...)
}

// Agent returns the HCA's SMA/PMA, for an attach point (SetIsSM) and status.
func (h *HCA) Agent() *agent.Agent { return h.agent }

// NumPorts returns the number of ports.
func (h *HCA) NumPorts() uint8 { return uint8(len(h.ports)) }

// Port returns port num (1..NumPorts), or nil.
func (h *HCA) Port(num uint8) *port.Port {
	if num == 0 || int(num) > len(h.ports) {
		return nil
	}
	return h.ports[num-1].Load()
}

// PortState returns the logical state of port num; false for a port
// the HCA does not have.
func (h *HCA) PortState(num uint8) (mad.PortState, bool) {
	if p := h.Port(num); p != nil {
		return p.State().Port, true
	}
	return mad.PortStateDown, false
}

// LID returns the base LID the SM gave port num (0 before that).
func (h *HCA) LID(num uint8) uint16 {
	if num == 0 || int(num) > len(h.lids) {
		return 0
	}
	return uint16(h.lids[num-1].Load())
}
