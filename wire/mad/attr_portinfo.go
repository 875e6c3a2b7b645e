package mad

import "encoding/binary"

// PortInfo attribute (IBA 14.2.5.6), 64 bytes of SMP data. Bit 0 is the
// least significant bit of a byte; multi-byte fields are big-endian.
//
//	byte  0 +---------------------------------------------------------------+
//	        |                         M_Key (64)                            |
//	      8 +---------------------------------------------------------------+
//	        |                       GIDPrefix (64)                          |
//	     16 +-------------------------------+-------------------------------+
//	        |            LID (16)           |        MasterSMLID (16)       |
//	     20 +-------------------------------+-------------------------------+
//	        |                     CapabilityMask (32)                       |
//	     24 +-------------------------------+-------------------------------+
//	        |          DiagCode (16)        |     M_KeyLeasePeriod (16)     |
//	     28 +---------------+---------------+---------------+---------------+
//	        | LocalPortNum  | LinkWidthEnab | LinkWidthSupp | LinkWidthActv |
//	     32 +-------+-------+-------+-------+---+-----+-----+-------+-------+
//	        |LSpSupp|PortSt |PhysSt |LDDefSt|MKP|rsvd |LMC  |LSpActv|LSpEnab|
//	     36 +-------+-------+-------+-------+---+-----+-----+-------+-------+
//	        |NbrMTU |MSM_SL | VLCap |InitTyp|  VLHighLimit  | VLArbHighCap  |
//	     40 +---------------+-------+-------+-----+---------+-------+-+-+-+-+
//	        | VLArbLowCap   |InitRep|MTUCap |VLStl| HOQLife |OperVLs|I|O|I|O|
//	     44 +---------------+-------+-------+-----+---------+-------+-+-+-+-+
//	        |      M_KeyViolations (16)     |      P_KeyViolations (16)     |
//	     48 +-------------------------------+---------------+-+---+---------+
//	        |      Q_KeyViolations (16)     |    GUIDCap    |C|MPT| SubnTO  |
//	     52 +-----+---------+-------+-------+---------------+-+---+---------+
//	        |rsvd |RespTime |LPhyErr|OvrnErr|      MaxCreditHint (16)       |
//	     56 +-----+---------+-------+-------+-------------------------------+
//	        |r|A2 |S2 |En2  |        LinkRoundTripLatency (24)              |
//	     60 +---------------+---------------+-------+-------+-----+---------+
//	        |     CapabilityMask2 (16)      |LSExtAc|LSExtSu|rsvd |LSExtEn  |
//	     64 +-------------------------------+-------+-------+-----+---------+
//
// Byte 43's low bits are PartitionEnforcementInbound/Outbound and
// FilterRawInbound/Outbound; byte 51's top bit is ClientReregister, then the
// 2-bit MulticastPKeyTrapSuppressionEnabled. Bytes 60-63 are the extended
// speed fields that IBA 1.2.1 left reserved (IBA 1.3); byte 56 below its
// top bit holds IBA 1.5's LinkSpeedExtActive2, LinkSpeedExtSupported2 (2
// bits each) and LinkSpeedExtEnabled2 (3 bits), where libibmad's field
// table puts them (bits 449-455).
const (
	piMKey              = 0
	piGIDPrefix         = 8
	piLID               = 16
	piMasterSMLID       = 18
	piCapabilityMask    = 20
	piDiagCode          = 24
	piMKeyLeasePeriod   = 26
	piLocalPortNum      = 28
	piLinkWidthEnabled  = 29
	piLinkWidthSupp     = 30
	piLinkWidthActive   = 31
	piSpeedSuppState    = 32 // LinkSpeedSupported, PortState
	piPhysDownDefault   = 33 // PortPhysicalState, LinkDownDefaultState
	piProtectLMC        = 34 // M_KeyProtectBits, LMC
	piSpeedActEnab      = 35 // LinkSpeedActive, LinkSpeedEnabled
	piMTUSMSL           = 36 // NeighborMTU, MasterSMSL
	piVLCapInit         = 37 // VLCap, InitType
	piVLHighLimit       = 38
	piVLArbHighCap      = 39
	piVLArbLowCap       = 40
	piInitReplyMTUCap   = 41 // InitTypeReply, MTUCap
	piStallHOQ          = 42 // VLStallCount, HOQLife
	piOpVLsFilters      = 43 // OperationalVLs, enforcement and filter bits
	piMKeyViolations    = 44
	piPKeyViolations    = 46
	piQKeyViolations    = 48
	piGUIDCap           = 50
	piReregTimeout      = 51 // ClientReregister, MPKeyTrapSuppr, SubnetTimeOut
	piRespTime          = 52
	piPhyOverrun        = 53 // LocalPhyErrors, OverrunErrors
	piMaxCreditHint     = 54
	piSpeedExt2         = 56 // LinkSpeedExtActive2, Supported2, Enabled2
	piRoundTrip         = 57 // 24 bits after the LinkSpeedExt2 byte
	piCapabilityMask2   = 60
	piSpeedExtActSupp   = 62 // LinkSpeedExtActive, LinkSpeedExtSupported
	piSpeedExtEnabled   = 63
	piHighNibbleShift   = 4
	piNibbleMask        = 0x0f
	piProtectShift      = 6
	piProtectMask       = 0x03
	piLMCMask           = 0x07
	piStallShift        = 5
	piStallMask         = 0x07
	piFiveBitMask       = 0x1f // HOQLife, SubnetTimeOut, RespTimeValue, LinkSpeedExtEnabled
	piPartEnfInBit      = 1 << 3
	piPartEnfOutBit     = 1 << 2
	piFilterRawInBit    = 1 << 1
	piFilterRawOutBit   = 1 << 0
	piClientReregBit    = 1 << 7
	piMPKeyTrapShift    = 5
	piMPKeyTrapMask     = 0x03
	piRoundTripMask     = 0xffffff
	piExt2ActiveShift   = 5
	piExt2SuppShift     = 3
	piExt2Mask          = 0x03
	piExt2EnabledMask   = 0x07
	piRoundTripWordBase = 56 // RoundTrip is read as the low 24 bits of this word
)

