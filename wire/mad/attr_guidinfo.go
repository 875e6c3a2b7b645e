package mad

import "encoding/binary"

// GUIDInfo sizes (IBA 14.2.5.5).
const (
	GUIDsPerBlock = 8                 // GUIDs in one GUIDInfo block
	GUIDInfoSize  = GUIDsPerBlock * 8 // the whole SMP data
)

// The GUIDInfo attribute, IBA 14.2.5.5: one block of a port's GUID table,
// the block number being the attribute modifier. Entry 0 of block 0 is the
// port GUID; a zero entry is unassigned.
//
//	    0                                                             31
//	   +---------------------------------------------------------------+
//	 0 |                          GUID 0 (64)                          |
//	 4 |                                                               |
//	   +---------------------------------------------------------------+
//	   ~                         GUID 1 .. 6                           ~
//	   +---------------------------------------------------------------+
//	56 |                          GUID 7 (64)                          |
//	60 |                                                               |
//	   +---------------------------------------------------------------+
const giEntrySize = 8

// GUIDInfo is a view of one GUIDInfo block, usually SMP.Data(). Its
// methods do not check lengths: callers must check IsValid first, or they
// may panic.
type GUIDInfo []byte

// GUIDInfoFields holds one GUIDInfo block, for building one.
type GUIDInfoFields struct {
	GUIDs [GUIDsPerBlock]uint64
}

// IsValid reports whether b is long enough for a GUIDInfo block.
func (b GUIDInfo) IsValid() bool { return len(b) >= GUIDInfoSize }

// GUID returns entry i (0 to GUIDsPerBlock-1) of the block.
func (b GUIDInfo) GUID(i int) uint64 { return binary.BigEndian.Uint64(b[i*giEntrySize:]) }

// SetGUID sets entry i (0 to GUIDsPerBlock-1) of the block.
func (b GUIDInfo) SetGUID(i int, g uint64) { binary.BigEndian.PutUint64(b[i*giEntrySize:], g) }

// Encode writes f into b.
func (b GUIDInfo) Encode(f *GUIDInfoFields) {
	for i, g := range f.GUIDs {
		b.SetGUID(i, g)
	}
}

// Fields returns the entries of b.
func (b GUIDInfo) Fields() GUIDInfoFields {
	var f GUIDInfoFields
	for i := range f.GUIDs {
		f.GUIDs[i] = b.GUID(i)
	}
	return f
}

// AppendGUIDInfo appends a GUIDInfo block built from f to dst.
func AppendGUIDInfo(dst []byte, f *GUIDInfoFields) []byte {
	dst, b := grow(dst, GUIDInfoSize)
	GUIDInfo(b).Encode(f)
	return dst
}

// DecodeGUIDInfo returns the GUIDInfo block in b, or an error if b is too
// short.
func DecodeGUIDInfo(b []byte) (GUIDInfoFields, error) {
	if !GUIDInfo(b).IsValid() {
		return GUIDInfoFields{}, truncated("GUIDInfo", len(b), GUIDInfoSize)
	}
	return GUIDInfo(b).Fields(), nil
}
