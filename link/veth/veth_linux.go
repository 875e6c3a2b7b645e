package veth

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"ibfab/link"
	"ibfab/wire"
)

const (
	// rxBufSize holds any frame a 9000-byte-MTU veth can carry, with room;
	// a longer frame would be truncated and fail the receiver's checks.
	rxBufSize = 16 << 10
	// sockBufSize is the socket buffer asked for in each direction: the
	// receive buffer must hold what the port advertised as credits (in
	// kernel memory, a 2 KiB frame costs about twice that), so that data
	// VLs stay lossless while the receive goroutine is not scheduled;
	// and VL15, which has no credits, must hold what an SM's burst of
	// SMPs brings back while the process is busy sending it (with 4 MiB
	// an HCA that sent 20,000 directed-route SMPs through its MAD
	// endpoint lost 29 of the answers here; a silicon HCA drains VL15 at
	// the wire's rate). It is a bound, not an allocation.
	sockBufSize = 16 << 20
	// maxRxErrors ends the receive loop after that many read errors in a
	// row: a socket failing like that will not recover.
	maxRxErrors = 100
	// rxBatch is how many frames one read may return.
	rxBatchSize = 8
)

// filter is a classic BPF program accepting the two IBA EtherTypes and
// training frames only:
//
//	ldh [12]                 ; EtherType
//	jeq #0x88B5, accept
//	jeq #0x88B6, accept
//	jeq #0x88B7, accept
//	ret #0                   ; drop
//	accept: ret #0x40000     ; whole frame
var filter = []unix.SockFilter{
	{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 12},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 3, K: wire.EtherTypeData},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 2, K: wire.EtherTypeLink},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: link.EtherTypeTraining},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0x40000},
}

// broadcast is the destination until the peer's MAC is known.
var broadcast = [wire.MACSize]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// Stats counts what an Endpoint received and sent beyond delivered packets.
type Stats struct {
	RxPackets     uint64 // delivered to the Dispatcher
	RxShort       uint64 // frames shorter than an Ethernet header
	RxOther       uint64 // frames of another EtherType (the filter should stop them)
	RxErrors      uint64 // failed reads
	RxKernelDrops uint64 // frames the kernel dropped for lack of socket buffer
	TxPackets     uint64 // frames written
	TxDropped     uint64 // frames the kernel refused for lack of buffer (lost on the medium)
	TxErrors      uint64 // other failed writes
}

// Endpoint is a link.Endpoint on one network interface.
type Endpoint struct {
	name    string
	ifindex int
	mac     [wire.MACSize]byte
	file    *os.File // the packet socket, non-blocking, in the runtime poller

	closed  atomic.Bool
	carrier atomic.Bool
	peerMAC atomic.Uint64 // learned source MAC of received frames; 0: unknown

	// txMu protects txBuf, the frame being written.
	txMu  sync.Mutex
	txBuf []byte

	// mu protects d and down; it is held across CarrierChanged calls, which
	// serializes them and orders them with Attach and Close.
	mu   sync.Mutex
	d    link.Dispatcher
	down bool // Close has started: no more Dispatcher calls

	// Carrier watch: the namespace and a netlink handle in it, for
	// resubscribing after an overflow; nlDone ends all subscriptions.
	// nlMu serializes the uses of nlh, a handle not safe for concurrent
	// use: the watch's re-reads and SetTransmitter.
	ns        netns.NsHandle
	nlMu      sync.Mutex
	nlh       *netlink.Handle
	nlDone    chan struct{}
	watching  bool // the watch goroutine runs; it closes watchDone
	watchDone chan struct{}
	rxDone    chan struct{} // closed when the receive goroutine ends; nil before Attach
	closeOnce sync.Once
	closeErr  error

	rxPackets, rxShort, rxOther, rxErrors, rxKernelDrops atomic.Uint64
	txPackets, txDropped, txErrors                       atomic.Uint64
}

var (
	_ link.Endpoint    = (*Endpoint)(nil)
	_ link.Transmitter = (*Endpoint)(nil)
)

