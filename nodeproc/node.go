package nodeproc

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"ibfab/agent"
	"ibfab/attach"
	"ibfab/hca"
	"ibfab/internal/cli"
	"ibfab/internal/clock"
	"ibfab/internal/ctl"
	"ibfab/internal/enum"
	"ibfab/link"
	"ibfab/link/peerwatch"
	"ibfab/link/pipe"
	"ibfab/link/veth"
	"ibfab/port"
	"ibfab/softswitch"
	"ibfab/topologies"
	"ibfab/umadep"
	"ibfab/umadproto"
	"ibfab/wire/mad"
)

//go:generate go tool stringer -type=Kind,ProfileKind -linecomment

// Kind is the kind of node a process runs.
type Kind uint8

// Node kinds, as `status` names them.
const (
	KindSwitch Kind = iota + 1 // switch
	KindHCA                    // hca
)

var kinds = enum.New("node kind", KindSwitch, KindHCA)

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) { return kinds.Marshal(k) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Kind) UnmarshalText(b []byte) error { return kinds.Unmarshal(k, b) }

// Link timing of node processes. A dead peer process or a veth set down
// take a link Down at once (peerwatch, carrier); the liveness timeout is
// only for a peer that hangs, so it can be long and the keepalive that
// feeds it rare: each costs an idle node a wake-up, and an idle fabric of
// 2,144 processes must stay under a tenth of a core.
const (
	DefaultLiveness  = 12 * time.Second
	DefaultKeepalive = 4 * time.Second
)

// RunDir is where fabrics keep their state; a node's control socket is
// RunDir/<fabric>/<node>.sock.
const RunDir = "/run/ibfab"

// SocketPath returns the control socket of node in fabric.
func SocketPath(fabric, node string) string {
	return filepath.Join(RunDir, fabric, node+".sock")
}

// Options configure one node process; Main fills them from flags.
type Options struct {
	Fabric   string
	Node     string
	Topology string // topology file; default NeighbourhoodPath, else RunDir/<fabric>/topology.net
	Socket   string // control socket; default SocketPath
	// PortNames is the prefix of the ports' interface names: port N is
	// PortNames+N ("p", what ibfab up makes; "eth" as containerlab names
	// a linux node's interfaces).
	PortNames string
	// PortWait is how long Start waits for a cabled port's interface to
	// appear (containerlab wires a container's links after starting it);
	// 0 fails at once.
	PortWait  time.Duration
	TimeScale float64 // emulated time runs this many times slower
	Epoch     time.Time
	// Procs is the process's GOMAXPROCS (Main sets it; 0 keeps the
	// runtime's). A node's packet path is a chain of hand-offs between
	// its goroutines (receive, route, transmit); on one P each runs as
	// the one before parks, where with two the runtime wakes a second
	// thread for it, which on an idle CPU costs tens of microseconds per
	// hop. A fabric's parallelism is its processes.
	Procs int
	// Port holds what every port is built from; Width and Speed come from
	// the topology's link.
	Port port.Config
	// Sim is the base name of an HCA's ibsim-protocol attach point (the
	// abstract sockets SMs and diagnostics connect to through
	// libumad2sim); "" means ibsim's default, "sim". "none" serves none.
	Sim string
	// SimRetries is how often the attach point resends a request that got
	// no response before it reports a timeout to its client.
	SimRetries int
	// SimTimeout is how long the attach point waits for the response to
	// a client's SMP before handing it back timed out (the kernel's umad
	// does this for the timeout each send names; the ibsim protocol has
	// no field for it).
	SimTimeout time.Duration
	// UMAD is the abstract socket name of an HCA's kernel-semantics MAD
	// endpoint (package umadep, what the umad shim and Go clients
	// connect to); "" means umadproto.DefaultSocket, "none" serves none.
	UMAD string
	// SwitchArch is a switch's architecture (--switch-arch).
	SwitchArch softswitch.Arch
}

