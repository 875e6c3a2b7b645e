package simclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ibfab/madport"
	"ibfab/madport/tidmemo"
	"ibfab/simproto"
	"ibfab/wire/mad"
)

// Defaults Dial fills in for zero Config fields.
const (
	DefaultCtlTimeout = 5 * time.Second
	// waitRetry is how often Dial with Wait tries a server that is not
	// there yet.
	waitRetry = 50 * time.Millisecond
)

// Errors.
var (
	// ErrRefused: the server answered a control message with an error
	// (no free slot, unknown node, an SM already attached, ...).
	ErrRefused = errors.New("simclient: refused by the server")
	// ErrCtlTimeout: no answer to a control message in time.
	ErrCtlTimeout = errors.New("simclient: no answer from the server")
	// ErrMAD: a MAD of the wrong size.
	ErrMAD = errors.New("simclient: bad MAD")
)

// Config says where and how to attach.
type Config struct {
	// Name is the socket base name; "" means $IBSIM_SOCKNAME, else "sim".
	Name string
	// NodeID asks ibsim to attach at that node (its name or description),
	// as umad2sim's SIM_HOST does; "" means the server's default port.
	NodeID string
	// IsSM connects as the subnet manager; the server refuses when it
	// already has one. SetIsSM does the same later.
	IsSM bool
	// Wait makes Dial keep trying, until ctx ends, while the server is not
	// there yet (as umad2sim waits for ibsim); otherwise Dial fails at once.
	Wait bool
	// CtlTimeout bounds each control round trip; 0 means DefaultCtlTimeout.
	CtlTimeout time.Duration
}

// Stats counts what the client saw.
type Stats struct {
	Sent        uint64 `json:"sent"`
	Received    uint64 `json:"received"`     // returned by Recv
	TimedOut    uint64 `json:"timed_out"`    // of Received, handed back with StatusTimeout
	BadMessages uint64 `json:"bad_messages"` // datagrams of the wrong size
	StaleCtl    uint64 `json:"stale_ctl"`    // control answers to an earlier, timed-out message
}

// Client is one attachment to an ibsim-protocol server. It implements
// madport.Port; all methods are safe for concurrent use.
type Client struct {
	base    string
	id      uint32 // our id: the number in our socket names
	slot    uint32 // the server's client id
	node    string // where the server attached us
	ctlTO   time.Duration
	ctl     *net.UnixConn // connected to "<base>:ctl"
	data    *net.UnixConn // "<base>:in<id>", unconnected
	outAddr *net.UnixAddr // "<base>:out<slot>"
	outName string
	done    chan struct{}
	tids    *tidmemo.Memo

	// sendMu guards sbuf, the datagram Send encodes into: the kernel has
	// copied it when the write returns.
	sendMu sync.Mutex
	sbuf   [simproto.RequestSize]byte
	// recvTok is held by the one Recv reading the socket; others wait
	// for it, or for their context's end.
	recvTok chan struct{}
	// The context whose end wakes a blocked read (watch); recvTok held.
	watchDone <-chan struct{}
	unwatch   func() bool

	ctlMu     sync.Mutex
	closeOnce sync.Once
	closed    atomic.Bool

	sent, received, timedOut, bad, staleCtl atomic.Uint64
}

var _ madport.Port = (*Client)(nil)

// idSeq numbers the clients of this process: the k-th gets pid + k<<22.
var idSeq atomic.Uint32

const (
	pidBits = 22 // Linux pids are below 2^22
	maxIDs  = 1 << (31 - pidBits)
)

// Dial attaches to the server named by cfg in the calling thread's network
// namespace.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	base := cfg.Name
	if base == "" {
		base = simproto.BaseFromEnv()
	}
	c := &Client{base: base, ctlTO: cfg.CtlTimeout, done: make(chan struct{}), recvTok: make(chan struct{}, 1)}
	if c.ctlTO <= 0 {
		c.ctlTO = DefaultCtlTimeout
	}
	c.tids = tidmemo.New(tidLowBits, tidMemoSize)
	if err := c.bind(ctx, cfg.Wait); err != nil {
		return nil, err
	}
	var req simproto.CtlFields
	req.Type, req.Len = simproto.CtlConnect, simproto.ClientInfoSize
	ci := simproto.ClientInfo{ID: c.id, IsSM: cfg.IsSM, NodeID: cfg.NodeID}
	ci.Encode(req.Data[:])
	resp, err := c.roundTrip(&req)
	if err != nil {
		c.ctl.Close()
		c.data.Close()
		return nil, fmt.Errorf("simclient: connecting to %q: %w", simproto.CtlName(base), err)
	}
	got, err := simproto.DecodeClientInfo(resp.Data[:])
	if err != nil {
		c.ctl.Close()
		c.data.Close()
		return nil, fmt.Errorf("simclient: connect answer: %w", err)
	}
	c.slot, c.node = got.ID, got.NodeID
	c.outName = simproto.OutName(base, c.slot)
	c.outAddr = simproto.Addr(c.outName)
	if err := connectTo(c.data, c.outAddr); err != nil {
		c.Close() // says Disconnect: the server gave us a slot
		return nil, fmt.Errorf("simclient: connecting to %q: %w", c.outName, err)
	}
	return c, nil
}

