package mgmtplane

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"ibfab/agent"
	"ibfab/attach"
	"ibfab/memfabric"
	"ibfab/topologies"
	"ibfab/umadep"
)

// maxIdle bounds the loop's sleep when no agent timer is due sooner: a
// timer an agent arms outside the loop (an M_Key lease a client's Set
// starts) fires at most this late.
const maxIdle = 100 * time.Millisecond

// Config tunes a Plane.
type Config struct {
	// Prefix starts the names of the CAs' sockets, so that two planes
	// can share a namespace: "" means DefaultPrefix.
	Prefix string
	// Logf, when set, hears of the endpoints' connections and refusals.
	Logf func(format string, args ...any)
}

// DefaultPrefix is the sockets' prefix when Config gives none.
const DefaultPrefix = "ibfab-"

// Names are the sockets of one CA's client side.
type Names struct {
	UMAD string `json:"umad"` // the umad endpoint's abstract socket (IBFAB_UMAD_SOCKET)
	Sim  string `json:"sim"`  // the attach point's base name (IBSIM_SOCKNAME)
}

// Plane is a topology's management plane in one process.
type Plane struct {
	cfg  Config
	topo *topologies.Topology
	f    *memfabric.Fabric
	kick chan struct{}
	done chan struct{}
	wg   sync.WaitGroup

	// fmu serializes the fabric: sends, the clock, moving MADs.
	fmu     sync.Mutex
	started time.Time // wall time at which the fabric clock read origin
	origin  time.Time
	faults  faults

	mu        sync.Mutex
	cas       map[int]*ca // CAs opened, by topology index
	closed    bool
	dropped   uint64 // MADs for the client side of a CA no client opened
	unmatched uint64 // of them, the requests answered "unsupported"
}

// ErrClosed is what Open returns after Close.
var ErrClosed = errors.New("mgmtplane: closed")

// New builds the agents of t's switches and CAs and trains every link.
func New(t *topologies.Topology, cfg Config) (*Plane, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	// A CA hands every GMP but the PMA's to its client side, as an HCA
	// hands them to its MAD client (the agent's own default keeps them
	// for an SM at the port).
	f, err := memfabric.NewFabric(t, func(n *topologies.Node, c *agent.Config) { c.LocalGMP = n.Type == topologies.CA })
	if err != nil {
		return nil, err
	}
	return &Plane{cfg: cfg, topo: t, f: f, kick: make(chan struct{}, 1), done: make(chan struct{}),
		cas: map[int]*ca{}}, nil
}

// Fabric returns the fabric the plane runs. Call its methods only
// through Do, which holds the loop off.
func (p *Plane) Fabric() *memfabric.Fabric { return p.f }

// Do runs fn with the fabric to itself, then moves what fn set going.
func (p *Plane) Do(fn func(f *memfabric.Fabric)) {
	p.fmu.Lock()
	fn(p.f)
	p.fmu.Unlock()
	p.wake()
}

// Start starts the loop that moves the fabric's MADs and time.
func (p *Plane) Start() {
	p.started, p.origin = time.Now(), p.f.Clock().Now()
	p.wg.Add(1)
	go p.run()
}

// Close stops the loop, every endpoint and every agent.
func (p *Plane) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	cas := p.cas
	p.mu.Unlock()
	close(p.done)
	p.wg.Wait()
	var errs []error
	for _, c := range cas {
		errs = append(errs, c.close())
	}
	p.f.Close()
	return errors.Join(errs...)
}

// Open starts the client side of CA node, if not yet started, and
// returns its sockets' names.
func (p *Plane) Open(node string) (Names, error) {
	i, ok := p.topo.Lookup(node)
	if !ok {
		return Names{}, fmt.Errorf("mgmtplane: no node %q", node)
	}
	if p.topo.Node(i).Type != topologies.CA {
		return Names{}, fmt.Errorf("mgmtplane: %s is a %v; only a CA has a client side", node, p.topo.Node(i).Type)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Names{}, ErrClosed
	}
	if c, ok := p.cas[i]; ok {
		return c.names, nil
	}
	c, err := p.openCA(i)
	if err != nil {
		return Names{}, err
	}
	p.cas[i] = c
	return c.names, nil
}