// Main runs a node process of kind with the command-line arguments args and
// returns its exit status: 0 after a shutdown request or SIGTERM, 1 when
// the node cannot start, 2 for bad arguments.
func Main(kind Kind, args []string, stderr io.Writer) int {
	opts, err := parseFlags(kind, args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return cli.ExitOK
	}
	if err != nil {
		return cli.BadArgs(stderr, "ib"+kind.String(), err, "")
	}
	if opts.Procs > 0 {
		runtime.GOMAXPROCS(opts.Procs)
	}
	n, err := Start(kind, opts)
	if err != nil {
		fmt.Fprintf(stderr, "ib%s %s/%s: %v\n", kind, opts.Fabric, opts.Node, err)
		return cli.ExitFailure
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		fmt.Fprintf(stderr, "ib%s %s/%s: %v, shutting down\n", kind, opts.Fabric, opts.Node, s)
	case <-n.Done():
		fmt.Fprintf(stderr, "ib%s %s/%s: shutdown requested\n", kind, opts.Fabric, opts.Node)
	}
	n.Close()
	return cli.ExitOK
}

func parseFlags(kind Kind, args []string, stderr io.Writer) (Options, error) {
	fs := flag.NewFlagSet("ib"+kind.String(), flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ib%s --fabric N --node NAME [flags]\n\n"+
			"Runs one soft %s of a fabric in the current network namespace, its ports\n"+
			"on the veth ends p1..pN. ibfab up starts it; see ibfab help.\n\n", kind, kind)
		fs.PrintDefaults()
	}
	var o Options
	var epochNS int64
	fs.StringVar(&o.Fabric, "fabric", "", "fabric `N`ame")
	fs.StringVar(&o.Node, "node", "", "node `NAME` in the topology")
	fs.StringVar(&o.Topology, "topology", "", "topology `FILE` (default /run/ibfab/N/nodes/NODE.net, else /run/ibfab/N/topology.net)")
	fs.StringVar(&o.Socket, "socket", "", "control socket `PATH` (default /run/ibfab/N/NAME.sock)")
	fs.StringVar(&o.PortNames, "port-names", DefaultPortNames, "port N is the interface `PREFIX`N (eth for containerlab's linux nodes)")
	fs.DurationVar(&o.PortWait, "port-wait", 0, "wait up to this long for a cabled port's interface to appear (0: fail at once)")
	fs.Float64Var(&o.TimeScale, "time-scale", 1, "run emulated time `S` times slower than real time")
	fs.IntVar(&o.Procs, "procs", 1, "threads that run the node's Go code at once (GOMAXPROCS; 0: one per CPU)")
	fs.Int64Var(&epochNS, "epoch", 0, "shared time origin of the fabric's scaled clocks, Unix `ns` (default now)")
	fs.IntVar(&o.Port.DataVLs, "data-vls", port.DefaultDataVLs, "data VLs per port (1, 2, 4, 8 or 15)")
	fs.IntVar(&o.Port.RxBlocks, "rx-blocks", port.DefaultRxBlocks, "receive buffer per data VL in 64-byte `blocks`")
	fs.IntVar(&o.Port.CreditSlack, "credit-slack", 0, "freed `blocks` a port may hold back before it sends its peer a credit update (0: until the peer's credit is down to half the buffer; 1: every release)")
	fs.Var((*blockList)(&o.Port.VLBlocks), "vl-blocks", "receive buffers of data VLs 0, 1, … in 64-byte blocks, `a,b,...` (VLs past the list: --rx-blocks; 0: no buffer, never credited)")
	fs.IntVar(&o.Port.MTU, "mtu", port.DefaultMTU, "largest payload in `bytes` (256…4096)")
	fs.DurationVar(&o.Port.LivenessTimeout, "liveness", DefaultLiveness, "link goes Down after this long without a packet from a peer that hangs (a peer that dies or a veth set down is seen at once)")
	fs.DurationVar(&o.Port.KeepaliveInterval, "keepalive", DefaultKeepalive, "an idle link sends flow-control packets this often")
	fs.BoolVar(&o.Port.IgnoreCredits, "no-flow-control", false, "send regardless of the peer's credits (a test node showing what credits prevent)")
	fs.BoolVar(&o.Port.Unpaced, "unpaced", false, "do not pace transmission to the link rate (measures the machine's limit)")
	fs.DurationVar(&o.Port.PaceSlack, "pace-slack", port.DefaultPaceSlack, "how far ahead of its link's schedule a transmitter may run before it sleeps, emulated (negative: none); a link k times faster than 4x SDR runs as many packets ahead with a k times shorter one")
	fs.DurationVar(&o.Port.CatchUp, "catch-up", port.DefaultCatchUp, "how far behind its schedule a backlogged transmitter may fall and still send back to back to make the time up, emulated (negative: none)")
	if kind == KindSwitch {
		fs.TextVar(&o.SwitchArch, "switch-arch", softswitch.ArchVOQ, "switch architecture: `voq` (each packet queued at its output on arrival) or iq (one FIFO per input port and VL, only its head routed)")
	}
	if kind == KindHCA {
		fs.StringVar(&o.Sim, "sim", "sim", "base `NAME` of the ibsim-protocol attach point (libumad2sim's), or none")
		fs.IntVar(&o.SimRetries, "sim-retries", 0, "resends of an attach-point request without a response")
		fs.DurationVar(&o.SimTimeout, "sim-timeout", attach.DefaultTimeout, "how long an attach-point SMP waits for its response before the client is told it timed out")
		fs.StringVar(&o.UMAD, "umad", umadproto.DefaultSocket, "abstract socket `NAME` of the kernel-semantics MAD endpoint (the umad shim's), or none")
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.Fabric == "" || o.Node == "":
		return o, errors.New("--fabric and --node are required")
	case !(o.TimeScale > 0) || o.TimeScale > 1e6:
		return o, fmt.Errorf("--time-scale %v: want a positive number", o.TimeScale)
	case o.Procs < 0:
		return o, fmt.Errorf("--procs %d: want 0 or more", o.Procs)
	case o.PortWait < 0:
		return o, fmt.Errorf("--port-wait %v: want 0 or more", o.PortWait)
	case !validPortNames(o.PortNames):
		return o, fmt.Errorf("--port-names %q: want 1 to 12 letters, digits, '-' or '_'", o.PortNames)
	}
	if o.Port.VLBlocks != nil {
		if err := o.Port.CheckVLBlocks(o.Port.VLBlocks); err != nil {
			return o, fmt.Errorf("--vl-blocks: %w", err)
		}
	}
	if o.Topology == "" {
		o.Topology = NeighbourhoodPath(o.Fabric, o.Node)
		if _, err := os.Stat(o.Topology); err != nil {
			o.Topology = filepath.Join(RunDir, o.Fabric, "topology.net")
		}
	}
	if o.Socket == "" {
		o.Socket = SocketPath(o.Fabric, o.Node)
	}
	o.Epoch = time.Now()
	if epochNS != 0 {
		o.Epoch = time.Unix(0, epochNS)
	}
	return o, nil
}