// PortInfoSize is the size of the PortInfo attribute in bytes.
const PortInfoSize = 64

// PortInfo is a view of the PortInfo attribute. Its methods index the slice
// directly: callers must check IsValid first.
type PortInfo []byte

// IsValid reports whether p is long enough to hold a PortInfo.
func (p PortInfo) IsValid() bool { return len(p) >= PortInfoSize }

// MKey returns the M_Key field.
func (p PortInfo) MKey() uint64 { return binary.BigEndian.Uint64(p[piMKey:]) }

// SetMKey sets the M_Key field.
func (p PortInfo) SetMKey(v uint64) { binary.BigEndian.PutUint64(p[piMKey:], v) }

// GIDPrefix returns the GIDPrefix (subnet prefix) field.
func (p PortInfo) GIDPrefix() uint64 { return binary.BigEndian.Uint64(p[piGIDPrefix:]) }

// SetGIDPrefix sets the GIDPrefix field.
func (p PortInfo) SetGIDPrefix(v uint64) { binary.BigEndian.PutUint64(p[piGIDPrefix:], v) }

// LID returns the LID field, the port's base LID.
func (p PortInfo) LID() uint16 { return binary.BigEndian.Uint16(p[piLID:]) }

// SetLID sets the LID field.
func (p PortInfo) SetLID(v uint16) { binary.BigEndian.PutUint16(p[piLID:], v) }

// MasterSMLID returns the MasterSMLID field, where traps are sent.
func (p PortInfo) MasterSMLID() uint16 { return binary.BigEndian.Uint16(p[piMasterSMLID:]) }

