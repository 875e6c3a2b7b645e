package mad

import "fmt"

// VLArbitrationTable attribute (IBA 14.2.5.9, 7.6.9): one block of 32
// (VL, weight) entries of a port's high- or low-priority arbitration table.
// Weights count 64-byte units; a weight of 0 makes the entry inactive.
//
//	byte  0 +-------+-------+---------------+
//	        | rsvd  |  VL   |    Weight     |   entry 0
//	      2 +-------+-------+---------------+
//	        | rsvd  |  VL   |    Weight     |   entry 1
//	        +-------+-------+---------------+
//	        :              ...              :
//	     62 +-------+-------+---------------+
//	        | rsvd  |  VL   |    Weight     |   entry 31
//	     64 +-------+-------+---------------+
//
// The attribute modifier's top half says which block (VLArbBlock), its
// bottom half which output port on a switch.
const (
	vlarbEntrySize = 2
	vlarbVL        = 0
	vlarbWeight    = 1
	vlarbVLMask    = 0x0f
)

// Sizes of the VLArbitrationTable attribute.
const (
	VLArbitrationTableSize = 64 // bytes per block
	VLArbEntriesPerBlock   = 32 // entries per block
	VLArbMaxEntries        = 64 // entries of a whole high or low table
)

// VLArbitrationTable is a view of one block of a VL arbitration table. Its
// methods index the slice directly: callers must check IsValid first, and
// pass an entry index below VLArbEntriesPerBlock.
type VLArbitrationTable []byte

// IsValid reports whether t is long enough to hold a block.
func (t VLArbitrationTable) IsValid() bool { return len(t) >= VLArbitrationTableSize }

// VL returns the VL of entry i.
func (t VLArbitrationTable) VL(i int) uint8 { return t[i*vlarbEntrySize+vlarbVL] & vlarbVLMask }

// SetVL sets the VL of entry i from vl's low 4 bits; the reserved bits are
// cleared.
func (t VLArbitrationTable) SetVL(i int, vl uint8) { t[i*vlarbEntrySize+vlarbVL] = vl & vlarbVLMask }

// Weight returns the weight of entry i, in 64-byte units.
func (t VLArbitrationTable) Weight(i int) uint8 { return t[i*vlarbEntrySize+vlarbWeight] }

// SetWeight sets the weight of entry i.
func (t VLArbitrationTable) SetWeight(i int, w uint8) { t[i*vlarbEntrySize+vlarbWeight] = w }

// VLArbEntry is one (VL, weight) pair.
type VLArbEntry struct {
	VL     uint8
	Weight uint8 // in 64-byte units; 0 disables the entry
}

// VLArbitrationTableFields holds one block.
type VLArbitrationTableFields struct {
	Entries [VLArbEntriesPerBlock]VLArbEntry
}

// Encode writes f into t. t must be valid.
func (t VLArbitrationTable) Encode(f *VLArbitrationTableFields) {
	for i, e := range f.Entries {
		t.SetVL(i, e.VL)
		t.SetWeight(i, e.Weight)
	}
}

// Fields returns the whole block. t must be valid.
func (t VLArbitrationTable) Fields() VLArbitrationTableFields {
	var f VLArbitrationTableFields
	for i := range f.Entries {
		f.Entries[i] = VLArbEntry{VL: t.VL(i), Weight: t.Weight(i)}
	}
	return f
}

// AppendVLArbitrationTable appends the encoding of f to dst.
func AppendVLArbitrationTable(dst []byte, f *VLArbitrationTableFields) []byte {
	dst, t := attrGrow(dst, VLArbitrationTableSize)
	VLArbitrationTable(t).Encode(f)
	return dst
}

// DecodeVLArbitrationTable reads a block from the first
// VLArbitrationTableSize bytes of b.
func DecodeVLArbitrationTable(b []byte) (VLArbitrationTableFields, error) {
	if !VLArbitrationTable(b).IsValid() {
		return VLArbitrationTableFields{},
			truncated("VLArbitrationTable", len(b), VLArbitrationTableSize)
	}
	return VLArbitrationTable(b).Fields(), nil
}

// VLArbBlock selects one block of a port's arbitration tables: the top 16
// bits of the VLArbitrationTable attribute modifier (IBA 14.2.5.9). The
// numbering is the spec's, as OpenSM, ibsim and smpquery use it: both
// halves of the low-priority table first, then the high-priority one.
type VLArbBlock uint8

// Arbitration table blocks.
const (
	VLArbLow0   VLArbBlock = 1 // low-priority entries 0-31
	VLArbLow32  VLArbBlock = 2 // low-priority entries 32-63
	VLArbHigh0  VLArbBlock = 3 // high-priority entries 0-31
	VLArbHigh32 VLArbBlock = 4 // high-priority entries 32-63
)

// IsValid reports whether b names one of the four blocks.
func (b VLArbBlock) IsValid() bool { return b >= VLArbLow0 && b <= VLArbHigh32 }

// High reports whether b is a block of the high-priority table.
func (b VLArbBlock) High() bool { return b >= VLArbHigh0 }

// FirstEntry returns the table index of b's entry 0: 0 or 32.
func (b VLArbBlock) FirstEntry() int { return int((b-1)%2) * VLArbEntriesPerBlock }

// String names the block, e.g. "low 32-63".
func (b VLArbBlock) String() string {
	if !b.IsValid() {
		return fmt.Sprintf("VLArbBlock(%d)", uint8(b))
	}
	prio := "low"
	if b.High() {
		prio = "high"
	}
	first := b.FirstEntry()
	return fmt.Sprintf("%s %d-%d", prio, first, first+VLArbEntriesPerBlock-1)
}

// VLArbitration attribute modifier: block in bits 31:16, port in 15:0.
const (
	vlarbModBlockShift = 16
	vlarbModPortMask   = 0xffff
	vlarbModMaxPort    = 0xff
)

// VLArbModifier returns the attribute modifier that selects block b of
// output port port (0 on a CA, or for the port the MAD arrives on).
func VLArbModifier(b VLArbBlock, port uint8) uint32 {
	return uint32(b)<<vlarbModBlockShift | uint32(port)
}

// ParseVLArbModifier splits a VLArbitrationTable attribute modifier. A
// block other than 1-4 or a port above 255 is an error.
func ParseVLArbModifier(mod uint32) (VLArbBlock, uint8, error) {
	b, port := mod>>vlarbModBlockShift, mod&vlarbModPortMask
	if b < uint32(VLArbLow0) || b > uint32(VLArbHigh32) {
		return 0, 0, fmt.Errorf("mad: VLArbitration modifier %#08x: block %d not in 1-4", mod, b)
	}
	if port > vlarbModMaxPort {
		return 0, 0, fmt.Errorf("mad: VLArbitration modifier %#08x: port %d above 255", mod, port)
	}
	return VLArbBlock(b), uint8(port), nil
}
