package umadproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// DefaultSocket is the abstract socket name of the endpoint ("@" prefix
// omitted); EnvSocket overrides it.
const (
	DefaultSocket = "ibfab-umad"
	EnvSocket     = "IBFAB_UMAD_SOCKET"
)

// SocketFromEnv returns $IBFAB_UMAD_SOCKET, or DefaultSocket.
func SocketFromEnv() string {
	if s := os.Getenv(EnvSocket); s != "" {
		return s
	}
	return DefaultSocket
}

// Hello constants.
const (
	Magic     = 0x55464249 // "IBFU" read as little-endian bytes
	Version   = 1
	HelloSize = 16
)

//go:generate go tool stringer -type=Role -linecomment

// Role is what a connection stands for.
type Role uint8

// Roles.
const (
	RoleUMAD    Role = 1 // umad
	RoleControl Role = 2 // control
	RoleISSM    Role = 3 // issm
)

// Hello opens a connection (client → server) and answers it (server →
// client, Errno set).
//
//	0 magic u32 | 4 version u16 | 6 role u8 | 7 port u8 | 8 token u32 | 12 errno u32
type Hello struct {
	Role  Role
	Port  uint8
	Token uint32
	Errno uint32
}

// ErrBadMessage is wrapped by every decoding error.
var ErrBadMessage = errors.New("umadproto: bad message")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadMessage}, args...)...)
}

// AppendHello appends h's encoding to b.
func AppendHello(b []byte, h Hello) []byte {
	b = binary.LittleEndian.AppendUint32(b, Magic)
	b = binary.LittleEndian.AppendUint16(b, Version)
	b = append(b, byte(h.Role), h.Port)
	b = binary.LittleEndian.AppendUint32(b, h.Token)
	return binary.LittleEndian.AppendUint32(b, h.Errno)
}

// DecodeHello decodes a hello.
func DecodeHello(b []byte) (Hello, error) {
	if len(b) != HelloSize {
		return Hello{}, bad("hello of %d bytes, want %d", len(b), HelloSize)
	}
	if m := binary.LittleEndian.Uint32(b); m != Magic {
		return Hello{}, bad("hello magic %#x", m)
	}
	if v := binary.LittleEndian.Uint16(b[4:]); v != Version {
		return Hello{}, bad("hello version %d, want %d", v, Version)
	}
	return Hello{Role: Role(b[6]), Port: b[7], Token: binary.LittleEndian.Uint32(b[8:]),
		Errno: binary.LittleEndian.Uint32(b[12:])}, nil
}

// Op is a control request.
type Op uint32

// Control ops. Register's argument is a Registration (Register2Size
// bytes); its result the agent id (u32). Unregister's argument is the
// agent id (u32). EnablePKey has none. Sysfs's argument is a path under
// /sys/class ("infiniband/ibfab0/ports/1/lid"), its result the file's
// bytes (ENOENT when there is none, EISDIR for a directory). SysfsList
// has none; its result is the tree, a sequence of entries: kind u8 ('d'
// or 'f'), path length u16, path, content length u16, content.
const (
	OpRegister   Op = 1
	OpUnregister Op = 2
	OpEnablePKey Op = 3
	OpSysfs      Op = 4
	OpSysfsList  Op = 5
)

// MaxControl bounds a control datagram (a sysfs tree fits well within).
const MaxControl = 64 << 10

// Registration is an agent's registration: the fields of the kernel's
// struct ib_user_mad_reg_req2 (IB_USER_MAD_REGISTER_AGENT2).
//
//	0 qpn u32 | 4 class u8 | 5 version u8 | 6 rmpp u8 | 7 reserved |
//	8 flags u32 | 12 method mask 128 bits (4 × u32, bit n = method n) | 28 oui u32
type Registration struct {
	QPN          uint32
	MgmtClass    uint8
	ClassVersion uint8
	RMPPVersion  uint8
	Flags        uint32
	MethodMask   [4]uint32
	OUI          uint32
}

// Registration flags.
const (
	// FlagUserRMPP (IB_USER_MAD_USER_RMPP): the client does RMPP itself;
	// the endpoint passes RMPP packets through.
	FlagUserRMPP = 1 << 0
)

