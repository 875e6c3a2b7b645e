package attach

import (
	"errors"
	"net"
	"syscall"
	"unsafe"
)

// rawAddr is a socket address exactly as the kernel gave it. Go's own
// decoding cuts abstract unix names at the first NUL, and ibsim's names
// end with one (see simproto.Addr): answering a client at the address Go
// decodes would miss it.
type rawAddr struct {
	sa syscall.RawSockaddrAny
	n  uint32
}

func (a *rawAddr) key() string {
	return string(unsafe.Slice((*byte)(unsafe.Pointer(&a.sa)), a.n))
}

// recvFrom reads one datagram and its sender's address, waiting for one.
func recvFrom(rc syscall.RawConn, buf []byte) (int, rawAddr, error) {
	var (
		from rawAddr
		n    int
		op   error
	)
	err := rc.Read(func(fd uintptr) bool {
		from.n = uint32(unsafe.Sizeof(from.sa))
		r, _, e := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
			0, uintptr(unsafe.Pointer(&from.sa)), uintptr(unsafe.Pointer(&from.n)))
		switch e {
		case syscall.EAGAIN:
			return false // wait until readable
		case 0:
			n = int(r)
		default:
			op = e
		}
		return true
	})
	if err == nil {
		err = op
	}
	return n, from, err
}

// sendTo sends one datagram to to, once: a client whose socket is full
// misses it (EAGAIN) rather than stalling the server.
func sendTo(rc syscall.RawConn, buf []byte, to *rawAddr) error {
	var op error
	err := rc.Write(func(fd uintptr) bool {
		_, _, e := syscall.Syscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
			syscall.MSG_DONTWAIT, uintptr(unsafe.Pointer(&to.sa)), uintptr(to.n))
		if e != 0 {
			op = e
		}
		return true
	})
	if err == nil {
		err = op
	}
	return err
}

// connectTo connects the datagram socket c to the abstract address a, so
// that it only hears from there and writes go there. Connecting again
// replaces the peer; on a socket whose peer is gone it fails with
// ECONNREFUSED, which is how dead clients are found.
func connectTo(c *net.UnixConn, a *net.UnixAddr) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var op error
	err = rc.Control(func(fd uintptr) {
		op = syscall.Connect(int(fd), &syscall.SockaddrUnix{Name: a.Name})
	})
	return errors.Join(err, op)
}