// openCA starts CA i's umad endpoint and attach point.
func (p *Plane) openCA(i int) (*ca, error) {
	n := p.f.Node(i)
	c := &ca{p: p, idx: i, node: n, names: Names{UMAD: p.cfg.Prefix + "umad-" + n.Name, Sim: p.cfg.Prefix + "sim-" + n.Name}}
	c.umad = umadep.New(umadep.Config{Name: c.names.UMAD, Logf: p.cfg.Logf})
	c.umad.Attach(c)
	if err := c.umad.Start(); err != nil {
		c.umad.Close()
		return nil, fmt.Errorf("mgmtplane: %s: umad endpoint %q: %w", n.Name, c.names.UMAD, err)
	}
	sim, err := attach.New(attach.Config{Name: c.names.Sim, NodeID: n.Name})
	if err == nil {
		if err = sim.Attach(c); err == nil {
			err = sim.Start()
		}
	}
	if err != nil {
		c.umad.Close()
		if sim != nil {
			sim.Close()
		}
		return nil, fmt.Errorf("mgmtplane: %s: attach point %q: %w", n.Name, c.names.Sim, err)
	}
	c.sim = sim
	return c, nil
}

// Stats are the plane's counters.
type Stats struct {
	Nodes     int             `json:"nodes"`
	Opened    int             `json:"opened"`    // CAs whose client side is open
	Dropped   uint64          `json:"dropped"`   // MADs for a CA with no client side open, dropped
	Unmatched uint64          `json:"unmatched"` // requests for one, answered "unsupported"
	Fabric    memfabric.Stats `json:"fabric"`
}

// Stats returns the plane's counters.
func (p *Plane) Stats() Stats {
	p.mu.Lock()
	s := Stats{Nodes: p.topo.NumNodes(), Opened: len(p.cas), Dropped: p.dropped, Unmatched: p.unmatched}
	p.mu.Unlock()
	s.Fabric = p.f.Stats()
	return s
}

func (p *Plane) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// run is the loop: step on each wake-up and at the agents' deadlines.
func (p *Plane) run() {
	defer p.wg.Done()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-p.kick:
		case <-t.C:
		}
		t.Reset(p.step())
	}
}

// step advances the clock to now, moves every MAD in flight and hands
// what reached the CAs' client sides on, outside the fabric's lock (an
// attach point may answer at once). It returns how long to sleep.
func (p *Plane) step() time.Duration {
	p.fmu.Lock()
	clk := p.f.Clock()
	now := p.origin.Add(time.Since(p.started))
	clk.Advance(now.Sub(clk.Now()))
	p.f.Run()
	got := p.f.ReceivedAll()
	next, ok := clk.Next()
	p.fmu.Unlock()
	for _, d := range got {
		p.deliver(d)
	}
	if !ok {
		return maxIdle
	}
	return min(max(next.Sub(now), 0), maxIdle)
}

// deliver gives d to its CA's endpoints: the umad endpoint first, then
// the attach point, as in a node process.
func (p *Plane) deliver(d memfabric.Delivery) {
	p.mu.Lock()
	c, ok := p.cas[d.Node]
	p.mu.Unlock()
	if !ok {
		p.unopened(d)
		return
	}
	if c.umad.Claim(d.Port, d.Outbound) {
		return
	}
	c.sim.DeliverMAD(d.Port, d.Outbound)
}

// unopened answers a request for the client side of a CA no client has
// opened as a node process's attach point would with no client: a Get or
// Set gets "unsupported method/attribute", the rest is dropped.
func (p *Plane) unopened(d memfabric.Delivery) {
	resp, ok := attach.Unmatched(d.Port, d.Outbound)
	p.mu.Lock()
	if ok {
		p.unmatched++
	} else {
		p.dropped++
	}
	p.mu.Unlock()
	if ok {
		p.Do(func(f *memfabric.Fabric) { f.Send(d.Node, resp) })
	}
}
