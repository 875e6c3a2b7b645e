package mad

import "encoding/binary"

// NodeInfoSize is the length of the NodeInfo attribute.
const NodeInfoSize = 40

//go:generate go tool stringer -type=NodeType -linecomment

// NodeType is the kind of node (IBA 14.2.5.3).
type NodeType uint8

// Node types.
const (
	// NodeTypeCA: channel adapter
	NodeTypeCA     NodeType = 1 // CA
	NodeTypeSwitch NodeType = 2 // Switch
	NodeTypeRouter NodeType = 3 // Router
)

// The NodeInfo attribute, IBA 14.2.5.3 (read-only, one per node; the port
// fields describe the port the SMP arrived on):
//
//	    0               8               16              24            31
//	   +---------------+---------------+---------------+---------------+
//	 0 |  BaseVersion  | ClassVersion  |   NodeType    |   NumPorts    |
//	   +---------------+---------------+---------------+---------------+
//	 4 |                     SystemImageGUID (64)                      |
//	 8 |                                                               |
//	   +---------------------------------------------------------------+
//	12 |                         NodeGUID (64)                         |
//	16 |                                                               |
//	   +---------------------------------------------------------------+
//	20 |                         PortGUID (64)                         |
//	24 |                                                               |
//	   +-------------------------------+-------------------------------+
//	28 |         PartitionCap          |           DeviceID            |
//	   +-------------------------------+-------------------------------+
//	32 |                           Revision                            |
//	   +---------------+-----------------------------------------------+
//	36 | LocalPortNum  |                  VendorID (24)                |
//	   +---------------+-----------------------------------------------+
const (
	niBaseVersion     = 0
	niClassVersion    = 1
	niNodeType        = 2
	niNumPorts        = 3
	niSystemImageGUID = 4
	niNodeGUID        = 12
	niPortGUID        = 20
	niPartitionCap    = 28
	niDeviceID        = 30
	niRevision        = 32
	niLocalPortNum    = 36
	niVendorID        = 37
)

// NodeInfo is a view of the NodeInfo attribute, usually SMP.Data(). Its
// methods do not check lengths: callers must check IsValid first, or they
// may panic.
type NodeInfo []byte

// NodeInfoFields holds the NodeInfo fields, for building one.
type NodeInfoFields struct {
	BaseVersion     uint8
	ClassVersion    uint8
	NodeType        NodeType
	NumPorts        uint8
	SystemImageGUID uint64
	NodeGUID        uint64
	PortGUID        uint64
	PartitionCap    uint16
	DeviceID        uint16
	Revision        uint32
	LocalPortNum    uint8
	VendorID        uint32 // 24 bits
}

// IsValid reports whether b is long enough for a NodeInfo.
func (b NodeInfo) IsValid() bool { return len(b) >= NodeInfoSize }

// BaseVersion returns the "BaseVersion" field: the MAD base version the
// node supports.
func (b NodeInfo) BaseVersion() uint8 { return b[niBaseVersion] }

// SetBaseVersion sets the "BaseVersion" field.
func (b NodeInfo) SetBaseVersion(v uint8) { b[niBaseVersion] = v }

// ClassVersion returns the "ClassVersion" field: the subnet management
// class version the node supports.
func (b NodeInfo) ClassVersion() uint8 { return b[niClassVersion] }

// SetClassVersion sets the "ClassVersion" field.
func (b NodeInfo) SetClassVersion(v uint8) { b[niClassVersion] = v }

// NodeType returns the "NodeType" field.
func (b NodeInfo) NodeType() NodeType { return NodeType(b[niNodeType]) }

// SetNodeType sets the "NodeType" field.
func (b NodeInfo) SetNodeType(t NodeType) { b[niNodeType] = uint8(t) }

// NumPorts returns the "NumPorts" field: physical ports, not counting a
// switch's port 0.
func (b NodeInfo) NumPorts() uint8 { return b[niNumPorts] }

// SetNumPorts sets the "NumPorts" field.
func (b NodeInfo) SetNumPorts(n uint8) { b[niNumPorts] = n }

// SystemImageGUID returns the "SystemImageGUID" field.
func (b NodeInfo) SystemImageGUID() uint64 {
	return binary.BigEndian.Uint64(b[niSystemImageGUID:])
}

// SetSystemImageGUID sets the "SystemImageGUID" field.
func (b NodeInfo) SetSystemImageGUID(g uint64) {
	binary.BigEndian.PutUint64(b[niSystemImageGUID:], g)
}

// NodeGUID returns the "NodeGUID" field.
func (b NodeInfo) NodeGUID() uint64 { return binary.BigEndian.Uint64(b[niNodeGUID:]) }

