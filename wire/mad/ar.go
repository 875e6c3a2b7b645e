package mad

import (
	"fmt"

	"ibfab/internal/enum"
)

//go:generate go tool stringer -type=ARMode -linecomment

// ARMode is how a switch chooses among a destination's alternative output
// ports (ibfab's adaptive routing vendor class; seed 003).
type ARMode uint8

// Adaptive routing modes.
const (
	// AROff forwards every packet by the LFT.
	AROff ARMode = iota // off
	// ARAdaptive sends each packet out of the alternative whose
	// downstream VL is least occupied.
	ARAdaptive // adaptive
	// ARAdaptiveTh follows the LFT until the deterministic port's
	// downstream VL reaches the threshold, then adapts as ARAdaptive.
	ARAdaptiveTh // adaptive-th
	// ARAFI is ARAdaptiveTh whose adapted packets are marked, move to the
	// Adapted Flow Channel VL and are never adapted again.
	ARAFI // afi
)

// arModes are the modes, named as ibsm's flags spell them.
var arModes = enum.New("adaptive routing mode", AROff, ARAdaptive, ARAdaptiveTh, ARAFI)

// ParseARMode returns the mode String names.
func ParseARMode(s string) (ARMode, error) { return arModes.Parse(s) }

// Bit returns m's bit in ARInfo's ModesSupported.
func (m ARMode) Bit() uint8 { return 1 << m }

// IsValid reports whether m is one of the four modes.
func (m ARMode) IsValid() bool { return m <= ARAFI }

// ARModesAll is ModesSupported of a switch that does every mode.
const ARModesAll = 1<<AROff | 1<<ARAdaptive | 1<<ARAdaptiveTh | 1<<ARAFI

// ibfab's adaptive routing class. Adaptive routing is vendor-specific on
// silicon (Mellanox configures its AR groups with vendor attributes), so
// ibfab defines its own class in the first vendor range (0x09-0x0F): a
// GMP to QP1 with the common header and 232 bytes of data, no RMPP header,
// no OUI and no key. docs/adaptive-routing.md is the reference; the
// attribute layouts are in ar_attrs.go.
//
//	    0               8               16              24            31
//	   +---------------------------------------------------------------+
//	 0 |             common MAD header (MgmtClass 0x0A)                |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
//	24 |                   attribute data (232 bytes)                  |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+

// ARVersion is the class version of the adaptive routing class.
const ARVersion = 1

// Adaptive routing attributes. ClassPortInfo (0x0001) is the class's too.
const (
	AttrARInfo       AttrID = 0x0010
	AttrARGroupTable AttrID = 0x0011
	AttrARLIDTable   AttrID = 0x0012
)

var arAttrNames = map[AttrID]string{
	AttrClassPortInfo: "ClassPortInfo",
	AttrARInfo:        "ARInfo",
	AttrARGroupTable:  "ARGroupTable",
	AttrARLIDTable:    "ARLIDTable",
}

// ARDataSize is the attribute data of an adaptive routing MAD: all of the
// MAD behind the common header.
const ARDataSize = MADDataSize

// ARMAD is a view of an adaptive routing MAD. Its methods do not check
// lengths: callers must check IsValid first.
type ARMAD []byte

// IsValid reports whether b holds a whole MAD.
func (b ARMAD) IsValid() bool { return len(b) >= MADSize }

// Validate checks the length and that the header says adaptive routing.
func (b ARMAD) Validate() error {
	if !b.IsValid() {
		return truncated("AR MAD", len(b), MADSize)
	}
	if c := b.MAD().MgmtClass(); c != ClassVendorAR {
		return fmt.Errorf("mad: AR MAD with class %v, want %v", c, ClassVendorAR)
	}
	return nil
}

// MAD returns the AR MAD as a MAD, for the common header.
func (b ARMAD) MAD() MAD { return MAD(b) }

// Data returns the 232 bytes of attribute data.
func (b ARMAD) Data() []byte { return MAD(b).Data() }

// ARMADFields holds the fields of an adaptive routing MAD, for building
// one.
type ARMADFields = ClassMADFields[[ARDataSize]byte]

// Encode writes the whole MAD: header with base version 1, class 0x0A and
// class version 1, then f's fields.
func (b ARMAD) Encode(f *ARMADFields) {
	f.encodeHeader(b.MAD(), ClassVendorAR, ARVersion)
	copy(b.Data(), f.Data[:])
}

// Fields returns the MAD's fields.
func (b ARMAD) Fields() ARMADFields {
	f := classFields[[ARDataSize]byte](b.MAD())
	copy(f.Data[:], b.Data())
	return f
}

// AppendARMAD appends an adaptive routing MAD built from f to dst.
func AppendARMAD(dst []byte, f *ARMADFields) []byte {
	dst, b := grow(dst, MADSize)
	ARMAD(b).Encode(f)
	return dst
}

// DecodeARMAD validates b as an adaptive routing MAD and returns its
// fields.
func DecodeARMAD(b []byte) (ARMADFields, error) {
	if err := ARMAD(b).Validate(); err != nil {
		return ARMADFields{}, err
	}
	return ARMAD(b).Fields(), nil
}

// MarshalText implements encoding.TextMarshaler.
func (m ARMode) MarshalText() ([]byte, error) { return arModes.Marshal(m) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *ARMode) UnmarshalText(text []byte) error { return arModes.Unmarshal(m, text) }
