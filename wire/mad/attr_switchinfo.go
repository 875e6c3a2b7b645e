package mad

import "encoding/binary"

// SwitchInfoSize is the length of the SwitchInfo fields; the rest of the
// 64-byte SMP data is reserved.
const SwitchInfoSize = 20

// The SwitchInfo attribute, IBA 14.2.5.4 (bit 7 is a byte's most
// significant bit):
//
//	    0               8               16              24            31
//	   +-------------------------------+-------------------------------+
//	 0 |         LinearFDBCap          |         RandomFDBCap          |
//	   +-------------------------------+-------------------------------+
//	 4 |        MulticastFDBCap        |         LinearFDBTop          |
//	   +---------------+---------------+---------------+---------+-+---+
//	 8 |  DefaultPort  | DefMcastPrim  | DefMcastNotPr |LifeTime |S|OSV|
//	   +---------------+---------------+---------------+---------+-+---+
//	12 |          LIDsPerPort          |    PartitionEnforcementCap    |
//	   +-+-+-+-+-+-----+---------------+-------------------------------+
//	16 |I|O|I|O|E|rsvd |   Reserved    |        MulticastFDBTop        |
//	   +-+-+-+-+-+-----+---------------+-------------------------------+
//
// S is PortStateChange and OSV OptimizedSLtoVLMappingProgramming. Byte 16
// holds, from bit 7 down: InboundEnforcementCap, OutboundEnforcementCap,
// FilterRawInboundCap, FilterRawOutboundCap, EnhancedPort0.
const (
	siLinearFDBCap          = 0
	siRandomFDBCap          = 2
	siMulticastFDBCap       = 4
	siLinearFDBTop          = 6
	siDefaultPort           = 8
	siDefMcastPrimaryPort   = 9
	siDefMcastNotPrimary    = 10
	siLifeTimeStateOptSL2VL = 11
	siLIDsPerPort           = 12
	siPartitionEnfCap       = 14
	siCapFlags              = 16
	siMulticastFDBTop       = 18

	siLifeTimeShift       = 3
	siLifeTimeMask        = 0x1f
	siPortStateChangeBit  = 0x04
	siOptSL2VLMask        = 0x03
	siInboundEnfBit       = 0x80
	siOutboundEnfBit      = 0x40
	siFilterRawInboundBit = 0x20
	siFilterRawOutbound   = 0x10
	siEnhancedPort0Bit    = 0x08
)

// SwitchInfo is a view of the SwitchInfo attribute, usually SMP.Data().
// Its methods do not check lengths: callers must check IsValid first, or
// they may panic.
type SwitchInfo []byte

// SwitchInfoFields holds the SwitchInfo fields, for building one.
type SwitchInfoFields struct {
	LinearFDBCap                      uint16
	RandomFDBCap                      uint16
	MulticastFDBCap                   uint16
	LinearFDBTop                      uint16
	DefaultPort                       uint8
	DefaultMulticastPrimaryPort       uint8
	DefaultMulticastNotPrimaryPort    uint8
	LifeTimeValue                     uint8 // 5 bits
	PortStateChange                   bool
	OptimizedSLtoVLMappingProgramming uint8 // 2 bits
	LIDsPerPort                       uint16
	PartitionEnforcementCap           uint16
	InboundEnforcementCap             bool
	OutboundEnforcementCap            bool
	FilterRawInboundCap               bool
	FilterRawOutboundCap              bool
	EnhancedPort0                     bool
	MulticastFDBTop                   uint16
}

// IsValid reports whether b is long enough for a SwitchInfo.
func (b SwitchInfo) IsValid() bool { return len(b) >= SwitchInfoSize }

// LinearFDBCap returns the "LinearFDBCap" field: linear forwarding table
// entries supported.
func (b SwitchInfo) LinearFDBCap() uint16 { return binary.BigEndian.Uint16(b[siLinearFDBCap:]) }

// SetLinearFDBCap sets the "LinearFDBCap" field.
func (b SwitchInfo) SetLinearFDBCap(v uint16) { binary.BigEndian.PutUint16(b[siLinearFDBCap:], v) }