// SetMasterSMLID sets the MasterSMLID field.
func (p PortInfo) SetMasterSMLID(v uint16) { binary.BigEndian.PutUint16(p[piMasterSMLID:], v) }

// CapabilityMask returns the CapabilityMask field (PortCap* bits).
func (p PortInfo) CapabilityMask() uint32 { return binary.BigEndian.Uint32(p[piCapabilityMask:]) }

// SetCapabilityMask sets the CapabilityMask field.
func (p PortInfo) SetCapabilityMask(v uint32) {
	binary.BigEndian.PutUint32(p[piCapabilityMask:], v)
}

// DiagCode returns the DiagCode field.
func (p PortInfo) DiagCode() uint16 { return binary.BigEndian.Uint16(p[piDiagCode:]) }

// SetDiagCode sets the DiagCode field.
func (p PortInfo) SetDiagCode(v uint16) { binary.BigEndian.PutUint16(p[piDiagCode:], v) }

// MKeyLeasePeriod returns the M_KeyLeasePeriod field, in seconds.
func (p PortInfo) MKeyLeasePeriod() uint16 { return binary.BigEndian.Uint16(p[piMKeyLeasePeriod:]) }

// SetMKeyLeasePeriod sets the M_KeyLeasePeriod field.
func (p PortInfo) SetMKeyLeasePeriod(v uint16) {
	binary.BigEndian.PutUint16(p[piMKeyLeasePeriod:], v)
}

// LocalPortNum returns the LocalPortNum field: the port the SMP arrived on.
func (p PortInfo) LocalPortNum() uint8 { return p[piLocalPortNum] }

// SetLocalPortNum sets the LocalPortNum field.
func (p PortInfo) SetLocalPortNum(v uint8) { p[piLocalPortNum] = v }

// LinkWidthEnabled returns the LinkWidthEnabled field.
func (p PortInfo) LinkWidthEnabled() LinkWidth { return LinkWidth(p[piLinkWidthEnabled]) }

// SetLinkWidthEnabled sets the LinkWidthEnabled field.
func (p PortInfo) SetLinkWidthEnabled(v LinkWidth) { p[piLinkWidthEnabled] = uint8(v) }

// LinkWidthSupported returns the LinkWidthSupported field.
func (p PortInfo) LinkWidthSupported() LinkWidth { return LinkWidth(p[piLinkWidthSupp]) }

// SetLinkWidthSupported sets the LinkWidthSupported field.
func (p PortInfo) SetLinkWidthSupported(v LinkWidth) { p[piLinkWidthSupp] = uint8(v) }

// LinkWidthActive returns the LinkWidthActive field.
func (p PortInfo) LinkWidthActive() LinkWidth { return LinkWidth(p[piLinkWidthActive]) }

// SetLinkWidthActive sets the LinkWidthActive field.
func (p PortInfo) SetLinkWidthActive(v LinkWidth) { p[piLinkWidthActive] = uint8(v) }

// LinkSpeedSupported returns the 4-bit LinkSpeedSupported field.
func (p PortInfo) LinkSpeedSupported() LinkSpeed {
	return LinkSpeed(attrHiNibble(p[piSpeedSuppState]))
}

// SetLinkSpeedSupported sets the LinkSpeedSupported field.
func (p PortInfo) SetLinkSpeedSupported(v LinkSpeed) { attrSetHiNibble(p, piSpeedSuppState, uint8(v)) }

// PortState returns the 4-bit PortState field.
func (p PortInfo) PortState() PortState { return PortState(p[piSpeedSuppState] & piNibbleMask) }

// SetPortState sets the PortState field.
func (p PortInfo) SetPortState(v PortState) { attrSetLoNibble(p, piSpeedSuppState, uint8(v)) }

// PortPhysicalState returns the 4-bit PortPhysicalState field.
func (p PortInfo) PortPhysicalState() PhysState { return PhysState(attrHiNibble(p[piPhysDownDefault])) }

