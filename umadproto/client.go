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

// Conn is a Go client's open umad device: one port of the HCA, with the
// pkey_index ABI enabled.
type Conn struct {
	data *net.UnixConn
	ctl  *net.UnixConn
	mu   sync.Mutex // one control request at a time
}

// Dial opens port (1-based) of the HCA whose endpoint listens at the
// abstract socket name.
func Dial(name string, port uint8) (*Conn, error) {
	d, h, err := dial(name, Hello{Role: RoleUMAD, Port: port})
	if err != nil {
		return nil, err
	}
	c, _, err := dial(name, Hello{Role: RoleControl, Port: port, Token: h.Token})
	if err != nil {
		d.Close()
		return nil, err
	}
	conn := &Conn{data: d, ctl: c}
	if _, err := conn.call(OpEnablePKey, nil); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// call makes one control request.
func (c *Conn) call(op Op, arg []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return call(c.ctl, op, arg)
}

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

// Register registers an agent and returns its id.
func (c *Conn) Register(r Registration) (uint32, error) {
	res, err := c.call(OpRegister, AppendRegistration(nil, &r))
	if err != nil {
		return 0, err
	}
	if len(res) != 4 {
		return 0, bad("register reply of %d bytes", len(res))
	}
	return uint32(res[0]) | uint32(res[1])<<8 | uint32(res[2])<<16 | uint32(res[3])<<24, nil
}

// Unregister removes agent id.
func (c *Conn) Unregister(id uint32) error {
	_, err := c.call(OpUnregister, []byte{byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)})
	return err
}

// Send sends the MAD m (any length for an RMPP transfer) as u says:
// agent, address, P_Key index, timeout and retries.
func (c *Conn) Send(u UserMAD, m []byte) error {
	b := AppendUserMAD(nil, &u, HeaderSize)
	_, err := c.data.Write(append(b, m...))
	return err
}

// Recv waits until deadline (zero: forever) for the next MAD for this
// connection's agents: a request, a response, or a send handed back
// (Status StatusTimedOut).
func (c *Conn) Recv(deadline time.Time) (UserMAD, []byte, error) {
	c.data.SetReadDeadline(deadline)
	buf := make([]byte, 1<<20)
	n, err := c.data.Read(buf)
	if err != nil {
		return UserMAD{}, nil, err
	}
	u, m, err := DecodeUserMAD(buf[:n], HeaderSize)
	return u, append([]byte(nil), m...), err
}

// Close closes the device: its agents go away.
func (c *Conn) Close() error {
	return errors.Join(c.ctl.Close(), c.data.Close())
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
