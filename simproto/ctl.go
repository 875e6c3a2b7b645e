package simproto

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Errors wrapped by the decoders.
var (
	// ErrSize: a message or payload of the wrong size.
	ErrSize = errors.New("simproto: bad size")
	// ErrMagic: a control message without the protocol's magic number.
	ErrMagic = errors.New("simproto: bad magic")
)

// host is the byte order of the C structs the two sides share a host for.
var host = binary.NativeEndian

// Magic starts every control message.
const Magic = 0xdeadbeef

//go:generate go tool stringer -type=CtlType -linecomment

// CtlType is the type of a control message.
type CtlType uint32

// Control message types, in ibsim's order.
const (
	// CtlError: the answer to a message the server refused
	CtlError CtlType = iota // Error
	// CtlConnect: ClientInfo in, ClientInfo out
	CtlConnect // Connect
	// CtlDisconnect: no data
	CtlDisconnect // Disconnect
	// CtlGetPort: PortState out
	CtlGetPort // GetPort
	// CtlGetVendor: Vendor out
	CtlGetVendor // GetVendor
	// CtlGetGID: GID out
	CtlGetGID // GetGID
	// CtlGetGUID: GUID out
	CtlGetGUID // GetGUID
	// CtlGetNodeInfo: NodeInfo attribute out
	CtlGetNodeInfo // GetNodeInfo
	// CtlGetPortInfo: port number in data[0], PortInfo attribute out
	CtlGetPortInfo // GetPortInfo
	// CtlSetIsSM: IsSM in
	CtlSetIsSM // SetIsSM
	// CtlGetPKeys: PKeys out
	CtlGetPKeys // GetPKeys
)

// Valid reports whether t is a type the protocol defines.
func (t CtlType) Valid() bool { return t <= CtlGetPKeys }

// A control message, C struct sim_ctl, header in host byte order:
//
//	 0 magic (0xdeadbeef)
//	 4 client id: the slot Connect returned (0 in Connect itself)
//	 8 type
//	12 length of the request's data
//	16 data (64 bytes)
const (
	ctlMagic    = 0
	ctlClientID = 4
	ctlType     = 8
	ctlLen      = 12
	ctlData     = 16

	CtlDataSize = 64
	CtlSize     = ctlData + CtlDataSize // 80
)

// Ctl is a view of a control message. Its methods do not check lengths:
// callers must check IsValid first, or they may panic.
type Ctl []byte

// CtlFields holds a control message, for building one.
type CtlFields struct {
	ClientID uint32
	Type     CtlType
	Len      uint32 // bytes of Data the request carries
	Data     [CtlDataSize]byte
}

// IsValid reports whether c is exactly one control message: ibsim takes
// nothing shorter or longer.
func (c Ctl) IsValid() bool { return len(c) == CtlSize }

// Magic returns the magic number.
func (c Ctl) Magic() uint32 { return host.Uint32(c[ctlMagic:]) }

// ClientID returns the client id (slot).
func (c Ctl) ClientID() uint32 { return host.Uint32(c[ctlClientID:]) }

// SetClientID sets the client id.
func (c Ctl) SetClientID(id uint32) { host.PutUint32(c[ctlClientID:], id) }

// Type returns the message type.
func (c Ctl) Type() CtlType { return CtlType(host.Uint32(c[ctlType:])) }

// SetType sets the message type; an answer sets CtlError on failure.
func (c Ctl) SetType(t CtlType) { host.PutUint32(c[ctlType:], uint32(t)) }

// Len returns the length field.
func (c Ctl) Len() uint32 { return host.Uint32(c[ctlLen:]) }

// Data returns the 64 data bytes.
func (c Ctl) Data() []byte { return c[ctlData:CtlSize] }

// Encode writes f into c, magic included.
func (c Ctl) Encode(f *CtlFields) {
	host.PutUint32(c[ctlMagic:], Magic)
	c.SetClientID(f.ClientID)
	c.SetType(f.Type)
	host.PutUint32(c[ctlLen:], f.Len)
	copy(c.Data(), f.Data[:])
}

// Fields returns the fields of c.
func (c Ctl) Fields() CtlFields {
	f := CtlFields{ClientID: c.ClientID(), Type: c.Type(), Len: c.Len()}
	copy(f.Data[:], c.Data())
	return f
}

// AppendCtl appends the control message f to dst.
func AppendCtl(dst []byte, f *CtlFields) []byte {
	dst, b := grow(dst, CtlSize)
	Ctl(b).Encode(f)
	return dst
}

// DecodeCtl returns the control message in b, which must be exactly
// CtlSize bytes with the magic number. The type is not checked: an unknown
// one is answered with CtlError.
func DecodeCtl(b []byte) (CtlFields, error) {
	if !Ctl(b).IsValid() {
		return CtlFields{}, fmt.Errorf("%w: control message of %d bytes, want %d", ErrSize, len(b), CtlSize)
	}
	if m := Ctl(b).Magic(); m != Magic {
		return CtlFields{}, fmt.Errorf("%w: %#x", ErrMagic, m)
	}
	return Ctl(b).Fields(), nil
}

func grow(dst []byte, n int) ([]byte, []byte) {
	l := len(dst)
	dst = append(dst, make([]byte, n)...)
	return dst, dst[l:]
}