// SetPortPhysicalState sets the PortPhysicalState field.
func (p PortInfo) SetPortPhysicalState(v PhysState) {
	attrSetHiNibble(p, piPhysDownDefault, uint8(v))
}

// LinkDownDefaultState returns the 4-bit LinkDownDefaultState field, which
// uses the PhysState codes NoChange, Sleep and Polling.
func (p PortInfo) LinkDownDefaultState() PhysState {
	return PhysState(p[piPhysDownDefault] & piNibbleMask)
}

// SetLinkDownDefaultState sets the LinkDownDefaultState field.
func (p PortInfo) SetLinkDownDefaultState(v PhysState) {
	attrSetLoNibble(p, piPhysDownDefault, uint8(v))
}

// MKeyProtectBits returns the 2-bit M_KeyProtectBits field.
func (p PortInfo) MKeyProtectBits() uint8 {
	return p[piProtectLMC] >> piProtectShift & piProtectMask
}

// SetMKeyProtectBits sets the M_KeyProtectBits field from v's low 2 bits.
func (p PortInfo) SetMKeyProtectBits(v uint8) {
	attrSetBits(p, piProtectLMC, piProtectShift, piProtectMask, v)
}

// LMC returns the 3-bit LID mask control field.
func (p PortInfo) LMC() uint8 { return p[piProtectLMC] & piLMCMask }

// SetLMC sets the LMC field from v's low 3 bits.
func (p PortInfo) SetLMC(v uint8) { attrSetBits(p, piProtectLMC, 0, piLMCMask, v) }

// LinkSpeedActive returns the 4-bit LinkSpeedActive field.
func (p PortInfo) LinkSpeedActive() LinkSpeed { return LinkSpeed(attrHiNibble(p[piSpeedActEnab])) }

// SetLinkSpeedActive sets the LinkSpeedActive field.
func (p PortInfo) SetLinkSpeedActive(v LinkSpeed) { attrSetHiNibble(p, piSpeedActEnab, uint8(v)) }

// LinkSpeedEnabled returns the 4-bit LinkSpeedEnabled field.
func (p PortInfo) LinkSpeedEnabled() LinkSpeed {
	return LinkSpeed(p[piSpeedActEnab] & piNibbleMask)
}

// SetLinkSpeedEnabled sets the LinkSpeedEnabled field.
func (p PortInfo) SetLinkSpeedEnabled(v LinkSpeed) { attrSetLoNibble(p, piSpeedActEnab, uint8(v)) }

// NeighborMTU returns the 4-bit NeighborMTU field, the active MTU.
func (p PortInfo) NeighborMTU() MTU { return MTU(attrHiNibble(p[piMTUSMSL])) }

// SetNeighborMTU sets the NeighborMTU field.
func (p PortInfo) SetNeighborMTU(v MTU) { attrSetHiNibble(p, piMTUSMSL, uint8(v)) }

// MasterSMSL returns the 4-bit MasterSMSL field, the SL for traps to the SM.
func (p PortInfo) MasterSMSL() uint8 { return p[piMTUSMSL] & piNibbleMask }

// SetMasterSMSL sets the MasterSMSL field.
func (p PortInfo) SetMasterSMSL(v uint8) { attrSetLoNibble(p, piMTUSMSL, v) }

// VLCap returns the 4-bit VLCap field (a VL-count code, see NumDataVLs).
func (p PortInfo) VLCap() uint8 { return attrHiNibble(p[piVLCapInit]) }

// SetVLCap sets the VLCap field.
func (p PortInfo) SetVLCap(v uint8) { attrSetHiNibble(p, piVLCapInit, v) }

// InitType returns the 4-bit InitType field.
func (p PortInfo) InitType() uint8 { return p[piVLCapInit] & piNibbleMask }

