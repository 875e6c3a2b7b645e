package umadep

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/internal/fifo"
	"ibfab/rmpp"
	"ibfab/umadproto"
	"ibfab/wire/mad"
)

// Limits and defaults.
const (
	// MaxAgents is how many agents one umad connection registers, as the
	// kernel's IB_UMAD_MAX_AGENTS.
	MaxAgents = 32
	// DefaultQueueLen is how many MADs wait for one connection's reader:
	// the kernel's bound on a umad file's receive list (200,000 since
	// Linux 6.10; unbounded before).
	DefaultQueueLen = 200_000
	// maxSendQueue bounds the MADs waiting to leave the HCA. The kernel's
	// MAD layer puts what its send queue cannot take on an overflow list
	// with no bound of its own; this one is far past any client's burst
	// and stops only a runaway one.
	maxSendQueue = 1 << 20
	// hiTIDBase marks the TIDs of the endpoint's agents (bits 63-32): the
	// ibsim-protocol attach point writes its slot (< 2^15) into bits
	// 63-48, so the two never claim each other's responses.
	hiTIDBase = 0x8000_0000
	// rmppTimeout and rmppRetries pace an RMPP send whose client gave no
	// timeout (a response, such as an SA's GetTableResp).
	rmppTimeout = time.Second
	rmppRetries = 3
	// maxDatagram bounds what a client may write in one send.
	maxDatagram = 4 << 20
	// errorPause keeps a reader from spinning on an error that persists.
	errorPause = 10 * time.Millisecond
)

// Config describes an endpoint.
type Config struct {
	// Name is the abstract socket name; "" means umadproto.DefaultSocket.
	Name string
	// CAName is the device name of the sysfs tree; "" means DefaultCAName.
	CAName string
	// Clock times requests and RMPP transfers; nil means clock.Real().
	Clock clock.Clock
	// QueueLen bounds the MADs waiting for each connection; 0 means
	// DefaultQueueLen.
	QueueLen int
	// RMPPWindow is the receive window of RMPP transfers; 0 means
	// rmpp.DefaultWindow.
	RMPPWindow uint32
	// Logf, when set, is told about connections and refusals.
	Logf func(format string, args ...any)
}

// Server is one HCA's kernel-semantics MAD endpoint. All methods are safe
// for concurrent use.
type Server struct {
	cfg    Config
	clk    clock.Clock
	caName string
	p      atomic.Value // portBox
	ln     *net.UnixListener
	sendq  *fifo.Queue[outMAD]
	done   chan struct{}
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		closed    bool
		nextToken uint32
		nextHi    uint32
		conns     map[uint32]*conn     // umad connections by token
		agents    map[uint32]*agentReg // by hi TID
		pending   map[uint64]*pending  // requests waiting for a response, by TID as sent
		senders   map[xferKey]*rmpp.Sender
		receivers map[xferKey]*rmpp.Receiver
		issm      map[uint8]int
	}
	st Stats
}

type portBox struct{ p Port }

// conn is one umad connection: an open /dev/infiniband/umadN.
type conn struct {
	token   uint32
	port    uint8
	c       *net.UnixConn
	hdrSize atomic.Int32
	out     *fifo.Queue[[]byte] // the receive list
	done    chan struct{}
	once    sync.Once
	agents  [MaxAgents]*agentReg // under Server.mu
}

type agentReg struct {
	id   uint32
	hi   uint32
	c    *conn
	reg  umadproto.Registration
	port uint8
}

func (a *agentReg) rmpp() bool {
	return a.reg.RMPPVersion != 0 && a.reg.Flags&umadproto.FlagUserRMPP == 0
}

// outMAD is a MAD waiting to leave the HCA; after, when set, is the
// request whose response time starts when it has left.
type outMAD struct {
	req   agent.Request
	after *pending
}

