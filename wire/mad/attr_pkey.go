package mad

import "encoding/binary"

// P_Key table sizes (IBA 14.2.5.7).
const (
	PKeysPerBlock = 32                // P_Keys in one P_KeyTable block
	PKeyTableSize = PKeysPerBlock * 2 // the whole SMP data
)

// PKey is a partition key (IBA 10.9.1): a 15-bit base and, on top, the
// membership bit, set for full members. Two ports may talk when their
// bases match and at least one of them is a full member.
type PKey uint16

// Partition keys and masks.
const (
	PKeyFullMember PKey = 0x8000 // the membership bit
	PKeyBaseMask   PKey = 0x7fff
	DefaultPKey    PKey = 0xffff // the default partition, full member
	InvalidPKey    PKey = 0x0000 // an unused table entry (base 0, limited)
)

// Base returns the key without the membership bit.
func (k PKey) Base() PKey { return k & PKeyBaseMask }

// IsFull reports whether the membership bit says full member.
func (k PKey) IsFull() bool { return k&PKeyFullMember != 0 }

// The P_KeyTable attribute, IBA 14.2.5.7: one block of a port's partition
// table. The attribute modifier holds the block number in its low 16 bits
// and, for a switch, the port number in bits 16-23.
//
//	    0 1                             16 17                         31
//	   +-+-----------------------------+-+-----------------------------+
//	 0 |M|      P_KeyBase 0 (15)       |M|      P_KeyBase 1 (15)       |
//	   +-+-----------------------------+-+-----------------------------+
//	   ~                       entries 2 .. 29                         ~
//	   +-+-----------------------------+-+-----------------------------+
//	60 |M|      P_KeyBase 30           |M|      P_KeyBase 31           |
//	   +-+-----------------------------+-+-----------------------------+
//
// M is the membership bit (1 = full member).
const pkEntrySize = 2

// PKeyTable is a view of one P_KeyTable block, usually SMP.Data(). Its
// methods do not check lengths: callers must check IsValid first, or they
// may panic.
type PKeyTable []byte

// PKeyTableFields holds one P_KeyTable block, for building one.
type PKeyTableFields struct {
	PKeys [PKeysPerBlock]PKey
}

// IsValid reports whether b is long enough for a P_KeyTable block.
func (b PKeyTable) IsValid() bool { return len(b) >= PKeyTableSize }

// PKey returns entry i (0 to PKeysPerBlock-1) of the block, membership
// bit included.
func (b PKeyTable) PKey(i int) PKey { return PKey(binary.BigEndian.Uint16(b[i*pkEntrySize:])) }

// SetPKey sets entry i (0 to PKeysPerBlock-1) of the block.
func (b PKeyTable) SetPKey(i int, k PKey) {
	binary.BigEndian.PutUint16(b[i*pkEntrySize:], uint16(k))
}

// Encode writes f into b.
func (b PKeyTable) Encode(f *PKeyTableFields) {
	for i, k := range f.PKeys {
		b.SetPKey(i, k)
	}
}

// Fields returns the entries of b.
func (b PKeyTable) Fields() PKeyTableFields {
	var f PKeyTableFields
	for i := range f.PKeys {
		f.PKeys[i] = b.PKey(i)
	}
	return f
}

// AppendPKeyTable appends a P_KeyTable block built from f to dst.
func AppendPKeyTable(dst []byte, f *PKeyTableFields) []byte {
	dst, b := grow(dst, PKeyTableSize)
	PKeyTable(b).Encode(f)
	return dst
}

// DecodePKeyTable returns the P_KeyTable block in b, or an error if b is
// too short.
func DecodePKeyTable(b []byte) (PKeyTableFields, error) {
	if !PKeyTable(b).IsValid() {
		return PKeyTableFields{}, truncated("P_KeyTable", len(b), PKeyTableSize)
	}
	return PKeyTable(b).Fields(), nil
}

// PKeyTableModifier returns the attribute modifier that addresses block of
// port's P_Key table (port is ignored by channel adapters).
func PKeyTableModifier(port uint8, block uint16) uint32 {
	return uint32(port)<<16 | uint32(block)
}