// Node is a running node process: its switch or HCA and its control
// socket.
type Node struct {
	// mu guards watch and rate, which the "cable" op changes.
	mu    sync.Mutex
	watch []*peerwatch.Endpoint // by port number; nil when uncabled
	rate  port.Config           // Width and Speed of the node's silicon (its fastest link); zero before the first
	kind  Kind
	name  string
	tn    *topologies.Node
	sw    *softswitch.Switch
	ca    *hca.HCA
	hub   *madHub
	sim   *attach.Server
	umad  *umadep.Server
	srv   *ctl.Server
	done  chan struct{}
	// drops is the ports' shared log of dropped data packets ("drops");
	// clk the node's clock.
	drops *port.DropLog
	clk   clock.Clock
}

// Start builds the node opts names, opens its ports and serves its
// control socket.
func Start(kind Kind, o Options) (*Node, error) {
	t, err := topologies.ParseFile(o.Topology)
	if err != nil {
		return nil, err
	}
	idx, ok := t.Lookup(o.Node)
	if !ok {
		return nil, fmt.Errorf("node %q is not in %s", o.Node, o.Topology)
	}
	tn := t.Node(idx)
	if want := map[Kind]topologies.NodeType{KindSwitch: topologies.Switch, KindHCA: topologies.CA}[kind]; tn.Type != want {
		return nil, fmt.Errorf("node %q is a %v, not a %s", o.Node, tn.Type, kind)
	}
	// The precise clock: pacing gaps, generator arrivals and keepalives
	// of microseconds, where the runtime's timers fire a millisecond late.
	clk := clock.ScaledSince(clock.Precise(), o.TimeScale, o.Epoch)
	n := &Node{kind: kind, name: o.Node, tn: tn, done: make(chan struct{}), clk: clk}
	n.newDropLog(&o.Port)
	// Idle links cost a wake-up per keepalive: the fabric's ports send
	// theirs together, on the grid of the shared epoch, and a host's port
	// only answers its switch's (docs/DESIGN.md §3).
	o.Port.KeepaliveEpoch = o.Epoch
	o.Port.KeepaliveAnswers = kind == KindHCA
	eps, cfgs, rates, err := openPorts(t, idx, o.Port, cmp.Or(o.PortNames, DefaultPortNames), o.PortWait)
	if err != nil {
		return nil, err
	}
	n.rate.Width, n.rate.Speed = cfgs.Width, cfgs.Speed
	n.watch = make([]*peerwatch.Endpoint, len(eps))
	for i, ep := range eps {
		if v, ok := ep.(*veth.Endpoint); ok {
			n.watch[i] = peerwatch.New(v)
			eps[i] = n.watch[i]
		}
	}
	switch kind {
	case KindSwitch:
		sc := switchConfig(tn, eps, cfgs, clk, o.SwitchArch)
		sc.PortRates = rates
		n.sw, err = softswitch.New(sc)
	case KindHCA:
		n.hub = newMADHub()
		var sim hca.MADClient
		if o.Sim != "none" {
			n.sim, err = attach.New(attach.Config{Name: o.Sim, NodeID: tn.Name, Clock: clk, Retries: o.SimRetries, Timeout: o.SimTimeout})
			if err != nil {
				break
			}
			sim = n.sim
		}
		n.hub.next = sim
		if o.UMAD != "none" {
			n.umad = umadep.New(umadep.Config{Name: o.UMAD, Clock: clk, Logf: nodeLogf(kind, o)})
			n.hub.next = umadChain{ep: n.umad, next: sim}
		}
		n.ca, err = hca.New(hca.Config{
			NodeGUID: tn.GUID, SystemImageGUID: tn.SystemImageGUID, PortGUIDs: portGUIDs(tn), Description: tn.Description,
			Ports: eps[1:], PortConfig: cfgs, PortRates: rates[1:], Clock: clk, MADClient: n.hub,
		})
		if err == nil && n.umad != nil {
			n.umad.Attach(umadep.HCAPort(n.ca))
			if err = n.umad.Start(); err != nil {
				n.closeNode()
				return nil, fmt.Errorf("umad endpoint %q: %w", o.UMAD, err)
			}
		}
		if err == nil && n.sim != nil {
			if err = n.sim.Attach(n.ca); err == nil {
				err = n.sim.Start()
			}
			if err != nil {
				n.closeNode()
				return nil, fmt.Errorf("attach point %q: %w", o.Sim, err)
			}
		}
	}
	if err != nil {
		for _, ep := range eps {
			if ep != nil {
				ep.Close()
			}
		}
		return nil, err
	}
	// A node started outside ibfab up (in a container) makes its
	// socket's directory itself.
	if err := os.MkdirAll(filepath.Dir(o.Socket), 0o755); err != nil {
		n.closeNode()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if n.srv, err = ctl.Listen(o.Socket, n.handle); err != nil {
		n.closeNode()
		return nil, err
	}
	return n, nil
}

// umadChain offers each MAD the HCA delivers to the umad endpoint first,
// and what it does not claim to the ibsim-protocol attach point.
type umadChain struct {
	ep   *umadep.Server
	next hca.MADClient
}

func (c umadChain) DeliverMAD(port uint8, o agent.Outbound) {
	if c.ep.Claim(port, o) || c.next == nil {
		return
	}
	c.next.DeliverMAD(port, o)
}

// openPorts opens the veth end of every cabled port, indexed by port
// number. An HCA port without a cable gets an endpoint with no carrier, as
// an HCA has all its ports whether cabled or not. Each port runs at its
// link's rate (rates, by port number); the template tmpl comes back with
// the node's silicon: the widest width and fastest speed of its links,
// what a switch's port 0 says it has (a switch of NDR with HDR hosts).
//
// Port N is the interface prefix+N, waited for up to wait. Each must carry
// the frames of the port's MTU, and a VXLAN device's underlay them
// encapsulated (veth.Endpoint.CheckFrames).
func openPorts(t *topologies.Topology, idx int, tmpl port.Config, prefix string, wait time.Duration) ([]link.Endpoint, port.Config, []port.Rate, error) {
	tn := t.Node(idx)
	eps := make([]link.Endpoint, tn.NumPorts+1)
	rates := make([]port.Rate, tn.NumPorts+1)
	fail := func(err error) ([]link.Endpoint, port.Config, []port.Rate, error) {
		for _, ep := range eps {
			if ep != nil {
				ep.Close()
			}
		}
		return nil, tmpl, nil, err
	}
	var silicon port.Rate
	for num := 1; num <= tn.NumPorts; num++ {
		l, ok := t.LinkAt(topologies.PortRef{Node: idx, Port: num})
		if !ok {
			if tn.Type == topologies.CA {
				a, _ := pipe.NewPairWith(pipe.Options{NameA: fmt.Sprintf("p%d", num)})
				a.SetCarrier(false)
				eps[num] = a
			}
			continue
		}
		w, s, err := linkRate(l)
		if err != nil {
			return fail(fmt.Errorf("port %d: %w", num, err))
		}
		rates[num] = port.Rate{Width: w, Speed: s}
		if w.Lanes() > silicon.Width.Lanes() {
			silicon.Width = w
		}
		silicon.Speed = max(silicon.Speed, s)
		ifname := prefix + strconv.Itoa(num)
		ep, err := openWait(ifname, wait)
		if err != nil {
			where := fmt.Sprintf("is the process in namespace ibf-<fabric>-%s?", tn.Name)
			if prefix != DefaultPortNames || wait > 0 {
				where = fmt.Sprintf("waited %v", wait)
			}
			return fail(fmt.Errorf("port %d: %w (%s)", num, err, where))
		}
		eps[num] = ep
		if _, err := ep.CheckFrames(veth.FrameSize(cmp.Or(tmpl.MTU, port.DefaultMTU))); err != nil {
			return fail(fmt.Errorf("port %d: %w", num, err))
		}
	}
	return eps, tmpl.WithRate(silicon), rates, nil
}

// CheckLinkRate reports whether a node process emulates links of width w
// and speed s (0 meaning the topology's default).
func CheckLinkRate(w topologies.Width, s topologies.Speed) error {
	_, _, err := linkRate(topologies.Link{Width: w, Speed: s})
	return err
}

// LinkDataRate returns the data rate in bits/s of a topology link (0
// width or speed meaning the topology's default), as a node paces it.
func LinkDataRate(l topologies.Link) (uint64, error) {
	w, s, err := linkRate(l)
	if err != nil {
		return 0, err
	}
	return mad.DataRate(w, s)
}

// NeighbourhoodPath is where the harness writes the part of the topology
// a node needs (topologies.Neighbourhood), which the node reads instead of
// the whole fabric's when it is there.
func NeighbourhoodPath(fabric, node string) string {
	return filepath.Join(RunDir, fabric, "nodes", node+".net")
}

// linkRate maps a topology link's rate to PortInfo's width and speed
// (topologies' Speed bits are mad.LinkSpeed's, FDR10 aside, which no
// node emulates: it is Mellanox's, outside PortInfo).
func linkRate(l topologies.Link) (mad.LinkWidth, mad.LinkSpeed, error) {
	w, s := l.Width, l.Speed
	if w == 0 {
		w = topologies.DefaultWidth
	}
	if s == 0 {
		s = topologies.DefaultSpeed
	}
	switch s {
	case topologies.SpeedSDR, topologies.SpeedDDR, topologies.SpeedQDR, topologies.SpeedFDR, topologies.SpeedEDR,
		topologies.SpeedHDR, topologies.SpeedNDR, topologies.SpeedXDR:
	default:
		return 0, 0, fmt.Errorf("link speed %v is not emulated (SDR, DDR, QDR, FDR, EDR, HDR, NDR and XDR are)", s)
	}
	switch w {
	case topologies.Width1x, topologies.Width2x, topologies.Width4x, topologies.Width8x, topologies.Width12x:
	default:
		return 0, 0, fmt.Errorf("link width %v is not emulated (1x, 2x, 4x, 8x and 12x are)", w)
	}
	// topologies' masks are PortInfo's LinkWidth and mad's LinkSpeed encodings.
	return mad.LinkWidth(w), mad.LinkSpeed(s), nil
}

// Done is closed when a shutdown request arrived.
func (n *Node) Done() <-chan struct{} { return n.done }

// nodeLogf logs to the node's stderr (its log file under ibfab up), in the
// form Main writes its own lines.
func nodeLogf(kind Kind, o Options) func(string, ...any) {
	prefix := fmt.Sprintf("ib%s %s/%s: ", kind, o.Fabric, o.Node)
	return func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, prefix+format+"\n", args...)
	}
}

