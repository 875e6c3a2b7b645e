package umad

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ibfab/madport"
	"ibfab/madport/tidmemo"
	"ibfab/wire/mad"
)

// Defaults Open fills in for zero Config fields.
const (
	DefaultTimeout   = time.Second
	DefaultRecvQueue = 4096
	// GSIQKey is the well-known Q_Key of QP1, sent with GMPs whose
	// madport.MAD leaves QKey zero.
	GSIQKey = 0x80010000
)

// Errors of a Port.
var (
	// ErrMAD: a MAD of the wrong size.
	ErrMAD = errors.New("umad: bad MAD")
	// ErrNoAgent: a MAD of a class no agent was registered for.
	ErrNoAgent = errors.New("umad: no agent for the MAD's class")
	// ErrSMPresent: another process holds the port's issm device, that
	// is, another SM runs on the port.
	ErrSMPresent = errors.New("umad: another SM holds the port (its issm device is busy)")
	// ErrDuplicate: the kernel refused a request whose TID one still in
	// flight has (EINVAL on write).
	ErrDuplicate = errors.New("umad: a request with this TID is still in flight")
)

// Agent is one MAD agent to register: a management class, and the methods
// of unsolicited requests of that class the Port receives. SMI classes
// (0x01, 0x81) go through QP0, the others through QP1.
type Agent struct {
	Class   uint8
	Version uint8   // class version; 0 means 1
	Methods []uint8 // request methods (0-127) to receive unsolicited
	// RMPP registers the agent with RMPP version 1: the kernel cuts a
	// long message sent with the Active flag into segments, takes the
	// receiver's ACKs, and hands up reassembled messages.
	RMPP bool
}

// SMAgents are the agents a subnet manager needs: both SMP classes, with
// Get and Set (SMInfo from other SMs), Trap and TrapRepress unsolicited.
func SMAgents() []Agent {
	m := []uint8{uint8(mad.MethodGet), uint8(mad.MethodSet), uint8(mad.MethodTrap), uint8(mad.MethodTrapRepress)}
	return []Agent{
		{Class: uint8(mad.ClassSubnDirected), Methods: m},
		{Class: uint8(mad.ClassSubnLID), Methods: m},
		SAAgent(),
	}
}

// SAAgent is the agent of a master's Subnet Administrator: class 0x03
// (version 2) with the requests clients send it, and RMPP, as OpenSM
// registers it, so that GetTableResp transfers and their ACKs are the
// kernel's.
func SAAgent() Agent {
	return Agent{Class: uint8(mad.ClassSubnAdm), Version: 2, RMPP: true, Methods: []uint8{
		uint8(mad.MethodGet), uint8(mad.MethodSet), uint8(mad.MethodGetTable), uint8(mad.MethodGetMulti),
		uint8(mad.MethodDelete), uint8(mad.MethodGetTraceTable), uint8(mad.MethodReport)}}
}

// Config says which port to open and how to use it.
type Config struct {
	CA   string // RDMA device name, as in /sys/class/infiniband
	Port int    // its port number
	// Timeout goes into the header of every request that solicits a
	// response: the kernel waits that long for it (matching by TID),
	// resends Retries times, then hands the request back with
	// StatusTimeout. A response that comes later is dropped by the kernel.
	// 0 means DefaultTimeout.
	Timeout time.Duration
	Retries int
	// Agents to register; nil means SMAgents.
	Agents []Agent
	// RecvQueue is how many received MADs wait for Recv; 0 means
	// DefaultRecvQueue. More are dropped and counted.
	RecvQueue int
	// Files is the machine; nil means OS.
	Files Files
}

// Stats counts what went through a Port.
type Stats struct {
	Sent       uint64 `json:"sent"`
	SendErrors uint64 `json:"send_errors"` // writes the kernel refused
	Received   uint64 `json:"received"`    // queued for Recv
	TimedOut   uint64 `json:"timed_out"`   // of Received, requests handed back with StatusTimeout
	QueueDrops uint64 `json:"queue_drops"` // dropped: Recv too far behind
	BadPackets uint64 `json:"bad_packets"` // reads that did not decode
}

