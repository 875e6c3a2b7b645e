package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"ibfab/capture"
	"ibfab/fabricnet"
	"ibfab/topologies"
	"ibfab/wire"
)

// A port's frames are captured at the two ends of its veth, each socket
// seeing only the frames that arrive there (PACKET_IGNORE_OUTGOING): the
// node's end pN gets what the peer sends, the peer's end what the node
// sends. Every frame shows exactly once, with the receive timestamp, and a
// frame a sender lost before the wire (a fault program's drop on egress)
// is not recorded as if it had crossed the link.

const (
	// captureBufSize is the receive buffer asked for per socket: a burst
	// of SMPs or a loaded data link must not overflow it between reads.
	captureBufSize = 8 << 20
	// capturePoll bounds how long the reader sleeps before it looks at
	// its context again.
	capturePoll = 100 * time.Millisecond
	// captureFrameMax holds any frame a veth of the fabric carries.
	captureFrameMax = 16 << 10
)

// captureFilter passes the two IBA EtherTypes only, as the ports' own
// sockets do (link/veth):
//
//	ldh [12]
//	jeq #0x88B5, accept
//	jeq #0x88B6, accept
//	ret #0
//	accept: ret #0x40000
var captureFilter = []unix.SockFilter{
	{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 12},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 2, K: wire.EtherTypeData},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: wire.EtherTypeLink},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0x40000},
}

// Capture reads the frames crossing one port of a running fabric, in both
// directions, until it is closed. Open it before whatever it should see
// starts: the sockets see frames from then on. It is not safe for
// concurrent use.
type Capture struct {
	// Port is what is captured, as "node[port]"; Peer is the far end.
	Port, Peer string
	socks      []*captureSock
	buf        []byte
	oob        []byte
	batch      []capture.Record
	data       [][]byte // batch's frame storage, reused
	stats      CaptureStats
}

// CaptureStats counts what a Capture saw.
type CaptureStats struct {
	Frames      uint64 // IBA frames written
	Other       uint64 // frames too short or of another EtherType, skipped
	KernelDrops uint64 // frames the kernel dropped for lack of socket buffer
}

type captureSock struct {
	fd   int
	what string // "ca4[1]"
}

// OpenCapture opens a capture of port of node in fabric name: one packet
// socket on each end of the port's link, in the two nodes' namespaces.
func OpenCapture(name, node string, port int) (_ *Capture, err error) {
	if err := needProcesses(name, "capture"); err != nil {
		return nil, err
	}
	st, t, err := loadFabric(name)
	if err != nil {
		return nil, err
	}
	i, ok := t.Lookup(node)
	if !ok {
		return nil, fmt.Errorf("fabric %s has no node %q", name, node)
	}
	n := t.Node(i)
	if port < 1 || port > n.NumPorts {
		return nil, fmt.Errorf("%s has ports 1..%d, not %d", node, n.NumPorts, port)
	}
	peer, ok := t.Peer(topologies.PortRef{Node: i, Port: port})
	if !ok {
		return nil, fmt.Errorf("port %d of %s is not cabled: no frames cross it", port, node)
	}
	c := &Capture{
		Port: fmt.Sprintf("%s[%d]", node, port),
		Peer: fmt.Sprintf("%s[%d]", t.Node(peer.Node).Name, peer.Port),
		buf:  make([]byte, captureFrameMax),
		oob:  make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))),
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	for _, end := range []struct {
		ns   string
		port int
		what string
	}{
		{st.Nodes[i].Namespace, port, c.Port},
		{st.Nodes[peer.Node].Namespace, peer.Port, c.Peer},
	} {
		var fd int
		err := fabricnet.Do(end.ns, func() (err error) {
			fd, err = openCaptureSocket(fabricnet.PortIface(end.port))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("capturing at %s: %w", end.what, err)
		}
		c.socks = append(c.socks, &captureSock{fd: fd, what: end.what})
	}
	return c, nil
}