// Close stops serving and closes the node's ports.
func (n *Node) Close() {
	if n.srv != nil {
		n.srv.Close()
	}
	n.closeNode()
}

func (n *Node) closeNode() {
	if n.umad != nil {
		n.umad.Close()
	}
	if n.sim != nil {
		n.sim.Close()
	}
	if n.sw != nil {
		n.sw.Close()
	}
	if n.ca != nil {
		n.ca.Close()
	}
}

// Status returns the node's status.
func (n *Node) Status() Status {
	st := Status{Name: n.name, Type: n.kind.String(), GUID: fmt.Sprintf("%#016x", n.tn.GUID), PID: os.Getpid(),
		Goroutines: runtime.NumGoroutine(), SysImageGUID: fmt.Sprintf("%#016x", cmp.Or(n.tn.SystemImageGUID, n.tn.GUID)), Desc: n.tn.Description}
	switch {
	case n.sw != nil:
		lid := n.sw.Agent().PortConfig(0).LID
		for num := 1; num <= int(n.sw.NumPorts()); num++ {
			ps := portStatus(num, n.sw.Port(uint8(num)), lid)
			ps.PKeys = PKeyStrings(n.sw.Agent().PKeys(uint8(num)))
			st.Ports = append(st.Ports, ps)
		}
		n.switchPortStatus(st.Ports)
		s := n.sw.Stats()
		st.Switch = &s
		sc := n.switchConfigStatus()
		st.SwitchConfig = &sc
		a := n.sw.Agent()
		st.Agent = &AgentStatus{Stats: a.Stats(), PortStateChange: a.PortStateChange(), TrapOutstanding: a.TrapOutstanding()}
	case n.ca != nil:
		hs := n.ca.Stats()
		for i := range hs.Ports {
			num := uint8(i + 1)
			ps := portStatus(int(num), n.ca.Port(num), n.ca.LID(num))
			a := n.ca.Agent()
			c := a.PortConfig(num)
			ps.GUID = fmt.Sprintf("%#016x", a.PortGUID(num))
			ps.LMC, ps.SMLID, ps.SMSL, ps.CapMask = c.LMC, c.MasterSMLID, c.MasterSMSL, a.CapabilityMask(num)
			ps.PKeys = PKeyStrings(a.PKeys(num))
			tr := hs.Ports[i]
			ps.Traffic = &tr
			st.Ports = append(st.Ports, ps)
		}
		st.ClientDropped = hs.ClientDropped
		st.Agent = &AgentStatus{Stats: n.ca.Agent().Stats()}
		if n.sim != nil {
			ss := n.sim.Stats()
			st.Sim = &ss
		}
		if n.umad != nil {
			us := n.umad.Stats()
			st.UMAD = &us
		}
	}
	return st
}