// RandomFDBCap returns the "RandomFDBCap" field.
func (b SwitchInfo) RandomFDBCap() uint16 { return binary.BigEndian.Uint16(b[siRandomFDBCap:]) }

// SetRandomFDBCap sets the "RandomFDBCap" field.
func (b SwitchInfo) SetRandomFDBCap(v uint16) { binary.BigEndian.PutUint16(b[siRandomFDBCap:], v) }

// MulticastFDBCap returns the "MulticastFDBCap" field.
func (b SwitchInfo) MulticastFDBCap() uint16 {
	return binary.BigEndian.Uint16(b[siMulticastFDBCap:])
}

// SetMulticastFDBCap sets the "MulticastFDBCap" field.
func (b SwitchInfo) SetMulticastFDBCap(v uint16) {
	binary.BigEndian.PutUint16(b[siMulticastFDBCap:], v)
}

// LinearFDBTop returns the "LinearFDBTop" field: the highest LID the
// linear forwarding table holds a valid entry for.
func (b SwitchInfo) LinearFDBTop() uint16 { return binary.BigEndian.Uint16(b[siLinearFDBTop:]) }

// SetLinearFDBTop sets the "LinearFDBTop" field.
func (b SwitchInfo) SetLinearFDBTop(v uint16) { binary.BigEndian.PutUint16(b[siLinearFDBTop:], v) }

// DefaultPort returns the "DefaultPort" field (random FDB only).
func (b SwitchInfo) DefaultPort() uint8 { return b[siDefaultPort] }

// SetDefaultPort sets the "DefaultPort" field.
func (b SwitchInfo) SetDefaultPort(p uint8) { b[siDefaultPort] = p }

// DefaultMulticastPrimaryPort returns the "DefaultMulticastPrimaryPort"
// field.
func (b SwitchInfo) DefaultMulticastPrimaryPort() uint8 { return b[siDefMcastPrimaryPort] }

// SetDefaultMulticastPrimaryPort sets the "DefaultMulticastPrimaryPort"
// field.
func (b SwitchInfo) SetDefaultMulticastPrimaryPort(p uint8) { b[siDefMcastPrimaryPort] = p }

// DefaultMulticastNotPrimaryPort returns the
// "DefaultMulticastNotPrimaryPort" field.
func (b SwitchInfo) DefaultMulticastNotPrimaryPort() uint8 { return b[siDefMcastNotPrimary] }

// SetDefaultMulticastNotPrimaryPort sets the
// "DefaultMulticastNotPrimaryPort" field.
func (b SwitchInfo) SetDefaultMulticastNotPrimaryPort(p uint8) { b[siDefMcastNotPrimary] = p }

// LifeTimeValue returns the 5-bit "LifeTimeValue" field: how long a packet
// may wait in the switch, 4.096 µs × 2^value.
func (b SwitchInfo) LifeTimeValue() uint8 {
	return b[siLifeTimeStateOptSL2VL] >> siLifeTimeShift & siLifeTimeMask
}

// SetLifeTimeValue sets the 5-bit "LifeTimeValue" field.
func (b SwitchInfo) SetLifeTimeValue(v uint8) {
	x := b[siLifeTimeStateOptSL2VL] &^ (siLifeTimeMask << siLifeTimeShift)
	b[siLifeTimeStateOptSL2VL] = x | (v&siLifeTimeMask)<<siLifeTimeShift
}

// PortStateChange returns the "PortStateChange" bit: the switch sets it
// when a port's state changes; the SM clears it by setting it to 1 in a
// Set (a Set with 0 leaves it alone).
func (b SwitchInfo) PortStateChange() bool {
	return b[siLifeTimeStateOptSL2VL]&siPortStateChangeBit != 0
}

// SetPortStateChange sets the "PortStateChange" bit in b (the bytes, not
// the switch's state: see PortStateChange).
func (b SwitchInfo) SetPortStateChange(v bool) {
	setFlag(&b[siLifeTimeStateOptSL2VL], siPortStateChangeBit, v)
}