// openCaptureSocket returns a non-blocking packet socket on interface
// ifname of the calling thread's namespace that receives the IBA frames
// arriving there, with kernel receive timestamps.
func openCaptureSocket(ifname string) (int, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return -1, err
	}
	// Protocol 0 receives nothing until bind, so the filter is in place
	// before the first frame is queued.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("packet socket: %w", err)
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"attaching filter", func() error {
			return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
				&unix.SockFprog{Len: uint16(len(captureFilter)), Filter: &captureFilter[0]})
		}},
		// A frame sent on this end is captured at the other end.
		{"PACKET_IGNORE_OUTGOING", func() error {
			return unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
		}},
		{"SO_TIMESTAMPNS", func() error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) }},
		{"receive buffer", func() error {
			if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, captureBufSize) == nil {
				return nil
			}
			return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, captureBufSize)
		}},
		{"bind", func() error {
			return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("packet socket on %s: %s: %w", ifname, s.what, err)
		}
	}
	return fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Run writes the captured frames to w until ctx is done or, when count is
// positive, count frames have been written, and returns how many it wrote.
// Frames that arrive at both ends together are written in timestamp order.
func (c *Capture) Run(ctx context.Context, w *capture.Writer, count int) (int, error) {
	if len(c.socks) == 0 {
		return 0, net.ErrClosed
	}
	fds := make([]unix.PollFd, len(c.socks))
	for i, s := range c.socks {
		fds[i] = unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN}
	}
	written := 0
	for ctx.Err() == nil && (count <= 0 || written < count) {
		for i := range fds {
			fds[i].Revents = 0
		}
		n, err := unix.Poll(fds, int(capturePoll/time.Millisecond))
		if errors.Is(err, unix.EINTR) || n == 0 {
			continue
		}
		if err != nil {
			return written, fmt.Errorf("poll: %w", err)
		}
		c.batch = c.batch[:0]
		for i, s := range c.socks {
			if fds[i].Revents&(unix.POLLIN|unix.POLLERR) == 0 {
				continue
			}
			if err := c.drain(s); err != nil {
				return written, err
			}
		}
		slices.SortStableFunc(c.batch, func(a, b capture.Record) int { return a.Time.Compare(b.Time) })
		for _, r := range c.batch {
			if count > 0 && written == count {
				break
			}
			if err := w.WritePacket(r.Type, r.Time, r.Data); err != nil {
				return written, err
			}
			written++
			c.stats.Frames++
		}
	}
	return written, nil
}

// drainMax bounds one socket's share of a batch, so that a busy end does
// not starve the other.
const drainMax = 256

// drain reads what is queued on s into the batch.
func (c *Capture) drain(s *captureSock) error {
	for range drainMax {
		n, oobn, _, _, err := unix.Recvmsg(s.fd, c.buf, c.oob, unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			return nil
		case errors.Is(err, unix.ENETDOWN):
			// The interface went down (a node killed, a link cut): the
			// capture goes on with what still comes.
			return nil
		case err != nil:
			return fmt.Errorf("reading at %s: %w", s.what, err)
		}
		ts := cmsgTime(c.oob[:oobn])
		rec, ok := frameRecord(c.buf[:n], ts)
		if !ok {
			c.stats.Other++
			continue
		}
		i := len(c.batch)
		if i == len(c.data) {
			c.data = append(c.data, make([]byte, 0, 256))
		}
		c.data[i] = append(c.data[i][:0], rec.Data...)
		rec.Data = c.data[i]
		c.batch = append(c.batch, rec)
	}
	return nil
}

// cmsgTime returns the SCM_TIMESTAMPNS in oob, or the current time.
func cmsgTime(oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS &&
				len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
				ts := *(*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
				return time.Unix(ts.Unix())
			}
		}
	}
	return time.Now()
}

// Stats returns what the capture saw so far; the kernel's drops are read
// from the sockets, so until Close.
func (c *Capture) Stats() CaptureStats {
	for _, k := range c.socks {
		if ps, err := unix.GetsockoptTpacketStats(k.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			c.stats.KernelDrops += uint64(ps.Drops) // the counters reset on read
		}
	}
	return c.stats
}

// Close closes the sockets. It is idempotent.
func (c *Capture) Close() error {
	var errs []error
	for _, s := range c.socks {
		errs = append(errs, unix.Close(s.fd))
	}
	c.socks = nil
	return errors.Join(errs...)
}