// connectTo connects conn, a datagram socket, to the server's socket at
// addr, as umad2sim does. The kernel then lets the server queue answers
// for it up to the socket buffer, instead of net.unix.max_dgram_qlen
// (10) datagrams: past those, ibsim's write returns EAGAIN and it spins
// on it until the reader catches up, which with a window of SMPs in
// flight costs ibsim more CPU than the MADs do. It also makes the kernel
// refuse datagrams from any other socket, and lets Send write without
// naming the destination.
func connectTo(conn *net.UnixConn, addr *net.UnixAddr) error {
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cerr = syscall.Connect(int(fd), &syscall.SockaddrUnix{Name: addr.Name})
	}); err != nil {
		return err
	}
	return cerr
}

// bind opens the client's two sockets under a free id and connects the
// control socket to the server's.
func (c *Client) bind(ctx context.Context, wait bool) error {
	pid := uint32(os.Getpid())
	var lastErr error
	for range maxIDs {
		k := idSeq.Add(1) - 1
		if k >= maxIDs {
			break
		}
		id := pid + k<<pidBits
		data, err := net.ListenUnixgram("unixgram", simproto.Addr(simproto.InName(c.base, id)))
		if err != nil {
			lastErr = err
			if errors.Is(err, syscall.EADDRINUSE) {
				continue // someone else's name: take the next id
			}
			return fmt.Errorf("simclient: %w", err)
		}
		for {
			ctl, err := net.DialUnix("unixgram", simproto.Addr(simproto.ClientCtlName(c.base, id)), simproto.Addr(simproto.CtlName(c.base)))
			if err == nil {
				c.id, c.data, c.ctl = id, data, ctl
				return nil
			}
			if errors.Is(err, syscall.EADDRINUSE) {
				lastErr = err
				break
			}
			if !wait || !errors.Is(err, syscall.ECONNREFUSED) {
				data.Close()
				return fmt.Errorf("simclient: no server at %q: %w", simproto.CtlName(c.base), err)
			}
			select {
			case <-ctx.Done():
				data.Close()
				return fmt.Errorf("simclient: waiting for %q: %w", simproto.CtlName(c.base), ctx.Err())
			case <-time.After(waitRetry):
			}
		}
		data.Close()
	}
	return fmt.Errorf("simclient: no free client id: %w", lastErr)
}

// roundTrip sends one control message and returns the server's answer to
// it.
func (c *Client) roundTrip(req *simproto.CtlFields) (simproto.CtlFields, error) {
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	req.ClientID = c.slot
	if _, err := c.ctl.Write(simproto.AppendCtl(nil, req)); err != nil {
		return simproto.CtlFields{}, fmt.Errorf("%v: %w", req.Type, err)
	}
	if err := c.ctl.SetReadDeadline(time.Now().Add(c.ctlTO)); err != nil {
		return simproto.CtlFields{}, err
	}
	buf := make([]byte, 2*simproto.CtlSize)
	for {
		n, err := c.ctl.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return simproto.CtlFields{}, fmt.Errorf("%v: %w within %v", req.Type, ErrCtlTimeout, c.ctlTO)
			}
			return simproto.CtlFields{}, fmt.Errorf("%v: %w", req.Type, err)
		}
		resp, err := simproto.DecodeCtl(buf[:n])
		if err != nil {
			c.bad.Add(1)
			continue
		}
		switch resp.Type {
		case req.Type:
			return resp, nil
		case simproto.CtlError:
			return resp, fmt.Errorf("%v: %w", req.Type, ErrRefused)
		}
		c.staleCtl.Add(1) // the answer to a message that timed out before
	}
}

// ctlQuery runs a control query of type t with data in and returns the
// answer's data.
func (c *Client) ctlQuery(t simproto.CtlType, in []byte) ([simproto.CtlDataSize]byte, error) {
	if c.closed.Load() {
		return [simproto.CtlDataSize]byte{}, madport.ErrClosed
	}
	req := simproto.CtlFields{Type: t, Len: uint32(len(in))}
	copy(req.Data[:], in)
	resp, err := c.roundTrip(&req)
	if err != nil {
		return [simproto.CtlDataSize]byte{}, fmt.Errorf("simclient: %w", err)
	}
	return resp.Data, nil
}

