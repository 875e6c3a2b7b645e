package wire_test

import (
	"encoding/binary"

	"ibfab/wire"
)

// nodeInfoSMP returns a 256-byte subnet management packet built by hand from
// IBA §13.4.2 and §14.2.1: base version 1, the given class (0x01 LID-routed
// or 0x81 directed-route), class version 1, method Get, attribute NodeInfo.
// It is syntactically valid so that tshark decodes it without complaint.
func nodeInfoSMP(class uint8, tid uint64) []byte {
	m := make([]byte, 256)
	m[0] = 1     // BaseVersion
	m[1] = class // MgmtClass
	m[2] = 1     // ClassVersion
	m[3] = 0x01  // Method: Get
	binary.BigEndian.PutUint64(m[8:], tid)
	binary.BigEndian.PutUint16(m[16:], 0x0011) // AttributeID: NodeInfo
	if class == 0x81 {
		m[6] = 0                                   // HopPointer
		m[7] = 0                                   // HopCount
		binary.BigEndian.PutUint16(m[32:], 0xffff) // DrSLID: permissive
		binary.BigEndian.PutUint16(m[34:], 0xffff) // DrDLID: permissive
	}
	return m
}

// portCountersGMP returns a 256-byte performance management MAD (class
// 0x04, §16.1.3) Get PortCounters for port 1, built by hand.
func portCountersGMP(tid uint64) []byte {
	m := make([]byte, 256)
	m[0], m[1], m[2], m[3] = 1, 0x04, 1, 0x01
	binary.BigEndian.PutUint64(m[8:], tid)
	binary.BigEndian.PutUint16(m[16:], 0x0012) // AttributeID: PortCounters
	m[24+1] = 1                                // PortSelect
	return m
}

// gid returns a GID with the subnet prefix fe80::/64 and the given GUID.
func gid(guid uint64) (g [wire.GIDSize]byte) {
	binary.BigEndian.PutUint64(g[0:], 0xfe80_0000_0000_0000)
	binary.BigEndian.PutUint64(g[8:], guid)
	return g
}