// RegistrationSize is a Registration's encoding.
const RegistrationSize = 32

// Method reports whether method m (0-127) is in the mask.
func (r *Registration) Method(m uint8) bool {
	return m < 128 && r.MethodMask[m/32]&(1<<(m%32)) != 0
}

// SetMethod adds method m (0-127) to the mask.
func (r *Registration) SetMethod(m uint8) {
	if m < 128 {
		r.MethodMask[m/32] |= 1 << (m % 32)
	}
}

// AppendRegistration appends r's encoding.
func AppendRegistration(b []byte, r *Registration) []byte {
	b = binary.LittleEndian.AppendUint32(b, r.QPN)
	b = append(b, r.MgmtClass, r.ClassVersion, r.RMPPVersion, 0)
	b = binary.LittleEndian.AppendUint32(b, r.Flags)
	for _, w := range r.MethodMask {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return binary.LittleEndian.AppendUint32(b, r.OUI)
}

// DecodeRegistration decodes a Registration.
func DecodeRegistration(b []byte) (Registration, error) {
	if len(b) != RegistrationSize {
		return Registration{}, bad("registration of %d bytes, want %d", len(b), RegistrationSize)
	}
	r := Registration{QPN: binary.LittleEndian.Uint32(b), MgmtClass: b[4], ClassVersion: b[5], RMPPVersion: b[6],
		Flags: binary.LittleEndian.Uint32(b[8:]), OUI: binary.LittleEndian.Uint32(b[28:])}
	for i := range r.MethodMask {
		r.MethodMask[i] = binary.LittleEndian.Uint32(b[12+4*i:])
	}
	return r, nil
}

// AppendRequest appends a control request: op and argument.
func AppendRequest(b []byte, op Op, arg []byte) []byte {
	return append(binary.LittleEndian.AppendUint32(b, uint32(op)), arg...)
}

// DecodeRequest splits a control request.
func DecodeRequest(b []byte) (Op, []byte, error) {
	if len(b) < 4 {
		return 0, nil, bad("request of %d bytes", len(b))
	}
	return Op(binary.LittleEndian.Uint32(b)), b[4:], nil
}

// AppendReply appends a control reply: errno and result.
func AppendReply(b []byte, errno uint32, result []byte) []byte {
	return append(binary.LittleEndian.AppendUint32(b, errno), result...)
}

// DecodeReply splits a control reply.
func DecodeReply(b []byte) (errno uint32, result []byte, err error) {
	if len(b) < 4 {
		return 0, nil, bad("reply of %d bytes", len(b))
	}
	return binary.LittleEndian.Uint32(b), b[4:], nil
}

// SysfsEntry is one file or directory of the port's sysfs tree.
type SysfsEntry struct {
	Dir     bool
	Path    string // under /sys/class
	Content []byte // files only
}

// AppendSysfsList appends the encoding of a tree.
func AppendSysfsList(b []byte, ents []SysfsEntry) []byte {
	for _, e := range ents {
		kind := byte('f')
		if e.Dir {
			kind = 'd'
		}
		b = append(b, kind)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.Path)))
		b = append(b, e.Path...)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(e.Content)))
		b = append(b, e.Content...)
	}
	return b
}

// DecodeSysfsList decodes a tree.
func DecodeSysfsList(b []byte) ([]SysfsEntry, error) {
	var out []SysfsEntry
	for len(b) > 0 {
		if len(b) < 3 || (b[0] != 'd' && b[0] != 'f') {
			return nil, bad("sysfs entry header")
		}
		e := SysfsEntry{Dir: b[0] == 'd'}
		n := int(binary.LittleEndian.Uint16(b[1:]))
		b = b[3:]
		if len(b) < n+2 {
			return nil, bad("sysfs path of %d bytes, %d left", n, len(b))
		}
		e.Path = string(b[:n])
		b = b[n:]
		n = int(binary.LittleEndian.Uint16(b))
		b = b[2:]
		if len(b) < n {
			return nil, bad("sysfs content of %d bytes, %d left", n, len(b))
		}
		e.Content = append([]byte(nil), b[:n]...)
		b = b[n:]
		out = append(out, e)
	}
	return out, nil
}