// OptimizedSLtoVLMappingProgramming returns the 2-bit
// "OptimizedSLtoVLMappingProgramming" field.
func (b SwitchInfo) OptimizedSLtoVLMappingProgramming() uint8 {
	return b[siLifeTimeStateOptSL2VL] & siOptSL2VLMask
}

// SetOptimizedSLtoVLMappingProgramming sets the 2-bit
// "OptimizedSLtoVLMappingProgramming" field.
func (b SwitchInfo) SetOptimizedSLtoVLMappingProgramming(v uint8) {
	b[siLifeTimeStateOptSL2VL] = b[siLifeTimeStateOptSL2VL]&^siOptSL2VLMask | v&siOptSL2VLMask
}

// LIDsPerPort returns the "LIDsPerPort" field.
func (b SwitchInfo) LIDsPerPort() uint16 { return binary.BigEndian.Uint16(b[siLIDsPerPort:]) }

// SetLIDsPerPort sets the "LIDsPerPort" field.
func (b SwitchInfo) SetLIDsPerPort(v uint16) { binary.BigEndian.PutUint16(b[siLIDsPerPort:], v) }

// PartitionEnforcementCap returns the "PartitionEnforcementCap" field:
// P_Key table entries of each external port.
func (b SwitchInfo) PartitionEnforcementCap() uint16 {
	return binary.BigEndian.Uint16(b[siPartitionEnfCap:])
}

// SetPartitionEnforcementCap sets the "PartitionEnforcementCap" field.
func (b SwitchInfo) SetPartitionEnforcementCap(v uint16) {
	binary.BigEndian.PutUint16(b[siPartitionEnfCap:], v)
}

// InboundEnforcementCap returns the "InboundEnforcementCap" bit.
func (b SwitchInfo) InboundEnforcementCap() bool { return b[siCapFlags]&siInboundEnfBit != 0 }

// SetInboundEnforcementCap sets the "InboundEnforcementCap" bit.
func (b SwitchInfo) SetInboundEnforcementCap(v bool) {
	setFlag(&b[siCapFlags], siInboundEnfBit, v)
}

// OutboundEnforcementCap returns the "OutboundEnforcementCap" bit.
func (b SwitchInfo) OutboundEnforcementCap() bool { return b[siCapFlags]&siOutboundEnfBit != 0 }

// SetOutboundEnforcementCap sets the "OutboundEnforcementCap" bit.
func (b SwitchInfo) SetOutboundEnforcementCap(v bool) {
	setFlag(&b[siCapFlags], siOutboundEnfBit, v)
}

// FilterRawInboundCap returns the "FilterRawInboundCap" bit.
func (b SwitchInfo) FilterRawInboundCap() bool {
	return b[siCapFlags]&siFilterRawInboundBit != 0
}

// SetFilterRawInboundCap sets the "FilterRawInboundCap" bit.
func (b SwitchInfo) SetFilterRawInboundCap(v bool) {
	setFlag(&b[siCapFlags], siFilterRawInboundBit, v)
}

// FilterRawOutboundCap returns the "FilterRawOutboundCap" bit.
func (b SwitchInfo) FilterRawOutboundCap() bool {
	return b[siCapFlags]&siFilterRawOutbound != 0
}

// SetFilterRawOutboundCap sets the "FilterRawOutboundCap" bit.
func (b SwitchInfo) SetFilterRawOutboundCap(v bool) {
	setFlag(&b[siCapFlags], siFilterRawOutbound, v)
}

// EnhancedPort0 returns the "EnhancedPort0" bit: port 0 supports the
// full port functions (its own LID, P_Key table, VL arbitration).
func (b SwitchInfo) EnhancedPort0() bool { return b[siCapFlags]&siEnhancedPort0Bit != 0 }

// SetEnhancedPort0 sets the "EnhancedPort0" bit.
func (b SwitchInfo) SetEnhancedPort0(v bool) { setFlag(&b[siCapFlags], siEnhancedPort0Bit, v) }

// MulticastFDBTop returns the "MulticastFDBTop" field.
func (b SwitchInfo) MulticastFDBTop() uint16 {
	return binary.BigEndian.Uint16(b[siMulticastFDBTop:])
}