// Port is a madport.Port on a umad device. All methods are safe for
// concurrent use.
type Port struct {
	cfg     Config
	files   Files
	dev     Device
	info    DeviceInfo
	hdrSize int
	agents  map[uint8]uint32 // class → agent id
	rmpp    map[uint8]bool   // classes whose agent does RMPP
	tmoMS   uint32
	retries uint32
	tids    *tidmemo.Memo

	recv    chan madport.MAD
	done    chan struct{} // closed by Close
	readerx chan struct{} // closed when the reader returned
	failed  chan struct{} // closed when the device failed for good
	failErr error

	mu        sync.Mutex // issm, closeOnce's work
	issm      Device
	closeOnce sync.Once
	closed    atomic.Bool

	sent, sendErrs, received, timedOut, queueDrops, bad atomic.Uint64
}

var _ madport.Port = (*Port)(nil)

// Open finds the umad device of cfg.CA's port cfg.Port through sysfs,
// opens it, enables P_Key indexes (falling back to the old header on a
// kernel that refuses) and registers the agents.
func Open(cfg Config) (*Port, error) {
	p := &Port{cfg: cfg, files: cfg.Files, agents: map[uint8]uint32{}, rmpp: map[uint8]bool{},
		done: make(chan struct{}), readerx: make(chan struct{}), failed: make(chan struct{})}
	if p.files == nil {
		p.files = OS
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Timeout < 0 || cfg.Retries < 0 {
		return nil, fmt.Errorf("umad: negative timeout %v or retries %d", cfg.Timeout, cfg.Retries)
	}
	p.tmoMS = uint32(min(max(cfg.Timeout.Milliseconds(), 1), math.MaxUint32))
	p.retries = uint32(min(cfg.Retries, math.MaxInt32))
	q := cfg.RecvQueue
	if q <= 0 {
		q = DefaultRecvQueue
	}
	p.recv = make(chan madport.MAD, q)
	p.tids = tidmemo.New(tidLowBits, tidMemoSize)
	agents := cfg.Agents
	if agents == nil {
		agents = SMAgents()
	}

	info, err := Find(p.files, cfg.CA, cfg.Port)
	if err != nil {
		return nil, err
	}
	p.info = info
	dev, err := p.files.OpenDevice(UMADPath(info.Index), false)
	if err != nil {
		return nil, fmt.Errorf("umad: opening %s: %w", UMADPath(info.Index), err)
	}
	p.dev = dev
	// IB_USER_MAD_ENABLE_PKEY first: it fails once the file is used.
	switch err := dev.Ioctl(IoctlEnablePKey, nil); {
	case err == nil:
		p.hdrSize = HeaderSize
	case errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTTY):
		p.hdrSize = OldHeaderSize
	default:
		dev.Close()
		return nil, fmt.Errorf("umad: enabling P_Key indexes on %s: %w", UMADPath(info.Index), err)
	}
	for _, a := range agents {
		id, err := register(dev, a)
		if err != nil {
			dev.Close()
			return nil, fmt.Errorf("umad: registering an agent for class %#02x on %s: %w", a.Class, UMADPath(info.Index), err)
		}
		p.agents[a.Class] = id
		p.rmpp[a.Class] = a.RMPP
	}
	go p.reader()
	return p, nil
}

func register(dev Device, a Agent) (uint32, error) {
	r := RegReq{MgmtClass: a.Class, ClassVersion: a.Version, QPN: 1}
	if a.RMPP {
		r.RMPPVersion = 1
	}
	if r.ClassVersion == 0 {
		r.ClassVersion = 1
	}
	if IsSMIClass(a.Class) {
		r.QPN = 0
	}
	for _, m := range a.Methods {
		if m >= 128 {
			return 0, fmt.Errorf("method %#02x is a response", m)
		}
		r.SetMethod(m)
	}
	arg := r.Encode()
	if err := dev.Ioctl(IoctlRegisterAgent, arg); err != nil {
		return 0, err
	}
	got, err := DecodeRegReq(arg)
	if err != nil {
		return 0, err
	}
	if got.ID >= MaxAgents {
		return 0, fmt.Errorf("kernel gave agent id %d, at most %d", got.ID, MaxAgents-1)
	}
	return got.ID, nil
}

// Device returns the umad device the port uses.
func (p *Port) Device() DeviceInfo { return p.info }

// HeaderSize returns the header size the kernel agreed to: HeaderSize, or
// OldHeaderSize on a kernel without P_Key index support.
func (p *Port) HeaderSize() int { return p.hdrSize }

