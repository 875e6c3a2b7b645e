package umad

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Device is an open umad or issm character device: the file operations
// ib_umad offers. Read and Write move one packet each; Read blocks until
// one is queued and returns an error once Close was called.
type Device interface {
	io.ReadWriteCloser
	// Ioctl runs request req with arg as its in/out argument buffer (nil
	// for none).
	Ioctl(req uint, arg []byte) error
}

// Files is the seam between this package and the machine: sysfs for
// reading, the device files for opening. OS is the real one; tests pass a
// fake (package umadtest).
type Files interface {
	// ReadFile returns a sysfs attribute, by absolute path.
	ReadFile(name string) ([]byte, error)
	// ReadDir returns the names in a directory, by absolute path.
	ReadDir(name string) ([]string, error)
	// OpenDevice opens a device file read-write; nonblock makes an open
	// that would wait (a held issm device) fail with EAGAIN instead.
	OpenDevice(name string, nonblock bool) (Device, error)
}

// OS is the machine's sysfs and /dev.
var OS Files = osFiles{}

type osFiles struct{}

func (osFiles) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

func (osFiles) ReadDir(name string) ([]string, error) {
	ents, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// OpenDevice opens name as an *os.File: the umad device supports poll, so
// Go's poller serves its reads, and Close wakes a blocked Read.
func (osFiles) OpenDevice(name string, nonblock bool) (Device, error) {
	flags := os.O_RDWR
	if nonblock {
		flags |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(name, flags, 0)
	if err != nil {
		return nil, err
	}
	return osDevice{f}, nil
}

type osDevice struct{ *os.File }

func (d osDevice) Ioctl(req uint, arg []byte) error {
	rc, err := d.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	cerr := rc.Control(func(fd uintptr) {
		var p unsafe.Pointer
		if len(arg) > 0 {
			p = unsafe.Pointer(&arg[0])
		}
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req), uintptr(p))
	})
	if cerr != nil {
		return cerr
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// isNotExist reports whether err says a file is missing.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
