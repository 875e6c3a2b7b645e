package veth

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr of recvmmsg(2), which x/sys/unix does not
// wrap: a msghdr and the length the kernel received into it.
type mmsghdr struct {
	hdr unix.Msghdr
	len uint32
	_   [4]byte
}

// rxBatch is the buffers and headers of one recvmmsg call, set up once.
type rxBatch struct {
	bufs [][]byte
	iovs []unix.Iovec
	msgs []mmsghdr
}

func newRxBatch(n, size int) *rxBatch {
	b := &rxBatch{bufs: make([][]byte, n), iovs: make([]unix.Iovec, n), msgs: make([]mmsghdr, n)}
	for i := range n {
		b.bufs[i] = make([]byte, size)
		b.iovs[i].Base = &b.bufs[i][0]
		b.iovs[i].SetLen(size)
		b.msgs[i].hdr.Iov = &b.iovs[i]
		b.msgs[i].hdr.SetIovlen(1)
	}
	return b
}

// recv reads up to len(b.msgs) frames from the non-blocking socket fd
// without waiting; unix.EAGAIN when there is none.
func (b *rxBatch) recv(fd uintptr) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&b.msgs[0])),
		uintptr(len(b.msgs)), unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// frame returns the i-th frame of the last recv.
func (b *rxBatch) frame(i int) []byte { return b.bufs[i][:b.msgs[i].len] }