// SetInitType sets the InitType field.
func (p PortInfo) SetInitType(v uint8) { attrSetLoNibble(p, piVLCapInit, v) }

// VLHighLimit returns the VLHighLimit field, the high-priority budget in
// 4096-byte units.
func (p PortInfo) VLHighLimit() uint8 { return p[piVLHighLimit] }

// SetVLHighLimit sets the VLHighLimit field.
func (p PortInfo) SetVLHighLimit(v uint8) { p[piVLHighLimit] = v }

// VLArbitrationHighCap returns the VLArbitrationHighCap field: how many
// high-priority arbitration entries the port has.
func (p PortInfo) VLArbitrationHighCap() uint8 { return p[piVLArbHighCap] }

// SetVLArbitrationHighCap sets the VLArbitrationHighCap field.
func (p PortInfo) SetVLArbitrationHighCap(v uint8) { p[piVLArbHighCap] = v }

// VLArbitrationLowCap returns the VLArbitrationLowCap field.
func (p PortInfo) VLArbitrationLowCap() uint8 { return p[piVLArbLowCap] }

// SetVLArbitrationLowCap sets the VLArbitrationLowCap field.
func (p PortInfo) SetVLArbitrationLowCap(v uint8) { p[piVLArbLowCap] = v }

// InitTypeReply returns the 4-bit InitTypeReply field.
func (p PortInfo) InitTypeReply() uint8 { return attrHiNibble(p[piInitReplyMTUCap]) }

// SetInitTypeReply sets the InitTypeReply field.
func (p PortInfo) SetInitTypeReply(v uint8) { attrSetHiNibble(p, piInitReplyMTUCap, v) }

// MTUCap returns the 4-bit MTUCap field, the largest MTU the port supports.
func (p PortInfo) MTUCap() MTU { return MTU(p[piInitReplyMTUCap] & piNibbleMask) }

// SetMTUCap sets the MTUCap field.
func (p PortInfo) SetMTUCap(v MTU) { attrSetLoNibble(p, piInitReplyMTUCap, uint8(v)) }

// VLStallCount returns the 3-bit VLStallCount field.
func (p PortInfo) VLStallCount() uint8 { return p[piStallHOQ] >> piStallShift & piStallMask }

// SetVLStallCount sets the VLStallCount field from v's low 3 bits.
func (p PortInfo) SetVLStallCount(v uint8) {
	attrSetBits(p, piStallHOQ, piStallShift, piStallMask, v)
}

// HOQLife returns the 5-bit HOQLife field (head-of-queue lifetime code).
func (p PortInfo) HOQLife() uint8 { return p[piStallHOQ] & piFiveBitMask }

// SetHOQLife sets the HOQLife field from v's low 5 bits.
func (p PortInfo) SetHOQLife(v uint8) { attrSetBits(p, piStallHOQ, 0, piFiveBitMask, v) }

// OperationalVLs returns the 4-bit OperationalVLs field (a VL-count code).
func (p PortInfo) OperationalVLs() uint8 { return attrHiNibble(p[piOpVLsFilters]) }

// SetOperationalVLs sets the OperationalVLs field.
func (p PortInfo) SetOperationalVLs(v uint8) { attrSetHiNibble(p, piOpVLsFilters, v) }

// PartitionEnforcementInbound returns the PartitionEnforcementInbound bit.
func (p PortInfo) PartitionEnforcementInbound() bool {
	return p[piOpVLsFilters]&piPartEnfInBit != 0
}

// SetPartitionEnforcementInbound sets the PartitionEnforcementInbound bit.
func (p PortInfo) SetPartitionEnforcementInbound(v bool) {
	attrSetFlag(p, piOpVLsFilters, piPartEnfInBit, v)
}

// PartitionEnforcementOutbound returns the PartitionEnforcementOutbound bit.
func (p PortInfo) PartitionEnforcementOutbound() bool {
	return p[piOpVLsFilters]&piPartEnfOutBit != 0
}

