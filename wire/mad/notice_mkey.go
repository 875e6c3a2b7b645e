package mad

import "encoding/binary"

// The DataDetails of Trap 256, Bad M_Key (IBA 14.2.5.1), in the Notice:
//
//	bytes  0-1   reserved
//	       2-3   LIDADDR: the SLID of the SMP that failed the check
//	       4-5   DRSLID: its DrSLID, for a directed-route SMP
//	       6     Method
//	       7     reserved
//	       8-9   AttributeID
//	      10-13  AttributeModifier
//	      14-21  M_Key: the key the SMP carried
//	      22     reserved
//	      23     DRNotice (bit 7), DRPathTruncated (bit 6), DRHopCount (5-0)
//	      24-53  DRNoticeReturnPath: the SMP's return path, entries 1 on
const (
	nt256LID        = ntDataDetails + 2
	nt256DRSLID     = ntDataDetails + 4
	nt256Method     = ntDataDetails + 6
	nt256AttrID     = ntDataDetails + 8
	nt256AttrMod    = ntDataDetails + 10
	nt256MKey       = ntDataDetails + 14
	nt256DRFlags    = ntDataDetails + 23
	nt256ReturnPath = ntDataDetails + 24

	nt256DRNoticeBit  = 0x80
	nt256TruncatedBit = 0x40
	nt256HopCountMask = 0x3f

	// BadMKeyPathSize is how many return path entries Trap 256 holds.
	BadMKeyPathSize = NoticeDetailsSize - (nt256ReturnPath - ntDataDetails)
)

// BadMKey describes the SMP that failed an M_Key check, as Trap 256
// reports it.
type BadMKey struct {
	LID          uint16 // the SMP's SLID
	DRSLID       uint16 // directed route only
	Method       Method
	AttrID       AttrID
	AttrModifier uint32
	MKey         uint64
	// DR says the SMP was directed-route; then HopCount is its hop count
	// and ReturnPath its return path from entry 1, PathTruncated set when
	// the path is longer than the BadMKeyPathSize entries the notice holds.
	DR            bool
	PathTruncated bool
	HopCount      uint8 // 6 bits
	ReturnPath    [BadMKeyPathSize]byte
}

// Trap256 returns the Bad M_Key notice (a generic Security notice) the SMA
// at lid of a node of type producer sends about b.
func Trap256(producer NodeType, lid uint16, b *BadMKey) NoticeFields {
	f := genericTrap(NoticeSecurity, uint32(producer), TrapBadMKey, lid)
	d := Notice(make([]byte, NoticeSize))
	d.SetBadMKey(b)
	copy(f.DataDetails[:], d.DataDetails())
	return f
}

// BadMKey returns the DataDetails of a Trap 256 notice. b must be valid
// (IsValid).
func (b Notice) BadMKey() BadMKey {
	flags := b[nt256DRFlags]
	r := BadMKey{
		LID:           binary.BigEndian.Uint16(b[nt256LID:]),
		DRSLID:        binary.BigEndian.Uint16(b[nt256DRSLID:]),
		Method:        Method(b[nt256Method]),
		AttrID:        AttrID(binary.BigEndian.Uint16(b[nt256AttrID:])),
		AttrModifier:  binary.BigEndian.Uint32(b[nt256AttrMod:]),
		MKey:          binary.BigEndian.Uint64(b[nt256MKey:]),
		DR:            flags&nt256DRNoticeBit != 0,
		PathTruncated: flags&nt256TruncatedBit != 0,
		HopCount:      flags & nt256HopCountMask,
	}
	copy(r.ReturnPath[:], b[nt256ReturnPath:ntDataDetails+NoticeDetailsSize])
	return r
}

// SetBadMKey writes the DataDetails of a Trap 256 notice (the reserved
// bytes as 0). b must be valid (IsValid).
func (b Notice) SetBadMKey(r *BadMKey) {
	clear(b[ntDataDetails : ntDataDetails+NoticeDetailsSize])
	binary.BigEndian.PutUint16(b[nt256LID:], r.LID)
	binary.BigEndian.PutUint16(b[nt256DRSLID:], r.DRSLID)
	b[nt256Method] = uint8(r.Method)
	binary.BigEndian.PutUint16(b[nt256AttrID:], uint16(r.AttrID))
	binary.BigEndian.PutUint32(b[nt256AttrMod:], r.AttrModifier)
	binary.BigEndian.PutUint64(b[nt256MKey:], r.MKey)
	flags := r.HopCount & nt256HopCountMask
	if r.DR {
		flags |= nt256DRNoticeBit
	}
	if r.PathTruncated {
		flags |= nt256TruncatedBit
	}
	b[nt256DRFlags] = flags
	copy(b[nt256ReturnPath:ntDataDetails+NoticeDetailsSize], r.ReturnPath[:])
}
