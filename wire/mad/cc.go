package mad

import "fmt"

// CCVersion is the class version of congestion control MADs (IBA Annex
// A10.4.1): 2, as OpenSM and libibmad send them.
const CCVersion = 2

// Congestion control attributes (IBA A10.4.3, OpenSM ib_types.h).
const (
	AttrCongestionInfo              AttrID = 0x0011
	AttrCongestionKeyInfo           AttrID = 0x0012
	AttrCongestionLog               AttrID = 0x0013
	AttrSwitchCongestionSetting     AttrID = 0x0014
	AttrSwitchPortCongestionSetting AttrID = 0x0015
	AttrCACongestionSetting         AttrID = 0x0016
	AttrCongestionControlTable      AttrID = 0x0017
	AttrTimeStamp                   AttrID = 0x0018
)

var ccAttrNames = map[AttrID]string{
	AttrClassPortInfo:               "ClassPortInfo",
	AttrCongestionInfo:              "CongestionInfo",
	AttrCongestionKeyInfo:           "CongestionKeyInfo",
	AttrCongestionLog:               "CongestionLog",
	AttrSwitchCongestionSetting:     "SwitchCongestionSetting",
	AttrSwitchPortCongestionSetting: "SwitchPortCongestionSetting",
	AttrCACongestionSetting:         "CACongestionSetting",
	AttrCongestionControlTable:      "CongestionControlTable",
	AttrTimeStamp:                   "TimeStamp",
}

// Sizes of the congestion control MAD's areas.
const (
	CCDataSize    = 192 // management data, every attribute but CongestionLog
	CCLogDataSize = 224 // CongestionLog: the log data and the management data
)

// A congestion control MAD, IBA A10.4.1: the common header, the CC_Key,
// 32 bytes of log data and 192 of management data. CongestionLog uses the
// log data and the management data as one 224-byte area.
//
//	    0               8               16              24            31
//	   +---------------------------------------------------------------+
//	 0 |              common MAD header (MgmtClass 0x21)               |
//	   ~                                                               ~
//	   +---------------------------------------------------------------+
//	24 |                          CC_Key (64)                          |
//	   +---------------------------------------------------------------+
//	32 |                      log data (32 bytes)                      |
//	   +---------------------------------------------------------------+
//	64 |                  management data (192 bytes)                  |
//	   +---------------------------------------------------------------+
const (
	ccKey     = 24
	ccLogData = 32
	ccData    = 64
)

// CCMAD is a view of a congestion control MAD. Its methods do not check
// lengths: callers must check IsValid first.
type CCMAD []byte

// IsValid reports whether b holds a whole MAD.
func (b CCMAD) IsValid() bool { return len(b) >= MADSize }

// Validate checks the length and that the header says congestion control.
func (b CCMAD) Validate() error {
	if !b.IsValid() {
		return truncated("CC MAD", len(b), MADSize)
	}
	if c := b.MAD().MgmtClass(); c != ClassCongestion {
		return fmt.Errorf("mad: CC MAD with class %v, want %v", c, ClassCongestion)
	}
	return nil
}

// MAD returns the CC MAD as a MAD, for the common header.
func (b CCMAD) MAD() MAD { return MAD(b) }

// CCKey returns the CC_Key field.
func (b CCMAD) CCKey() uint64 { return attrBE64(b, ccKey) }

// SetCCKey sets the CC_Key field.
func (b CCMAD) SetCCKey(k uint64) { attrPut64(b, ccKey, k) }

// Data returns the 192 bytes of management data.
func (b CCMAD) Data() []byte { return b[ccData : ccData+CCDataSize] }

// LogData returns the 224 bytes CongestionLog occupies: the log data and
// the management data.
func (b CCMAD) LogData() []byte { return b[ccLogData : ccLogData+CCLogDataSize] }

// CCMADFields holds the fields of a congestion control MAD, for building
// one. Data is the management data; a CongestionLog's first 32 bytes go
// in LogData.
type CCMADFields struct {
	Method        Method
	Status        Status
	TransactionID uint64
	AttrID        AttrID
	AttrModifier  uint32
	CCKey         uint64
	LogData       [ccData - ccLogData]byte
	Data          [CCDataSize]byte
}

// Encode writes the whole MAD: header with base version 1, class 0x21 and
// class version 2, then f's fields.
func (b CCMAD) Encode(f *CCMADFields) {
	b.MAD().Encode(&MADFields{
		BaseVersion:   BaseVersion,
		MgmtClass:     ClassCongestion,
		ClassVersion:  CCVersion,
		Method:        f.Method,
		Status:        f.Status,
		TransactionID: f.TransactionID,
		AttrID:        f.AttrID,
		AttrModifier:  f.AttrModifier,
	})
	b.SetCCKey(f.CCKey)
	copy(b[ccLogData:ccData], f.LogData[:])
	copy(b.Data(), f.Data[:])
}

// Fields returns the MAD's fields.
func (b CCMAD) Fields() CCMADFields {
	m := b.MAD()
	f := CCMADFields{
		Method:        m.Method(),
		Status:        m.Status(),
		TransactionID: m.TransactionID(),
		AttrID:        m.AttrID(),
		AttrModifier:  m.AttrModifier(),
		CCKey:         b.CCKey(),
	}
	copy(f.LogData[:], b[ccLogData:ccData])
	copy(f.Data[:], b.Data())
	return f
}

// AppendCCMAD appends a congestion control MAD built from f to dst.
func AppendCCMAD(dst []byte, f *CCMADFields) []byte {
	dst, b := grow(dst, MADSize)
	CCMAD(b).Encode(f)
	return dst
}

// DecodeCCMAD validates b as a congestion control MAD and returns its
// fields.
func DecodeCCMAD(b []byte) (CCMADFields, error) {
	if err := CCMAD(b).Validate(); err != nil {
		return CCMADFields{}, err
	}
	return CCMAD(b).Fields(), nil
}