// Slot returns the client id the server gave this client.
func (c *Client) Slot() uint32 { return c.slot }

// NodeID returns the name of the node the server attached this client at.
func (c *Client) NodeID() string { return c.node }

// Send hands one MAD to the server.
func (c *Client) Send(m madport.MAD) error {
	if c.closed.Load() {
		return madport.ErrClosed
	}
	if len(m.Data) != madport.MADSize {
		return fmt.Errorf("%w: %d bytes, want %d", ErrMAD, len(m.Data), madport.MADSize)
	}
	f := simproto.RequestFields{DLID: m.LID, DestQP: m.QP, MAD: m.Data}
	if m.LID == mad.PermissiveLID {
		f.SLID = mad.PermissiveLID
	}
	h := mad.MAD(m.Data)
	if !h.MgmtClass().IsSubn() {
		f.SrcQP = 1
	}
	f.Length = oneSegmentLength(m.Data)
	if !h.IsResponse() {
		c.tids.Remember(h.TransactionID())
	}
	c.sendMu.Lock()
	simproto.Request(c.sbuf[:]).Encode(&f)
	_, err := c.data.Write(c.sbuf[:]) // connected to outAddr
	c.sendMu.Unlock()
	if err != nil {
		if c.closed.Load() {
			return madport.ErrClosed
		}
		return fmt.Errorf("simclient: send: %w", err)
	}
	c.sent.Add(1)
	return nil
}

// longAgo is a read deadline in the past: it wakes a blocked read.
var longAgo = time.Unix(1, 0)

// Recv returns the next MAD the server sent. It reads the socket on the
// caller's goroutine: no goroutine and channel between the socket and
// the caller, whose wake-ups cost more CPU per MAD than the read itself.
// The socket's buffer in the kernel is the queue.
func (c *Client) Recv(ctx context.Context) (madport.MAD, error) {
	return c.RecvUntil(ctx, time.Time{})
}

var _ madport.UntilReceiver = (*Client)(nil)

// RecvUntil is Recv that also returns context.DeadlineExceeded when
// deadline (zero: none) passes first. The deadline is the socket's read
// deadline: no timer or context per call.
func (c *Client) RecvUntil(ctx context.Context, deadline time.Time) (madport.MAD, error) {
	select {
	case <-c.done:
		return madport.MAD{}, madport.ErrClosed
	default:
	}
	select {
	case c.recvTok <- struct{}{}:
	case <-ctx.Done():
		return madport.MAD{}, ctx.Err()
	case <-c.done:
		return madport.MAD{}, madport.ErrClosed
	}
	defer func() { <-c.recvTok }()
	if dl, ok := ctx.Deadline(); ok && (deadline.IsZero() || dl.Before(deadline)) {
		deadline = dl
	}
	c.watch(ctx)
	for {
		if err := c.data.SetReadDeadline(deadline); err != nil {
			return madport.MAD{}, c.closedOr(err)
		}
		// Checked after the deadline is set: a watch that fired before
		// had its wake-up overwritten, but its context shows here.
		if err := ctx.Err(); err != nil {
			return madport.MAD{}, err
		}
		// One byte more than a datagram: a longer one shows as too long
		// rather than cut to size. The MAD is handed out in place.
		buf := make([]byte, simproto.RequestSize+1)
		n, err := c.data.Read(buf)
		if err != nil {
			var ne net.Error
			switch {
			case c.closed.Load() || errors.Is(err, net.ErrClosed):
				return madport.MAD{}, madport.ErrClosed
			case ctx.Err() != nil:
				return madport.MAD{}, ctx.Err()
			case errors.As(err, &ne) && ne.Timeout():
				if !deadline.IsZero() && !time.Now().Before(deadline) {
					return madport.MAD{}, context.DeadlineExceeded
				}
				continue // woken for an earlier caller's context
			}
			c.bad.Add(1)
			continue
		}
		r := simproto.Request(buf[:n])
		if !r.IsValid() {
			c.bad.Add(1)
			continue
		}
		h := mad.MAD(r.MAD())
		st := r.Status()
		if tid, ok := c.tids.Restore(h.TransactionID(), h.IsResponse() || st != 0); ok {
			h.SetTransactionID(tid)
		}
		c.received.Add(1)
		if st == simproto.StatusTimeout {
			c.timedOut.Add(1)
		}
		return madport.MAD{LID: r.SLID(), QP: r.SrcQP(), Data: r.MAD(), Status: int(st)}, nil
	}
}