// SetPartitionEnforcementOutbound sets the PartitionEnforcementOutbound bit.
func (p PortInfo) SetPartitionEnforcementOutbound(v bool) {
	attrSetFlag(p, piOpVLsFilters, piPartEnfOutBit, v)
}

// FilterRawInbound returns the FilterRawInbound bit.
func (p PortInfo) FilterRawInbound() bool { return p[piOpVLsFilters]&piFilterRawInBit != 0 }

// SetFilterRawInbound sets the FilterRawInbound bit.
func (p PortInfo) SetFilterRawInbound(v bool) { attrSetFlag(p, piOpVLsFilters, piFilterRawInBit, v) }

// FilterRawOutbound returns the FilterRawOutbound bit.
func (p PortInfo) FilterRawOutbound() bool { return p[piOpVLsFilters]&piFilterRawOutBit != 0 }

// SetFilterRawOutbound sets the FilterRawOutbound bit.
func (p PortInfo) SetFilterRawOutbound(v bool) {
	attrSetFlag(p, piOpVLsFilters, piFilterRawOutBit, v)
}

// MKeyViolations returns the M_KeyViolations counter.
func (p PortInfo) MKeyViolations() uint16 { return binary.BigEndian.Uint16(p[piMKeyViolations:]) }

// SetMKeyViolations sets the M_KeyViolations counter.
func (p PortInfo) SetMKeyViolations(v uint16) {
	binary.BigEndian.PutUint16(p[piMKeyViolations:], v)
}

// PKeyViolations returns the P_KeyViolations counter.
func (p PortInfo) PKeyViolations() uint16 { return binary.BigEndian.Uint16(p[piPKeyViolations:]) }

// SetPKeyViolations sets the P_KeyViolations counter.
func (p PortInfo) SetPKeyViolations(v uint16) {
	binary.BigEndian.PutUint16(p[piPKeyViolations:], v)
}

// QKeyViolations returns the Q_KeyViolations counter.
func (p PortInfo) QKeyViolations() uint16 { return binary.BigEndian.Uint16(p[piQKeyViolations:]) }

// SetQKeyViolations sets the Q_KeyViolations counter.
func (p PortInfo) SetQKeyViolations(v uint16) {
	binary.BigEndian.PutUint16(p[piQKeyViolations:], v)
}

// GUIDCap returns the GUIDCap field: the GUIDInfo table size.
func (p PortInfo) GUIDCap() uint8 { return p[piGUIDCap] }

// SetGUIDCap sets the GUIDCap field.
func (p PortInfo) SetGUIDCap(v uint8) { p[piGUIDCap] = v }

// ClientReregister returns the ClientReregister bit.
func (p PortInfo) ClientReregister() bool { return p[piReregTimeout]&piClientReregBit != 0 }

// SetClientReregister sets the ClientReregister bit.
func (p PortInfo) SetClientReregister(v bool) { attrSetFlag(p, piReregTimeout, piClientReregBit, v) }

// MulticastPKeyTrapSuppressionEnabled returns the 2-bit
// MulticastPKeyTrapSuppressionEnabled field.
func (p PortInfo) MulticastPKeyTrapSuppressionEnabled() uint8 {
	return p[piReregTimeout] >> piMPKeyTrapShift & piMPKeyTrapMask
}

// SetMulticastPKeyTrapSuppressionEnabled sets the
// MulticastPKeyTrapSuppressionEnabled field from v's low 2 bits.
func (p PortInfo) SetMulticastPKeyTrapSuppressionEnabled(v uint8) {
	attrSetBits(p, piReregTimeout, piMPKeyTrapShift, piMPKeyTrapMask, v)
}

// SubnetTimeOut returns the 5-bit SubnetTimeOut field (4.096 µs × 2^v).
func (p PortInfo) SubnetTimeOut() uint8 { return p[piReregTimeout] & piFiveBitMask }