// TrafficArgs are the "traffic-start" op's arguments.
type TrafficArgs struct {
	Port        uint8    `json:"port"`
	Load        float64  `json:"load"`    // % of the link's data rate
	Payload     int      `json:"payload"` // bytes; default 2048
	Dests       []uint16 `json:"dests"`
	HotSpot     uint16   `json:"hotspot,omitempty"`
	HotFraction float64  `json:"hot_fraction,omitempty"`
	SL          uint8    `json:"sl"`
	Seed        uint64   `json:"seed"`
	MaxBacklog  int      `json:"max_backlog,omitempty"`
	// PKeyIndex picks the P_Key the packets carry by its index in the
	// port's table, as perftest's --pkey_index does (default 0); PKey,
	// when set, by value instead (the entry equal to it, else the first
	// with its partition number). Not both.
	PKeyIndex uint16 `json:"pkey_index,omitempty"`
	PKey      uint16 `json:"pkey,omitempty"`
	// Periodic makes the generator a probe: fixed intervals, each
	// destination in turn (hca.GeneratorConfig.Periodic).
	Periodic bool `json:"periodic,omitempty"`
}

// RxFromArgs are the "rx-from" op's arguments; the op answers with what
// the port received from each sender LID (map[uint16]hca.SourceStats).
type RxFromArgs struct {
	Port  uint8 `json:"port"`
	Reset bool  `json:"reset"` // start each sender's longest gap over
}