// pending is a request waiting for its response.
type pending struct {
	a       *agentReg
	tid     uint64
	class   mad.MgmtClass
	req     agent.Request
	hdr     umadproto.UserMAD // as the client sent it
	orig    []byte            // the client's MAD header, handed back on timeout
	msg     []byte            // the whole MAD, for resends
	timeout time.Duration
	tries   int
	timer   clock.Timer // nil until the request has left
}

// stopTimerLocked stops p's response timer, if it runs.
func (p *pending) stopTimerLocked() {
	if p.timer != nil {
		p.timer.Stop()
	}
}

// xferKey names an RMPP transfer: port, TID, class, the peer's LID and
// whether its DATA are responses. A client's RMPP request (a GetMulti) and
// the RMPP response to it share the other four when the SA is a client of
// the same port (the looped-back case); the kernel tells them apart by
// agent, this key by direction.
type xferKey struct {
	port  uint8
	tid   uint64
	class mad.MgmtClass
	lid   uint16
	resp  bool
}

// Errors.
var (
	ErrClosed  = errors.New("umadep: closed")
	ErrStarted = errors.New("umadep: already started")
)

// New returns an endpoint; Attach gives it its HCA, Start its socket.
func New(cfg Config) *Server {
	if cfg.Name == "" {
		cfg.Name = umadproto.DefaultSocket
	}
	if cfg.CAName == "" {
		cfg.CAName = DefaultCAName
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	s := &Server{cfg: cfg, clk: cfg.Clock, caName: cfg.CAName, sendq: fifo.New[outMAD](maxSendQueue), done: make(chan struct{})}
	s.mu.conns = map[uint32]*conn{}
	s.mu.agents = map[uint32]*agentReg{}
	s.mu.pending = map[uint64]*pending{}
	s.mu.senders = map[xferKey]*rmpp.Sender{}
	s.mu.receivers = map[xferKey]*rmpp.Receiver{}
	s.mu.issm = map[uint8]int{}
	s.wg.Add(1)
	go s.sendLoop()
	return s
}

// Attach gives the endpoint its HCA.
func (s *Server) Attach(p Port) { s.p.Store(portBox{p}) }

func (s *Server) port() Port {
	b, _ := s.p.Load().(portBox)
	return b.p
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// Start listens on the abstract socket (in the caller's network
// namespace) and serves connections until Close.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return ErrClosed
	}
	if s.ln != nil {
		return ErrStarted
	}
	ln, err := net.ListenUnix("unixpacket", umadproto.Addr(s.cfg.Name))
	if err != nil {
		return err
	}
	s.ln = ln
	s.wg.Add(1)
	go s.accept()
	return nil
}

// Close stops the endpoint and closes every connection.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	ln := s.ln
	var conns []*conn
	for _, c := range s.mu.conns {
		conns = append(conns, c)
	}
	for _, p := range s.mu.pending {
		p.stopTimerLocked()
	}
	for _, x := range s.mu.senders {
		x.Cancel()
	}
	for _, x := range s.mu.receivers {
		x.Cancel()
	}
	s.mu.Unlock()
	close(s.done)
	if ln != nil {
		ln.Close()
	}
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

// sendLoop sends every MAD of the endpoint, one at a time, from its own
// goroutine: a MAD the HCA loops back to its own ports comes back through
// DeliverMAD, and must not find the sender's locks held. A request's
// response time starts when it has left, as the kernel starts it at the
// send's completion, so that a burst queued behind others does not time
// out in the queue.
func (s *Server) sendLoop() {
	defer s.wg.Done()
	s.sendq.Serve(s.done, func(o outMAD) bool {
		s.sendOne(o)
		return true
	})
}

func (s *Server) sendOne(o outMAD) {
	p := s.port()
	if p == nil {
		s.st.SendFailed.Add(1)
		return
	}
	if err := p.SendMAD(o.req); err != nil {
		s.st.SendFailed.Add(1)
		return
	}
	s.st.Sent.Add(1)
	if o.after != nil {
		s.arm(o.after)
	}
}