// SetSubnetTimeOut sets the SubnetTimeOut field from v's low 5 bits.
func (p PortInfo) SetSubnetTimeOut(v uint8) { attrSetBits(p, piReregTimeout, 0, piFiveBitMask, v) }

// RespTimeValue returns the 5-bit RespTimeValue field (4.096 µs × 2^v).
func (p PortInfo) RespTimeValue() uint8 { return p[piRespTime] & piFiveBitMask }

// SetRespTimeValue sets the RespTimeValue field from v's low 5 bits.
func (p PortInfo) SetRespTimeValue(v uint8) { attrSetBits(p, piRespTime, 0, piFiveBitMask, v) }

// LocalPhyErrors returns the 4-bit LocalPhyErrors threshold.
func (p PortInfo) LocalPhyErrors() uint8 { return attrHiNibble(p[piPhyOverrun]) }

// SetLocalPhyErrors sets the LocalPhyErrors threshold.
func (p PortInfo) SetLocalPhyErrors(v uint8) { attrSetHiNibble(p, piPhyOverrun, v) }

// OverrunErrors returns the 4-bit OverrunErrors threshold.
func (p PortInfo) OverrunErrors() uint8 { return p[piPhyOverrun] & piNibbleMask }

// SetOverrunErrors sets the OverrunErrors threshold.
func (p PortInfo) SetOverrunErrors(v uint8) { attrSetLoNibble(p, piPhyOverrun, v) }

// MaxCreditHint returns the MaxCreditHint field, in 64-byte credits.
func (p PortInfo) MaxCreditHint() uint16 { return binary.BigEndian.Uint16(p[piMaxCreditHint:]) }

// SetMaxCreditHint sets the MaxCreditHint field.
func (p PortInfo) SetMaxCreditHint(v uint16) {
	binary.BigEndian.PutUint16(p[piMaxCreditHint:], v)
}

// LinkRoundTripLatency returns the 24-bit LinkRoundTripLatency field, in ns.
func (p PortInfo) LinkRoundTripLatency() uint32 {
	return binary.BigEndian.Uint32(p[piRoundTripWordBase:]) & piRoundTripMask
}

// SetLinkRoundTripLatency sets the LinkRoundTripLatency field from v's low
// 24 bits.
func (p PortInfo) SetLinkRoundTripLatency(v uint32) {
	p[piRoundTrip], p[piRoundTrip+1], p[piRoundTrip+2] = byte(v>>16), byte(v>>8), byte(v)
}

// CapabilityMask2 returns the CapabilityMask2 field.
func (p PortInfo) CapabilityMask2() uint16 {
	return binary.BigEndian.Uint16(p[piCapabilityMask2:])
}

// SetCapabilityMask2 sets the CapabilityMask2 field.
func (p PortInfo) SetCapabilityMask2(v uint16) {
	binary.BigEndian.PutUint16(p[piCapabilityMask2:], v)
}

// LinkSpeedExtActive returns the 4-bit LinkSpeedExtActive field.
func (p PortInfo) LinkSpeedExtActive() LinkSpeedExt {
	return LinkSpeedExt(attrHiNibble(p[piSpeedExtActSupp]))
}

// SetLinkSpeedExtActive sets the LinkSpeedExtActive field.
func (p PortInfo) SetLinkSpeedExtActive(v LinkSpeedExt) {
	attrSetHiNibble(p, piSpeedExtActSupp, uint8(v))
}

// LinkSpeedExtSupported returns the 4-bit LinkSpeedExtSupported field.
func (p PortInfo) LinkSpeedExtSupported() LinkSpeedExt {
	return LinkSpeedExt(p[piSpeedExtActSupp] & piNibbleMask)
}

