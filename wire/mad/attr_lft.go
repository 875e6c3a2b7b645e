package mad

import "fmt"

// LinearForwardingTable attribute (IBA 14.2.5.10): one block of a switch's
// unicast forwarding table, the output port for 64 consecutive LIDs. Block
// n covers LIDs 64n to 64n+63; the attribute modifier is n.
//
//	byte  0 +---------------+---------------+-- ... --+---------------+
//	        | port for LID  | port for LID  |         | port for LID  |
//	        |     64n+0     |     64n+1     |         |    64n+63     |
//	     64 +---------------+---------------+-- ... --+---------------+
const lftMaxBlock = 767 // the block of the last unicast LID, 0xBFFF

// Sizes of the LinearForwardingTable attribute.
const (
	LinearForwardingTableSize = 64 // bytes per block
	LFTEntriesPerBlock        = 64 // LIDs per block
)

// LFTNoPort is the port entry of a LID the switch does not route; packets
// to it are dropped.
const LFTNoPort = 0xff

// LinearForwardingTable is a view of one LFT block. Its methods index the
// slice directly: callers must check IsValid first, and pass an entry index
// below LFTEntriesPerBlock.
type LinearForwardingTable []byte

// IsValid reports whether t is long enough to hold a block.
func (t LinearForwardingTable) IsValid() bool { return len(t) >= LinearForwardingTableSize }

// Port returns the output port of entry i, the block's i-th LID.
func (t LinearForwardingTable) Port(i int) uint8 { return t[i] }

// SetPort sets the output port of entry i.
func (t LinearForwardingTable) SetPort(i int, port uint8) { t[i] = port }

// LinearForwardingTableFields holds one block: Ports[i] routes the block's
// i-th LID.
type LinearForwardingTableFields struct {
	Ports [LFTEntriesPerBlock]uint8
}

// Encode writes f into t. t must be valid.
func (t LinearForwardingTable) Encode(f *LinearForwardingTableFields) {
	copy(t[:LinearForwardingTableSize], f.Ports[:])
}

// Fields returns the whole block. t must be valid.
func (t LinearForwardingTable) Fields() LinearForwardingTableFields {
	var f LinearForwardingTableFields
	copy(f.Ports[:], t[:LinearForwardingTableSize])
	return f
}

// AppendLinearForwardingTable appends the encoding of f to dst.
func AppendLinearForwardingTable(dst []byte, f *LinearForwardingTableFields) []byte {
	return append(dst, f.Ports[:]...)
}

// DecodeLinearForwardingTable reads a block from the first
// LinearForwardingTableSize bytes of b.
func DecodeLinearForwardingTable(b []byte) (LinearForwardingTableFields, error) {
	if !LinearForwardingTable(b).IsValid() {
		return LinearForwardingTableFields{},
			truncated("LinearForwardingTable", len(b), LinearForwardingTableSize)
	}
	return LinearForwardingTable(b).Fields(), nil
}

// LFTBlock returns the block that holds lid's entry and the entry's index
// in it.
func LFTBlock(lid uint16) (block uint16, index int) {
	return lid / LFTEntriesPerBlock, int(lid % LFTEntriesPerBlock)
}

// ParseLFTModifier returns the block number an LFT attribute modifier
// names. Blocks past the unicast LID range (above 767) are an error.
func ParseLFTModifier(mod uint32) (uint16, error) {
	if mod > lftMaxBlock {
		return 0, fmt.Errorf("mad: LinearForwardingTable modifier %#x: block above %d", mod, lftMaxBlock)
	}
	return uint16(mod), nil
}