// arm starts p's response timer, unless p was answered or given up.
func (s *Server) arm(p *pending) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed || s.mu.pending[p.tid] != p {
		return
	}
	p.stopTimerLocked()
	p.timer = s.clk.AfterFunc(p.timeout, func() { s.expire(p) })
}

// enqueue queues r for sendLoop; it never blocks.
func (s *Server) enqueue(r agent.Request) { s.enqueueOut(outMAD{req: r}) }

func (s *Server) enqueueOut(o outMAD) {
	if !s.sendq.Push(o) {
		s.st.SendFailed.Add(1)
	}
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.isClosed() {
				return
			}
			time.Sleep(errorPause)
			continue
		}
		s.wg.Add(1)
		go s.serve(c)
	}
}

// serve reads a connection's hello and runs the connection.
func (s *Server) serve(c *net.UnixConn) {
	defer s.wg.Done()
	buf := make([]byte, umadproto.HelloSize+1)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(buf)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		c.Close()
		return
	}
	h, err := umadproto.DecodeHello(buf[:n])
	if err != nil {
		s.st.BadMessages.Add(1)
		c.Close()
		return
	}
	reply := func(errno syscall.Errno, token uint32) bool {
		_, err := c.Write(umadproto.AppendHello(nil, umadproto.Hello{Role: h.Role, Port: h.Port, Token: token, Errno: uint32(errno)}))
		return err == nil && errno == 0
	}
	p := s.port()
	validPort := p != nil && h.Port >= 1 && h.Port <= p.NumPorts()
	switch h.Role {
	case umadproto.RoleUMAD:
		if !validPort {
			reply(syscall.ENODEV, 0)
			c.Close()
			return
		}
		uc := s.newConn(c, h.Port)
		if uc == nil || !reply(0, uc.token) {
			c.Close()
			return
		}
		s.runConn(uc)
	case umadproto.RoleControl:
		var uc *conn
		if h.Token != 0 {
			s.mu.Lock()
			uc = s.mu.conns[h.Token]
			s.mu.Unlock()
			if uc == nil {
				reply(syscall.EBADF, 0)
				c.Close()
				return
			}
		}
		if !reply(0, h.Token) {
			c.Close()
			return
		}
		s.runControl(c, uc)
	case umadproto.RoleISSM:
		if !validPort {
			reply(syscall.ENODEV, 0)
			c.Close()
			return
		}
		if !s.issm(h.Port, 1) {
			reply(syscall.EBUSY, 0)
			c.Close()
			return
		}
		if reply(0, 0) {
			// Held until the client closes it (a read returns then).
			b := make([]byte, 64)
			for {
				if _, err := c.Read(b); err != nil {
					break
				}
			}
		}
		s.issm(h.Port, -1)
		c.Close()
	default:
		reply(syscall.EINVAL, 0)
		c.Close()
	}
}

// issm changes the count of open issm devices of port by d and sets IsSM
// while there is one. Like the kernel, it lets one open at a time.
func (s *Server) issm(port uint8, d int) bool {
	s.mu.Lock()
	if d > 0 && s.mu.issm[port] > 0 {
		s.mu.Unlock()
		return false
	}
	s.mu.issm[port] += d
	on := s.mu.issm[port] > 0
	s.mu.Unlock()
	if p := s.port(); p != nil {
		if err := p.SetIsSM(port, on); err != nil {
			s.logf("umadep: IsSM of port %d: %v", port, err)
		}
	}
	return true
}

func (s *Server) newConn(c *net.UnixConn, port uint8) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.nextToken++
	uc := &conn{token: s.mu.nextToken, port: port, c: c, out: fifo.New[[]byte](s.cfg.QueueLen), done: make(chan struct{})}
	bigSendBuffer(c)
	uc.hdrSize.Store(umadproto.HeaderSizeOld)
	s.mu.conns[uc.token] = uc
	s.st.Connections.Add(1)
	return uc
}