// Open opens an Endpoint on interface ifname. It must be called on a
// thread in the interface's network namespace (the process's own, or a
// locked thread moved there); once Open returns the Endpoint needs no
// particular thread.
func Open(ifname string) (_ *Endpoint, err error) {
	e := &Endpoint{
		name:      ifname,
		nlDone:    make(chan struct{}),
		watchDone: make(chan struct{}),
		txBuf:     make([]byte, 0, wire.EthernetSize+link.MaxPacketSize),
	}
	// Undo whatever was set up if a later step fails.
	defer func() {
		if err != nil {
			e.release()
			err = fmt.Errorf("veth %s: %w", ifname, err)
		}
	}()
	if e.ns, err = netns.Get(); err != nil {
		return nil, fmt.Errorf("current namespace: %w", err)
	}
	// A handle in the current namespace, made without setns(2), which a
	// process without CAP_SYS_ADMIN (a node in a container) may not call.
	if e.nlh, err = netlink.NewHandle(); err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	// Subscribe before reading the flags, so no change falls in between.
	updates, err := e.subscribe()
	if err != nil {
		return nil, fmt.Errorf("link subscription: %w", err)
	}
	l, err := e.nlh.LinkByName(ifname)
	if err == nil && l.Attrs().RawFlags&unix.IFF_UP == 0 {
		// A port starts with its transmitter on, whatever a port that
		// ran on the interface before left it in (Disabled, say).
		if err = e.nlh.LinkSetUp(l); err == nil {
			l, err = e.nlh.LinkByName(ifname)
		}
	}
	if err == nil {
		a := l.Attrs()
		e.ifindex = a.Index
		copy(e.mac[:], a.HardwareAddr)
		e.carrier.Store(a.RawFlags&unix.IFF_LOWER_UP != 0)
	}
	// Watch even on error, so that release ends the subscription the one
	// way it knows.
	e.watching = true
	go e.watch(updates)
	if err != nil {
		return nil, err
	}

	if e.file, err = openSocket(e.ifindex); err != nil {
		return nil, err
	}
	return e, nil
}

// openSocket returns a non-blocking packet socket on ifindex that receives
// only IBA frames, as an *os.File in the runtime poller.
func openSocket(ifindex int) (*os.File, error) {
	// Protocol 0 receives nothing until bind, so the filter is in place
	// before the first frame is queued.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("packet socket: %w", err)
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"attaching filter", func() error {
			return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
				&unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]})
		}},
		// No PACKET_QDISC_BYPASS: it would skip the device's egress path,
		// so tcpdump in the node's namespace would not see what the node
		// sends and tc/TCX egress programs (fault injection) would not run.
		{"PACKET_IGNORE_OUTGOING", func() error {
			return unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
		}},
		{"receive buffer", func() error { return setBuf(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF) }},
		{"send buffer", func() error { return setBuf(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF) }},
		{"bind", func() error {
			return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex})
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("packet socket: %s: %w", s.what, err)
		}
	}
	return os.NewFile(uintptr(fd), "packet"), nil
}

// setBuf asks for sockBufSize past the sysctl limit (needs CAP_NET_ADMIN)
// and falls back to what the limit allows.
func setBuf(fd, force, plain int) error {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, sockBufSize) == nil {
		return nil
	}
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, sockBufSize)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// WritePacket implements link.Endpoint.
func (e *Endpoint) WritePacket(k link.Kind, pkt []byte) error {
	if e.closed.Load() {
		return net.ErrClosed
	}
	if err := link.CheckPacket(k, len(pkt)); err != nil {
		return err
	}
	if !e.carrier.Load() {
		return link.ErrNoCarrier
	}
	dst := broadcast
	if m := e.peerMAC.Load(); m != 0 {
		putMAC(&dst, m)
	}
	e.txMu.Lock()
	e.txBuf = append(wire.AppendEthernet(e.txBuf[:0], dst, e.mac, k.EtherType()), pkt...)
	_, err := e.file.Write(e.txBuf)
	e.txMu.Unlock()
	switch {
	case err == nil:
		e.txPackets.Add(1)
		return nil
	case errors.Is(err, os.ErrClosed):
		return net.ErrClosed
	case errors.Is(err, unix.ENOBUFS):
		// The kernel had no room for it: a loss on the medium.
		e.txDropped.Add(1)
		return nil
	case errors.Is(err, unix.ENETDOWN), errors.Is(err, unix.ENXIO):
		e.txErrors.Add(1)
		return fmt.Errorf("veth %s: %w (%w)", e.name, link.ErrNoCarrier, err)
	}
	e.txErrors.Add(1)
	return fmt.Errorf("veth %s: %w", e.name, err)
}

// SetTransmitter implements link.Transmitter: the interface is set
// administratively down or up. A veth end that goes down takes the carrier
// of both ends with it (the kernel's veth_close), and comes back up with
// it when both ends are up, which is a dark transmitter at either end of a
// cable. The kernel reports the peer's carrier change at once only when
// the two ends' interface indexes differ (fabricnet sees to it).
func (e *Endpoint) SetTransmitter(on bool) error {
	e.nlMu.Lock()
	defer e.nlMu.Unlock()
	if e.closed.Load() {
		return net.ErrClosed
	}
	l := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: e.ifindex, Name: e.name}}
	var err error
	if on {
		err = e.nlh.LinkSetUp(l)
	} else {
		err = e.nlh.LinkSetDown(l)
	}
	if err != nil {
		return fmt.Errorf("veth %s: transmitter on=%v: %w", e.name, on, err)
	}
	return nil
}