// SetMulticastFDBTop sets the "MulticastFDBTop" field.
func (b SwitchInfo) SetMulticastFDBTop(v uint16) {
	binary.BigEndian.PutUint16(b[siMulticastFDBTop:], v)
}

// Encode writes f into b and zeroes its reserved bits.
func (b SwitchInfo) Encode(f *SwitchInfoFields) {
	b.SetLinearFDBCap(f.LinearFDBCap)
	b.SetRandomFDBCap(f.RandomFDBCap)
	b.SetMulticastFDBCap(f.MulticastFDBCap)
	b.SetLinearFDBTop(f.LinearFDBTop)
	b.SetDefaultPort(f.DefaultPort)
	b.SetDefaultMulticastPrimaryPort(f.DefaultMulticastPrimaryPort)
	b.SetDefaultMulticastNotPrimaryPort(f.DefaultMulticastNotPrimaryPort)
	b[siLifeTimeStateOptSL2VL] = 0
	b.SetLifeTimeValue(f.LifeTimeValue)
	b.SetPortStateChange(f.PortStateChange)
	b.SetOptimizedSLtoVLMappingProgramming(f.OptimizedSLtoVLMappingProgramming)
	b.SetLIDsPerPort(f.LIDsPerPort)
	b.SetPartitionEnforcementCap(f.PartitionEnforcementCap)
	b[siCapFlags], b[siCapFlags+1] = 0, 0
	b.SetInboundEnforcementCap(f.InboundEnforcementCap)
	b.SetOutboundEnforcementCap(f.OutboundEnforcementCap)
	b.SetFilterRawInboundCap(f.FilterRawInboundCap)
	b.SetFilterRawOutboundCap(f.FilterRawOutboundCap)
	b.SetEnhancedPort0(f.EnhancedPort0)
	b.SetMulticastFDBTop(f.MulticastFDBTop)
}

// Fields returns the fields of b.
func (b SwitchInfo) Fields() SwitchInfoFields {
	return SwitchInfoFields{
		LinearFDBCap:                      b.LinearFDBCap(),
		RandomFDBCap:                      b.RandomFDBCap(),
		MulticastFDBCap:                   b.MulticastFDBCap(),
		LinearFDBTop:                      b.LinearFDBTop(),
		DefaultPort:                       b.DefaultPort(),
		DefaultMulticastPrimaryPort:       b.DefaultMulticastPrimaryPort(),
		DefaultMulticastNotPrimaryPort:    b.DefaultMulticastNotPrimaryPort(),
		LifeTimeValue:                     b.LifeTimeValue(),
		PortStateChange:                   b.PortStateChange(),
		OptimizedSLtoVLMappingProgramming: b.OptimizedSLtoVLMappingProgramming(),
		LIDsPerPort:                       b.LIDsPerPort(),
		PartitionEnforcementCap:           b.PartitionEnforcementCap(),
		InboundEnforcementCap:             b.InboundEnforcementCap(),
		OutboundEnforcementCap:            b.OutboundEnforcementCap(),
		FilterRawInboundCap:               b.FilterRawInboundCap(),
		FilterRawOutboundCap:              b.FilterRawOutboundCap(),
		EnhancedPort0:                     b.EnhancedPort0(),
		MulticastFDBTop:                   b.MulticastFDBTop(),
	}
}

// AppendSwitchInfo appends a SwitchInfo built from f to dst.
func AppendSwitchInfo(dst []byte, f *SwitchInfoFields) []byte {
	dst, b := grow(dst, SwitchInfoSize)
	SwitchInfo(b).Encode(f)
	return dst
}

// DecodeSwitchInfo returns the SwitchInfo fields in b, or an error if b is
// too short.
func DecodeSwitchInfo(b []byte) (SwitchInfoFields, error) {
	if !SwitchInfo(b).IsValid() {
		return SwitchInfoFields{}, truncated("SwitchInfo", len(b), SwitchInfoSize)
	}
	return SwitchInfo(b).Fields(), nil
}

// setFlag sets or clears the bits of mask in *p.
func setFlag(p *byte, mask byte, v bool) {
	if v {
		*p |= mask
	} else {
		*p &^= mask
	}
}
