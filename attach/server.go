package attach

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ibfab/agent"
	"ibfab/hca"
	"ibfab/internal/clock"
	"ibfab/internal/fifo"
	"ibfab/simproto"
	"ibfab/wire/mad"
)

// Defaults New fills in for zero Config fields.
const (
	DefaultMaxClients = 32
	DefaultTimeout    = 200 * time.Millisecond // OpenSM's default transaction timeout
	// DefaultGMPTimeout is libibmad's default MAD timeout (saquery,
	// perfquery): an SA answers from another node's SM process, which a
	// busy machine can hold up longer than an SMA's reply.
	DefaultGMPTimeout = time.Second
	// DefaultQueueLen is the kernel's bound on a umad file's receive
	// list (200,000 since Linux 6.10), which libumad2sim stands for.
	DefaultQueueLen = 200_000
	// MaxClients is the most a Server takes: the slot must fit the 16 TID
	// bits it is written into.
	MaxClients = 1 << 16
	// writeTimeout is how long one write to a client that does not read
	// waits before the writer looks whether the client is gone; a live
	// client's MAD is written again, not dropped, as the kernel keeps it.
	writeTimeout = time.Second
	// errorPause is how long a socket reader waits after an unexpected
	// error before it reads again.
	errorPause = 10 * time.Millisecond
)

// Errors.
var (
	ErrConfig   = errors.New("attach: bad config")
	ErrAttached = errors.New("attach: an HCA is already attached")
	ErrStarted  = errors.New("attach: already started")
	ErrClosed   = errors.New("attach: closed")
)

// Config describes an attach point.
type Config struct {
	// Name is the socket base name; "" means simproto.DefaultBase ("sim").
	Name string
	// Port is the HCA port clients attach at; 0 means 1.
	Port uint8
	// NodeID is the node name the server reports on Connect, and what a
	// client may ask for (umad2sim's SIM_HOST): "" means the node
	// description. A client asking for another name is refused.
	NodeID string
	// MaxClients is how many clients may be attached at once, each with a
	// socket bound by Start; 0 means DefaultMaxClients.
	MaxClients int
	// Timeout is how long a client's request waits for its response
	// before it is resent (Retries) or handed back to the client with
	// status ETIMEDOUT, as the kernel's MAD layer does; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// GMPTimeout is Timeout for requests of the GMP classes (all but
	// SubnLID and SubnDR); 0 means DefaultGMPTimeout.
	GMPTimeout time.Duration
	// Retries is how many times a request without a response is resent
	// before it is handed back. umad2sim does not pass on the retries its
	// caller asks for, so there is no right value for every client; 0
	// sends every MAD once, as ibsim does.
	Retries int
	// QueueLen is how many MADs may wait for each client; more are
	// dropped. 0 means DefaultQueueLen.
	QueueLen int
	// Clock times the requests; nil means clock.Real(). Give it the HCA's.
	Clock clock.Clock
	// Logf, when set, is told about connects, disconnects and refusals.
	Logf func(format string, args ...any)
}

// Device is the HCA an attach point serves: a soft HCA (*hca.HCA) or a
// CA of the management plane, whose agents run in one process.
type Device interface {
	NumPorts() uint8
	// SendMAD sends a client's MAD from the SMI or GSI of r.Port.
	SendMAD(r agent.Request) error
	Agent() *agent.Agent
	// PortState is the logical state of port num, false for a port that
	// does not exist.
	PortState(num uint8) (mad.PortState, bool)
}

var _ Device = (*hca.HCA)(nil)

// deviceBox holds the Device for an atomic pointer.
type deviceBox struct{ Device }

// device returns the attached Device, nil before Attach.
func (s *Server) device() Device {
	if b := s.hca.Load(); b != nil {
		return b.Device
	}
	return nil
}

// Server is the attach point of one soft HCA: it serves the ibsim client
// protocol on abstract sockets and moves its clients' MADs through the HCA.
// All methods are safe for concurrent use.
type Server struct {
	cfg  Config
	clk  clock.Clock
	hca  atomic.Pointer[deviceBox]
	node atomic.Pointer[string] // NodeID, once known

	ctl   *net.UnixConn
	ctlRC syscall.RawConn
	slots []*slot
	wg    sync.WaitGroup

	issmMu sync.Mutex // serialises updateIsSM

	mu struct {
		sync.Mutex
		started, closed bool
		pending         map[uint64]*pending // by TID as sent (slot in bits 63-48)
		// lastSender is the client that last sent a MAD of each class
		// (route.go).
		lastSender map[mad.MgmtClass]*client
	}
	st counters
}

// slot is one of the server's MAD sockets, "<base>:out<n>", and the client
// it serves.
type slot struct {
	n    uint32
	conn *net.UnixConn
	cl   *client // nil when free; under Server.mu
}

// client is one connected client.
type client struct {
	slot *slot
	id   uint32 // the client's own id (its pid), in its socket names
	ctl  string // its control address, rawAddr.key()
	port uint8
	issm bool // under Server.mu
	gone bool // under Server.mu
	sent bool // it has sent a MAD; under Server.mu
	// userRMPP: it does RMPP itself (it sent a segment of a transfer of
	// several, or an ACK), so it gets the ACK, STOP and ABORT of its
	// transfers; under Server.mu.
	userRMPP bool
	out      *fifo.Queue[[]byte] // datagrams for it
	done     chan struct{}       // closed on disconnect
	reason   string
}