// Attach implements link.Endpoint.
func (e *Endpoint) Attach(d link.Dispatcher) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.d != nil || e.down {
		return
	}
	e.d = d
	e.rxDone = make(chan struct{})
	go e.receive(d)
}

// receive is the receive goroutine: it reads frames until the socket is
// closed and delivers the IBA packets in them. Frames are read in batches
// (recvmmsg), so a busy link costs one system call and one wake-up per
// batch rather than per frame.
func (e *Endpoint) receive(d link.Dispatcher) {
	defer close(e.rxDone)
	rc, err := e.file.SyscallConn()
	if err != nil {
		e.rxErrors.Add(1)
		return
	}
	b := newRxBatch(rxBatchSize, rxBufSize)
	errs := 0
	for {
		var (
			n    int
			rerr error
		)
		err := rc.Read(func(fd uintptr) bool {
			n, rerr = b.recv(fd)
			return !errors.Is(rerr, unix.EAGAIN)
		})
		if err != nil || e.closed.Load() {
			return // closed under us
		}
		if errors.Is(rerr, unix.ENETDOWN) {
			// Once each time the interface goes down (SetTransmitter,
			// or the harness cutting the link): the socket works again
			// when it is back up, so it is no sign of a failing one.
			continue
		}
		if rerr != nil {
			e.rxErrors.Add(1)
			if errs++; errs >= maxRxErrors {
				return
			}
			continue
		}
		errs = 0
		for i := range n {
			e.deliver(d, b.frame(i))
		}
	}
}

// deliver hands one received frame's IBA packet to d.
func (e *Endpoint) deliver(d link.Dispatcher, f []byte) {
	if len(f) < wire.EthernetSize {
		e.rxShort.Add(1) // a packet socket's only zero-length read is an empty frame
		return
	}
	k, ok := link.KindOf(binary.BigEndian.Uint16(f[12:14]))
	if !ok {
		e.rxOther.Add(1)
		return
	}
	if src := getMAC(f[6:12]); src != e.peerMAC.Load() {
		e.peerMAC.Store(src)
	}
	e.rxPackets.Add(1)
	d.DeliverPacket(k, f[wire.EthernetSize:])
}

// Carrier implements link.Endpoint.
func (e *Endpoint) Carrier() bool { return e.carrier.Load() }

// Name implements link.Endpoint.
func (e *Endpoint) Name() string { return e.name }

// MAC returns the interface's hardware address.
func (e *Endpoint) MAC() net.HardwareAddr { return append(net.HardwareAddr(nil), e.mac[:]...) }

// Close implements link.Endpoint.
func (e *Endpoint) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		e.mu.Lock()
		e.down = true
		rxDone := e.rxDone
		e.mu.Unlock()
		e.closeErr = e.file.Close() // wakes the blocked read
		if rxDone != nil {
			<-rxDone
		}
		e.release()
	})
	return e.closeErr
}

// release ends the carrier watch and frees the netlink resources; the
// socket is closed by the caller.
func (e *Endpoint) release() {
	close(e.nlDone)
	if e.watching {
		<-e.watchDone
	}
	if e.nlh != nil {
		e.nlMu.Lock()
		e.nlh.Close()
		e.nlMu.Unlock()
	}
	if e.ns.IsOpen() {
		e.ns.Close()
	}
}

// Stats returns the endpoint's counters.
func (e *Endpoint) Stats() Stats {
	if !e.closed.Load() {
		e.readKernelDrops()
	}
	return Stats{
		RxPackets:     e.rxPackets.Load(),
		RxShort:       e.rxShort.Load(),
		RxOther:       e.rxOther.Load(),
		RxErrors:      e.rxErrors.Load(),
		RxKernelDrops: e.rxKernelDrops.Load(),
		TxPackets:     e.txPackets.Load(),
		TxDropped:     e.txDropped.Load(),
		TxErrors:      e.txErrors.Load(),
	}
}

// readKernelDrops adds the socket's drop count since the last read
// (PACKET_STATISTICS resets on read) to rxKernelDrops.
func (e *Endpoint) readKernelDrops() {
	rc, err := e.file.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		if s, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			e.rxKernelDrops.Add(uint64(s.Drops))
		}
	})
}

func getMAC(b []byte) uint64 {
	var m uint64
	for _, x := range b[:wire.MACSize] {
		m = m<<8 | uint64(x)
	}
	return m
}

func putMAC(dst *[wire.MACSize]byte, m uint64) {
	for i := wire.MACSize - 1; i >= 0; i-- {
		dst[i] = byte(m)
		m >>= 8
	}
}
