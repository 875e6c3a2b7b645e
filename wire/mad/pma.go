package mad

import "fmt"

// PMADataSize is the attribute data of a performance management MAD.
const PMADataSize = 192

// A performance management MAD, IBA 16.1.1: the common header,
// 40 reserved bytes, and the attribute data:
//
//	    0               8               16              24            31
//	   +---------------------------------------------------------------+
//	 0 |              common MAD header (MgmtClass 0x04)               |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
//	24 |                       Reserved (40 bytes)                     |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
//	64 |                   PMA attribute data (192 bytes)              |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
const (
	pmaReserved = 24
	pmaData     = 64
)

// PMA is a view of a performance management MAD. Its methods do not check
// lengths: callers must check IsValid first, or they may panic. The common
// header is read through MAD().
type PMA []byte

// PMAFields holds the fields of a performance management MAD, for building
// one. The versions and the class are fixed by the type.
type PMAFields = ClassMADFields[[PMADataSize]byte]

// IsValid reports whether b holds a whole PMA MAD.
func (b PMA) IsValid() bool { return len(b) >= MADSize }

// Validate checks the length and that the header says performance
// management.
func (b PMA) Validate() error {
	if !b.IsValid() {
		return truncated("PMA MAD", len(b), MADSize)
	}
	if c := b.MAD().MgmtClass(); c != ClassPerfMgt {
		return fmt.Errorf("mad: PMA MAD with class %v, want %v", c, ClassPerfMgt)
	}
	return nil
}

// MAD returns the PMA MAD as a MAD, for the common header.
func (b PMA) MAD() MAD { return MAD(b) }

// Data returns the 192 bytes of attribute data.
func (b PMA) Data() []byte { return b[pmaData : pmaData+PMADataSize] }

// Encode writes the whole MAD: header with base and class version 1 and
// class 0x04, f's fields, and zeroed reserved bytes.
func (b PMA) Encode(f *PMAFields) {
	f.encodeHeader(b.MAD(), ClassPerfMgt, PerfMgtVersion)
	clear(b[pmaReserved:pmaData])
	copy(b.Data(), f.Data[:])
}

// Fields returns the MAD's fields.
func (b PMA) Fields() PMAFields {
	f := classFields[[PMADataSize]byte](b.MAD())
	copy(f.Data[:], b.Data())
	return f
}

// AppendPMA appends a performance management MAD built from f to dst.
func AppendPMA(dst []byte, f *PMAFields) []byte {
	dst, b := grow(dst, MADSize)
	PMA(b).Encode(f)
	return dst
}

// DecodePMA validates b as a performance management MAD and returns its
// fields.
func DecodePMA(b []byte) (PMAFields, error) {
	if err := PMA(b).Validate(); err != nil {
		return PMAFields{}, err
	}
	return PMA(b).Fields(), nil
}
