package simproto

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// The payloads of control messages: C structs in the 64 data bytes, host
// byte order unless said otherwise. Each type has Encode, which writes it
// at the start of a data buffer (Ctl.Data) of at least its size, and a
// DecodeXxx that checks the size.

// Payload sizes.
const (
	ClientInfoSize = 44
	PortStateSize  = 4
	VendorSize     = 24
	GIDSize        = 16
	GUIDSize       = 8
	IsSMSize       = 4
	PKeysSize      = CtlDataSize
	NodeIDSize     = 32 // NUL-terminated: at most 31 bytes of name
	// NumPKeys is how many P_Keys GetPKeys carries: the start of the
	// port's table.
	NumPKeys = PKeysSize / 2
)

func short(what string, n, want int) error {
	return fmt.Errorf("%w: %s of %d bytes, need %d", ErrSize, what, n, want)
}

// ClientInfo is the payload of Connect, C struct sim_client_info:
//
//	 0 id: the client's id (its pid) in the request, its slot in the answer
//	 4 qp: 0 (umad2sim); ibsim routes requests to QPs above 1 by it
//	 8 issm: nonzero to connect as the SM (refused when there is one)
//	12 nodeid (32 bytes, NUL-terminated): the node to attach to, empty for
//	   the server's default; the answer names the node attached to
type ClientInfo struct {
	ID     uint32
	QP     uint32
	IsSM   bool
	NodeID string
}

const (
	ciID     = 0
	ciQP     = 4
	ciIsSM   = 8
	ciNodeID = 12
)

// Encode writes c at the start of d. A NodeID of NodeIDSize bytes or more
// is cut to leave room for the NUL.
func (c *ClientInfo) Encode(d []byte) {
	host.PutUint32(d[ciID:], c.ID)
	host.PutUint32(d[ciQP:], c.QP)
	host.PutUint32(d[ciIsSM:], b2u(c.IsSM))
	n := d[ciNodeID : ciNodeID+NodeIDSize]
	clear(n[copy(n[:NodeIDSize-1], c.NodeID):])
}

// DecodeClientInfo returns the ClientInfo at the start of d. A NodeID
// filling all 32 bytes, with no NUL, is cut at 31: what Encode keeps.
func DecodeClientInfo(d []byte) (ClientInfo, error) {
	if len(d) < ClientInfoSize {
		return ClientInfo{}, short("ClientInfo", len(d), ClientInfoSize)
	}
	n := d[ciNodeID : ciNodeID+NodeIDSize-1]
	if i := bytes.IndexByte(n, 0); i >= 0 {
		n = n[:i]
	}
	return ClientInfo{ID: host.Uint32(d[ciID:]), QP: host.Uint32(d[ciQP:]),
		IsSM: host.Uint32(d[ciIsSM:]) != 0, NodeID: string(n)}, nil
}

// PortState is the answer to GetPort, C struct sim_port: the port's base
// LID (host order) at 0 and its PortInfo PortState at 2.
type PortState struct {
	LID   uint16
	State uint8
}

// Encode writes p at the start of d.
func (p *PortState) Encode(d []byte) {
	host.PutUint16(d[0:], p.LID)
	d[2], d[3] = p.State, 0
}

// DecodePortState returns the PortState at the start of d.
func DecodePortState(d []byte) (PortState, error) {
	if len(d) < PortStateSize {
		return PortState{}, short("PortState", len(d), PortStateSize)
	}
	return PortState{LID: host.Uint16(d[0:]), State: d[2]}, nil
}

// Vendor is the answer to GetVendor, C struct sim_vendor: the NodeInfo
// VendorID, DeviceID and Revision at 0, 4 and 8, and a firmware version
// (ibsim says 1) at 16.
type Vendor struct {
	VendorID uint32
	PartID   uint32
	HWVer    uint32
	FWVer    uint64
}

// Encode writes v at the start of d.
func (v *Vendor) Encode(d []byte) {
	host.PutUint32(d[0:], v.VendorID)
	host.PutUint32(d[4:], v.PartID)
	host.PutUint32(d[8:], v.HWVer)
	host.PutUint32(d[12:], 0)
	host.PutUint64(d[16:], v.FWVer)
}

// DecodeVendor returns the Vendor at the start of d.
func DecodeVendor(d []byte) (Vendor, error) {
	if len(d) < VendorSize {
		return Vendor{}, short("Vendor", len(d), VendorSize)
	}
	return Vendor{VendorID: host.Uint32(d[0:]), PartID: host.Uint32(d[4:]),
		HWVer: host.Uint32(d[8:]), FWVer: host.Uint64(d[16:])}, nil
}

// GID is the answer to GetGID: the port's GID prefix, big-endian as in
// PortInfo, then the node GUID, which ibsim copies from memory and so in
// host order. umad2sim does not ask for it.
type GID struct {
	Prefix uint64
	GUID   uint64
}

// Encode writes g at the start of d.
func (g *GID) Encode(d []byte) {
	binary.BigEndian.PutUint64(d[0:], g.Prefix)
	host.PutUint64(d[8:], g.GUID)
}

// DecodeGID returns the GID at the start of d.
func DecodeGID(d []byte) (GID, error) {
	if len(d) < GIDSize {
		return GID{}, short("GID", len(d), GIDSize)
	}
	return GID{Prefix: binary.BigEndian.Uint64(d[0:]), GUID: host.Uint64(d[8:])}, nil
}

// EncodeGUID writes the answer to GetGUID, the node GUID in host order, at
// the start of d.
func EncodeGUID(d []byte, guid uint64) { host.PutUint64(d, guid) }

// DecodeGUID returns the GUID at the start of d.
func DecodeGUID(d []byte) (uint64, error) {
	if len(d) < GUIDSize {
		return 0, short("GUID", len(d), GUIDSize)
	}
	return host.Uint64(d), nil
}

// EncodeIsSM writes the payload of SetIsSM, a C int, at the start of d.
func EncodeIsSM(d []byte, on bool) { host.PutUint32(d, b2u(on)) }

// DecodeIsSM returns the payload of SetIsSM at the start of d: any nonzero
// int sets IsSM.
func DecodeIsSM(d []byte) (bool, error) {
	if len(d) < IsSMSize {
		return false, short("IsSM", len(d), IsSMSize)
	}
	return host.Uint32(d) != 0, nil
}

// EncodePKeys writes the answer to GetPKeys, the first NumPKeys entries of
// the port's P_Key table big-endian as in the PKeyTable attribute, zero
// after the table's end, at the start of d.
func EncodePKeys(d []byte, keys []uint16) {
	for i := range NumPKeys {
		var k uint16
		if i < len(keys) {
			k = keys[i]
		}
		binary.BigEndian.PutUint16(d[2*i:], k)
	}
}

// DecodePKeys returns the NumPKeys P_Keys at the start of d.
func DecodePKeys(d []byte) ([]uint16, error) {
	if len(d) < PKeysSize {
		return nil, short("PKeys", len(d), PKeysSize)
	}
	keys := make([]uint16, NumPKeys)
	for i := range keys {
		keys[i] = binary.BigEndian.Uint16(d[2*i:])
	}
	return keys, nil
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