// watch makes the end of ctx wake a blocked read, by a read deadline in
// the past. The watch stays for the next Recv with a context of the same
// end (an SM passes the same one for a whole sweep): registering one for
// every MAD costs as much as reading it. A watch left from an earlier
// context may wake a later read for nothing; that read tries again.
// recvTok held.
func (c *Client) watch(ctx context.Context) {
	d := ctx.Done()
	if d == c.watchDone {
		return
	}
	if c.unwatch != nil {
		c.unwatch()
	}
	c.watchDone, c.unwatch = d, nil
	if d != nil {
		c.unwatch = context.AfterFunc(ctx, func() { c.data.SetReadDeadline(longAgo) })
	}
}

// closedOr returns ErrClosed after Close, else err.
func (c *Client) closedOr(err error) error {
	if c.closed.Load() || errors.Is(err, net.ErrClosed) {
		return madport.ErrClosed
	}
	return err
}

// Info returns the local port's identity and state, from the server's
// NodeInfo and PortInfo of the port.
func (c *Client) Info() (madport.Info, error) {
	nd, err := c.ctlQuery(simproto.CtlGetNodeInfo, nil)
	if err != nil {
		return madport.Info{}, err
	}
	pd, err := c.ctlQuery(simproto.CtlGetPortInfo, []byte{0}) // 0: our port
	if err != nil {
		return madport.Info{}, err
	}
	ni, pi := mad.NodeInfo(nd[:]), mad.PortInfo(pd[:])
	info := madport.Info{
		NodeGUID: ni.NodeGUID(),
		PortGUID: ni.PortGUID(),
		PortNum:  pi.LocalPortNum(),
		LID:      pi.LID(),
		SMLID:    pi.MasterSMLID(),
		State:    uint8(pi.PortState()),
	}
	if ni.NodeType() == mad.NodeTypeCA && info.PortGUID == info.NodeGUID {
		// ibsim answers with the node's stored NodeInfo, whose PortGUID is
		// the node GUID; its CA ports are NodeGUID+port.
		info.PortGUID = info.NodeGUID + uint64(info.PortNum)
	}
	return info, nil
}

// SetIsSM sets or clears the IsSM capability of the port.
func (c *Client) SetIsSM(on bool) error {
	var d [simproto.IsSMSize]byte
	simproto.EncodeIsSM(d[:], on)
	_, err := c.ctlQuery(simproto.CtlSetIsSM, d[:])
	return err
}

// Close says Disconnect to the server and releases the sockets. Pending and
// later Recvs return madport.ErrClosed.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		// Best effort: a server that is gone does not answer.
		c.ctlMu.Lock()
		c.ctlTO = min(c.ctlTO, time.Second)
		c.ctlMu.Unlock()
		_, err = c.roundTrip(&simproto.CtlFields{Type: simproto.CtlDisconnect})
		if errors.Is(err, ErrCtlTimeout) {
			err = nil
		}
		c.closed.Store(true)
		close(c.done)
		err = errors.Join(err, c.ctl.Close(), c.data.Close())
		// A Recv still reading returns ErrClosed now; then the watch
		// is ours to drop.
		c.recvTok <- struct{}{}
		if c.unwatch != nil {
			c.unwatch()
		}
		<-c.recvTok
	})
	return err
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{
		Sent: c.sent.Load(), Received: c.received.Load(), TimedOut: c.timedOut.Load(),
		BadMessages: c.bad.Load(), StaleCtl: c.staleCtl.Load(),
	}
}

// oneSegmentLength returns the length to tell the server a MAD has: for a
// one-segment RMPP DATA transfer (Active, First and Last, a PayloadLength
// that fits), the common and RMPP headers and PayloadLength, what a
// client of the kernel's MAD layer gives as the length of a short
// answer; else 0 (a whole MAD). The server seals such a MAD's RMPP
// header with the length it is told, and reports it to the receiver.
func oneSegmentLength(b []byte) uint64 {
	r := mad.RMPP(b)
	if !r.IsValid() || !mad.RMPPClass(r.MAD().MgmtClass()) || r.Version() != mad.RMPPVersion1 ||
		r.Type() != mad.RMPPTypeData {
		return 0
	}
	all := mad.RMPPFlagActive | mad.RMPPFlagFirst | mad.RMPPFlagLast
	if r.Flags()&all != all || r.PayloadLength() > mad.RMPPSegmentSize {
		return 0
	}
	return uint64(mad.RMPPHeaderEnd) + uint64(r.PayloadLength())
}