// AgentID returns the agent id registered for class c.
func (p *Port) AgentID(c uint8) (uint32, bool) {
	id, ok := p.agents[c]
	return id, ok
}

// SegmentsRMPP implements madport.RMPPSegmenter: the kernel runs RMPP for
// the classes whose agent was registered with it.
func (p *Port) SegmentsRMPP(class uint8) bool { return p.rmpp[class] }

var _ madport.RMPPSegmenter = (*Port)(nil)

// solicits reports whether a request of method m waits for a response the
// kernel matches to it by TID (TrapRepress answers a Trap, ReportResp a
// Report).
func solicits(m mad.Method) bool {
	switch m {
	case mad.MethodGet, mad.MethodSet, mad.MethodTrap, mad.MethodGetTable, mad.MethodGetTraceTable, mad.MethodGetMulti,
		mad.MethodDelete, mad.MethodReport:
		return true
	}
	return false
}

// isResponse is the kernel's notion: the R bit, or TrapRepress.
func isResponse(m mad.Method) bool { return m.IsResponse() || m == mad.MethodTrapRepress }

// Send writes one MAD. A request that solicits a response carries
// Config.Timeout and Config.Retries; the kernel replaces the upper 32 bits
// of its TID, and the Port puts the caller's back into the response.
// P_Key is not sent: the kernel sends with P_Key index 0, the default
// partition.
func (p *Port) Send(m madport.MAD) error {
	if p.closed.Load() {
		return madport.ErrClosed
	}
	if len(m.Data) < mad.RMPPHeaderEnd {
		return fmt.Errorf("%w: %d bytes, want %d", ErrMAD, len(m.Data), madport.MADSize)
	}
	h := mad.MAD(m.Data)
	class := uint8(h.MgmtClass())
	// An RMPP agent's message with the Active flag is a transfer's whole
	// payload, of its own length; any other MAD is one of 256 bytes.
	rmppMsg := p.rmpp[class] && mad.RMPPClass(h.MgmtClass()) && mad.RMPP(m.Data).Active()
	if !rmppMsg && len(m.Data) != madport.MADSize {
		return fmt.Errorf("%w: %d bytes, want %d (another length needs an RMPP agent and the Active flag)", ErrMAD, len(m.Data), madport.MADSize)
	}
	id, ok := p.agents[class]
	if !ok {
		return fmt.Errorf("%w %v", ErrNoAgent, h.MgmtClass())
	}
	f := HeaderFields{AgentID: id, QPN: m.QP, QKey: m.QKey, LID: m.LID, SL: m.SL}
	if !IsSMIClass(class) && f.QKey == 0 {
		f.QKey = GSIQKey
	}
	method := h.Method()
	if !isResponse(method) && solicits(method) {
		f.TimeoutMS, f.Retries = p.tmoMS, p.retries
	}
	if !isResponse(method) {
		p.tids.Remember(h.TransactionID())
	}
	appendPkt := AppendPacket
	if rmppMsg {
		appendPkt = AppendRMPPPacket
	}
	pkt, err := appendPkt(make([]byte, 0, p.hdrSize+len(m.Data)), p.hdrSize, &f, m.Data)
	if err != nil {
		return err
	}
	n, err := p.dev.Write(pkt)
	switch {
	case err == nil && n != len(pkt):
		err = fmt.Errorf("umad: short write: %d of %d bytes", n, len(pkt))
	case errors.Is(err, syscall.EINVAL):
		err = fmt.Errorf("%w (TID %#x): %w", ErrDuplicate, h.TransactionID(), err)
	case err != nil && p.closed.Load():
		return madport.ErrClosed
	case err != nil:
		err = fmt.Errorf("umad: send: %w", err)
	}
	if err != nil {
		p.sendErrs.Add(1)
		return err
	}
	p.sent.Add(1)
	return nil
}