func (n *Node) startTraffic(a TrafficArgs) (any, error) {
	if a.Port == 0 {
		a.Port = 1
	}
	if a.Payload == 0 {
		a.Payload = 2048
	}
	if a.PKey != 0 && a.PKeyIndex != 0 {
		return nil, errors.New("traffic-start: pkey and pkey_index both given")
	}
	_, err := n.ca.StartTraffic(a.Port, hca.TrafficConfig{
		GeneratorConfig: hca.GeneratorConfig{Load: a.Load, Payload: a.Payload, Dests: a.Dests,
			HotSpot: a.HotSpot, HotFraction: a.HotFraction, Seed: a.Seed, MaxBacklog: a.MaxBacklog, Periodic: a.Periodic},
		SL: a.SL, PKeyIndex: a.PKeyIndex, PKey: mad.PKey(a.PKey),
	})
	if err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// MADArgs are the "mad" op's arguments: one MAD sent from an HCA port as
// its local SM would, and the response awaited by TID.
type MADArgs struct {
	Port      uint8  `json:"port"`
	DLID      uint16 `json:"dlid"` // LID-routed destination; 0xffff for directed route
	SL        uint8  `json:"sl"`
	QP        uint32 `json:"qp"` // 0 for SMPs, 1 for GMPs
	MAD       []byte `json:"mad"`
	TimeoutMS int    `json:"timeout_ms"`
	// NoWait sends without waiting for a response (TrapRepress, a Send).
	NoWait bool `json:"no_wait,omitempty"`
}

func decodeArgs(args json.RawMessage, v any) error {
	if len(args) == 0 {
		return errors.New("missing args")
	}
	d := json.NewDecoder(strings.NewReader(string(args)))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("args: %w", err)
	}
	return nil
}

