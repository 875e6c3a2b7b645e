package umadproto

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// Addr returns the endpoint's abstract socket address for name.
func Addr(name string) *net.UnixAddr { return &net.UnixAddr{Name: "@" + name, Net: "unixpacket"} }

// dial opens a connection of role at the endpoint and says hello.
func dial(name string, h Hello) (*net.UnixConn, Hello, error) {
	c, err := net.DialUnix("unixpacket", nil, Addr(name))
	if err != nil {
		return nil, Hello{}, err
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(AppendHello(nil, h)); err != nil {
		c.Close()
		return nil, Hello{}, err
	}
	buf := make([]byte, HelloSize+1)
	n, err := c.Read(buf)
	if err != nil {
		c.Close()
		return nil, Hello{}, err
	}
	r, err := DecodeHello(buf[:n])
	if err == nil && r.Errno != 0 {
		err = fmt.Errorf("umadproto: %v refused: %w", h.Role, syscall.Errno(r.Errno))
	}
	if err != nil {
		c.Close()
		return nil, Hello{}, err
	}
	c.SetDeadline(time.Time{})
	return c, r, nil
}

// Device is an open umad device as a file descriptor gives it: Read and
// Write move one datagram each, a UserMAD header (HeaderSizeOld until
// EnablePKey, then HeaderSize) and a MAD; the ioctls are methods.
type Device struct {
	data *net.UnixConn
	ctl  *net.UnixConn
	mu   sync.Mutex // one control request at a time
}

// OpenDevice opens port (1-based) of the HCA whose endpoint listens at
// the abstract socket name, as open(2) of /dev/infiniband/umad<port-1>.
func OpenDevice(name string, port uint8) (*Device, error) {
	d, h, err := dial(name, Hello{Role: RoleUMAD, Port: port})
	if err != nil {
		return nil, err
	}
	c, _, err := dial(name, Hello{Role: RoleControl, Port: port, Token: h.Token})
	if err != nil {
		d.Close()
		return nil, err
	}
	if rc, err := d.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			const size = 16 << 20
			if syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, size) != nil {
				syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, size)
			}
		})
	}
	return &Device{data: d, ctl: c}, nil
}

// Read reads one datagram; a b too small for it gets its first len(b)
// bytes.
func (d *Device) Read(b []byte) (int, error) { return d.data.Read(b) }

// Write writes one datagram.
func (d *Device) Write(b []byte) (int, error) { return d.data.Write(b) }

// SetReadDeadline bounds the next Reads.
func (d *Device) SetReadDeadline(t time.Time) error { return d.data.SetReadDeadline(t) }

// Close closes the device: its agents go away.
func (d *Device) Close() error { return errors.Join(d.ctl.Close(), d.data.Close()) }

func (d *Device) call(op Op, arg []byte) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return call(d.ctl, op, arg)
}

// Register registers an agent and returns its id (the register ioctls).
func (d *Device) Register(r Registration) (uint32, error) {
	res, err := d.call(OpRegister, AppendRegistration(nil, &r))
	if err != nil {
		return 0, err
	}
	if len(res) != 4 {
		return 0, bad("register reply of %d bytes", len(res))
	}
	return uint32(res[0]) | uint32(res[1])<<8 | uint32(res[2])<<16 | uint32(res[3])<<24, nil
}

// Unregister removes agent id.
func (d *Device) Unregister(id uint32) error {
	_, err := d.call(OpUnregister, []byte{byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)})
	return err
}

// EnablePKey switches the device to the header with pkey_index.
func (d *Device) EnablePKey() error {
	_, err := d.call(OpEnablePKey, nil)
	return err
}

// Conn is a Go client's open umad device, with the pkey_index header, in
// typed form.
type Conn struct {
	*Device
}

// Dial opens port (1-based) of the HCA whose endpoint listens at the
// abstract socket name, with the pkey_index header.
func Dial(name string, port uint8) (*Conn, error) {
	d, err := OpenDevice(name, port)
	if err != nil {
		return nil, err
	}
	if err := d.EnablePKey(); err != nil {
		d.Close()
		return nil, err
	}
	return &Conn{d}, nil
}

// Send sends the MAD m (any length for an RMPP transfer) as u says:
// agent, address, P_Key index, timeout and retries.
func (c *Conn) Send(u UserMAD, m []byte) error {
	b := AppendUserMAD(nil, &u, HeaderSize)
	_, err := c.Write(append(b, m...))
	return err
}

// Recv waits until deadline (zero: forever) for the next MAD for this
// connection's agents: a request, a response, or a send handed back
// (Status StatusTimedOut).
func (c *Conn) Recv(deadline time.Time) (UserMAD, []byte, error) {
	c.SetReadDeadline(deadline)
	buf := make([]byte, 1<<20)
	n, err := c.Read(buf)
	if err != nil {
		return UserMAD{}, nil, err
	}
	u, m, err := DecodeUserMAD(buf[:n], HeaderSize)
	return u, append([]byte(nil), m...), err
}

// ReadSysfs returns the content of a file of the port's sysfs tree, path
// being under /sys/class.
func ReadSysfs(name, path string) ([]byte, error) {
	c, _, err := dial(name, Hello{Role: RoleControl})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return call(c, OpSysfs, []byte(path))
}

// ListSysfs returns the endpoint's whole sysfs tree.
func ListSysfs(name string) ([]SysfsEntry, error) {
	c, _, err := dial(name, Hello{Role: RoleControl})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res, err := call(c, OpSysfsList, nil)
	if err != nil {
		return nil, err
	}
	return DecodeSysfsList(res)
}

// OpenISSM opens the port's issm device: the port is an SM's (IsSM set)
// until the returned connection is closed.
func OpenISSM(name string, port uint8) (net.Conn, error) {
	c, _, err := dial(name, Hello{Role: RoleISSM, Port: port})
	return c, err
}

// call makes one control request on ctl and returns its result, or the
// errno it failed with as a syscall.Errno.
func call(ctl *net.UnixConn, op Op, arg []byte) ([]byte, error) {
	ctl.SetDeadline(time.Now().Add(5 * time.Second))
	defer ctl.SetDeadline(time.Time{})
	if _, err := ctl.Write(AppendRequest(nil, op, arg)); err != nil {
		return nil, err
	}
	buf := make([]byte, MaxControl)
	n, err := ctl.Read(buf)
	if err != nil {
		return nil, err
	}
	errno, res, err := DecodeReply(buf[:n])
	if err != nil {
		return nil, err
	}
	if errno != 0 {
		return nil, syscall.Errno(errno)
	}
	return res, nil
}
