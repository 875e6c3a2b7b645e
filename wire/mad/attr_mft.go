package mad

import (
	"encoding/binary"
	"fmt"
)

// MulticastForwardingTable attribute (IBA 14.2.5.12): one block of a
// switch's multicast table, a 16-bit port mask for each of 32 consecutive
// MLIDs. Block n covers MLIDs 0xC000+32n to 0xC000+32n+31; position p of
// a mask holds ports 16p to 16p+15, port 16p+i in bit i.
//
//	byte  0 +-------------------------------+
//	        |  PortMask, MLID 0xC000+32n+0  |
//	      2 +-------------------------------+
//	        |  PortMask, MLID 0xC000+32n+1  |
//	        +-------------------------------+
//	        :              ...              :
//	     62 +-------------------------------+
//	        |  PortMask, MLID 0xC000+32n+31 |
//	     64 +-------------------------------+
//
// Attribute modifier:
//
//	31      28 27                  9 8              0
//	+---------+---------------------+----------------+
//	|position |      reserved       |  block (0-511) |
//	+---------+---------------------+----------------+
const (
	mftEntrySize      = 2
	mftModPosShift    = 28
	mftModPosMask     = 0xf
	mftModBlockMask   = 0x1ff
	mftModReservedMsk = 0x0ffffe00
)

// Sizes and ranges of the MulticastForwardingTable attribute.
const (
	MulticastForwardingTableSize = 64     // bytes per block
	MFTEntriesPerBlock           = 32     // MLIDs per block
	MFTPortsPerMask              = 16     // ports per position
	MulticastLIDBase             = 0xc000 // first multicast LID
)

// MulticastForwardingTable is a view of one MFT block at one position. Its
// methods index the slice directly: callers must check IsValid first, and
// pass an entry index below MFTEntriesPerBlock.
type MulticastForwardingTable []byte

// IsValid reports whether t is long enough to hold a block.
func (t MulticastForwardingTable) IsValid() bool {
	return len(t) >= MulticastForwardingTableSize
}

// PortMask returns the port mask of entry i.
func (t MulticastForwardingTable) PortMask(i int) uint16 {
	return binary.BigEndian.Uint16(t[i*mftEntrySize:])
}

// SetPortMask sets the port mask of entry i.
func (t MulticastForwardingTable) SetPortMask(i int, mask uint16) {
	binary.BigEndian.PutUint16(t[i*mftEntrySize:], mask)
}

// MulticastForwardingTableFields holds one block at one position.
type MulticastForwardingTableFields struct {
	PortMasks [MFTEntriesPerBlock]uint16
}

// Encode writes f into t. t must be valid.
func (t MulticastForwardingTable) Encode(f *MulticastForwardingTableFields) {
	for i, m := range f.PortMasks {
		t.SetPortMask(i, m)
	}
}

// Fields returns the whole block. t must be valid.
func (t MulticastForwardingTable) Fields() MulticastForwardingTableFields {
	var f MulticastForwardingTableFields
	for i := range f.PortMasks {
		f.PortMasks[i] = t.PortMask(i)
	}
	return f
}

// AppendMulticastForwardingTable appends the encoding of f to dst.
func AppendMulticastForwardingTable(dst []byte, f *MulticastForwardingTableFields) []byte {
	dst, t := attrGrow(dst, MulticastForwardingTableSize)
	MulticastForwardingTable(t).Encode(f)
	return dst
}

// DecodeMulticastForwardingTable reads a block from the first
// MulticastForwardingTableSize bytes of b.
func DecodeMulticastForwardingTable(b []byte) (MulticastForwardingTableFields, error) {
	if !MulticastForwardingTable(b).IsValid() {
		return MulticastForwardingTableFields{},
			truncated("MulticastForwardingTable", len(b), MulticastForwardingTableSize)
	}
	return MulticastForwardingTable(b).Fields(), nil
}

// MFTModifier returns the attribute modifier that selects block of the
// table at position. Only the low 9 bits of block and 4 bits of position
// fit.
func MFTModifier(block uint16, position uint8) uint32 {
	return uint32(position&mftModPosMask)<<mftModPosShift | uint32(block&mftModBlockMask)
}

// ParseMFTModifier splits an MFT attribute modifier into block and
// position; reserved bits set are an error.
func ParseMFTModifier(mod uint32) (block uint16, position uint8, err error) {
	if mod&mftModReservedMsk != 0 {
		return 0, 0, fmt.Errorf("mad: MulticastForwardingTable modifier %#08x has reserved bits set", mod)
	}
	return uint16(mod & mftModBlockMask), uint8(mod >> mftModPosShift), nil
}

// MFTBlock returns the block that holds mlid's entry and the entry's index
// in it; a LID below MulticastLIDBase is an error.
func MFTBlock(mlid uint16) (block uint16, index int, err error) {
	if mlid < MulticastLIDBase {
		return 0, 0, fmt.Errorf("mad: LID %#04x is not a multicast LID", mlid)
	}
	off := mlid - MulticastLIDBase
	return off / MFTEntriesPerBlock, int(off % MFTEntriesPerBlock), nil
}

// MFTPortBit returns the position whose masks hold port and port's bit in
// them.
func MFTPortBit(port uint8) (position uint8, bit uint16) {
	return port / MFTPortsPerMask, 1 << (port % MFTPortsPerMask)
}