// bigSendBuffer lets one datagram to the client carry a whole RMPP
// message: a unix datagram may be as large as the sender's buffer, which
// root may raise past the system's wmem_max.
func bigSendBuffer(c *net.UnixConn) {
	const size = 16 << 20
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		if syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, size) != nil {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, size)
		}
	})
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.c.Close()
	})
}

// runConn runs a umad connection: a writer goroutine drains its queue,
// and this one reads its sends until it closes; then its agents go.
func (s *Server) runConn(uc *conn) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.writeConn(uc)
	}()
	buf := make([]byte, maxDatagram)
	for {
		n, err := uc.c.Read(buf)
		if err != nil || n == 0 {
			break
		}
		s.fromClient(uc, append([]byte(nil), buf[:n]...))
	}
	uc.close()
	s.dropConn(uc)
}

// writeConn hands uc's receive list to its client in order. A write
// waits while the client does not read (as a MAD waits in the kernel's
// list), until the connection closes.
func (s *Server) writeConn(uc *conn) {
	uc.out.Serve(uc.done, func(b []byte) bool {
		if _, err := uc.c.Write(b); err != nil {
			s.st.Dropped.Add(1)
			if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed) {
				uc.close()
				return false
			}
			return true
		}
		s.st.Delivered.Add(1)
		return true
	})
}

// dropConn forgets a closed connection, its agents and their requests.
func (s *Server) dropConn(uc *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.mu.conns, uc.token)
	for i, a := range uc.agents {
		if a != nil {
			s.unregisterLocked(uc, uint32(i))
		}
	}
}

func (s *Server) unregisterLocked(uc *conn, id uint32) bool {
	if id >= MaxAgents || uc.agents[id] == nil {
		return false
	}
	a := uc.agents[id]
	uc.agents[id] = nil
	delete(s.mu.agents, a.hi)
	for tid, p := range s.mu.pending {
		if p.a == a {
			p.stopTimerLocked()
			delete(s.mu.pending, tid)
		}
	}
	return true
}

// runControl answers a control connection's requests until it closes.
func (s *Server) runControl(c *net.UnixConn, uc *conn) {
	defer c.Close()
	buf := make([]byte, umadproto.MaxControl)
	for {
		n, err := c.Read(buf)
		if err != nil || n == 0 {
			return
		}
		op, arg, err := umadproto.DecodeRequest(buf[:n])
		var errno syscall.Errno
		var res []byte
		if err != nil {
			errno = syscall.EINVAL
		} else {
			res, errno = s.control(uc, op, arg)
		}
		if _, err := c.Write(umadproto.AppendReply(nil, uint32(errno), res)); err != nil {
			return
		}
	}
}

func (s *Server) control(uc *conn, op umadproto.Op, arg []byte) ([]byte, syscall.Errno) {
	switch op {
	case umadproto.OpSysfs:
		content, dir, ok := s.sysfsFile(string(arg))
		switch {
		case !ok:
			return nil, syscall.ENOENT
		case dir:
			return nil, syscall.EISDIR
		}
		return content, 0
	case umadproto.OpSysfsList:
		return umadproto.AppendSysfsList(nil, s.sysfs()), 0
	}
	if uc == nil {
		return nil, syscall.EBADF
	}
	switch op {
	case umadproto.OpRegister:
		r, err := umadproto.DecodeRegistration(arg)
		if err != nil {
			return nil, syscall.EINVAL
		}
		id, errno := s.Register(uc, r)
		if errno != 0 {
			return nil, errno
		}
		return binary.LittleEndian.AppendUint32(nil, id), 0
	case umadproto.OpUnregister:
		if len(arg) != 4 {
			return nil, syscall.EINVAL
		}
		s.mu.Lock()
		ok := s.unregisterLocked(uc, binary.LittleEndian.Uint32(arg))
		s.mu.Unlock()
		if !ok {
			return nil, syscall.EINVAL
		}
		return nil, 0
	case umadproto.OpEnablePKey:
		uc.hdrSize.Store(umadproto.HeaderSize)
		return nil, 0
	}
	return nil, syscall.EINVAL
}