// New returns a server for cfg. It opens nothing: Attach gives it its HCA
// and Start binds its sockets.
func New(cfg Config) (*Server, error) {
	if cfg.Name == "" {
		cfg.Name = simproto.DefaultBase
	}
	if cfg.Port == 0 {
		cfg.Port = 1
	}
	if cfg.MaxClients == 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.GMPTimeout == 0 {
		cfg.GMPTimeout = DefaultGMPTimeout
	}
	if cfg.QueueLen == 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	switch {
	case cfg.MaxClients < 0 || cfg.MaxClients > MaxClients:
		return nil, fmt.Errorf("%w: MaxClients %d, want 1..%d", ErrConfig, cfg.MaxClients, MaxClients)
	case cfg.Timeout < 0 || cfg.GMPTimeout < 0:
		return nil, fmt.Errorf("%w: Timeout %v, GMPTimeout %v", ErrConfig, cfg.Timeout, cfg.GMPTimeout)
	case cfg.Retries < 0:
		return nil, fmt.Errorf("%w: Retries %d", ErrConfig, cfg.Retries)
	case cfg.QueueLen < 0:
		return nil, fmt.Errorf("%w: QueueLen %d", ErrConfig, cfg.QueueLen)
	case len(simproto.OutName(cfg.Name, uint32(cfg.MaxClients)))+2 > 108:
		return nil, fmt.Errorf("%w: base name %q too long for a socket address", ErrConfig, cfg.Name)
	}
	s := &Server{cfg: cfg, clk: cfg.Clock}
	if s.clk == nil {
		s.clk = clock.Real()
	}
	s.mu.pending = make(map[uint64]*pending)
	s.mu.lastSender = make(map[mad.MgmtClass]*client)
	if cfg.NodeID != "" {
		s.node.Store(&cfg.NodeID)
	}
	return s, nil
}

// Attach gives the server its HCA. Clients that connect before are
// refused; MADs the HCA delivers before are dropped.
func (s *Server) Attach(h Device) error {
	if h == nil {
		return fmt.Errorf("%w: nil HCA", ErrConfig)
	}
	if s.cfg.Port > h.NumPorts() {
		return fmt.Errorf("%w: port %d, the HCA has %d", ErrConfig, s.cfg.Port, h.NumPorts())
	}
	if !s.hca.CompareAndSwap(nil, &deviceBox{h}) {
		return ErrAttached
	}
	if s.node.Load() == nil {
		id := fmt.Sprintf("%016x", h.Agent().NodeGUID())
		if d, err := s.localGet(h, s.cfg.Port, attrNodeDescription, 0); err == nil {
			if text := nodeDescText(d); text != "" {
				id = text
			}
		}
		s.node.Store(&id)
	}
	return nil
}

// NodeID returns the node name the server reports, "" before Attach
// when Config.NodeID was empty.
func (s *Server) NodeID() string {
	if p := s.node.Load(); p != nil {
		return *p
	}
	return ""
}

// Start binds the control socket and the MAD sockets, in the network
// namespace of the calling thread (abstract sockets are per namespace; in
// a process that lives in the HCA's namespace any goroutine will do), and
// serves them until Close.
func (s *Server) Start() (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.mu.closed:
		return ErrClosed
	case s.mu.started:
		return ErrStarted
	}
	defer func() {
		if err != nil {
			s.closeSockets()
			s.ctl, s.ctlRC, s.slots = nil, nil, nil
		}
	}()
	base := s.cfg.Name
	if s.ctl, err = net.ListenUnixgram("unixgram", simproto.Addr(simproto.CtlName(base))); err != nil {
		return fmt.Errorf("attach: serving %q (is another server, ibsim say, using the name?): %w", base, err)
	}
	if s.ctlRC, err = s.ctl.SyscallConn(); err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	for n := range uint32(s.cfg.MaxClients) {
		c, err := net.ListenUnixgram("unixgram", simproto.Addr(simproto.OutName(base, n)))
		if err != nil {
			return fmt.Errorf("attach: %w", err)
		}
		s.slots = append(s.slots, &slot{n: n, conn: c})
	}
	s.mu.started = true
	s.wg.Add(1 + len(s.slots))
	go s.serveCtl()
	for _, sl := range s.slots {
		go s.serveSlot(sl)
	}
	return nil
}

func (s *Server) closeSockets() {
	if s.ctl != nil {
		s.ctl.Close()
	}
	for _, sl := range s.slots {
		sl.conn.Close()
	}
}

// Close disconnects every client, hands nothing more back, clears the
// port's IsSM and releases the sockets. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	var cls []*client
	for _, sl := range s.slots {
		if sl.cl != nil && !sl.cl.gone {
			cls = append(cls, sl.cl)
		}
	}
	s.mu.Unlock()
	for _, c := range cls {
		s.disconnect(c, "server closed")
	}
	s.mu.Lock()
	s.closeSockets()
	for k, p := range s.mu.pending {
		p.timer.Stop()
		delete(s.mu.pending, k)
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// Clients returns how many clients are connected.
func (s *Server) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sl := range s.slots {
		if sl.cl != nil && !sl.cl.gone {
			n++
		}
	}
	return n
}