// SetNodeGUID sets the "NodeGUID" field.
func (b NodeInfo) SetNodeGUID(g uint64) { binary.BigEndian.PutUint64(b[niNodeGUID:], g) }

// PortGUID returns the "PortGUID" field.
func (b NodeInfo) PortGUID() uint64 { return binary.BigEndian.Uint64(b[niPortGUID:]) }

// SetPortGUID sets the "PortGUID" field.
func (b NodeInfo) SetPortGUID(g uint64) { binary.BigEndian.PutUint64(b[niPortGUID:], g) }

// PartitionCap returns the "PartitionCap" field: P_Key table entries.
func (b NodeInfo) PartitionCap() uint16 { return binary.BigEndian.Uint16(b[niPartitionCap:]) }

// SetPartitionCap sets the "PartitionCap" field.
func (b NodeInfo) SetPartitionCap(n uint16) { binary.BigEndian.PutUint16(b[niPartitionCap:], n) }

// DeviceID returns the "DeviceID" field.
func (b NodeInfo) DeviceID() uint16 { return binary.BigEndian.Uint16(b[niDeviceID:]) }

// SetDeviceID sets the "DeviceID" field.
func (b NodeInfo) SetDeviceID(id uint16) { binary.BigEndian.PutUint16(b[niDeviceID:], id) }

// Revision returns the "Revision" field.
func (b NodeInfo) Revision() uint32 { return binary.BigEndian.Uint32(b[niRevision:]) }

// SetRevision sets the "Revision" field.
func (b NodeInfo) SetRevision(r uint32) { binary.BigEndian.PutUint32(b[niRevision:], r) }

// LocalPortNum returns the "LocalPortNum" field: the port the SMP came in
// on (0 for a switch's management port).
func (b NodeInfo) LocalPortNum() uint8 { return b[niLocalPortNum] }

// SetLocalPortNum sets the "LocalPortNum" field.
func (b NodeInfo) SetLocalPortNum(p uint8) { b[niLocalPortNum] = p }

// VendorID returns the 24-bit "VendorID" field (an IEEE OUI).
func (b NodeInfo) VendorID() uint32 { return uint24At(b[niVendorID:]) }

// SetVendorID sets the 24-bit "VendorID" field; the top byte of id is
// ignored.
func (b NodeInfo) SetVendorID(id uint32) { putUint24At(b[niVendorID:], id) }

// Encode writes f into b.
func (b NodeInfo) Encode(f *NodeInfoFields) {
	b.SetBaseVersion(f.BaseVersion)
	b.SetClassVersion(f.ClassVersion)
	b.SetNodeType(f.NodeType)
	b.SetNumPorts(f.NumPorts)
	b.SetSystemImageGUID(f.SystemImageGUID)
	b.SetNodeGUID(f.NodeGUID)
	b.SetPortGUID(f.PortGUID)
	b.SetPartitionCap(f.PartitionCap)
	b.SetDeviceID(f.DeviceID)
	b.SetRevision(f.Revision)
	b.SetLocalPortNum(f.LocalPortNum)
	b.SetVendorID(f.VendorID)
}

// Fields returns the fields of b.
func (b NodeInfo) Fields() NodeInfoFields {
	return NodeInfoFields{
		BaseVersion:     b.BaseVersion(),
		ClassVersion:    b.ClassVersion(),
		NodeType:        b.NodeType(),
		NumPorts:        b.NumPorts(),
		SystemImageGUID: b.SystemImageGUID(),
		NodeGUID:        b.NodeGUID(),
		PortGUID:        b.PortGUID(),
		PartitionCap:    b.PartitionCap(),
		DeviceID:        b.DeviceID(),
		Revision:        b.Revision(),
		LocalPortNum:    b.LocalPortNum(),
		VendorID:        b.VendorID(),
	}
}

// DecodeNodeInfo returns the NodeInfo fields in b, or an error if b is
// too short.
func DecodeNodeInfo(b []byte) (NodeInfoFields, error) {
	if !NodeInfo(b).IsValid() {
		return NodeInfoFields{}, truncated("NodeInfo", len(b), NodeInfoSize)
	}
	return NodeInfo(b).Fields(), nil
}

// uint24At reads a big-endian 24-bit number.
func uint24At(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }

// putUint24At writes the low 24 bits of v big-endian.
func putUint24At(b []byte, v uint32) { b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v) }

// AppendNodeInfo appends a NodeInfo built from f to dst.
func AppendNodeInfo(dst []byte, f *NodeInfoFields) []byte {
	dst, b := grow(dst, NodeInfoSize)
	NodeInfo(b).Encode(f)
	return dst
}