// portGUIDs returns an HCA's port GUIDs from the topology, nil when it
// gives none (the HCA then uses ibsim's NodeGUID+port rule).
func portGUIDs(tn *topologies.Node) []uint64 {
	var g []uint64
	for num := 1; num <= tn.NumPorts; num++ {
		if tn.Ports[num].GUID == 0 {
			return nil
		}
		g = append(g, tn.Ports[num].GUID)
	}
	return g
}

// PeersArgs are the "peers" op's arguments: the PID of the process at the
// other end of each cabled port, by port number. The node treats the
// death of one as loss of signal on that port.
type PeersArgs struct {
	PIDs map[int]int `json:"pids"`
}

func (n *Node) watchPeers(a PeersArgs) error {
	var errs []error
	for num, pid := range a.PIDs {
		n.mu.Lock()
		var w *peerwatch.Endpoint
		if num >= 1 && num < len(n.watch) {
			w = n.watch[num]
		}
		n.mu.Unlock()
		if w == nil {
			errs = append(errs, fmt.Errorf("port %d is not cabled", num))
			continue
		}
		if err := w.Watch(pid); err != nil {
			errs = append(errs, fmt.Errorf("port %d: %w", num, err))
		}
	}
	return errors.Join(errs...)
}

// CableArgs are the "cable" op's arguments: a switch port that was
// uncabled when the node started and whose veth end p<port> the harness
// has just created in the node's namespace (ibfab add), the link's rate,
// and the process at its other end.
type CableArgs struct {
	Port    int              `json:"port"`
	Width   topologies.Width `json:"width"` // 0: topologies.DefaultWidth
	Speed   topologies.Speed `json:"speed"` // 0: topologies.DefaultSpeed
	PeerPID int              `json:"peer_pid,omitempty"`
}

