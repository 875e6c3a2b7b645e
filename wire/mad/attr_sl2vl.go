package mad

import "fmt"

// SLtoVLMappingTable attribute (IBA 14.2.5.8): the VL each of the 16 SLs
// is sent on, four bits per SL, SL0 in the top half of byte 0.
//
//	byte 0 +-------+-------+-------+-------+-- ... --+-------+-------+
//	       | SL0   | SL1   | SL2   | SL3   |         | SL14  | SL15  |
//	       | to VL | to VL | to VL | to VL |         | to VL | to VL |
//	byte 8 +-------+-------+-------+-------+-- ... --+-------+-------+
//
// On a switch the attribute modifier names the input and output port the
// table applies to (SLtoVLModifier); CAs and routers ignore it.
const (
	sl2vlHighShift = 4
	sl2vlMask      = 0x0f
)

// SLtoVLMappingTableSize is the size of the SLtoVLMappingTable attribute.
const SLtoVLMappingTableSize = 8

// NumSLs is the number of service levels.
const NumSLs = 16

// SLtoVLMappingTable is a view of the SLtoVLMappingTable attribute. Its
// methods index the slice directly: callers must check IsValid first, and
// pass an SL below NumSLs.
type SLtoVLMappingTable []byte

// IsValid reports whether t is long enough to hold the table.
func (t SLtoVLMappingTable) IsValid() bool { return len(t) >= SLtoVLMappingTableSize }

// VL returns the VL that SL sl maps to.
func (t SLtoVLMappingTable) VL(sl int) uint8 {
	b := t[sl/2]
	if sl%2 == 0 {
		return b >> sl2vlHighShift
	}
	return b & sl2vlMask
}

// SetVL maps SL sl to the low 4 bits of vl.
func (t SLtoVLMappingTable) SetVL(sl int, vl uint8) {
	if sl%2 == 0 {
		attrSetBits(t, sl/2, sl2vlHighShift, sl2vlMask, vl)
	} else {
		attrSetBits(t, sl/2, 0, sl2vlMask, vl)
	}
}

// SLtoVLMappingTableFields holds a whole table: VL[sl] is SL sl's VL.
type SLtoVLMappingTableFields struct {
	VL [NumSLs]uint8
}

// Encode writes f into t. t must be valid.
func (t SLtoVLMappingTable) Encode(f *SLtoVLMappingTableFields) {
	for sl, vl := range f.VL {
		t.SetVL(sl, vl)
	}
}

// Fields returns the whole table. t must be valid.
func (t SLtoVLMappingTable) Fields() SLtoVLMappingTableFields {
	var f SLtoVLMappingTableFields
	for sl := range f.VL {
		f.VL[sl] = t.VL(sl)
	}
	return f
}

// AppendSLtoVLMappingTable appends the encoding of f to dst.
func AppendSLtoVLMappingTable(dst []byte, f *SLtoVLMappingTableFields) []byte {
	dst, t := attrGrow(dst, SLtoVLMappingTableSize)
	SLtoVLMappingTable(t).Encode(f)
	return dst
}

// DecodeSLtoVLMappingTable reads a table from the first
// SLtoVLMappingTableSize bytes of b.
func DecodeSLtoVLMappingTable(b []byte) (SLtoVLMappingTableFields, error) {
	if !SLtoVLMappingTable(b).IsValid() {
		return SLtoVLMappingTableFields{},
			truncated("SLtoVLMappingTable", len(b), SLtoVLMappingTableSize)
	}
	return SLtoVLMappingTable(b).Fields(), nil
}

// SLtoVL attribute modifier on a switch (IBA 14.2.5.8):
//
//	31          18  17  16  15          8 7           0
//	+-------------+---+---+--------------+-------------+
//	|  reserved   |AI |AO | input port   | output port |
//	+-------------+---+---+--------------+-------------+
//
// AI (all input ports) and AO (all output ports) let an SM whose switch
// sets SwitchInfo.OptimizedSLtoVLMappingProgramming write many tables with
// one Set; the port number they replace is ignored.
const (
	sl2vlModInShift    = 8
	sl2vlModPortMask   = 0xff
	sl2vlModAllOutBit  = 1 << 16
	sl2vlModAllInBit   = 1 << 17
	sl2vlModReservedMk = 0xfffc0000
)

// SLtoVLModifier is the decoded attribute modifier of an SLtoVLMappingTable
// MAD addressed to a switch.
type SLtoVLModifier struct {
	InPort      uint8
	OutPort     uint8
	AllInPorts  bool // the table applies to every input port (Set only)
	AllOutPorts bool // the table applies to every output port (Set only)
}

// Modifier returns the attribute modifier for m.
func (m SLtoVLModifier) Modifier() uint32 {
	mod := uint32(m.InPort)<<sl2vlModInShift | uint32(m.OutPort)
	if m.AllInPorts {
		mod |= sl2vlModAllInBit
	}
	if m.AllOutPorts {
		mod |= sl2vlModAllOutBit
	}
	return mod
}

// ParseSLtoVLModifier splits a switch's SLtoVL attribute modifier; reserved
// bits set are an error, which the agent answers with an invalid-field
// status.
func ParseSLtoVLModifier(mod uint32) (SLtoVLModifier, error) {
	if mod&sl2vlModReservedMk != 0 {
		return SLtoVLModifier{}, fmt.Errorf("mad: SLtoVL modifier %#08x has reserved bits set", mod)
	}
	return SLtoVLModifier{
		InPort:      uint8(mod >> sl2vlModInShift & sl2vlModPortMask),
		OutPort:     uint8(mod & sl2vlModPortMask),
		AllInPorts:  mod&sl2vlModAllInBit != 0,
		AllOutPorts: mod&sl2vlModAllOutBit != 0,
	}, nil
}