// reader queues what the kernel hands up until the device is closed or
// fails.
func (p *Port) reader() {
	defer close(p.readerx)
	decode, size := DecodePacket, MADSize
	for _, on := range p.rmpp {
		if on {
			decode, size = DecodeRMPPPacket, MaxRMPPRecv
		}
	}
	buf := make([]byte, p.hdrSize+size)
	for {
		n, err := p.dev.Read(buf)
		if err != nil {
			switch {
			case p.closed.Load():
				return
			case errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.EAGAIN):
				continue
			}
			// EIO: the device went away (agents dead); anything else is
			// as final.
			p.failErr = fmt.Errorf("umad: reading %s: %w", UMADPath(p.info.Index), err)
			close(p.failed)
			return
		}
		f, data, err := decode(buf[:n], p.hdrSize)
		if err != nil {
			p.bad.Add(1)
			continue
		}
		m := madport.MAD{LID: f.LID, QP: f.QPN, SL: f.SL, Status: int(f.Status), Data: make([]byte, max(madport.MADSize, len(data)))}
		copy(m.Data, data)
		h := mad.MAD(m.Data)
		if isResponse(h.Method()) || f.Status != 0 {
			if tid, ok := p.tids.Restore(h.TransactionID(), true); ok {
				h.SetTransactionID(tid)
			}
		}
		select {
		case p.recv <- m:
			p.received.Add(1)
			if f.Status == StatusTimeout {
				p.timedOut.Add(1)
			}
		default:
			p.queueDrops.Add(1)
		}
	}
}

// Recv returns the next MAD the kernel handed up: a response, a request
// handed back with Status StatusTimeout (only its first MADHeaderSize
// bytes are the request's; the rest is zero), or an unsolicited request
// for one of the agents. It returns the device's error once the device
// failed (removed), after what was queued before.
func (p *Port) Recv(ctx context.Context) (madport.MAD, error) {
	select {
	case <-p.done:
		return madport.MAD{}, madport.ErrClosed
	default:
	}
	select {
	case m := <-p.recv:
		return m, nil
	default:
	}
	select {
	case m := <-p.recv:
		return m, nil
	case <-ctx.Done():
		return madport.MAD{}, ctx.Err()
	case <-p.done:
		return madport.MAD{}, madport.ErrClosed
	case <-p.failed:
		select {
		case m := <-p.recv:
			return m, nil
		default:
			return madport.MAD{}, p.failErr
		}
	}
}

// Info reads the port's identity and state from sysfs.
func (p *Port) Info() (madport.Info, error) {
	if p.closed.Load() {
		return madport.Info{}, madport.ErrClosed
	}
	a, err := ReadPortAttrs(p.files, p.cfg.CA, p.cfg.Port)
	if err != nil {
		return madport.Info{}, err
	}
	return madport.Info{NodeGUID: a.NodeGUID, PortGUID: a.PortGUID, PortNum: uint8(p.cfg.Port),
		LID: a.LID, SMLID: a.SMLID, State: a.State}, nil
}

// SetIsSM sets the port's IsSM capability by holding its issm device open,
// and clears it by closing the device, as the kernel ties the two. It
// fails with ErrSMPresent when another process holds the device.
func (p *Port) SetIsSM(on bool) error {
	if p.closed.Load() {
		return madport.ErrClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.issm == nil:
		d, err := p.files.OpenDevice(ISSMPath(p.info.Index), true)
		if errors.Is(err, syscall.EAGAIN) {
			return fmt.Errorf("%w: %s", ErrSMPresent, ISSMPath(p.info.Index))
		}
		if err != nil {
			return fmt.Errorf("umad: opening %s: %w", ISSMPath(p.info.Index), err)
		}
		p.issm = d
	case !on && p.issm != nil:
		err := p.issm.Close()
		p.issm = nil
		if err != nil {
			return fmt.Errorf("umad: closing %s: %w", ISSMPath(p.info.Index), err)
		}
	}
	return nil
}

// Close releases the issm device, if held, and the umad device (which
// unregisters the agents). Pending and later Recvs return
// madport.ErrClosed.
func (p *Port) Close() error {
	var err error
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		close(p.done)
		p.mu.Lock()
		if p.issm != nil {
			err = p.issm.Close()
			p.issm = nil
		}
		p.mu.Unlock()
		err = errors.Join(err, p.dev.Close())
		<-p.readerx
	})
	return err
}

// Stats returns the port's counters.
func (p *Port) Stats() Stats {
	return Stats{Sent: p.sent.Load(), SendErrors: p.sendErrs.Load(), Received: p.received.Load(),
		TimedOut: p.timedOut.Load(), QueueDrops: p.queueDrops.Load(), BadPackets: p.bad.Load()}
}
