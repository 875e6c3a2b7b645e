// Package softumad puts package umad's madport.Port on a soft HCA: an
// umad.Files whose sysfs and device files are the HCA's kernel-semantics
// MAD endpoint (package umadep, protocol umadproto), so a Go SM or SA
// gets what it would get from the kernel on a host — RMPP, agents by
// class and method, P_Key indexes, the kernel's timeouts — with the code
// it runs on real hardware.
//
//	p, err := umad.Open(umad.Config{Files: softumad.Files(""), CA: softumad.CA, Port: 1})
//
// The caller must run in the HCA's network namespace (ibfab exec), where
// the endpoint's abstract socket is.
package softumad

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"

	"ibfab/madport/umad"
	"ibfab/umadproto"
)

// CA is the device name the endpoint gives its HCA.
const CA = "ibfab0"

// Files returns the endpoint at abstract socket name ("" means
// umadproto.SocketFromEnv()) as umad.Files.
func Files(name string) umad.Files {
	if name == "" {
		name = umadproto.SocketFromEnv()
	}
	return files{name: name}
}

type files struct{ name string }

const sysClass = "/sys/class/"

func rel(name string) (string, bool) {
	if !strings.HasPrefix(name, sysClass) {
		return "", false
	}
	return strings.Trim(path.Clean(name[len(sysClass):]), "/"), true
}

func (f files) ReadFile(name string) ([]byte, error) {
	r, ok := rel(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	b, err := umadproto.ReadSysfs(f.name, r)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return b, nil
}

func (f files) ReadDir(name string) ([]string, error) {
	r, ok := rel(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	ents, err := umadproto.ListSysfs(f.name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var out []string
	found := false
	for _, e := range ents {
		if e.Path == r && e.Dir {
			found = true
		}
		if path.Dir(e.Path) == r {
			out = append(out, path.Base(e.Path))
		}
	}
	if !found {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	return out, nil
}

func (f files) OpenDevice(name string, nonblock bool) (umad.Device, error) {
	base := strings.TrimPrefix(name, umad.DevDir+"/")
	for _, kind := range []string{"umad", "issm"} {
		if !strings.HasPrefix(base, kind) {
			continue
		}
		i, err := strconv.Atoi(base[len(kind):])
		if err != nil || i < 0 || i > 254 {
			break
		}
		if kind == "issm" {
			c, err := umadproto.OpenISSM(f.name, uint8(i+1))
			if errors.Is(err, syscall.EBUSY) && nonblock {
				err = syscall.EAGAIN
			}
			if err != nil {
				return nil, &fs.PathError{Op: "open", Path: name, Err: err}
			}
			return issm{c}, nil
		}
		d, err := umadproto.OpenDevice(f.name, uint8(i+1))
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return device{d}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
}

// device maps the umad ioctls onto the endpoint's control requests.
type device struct{ *umadproto.Device }

func (d device) Ioctl(req uint, arg []byte) error {
	switch req {
	case umad.IoctlEnablePKey:
		return d.EnablePKey()
	case umad.IoctlUnregisterAgent:
		if len(arg) != 4 {
			return syscall.EFAULT
		}
		return d.Unregister(binary.NativeEndian.Uint32(arg))
	case umad.IoctlRegisterAgent:
		r, err := umad.DecodeRegReq(arg)
		if err != nil {
			return syscall.EFAULT
		}
		reg := umadproto.Registration{QPN: uint32(r.QPN), MgmtClass: r.MgmtClass, ClassVersion: r.ClassVersion,
			RMPPVersion: r.RMPPVersion, OUI: uint32(r.OUI[0])<<16 | uint32(r.OUI[1])<<8 | uint32(r.OUI[2])}
		for m := range 128 {
			if r.HasMethod(uint8(m)) {
				reg.SetMethod(uint8(m))
			}
		}
		id, err := d.Register(reg)
		if err != nil {
			return err
		}
		r.ID = id
		copy(arg, r.Encode())
		return nil
	}
	return fmt.Errorf("softumad: ioctl %#x: %w", req, syscall.ENOTTY)
}

// issm is an open issm device: nothing to read or write.
type issm struct{ c interface{ Close() error } }

func (i issm) Read([]byte) (int, error)  { return 0, syscall.EINVAL }
func (i issm) Write([]byte) (int, error) { return 0, syscall.EINVAL }
func (i issm) Close() error              { return i.c.Close() }
func (i issm) Ioctl(uint, []byte) error  { return syscall.ENOTTY }