// cable opens a hot-added link's veth end as a new port of the running
// switch and watches the peer process, as "peers" does for the links the
// node started with. An HCA refuses: its ports are fixed at start (an
// uncabled one runs on an endpoint without carrier).
func (n *Node) cable(a CableArgs) error {
	if n.sw == nil {
		return fmt.Errorf("%s is an HCA: only a switch takes a new cable while it runs", n.name)
	}
	w, s, err := linkRate(topologies.Link{Width: a.Width, Speed: a.Speed})
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case a.Port < 1 || a.Port >= len(n.watch):
		return fmt.Errorf("port %d: %s has ports 1-%d", a.Port, n.name, len(n.watch)-1)
	case n.sw.Port(uint8(a.Port)) != nil:
		return fmt.Errorf("port %d: %w", a.Port, softswitch.ErrPortInUse)
	case n.rate.Width != 0 && (w.Lanes() > n.rate.Width.Lanes() || s > n.rate.Speed):
		return fmt.Errorf("port %d: the link runs at %v %v, faster than the node's silicon, %v %v",
			a.Port, w, s, n.rate.Width, n.rate.Speed)
	}
	ep, err := veth.Open(fmt.Sprintf("p%d", a.Port))
	if err != nil {
		return fmt.Errorf("port %d: %w", a.Port, err)
	}
	pw := peerwatch.New(ep)
	if a.PeerPID != 0 {
		// Before the port exists, so that it never trains with a peer
		// that is already gone.
		if err := pw.Watch(a.PeerPID); err != nil {
			pw.Close()
			return fmt.Errorf("port %d: %w", a.Port, err)
		}
	}
	if err := n.sw.AddPort(uint8(a.Port), pw, w, s); err != nil {
		return err
	}
	n.watch[a.Port] = pw
	if n.rate.Width == 0 {
		n.rate.Width, n.rate.Speed = w, s
	}
	return nil
}

// switchConfig is the soft switch a net file's node describes.
func switchConfig(tn *topologies.Node, eps []link.Endpoint, pc port.Config, clk clock.Clock, arch softswitch.Arch) softswitch.Config {
	return softswitch.Config{
		Name: tn.Name, NumPorts: tn.NumPorts, NodeGUID: tn.GUID, SystemImageGUID: tn.SystemImageGUID,
		Description: tn.Description, VendorID: tn.VendorID, DeviceID: uint16(tn.DeviceID), EnhancedPort0: tn.EnhancedPort0,
		Ports: eps, PortConfig: pc, Clock: clk, Arch: arch,
	}
}