// SetLinkSpeedExtSupported sets the LinkSpeedExtSupported field.
func (p PortInfo) SetLinkSpeedExtSupported(v LinkSpeedExt) {
	attrSetLoNibble(p, piSpeedExtActSupp, uint8(v))
}

// LinkSpeedExtEnabled returns the 5-bit LinkSpeedExtEnabled field.
func (p PortInfo) LinkSpeedExtEnabled() LinkSpeedExt {
	return LinkSpeedExt(p[piSpeedExtEnabled] & piFiveBitMask)
}

// SetLinkSpeedExtEnabled sets the LinkSpeedExtEnabled field from v's low 5
// bits.
func (p PortInfo) SetLinkSpeedExtEnabled(v LinkSpeedExt) {
	attrSetBits(p, piSpeedExtEnabled, 0, piFiveBitMask, uint8(v))
}

// LinkSpeedExtActive2 returns the 2-bit LinkSpeedExtActive2 field.
func (p PortInfo) LinkSpeedExtActive2() LinkSpeedExt2 {
	return LinkSpeedExt2(p[piSpeedExt2] >> piExt2ActiveShift & piExt2Mask)
}

// SetLinkSpeedExtActive2 sets the LinkSpeedExtActive2 field from v's low 2
// bits.
func (p PortInfo) SetLinkSpeedExtActive2(v LinkSpeedExt2) {
	attrSetBits(p, piSpeedExt2, piExt2ActiveShift, piExt2Mask, uint8(v))
}

// LinkSpeedExtSupported2 returns the 2-bit LinkSpeedExtSupported2 field.
func (p PortInfo) LinkSpeedExtSupported2() LinkSpeedExt2 {
	return LinkSpeedExt2(p[piSpeedExt2] >> piExt2SuppShift & piExt2Mask)
}

// SetLinkSpeedExtSupported2 sets the LinkSpeedExtSupported2 field from v's
// low 2 bits.
func (p PortInfo) SetLinkSpeedExtSupported2(v LinkSpeedExt2) {
	attrSetBits(p, piSpeedExt2, piExt2SuppShift, piExt2Mask, uint8(v))
}

// LinkSpeedExtEnabled2 returns the 3-bit LinkSpeedExtEnabled2 field.
func (p PortInfo) LinkSpeedExtEnabled2() LinkSpeedExt2 {
	return LinkSpeedExt2(p[piSpeedExt2] & piExt2EnabledMask)
}

// SetLinkSpeedExtEnabled2 sets the LinkSpeedExtEnabled2 field from v's low
// 3 bits.
func (p PortInfo) SetLinkSpeedExtEnabled2(v LinkSpeedExt2) {
	attrSetBits(p, piSpeedExt2, 0, piExt2EnabledMask, uint8(v))
}

// SpeedsSupported returns every speed the port supports in one mask:
// LinkSpeedSupported, LinkSpeedExtSupported and LinkSpeedExtSupported2.
func (p PortInfo) SpeedsSupported() LinkSpeed {
	return JoinSpeeds(p.LinkSpeedSupported(), p.LinkSpeedExtSupported(), p.LinkSpeedExtSupported2())
}

// SpeedActive returns the speed the link is active at: the extended-2
// speed when one is, else the extended one, else LinkSpeedActive (a port
// at an extended speed keeps a legacy LinkSpeedActive, as silicon does,
// and readers prefer the extended fields, as OpenSM and libibnetdisc do).
func (p PortInfo) SpeedActive() LinkSpeed {
	return activeSpeed(p.LinkSpeedActive(), p.LinkSpeedExtActive(), p.LinkSpeedExtActive2())
}

// activeSpeed is SpeedActive of the three active fields.
func activeSpeed(l LinkSpeed, e LinkSpeedExt, e2 LinkSpeedExt2) LinkSpeed {
	switch {
	case e2 != 0:
		return JoinSpeeds(0, 0, e2)
	case e != 0:
		return JoinSpeeds(0, e, 0)
	}
	return l
}
