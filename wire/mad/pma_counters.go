package mad

// PortCounters attribute (IBA 16.1.3.5), at the start of the 192-byte PMA
// data. Error counters stop at their largest value rather than wrap (see
// SatAdd); the data counters count 4-octet words.
//
//	byte  0 +---------------+---------------+-------------------------------+
//	        |   reserved    |  PortSelect   |        CounterSelect          |
//	      4 +---------------+---------------+---------------+---------------+
//	        |    SymbolErrorCounter (16)    | LinkErrRecov  |  LinkDowned   |
//	      8 +-------------------------------+---------------+---------------+
//	        |       PortRcvErrors (16)      | PortRcvRemotePhysicalErrors   |
//	     12 +-------------------------------+-------------------------------+
//	        |   PortRcvSwitchRelayErrors    |     PortXmitDiscards (16)     |
//	     16 +---------------+---------------+---------------+-------+-------+
//	        | XmitConstrErr | RcvConstrErr  | CounterSelect2| LLIE  | EBOE  |
//	     20 +---------------+---------------+---------------+-------+-------+
//	        |           reserved            |        VL15Dropped (16)       |
//	     24 +-------------------------------+-------------------------------+
//	        |                       PortXmitData (32)                       |
//	     28 +---------------------------------------------------------------+
//	        |                       PortRcvData (32)                        |
//	     32 +---------------------------------------------------------------+
//	        |                       PortXmitPkts (32)                       |
//	     36 +---------------------------------------------------------------+
//	        |                       PortRcvPkts (32)                        |
//	     40 +---------------------------------------------------------------+
//	        |                       PortXmitWait (32)                       |
//	     44 +---------------------------------------------------------------+
//
// LLIE is LocalLinkIntegrityErrors, EBOE ExcessiveBufferOverrunErrors, both
// 4 bits.
const (
	pcPortSelect         = 1
	pcCounterSelect      = 2
	pcSymbolError        = 4
	pcLinkErrorRecovery  = 6
	pcLinkDowned         = 7
	pcRcvErrors          = 8
	pcRcvRemotePhysErr   = 10
	pcRcvSwitchRelayErr  = 12
	pcXmitDiscards       = 14
	pcXmitConstraintErr  = 16
	pcRcvConstraintErr   = 17
	pcCounterSelect2     = 18
	pcLLIEBOE            = 19
	pcVL15Dropped        = 22
	pcXmitData           = 24
	pcRcvData            = 28
	pcXmitPkts           = 32
	pcRcvPkts            = 36
	pcXmitWait           = 40
	pcNibbleShift        = 4
	pcNibbleMask         = 0x0f
	pcExtPortSelect      = 1
	pcExtCounterSelect   = 2
	pcExtXmitData        = 8
	pcExtRcvData         = 16
	pcExtXmitPkts        = 24
	pcExtRcvPkts         = 32
	pcExtUnicastXmitPkts = 40
	pcExtUnicastRcvPkts  = 48
	pcExtMcastXmitPkts   = 56
	pcExtMcastRcvPkts    = 64
)

// Sizes of the counter attributes: the bytes they use of the PMA data.
const (
	PortCountersSize         = 44
	PortCountersExtendedSize = 72
)

// PortSelectAll in PortSelect asks for the sum over all ports (IBA
// 16.1.3.5), where the PMA supports it.
const PortSelectAll = 0xff

// CounterSelect bits of PortCounters: in a Set, the counters to reset.
const (
	PCSelSymbolError uint16 = 1 << iota
	PCSelLinkErrorRecovery
	PCSelLinkDowned
	PCSelRcvErrors
	PCSelRcvRemotePhysicalErrors
	PCSelRcvSwitchRelayErrors
	PCSelXmitDiscards
	PCSelXmitConstraintErrors
	PCSelRcvConstraintErrors
	PCSelLocalLinkIntegrityErrors
	PCSelExcessiveBufferOverrunErrors
	PCSelVL15Dropped
	PCSelXmitData
	PCSelRcvData
	PCSelXmitPkts
	PCSelRcvPkts
)

// PCSel2XmitWait is the CounterSelect2 bit that resets PortXmitWait.
const PCSel2XmitWait uint8 = 1 << 0

// CounterSelect bits of PortCountersExtended.
const (
	PCExtSelXmitData uint16 = 1 << iota
	PCExtSelRcvData
	PCExtSelXmitPkts
	PCExtSelRcvPkts
	PCExtSelUnicastXmitPkts
	PCExtSelUnicastRcvPkts
	PCExtSelMulticastXmitPkts
	PCExtSelMulticastRcvPkts
)

// SatAdd returns v+n, or the largest value of T when the sum does not fit:
// PMA counters stick at all ones instead of wrapping (IBA 16.1.3.5).
func SatAdd[T uint8 | uint16 | uint32 | uint64](v T, n uint64) T {
	limit := ^T(0)
	if n >= uint64(limit-v) {
		return limit
	}
	return v + T(n)
}

// SatAdd4 is SatAdd for the 4-bit counters LocalLinkIntegrityErrors and
// ExcessiveBufferOverrunErrors, which stop at 15.
func SatAdd4(v uint8, n uint64) uint8 {
	const limit = 0x0f
	if v >= limit || n >= uint64(limit-v) {
		return limit
	}
	return v + uint8(n)
}

// PortCounters is a view of the PortCounters attribute. Its methods index
// the slice directly: callers must check IsValid first.
type PortCounters []byte

// IsValid reports whether c is long enough to hold PortCounters.
func (c PortCounters) IsValid() bool { return len(c) >= PortCountersSize }

// PortSelect returns the PortSelect field.
func (c PortCounters) PortSelect() uint8 { return c[pcPortSelect] }

// SetPortSelect sets the PortSelect field.
func (c PortCounters) SetPortSelect(v uint8) { c[pcPortSelect] = v }

// CounterSelect returns the CounterSelect field (PCSel* bits).
func (c PortCounters) CounterSelect() uint16 { return attrBE16(c, pcCounterSelect) }

// SetCounterSelect sets the CounterSelect field.
func (c PortCounters) SetCounterSelect(v uint16) { attrPut16(c, pcCounterSelect, v) }

// SymbolErrorCounter returns the SymbolErrorCounter field.
func (c PortCounters) SymbolErrorCounter() uint16 { return attrBE16(c, pcSymbolError) }

// SetSymbolErrorCounter sets the SymbolErrorCounter field.
func (c PortCounters) SetSymbolErrorCounter(v uint16) { attrPut16(c, pcSymbolError, v) }

// LinkErrorRecoveryCounter returns the LinkErrorRecoveryCounter field.
func (c PortCounters) LinkErrorRecoveryCounter() uint8 { return c[pcLinkErrorRecovery] }

// SetLinkErrorRecoveryCounter sets the LinkErrorRecoveryCounter field.
func (c PortCounters) SetLinkErrorRecoveryCounter(v uint8) { c[pcLinkErrorRecovery] = v }

// LinkDownedCounter returns the LinkDownedCounter field.
func (c PortCounters) LinkDownedCounter() uint8 { return c[pcLinkDowned] }

// SetLinkDownedCounter sets the LinkDownedCounter field.
func (c PortCounters) SetLinkDownedCounter(v uint8) { c[pcLinkDowned] = v }

// PortRcvErrors returns the PortRcvErrors field.
func (c PortCounters) PortRcvErrors() uint16 { return attrBE16(c, pcRcvErrors) }

// SetPortRcvErrors sets the PortRcvErrors field.
func (c PortCounters) SetPortRcvErrors(v uint16) { attrPut16(c, pcRcvErrors, v) }

// PortRcvRemotePhysicalErrors returns the PortRcvRemotePhysicalErrors field.
func (c PortCounters) PortRcvRemotePhysicalErrors() uint16 { return attrBE16(c, pcRcvRemotePhysErr) }

// SetPortRcvRemotePhysicalErrors sets the PortRcvRemotePhysicalErrors field.
func (c PortCounters) SetPortRcvRemotePhysicalErrors(v uint16) {
	attrPut16(c, pcRcvRemotePhysErr, v)
}

// PortRcvSwitchRelayErrors returns the PortRcvSwitchRelayErrors field.
func (c PortCounters) PortRcvSwitchRelayErrors() uint16 { return attrBE16(c, pcRcvSwitchRelayErr) }

// SetPortRcvSwitchRelayErrors sets the PortRcvSwitchRelayErrors field.
func (c PortCounters) SetPortRcvSwitchRelayErrors(v uint16) { attrPut16(c, pcRcvSwitchRelayErr, v) }

// PortXmitDiscards returns the PortXmitDiscards field.
func (c PortCounters) PortXmitDiscards() uint16 { return attrBE16(c, pcXmitDiscards) }

// SetPortXmitDiscards sets the PortXmitDiscards field.
func (c PortCounters) SetPortXmitDiscards(v uint16) { attrPut16(c, pcXmitDiscards, v) }

// PortXmitConstraintErrors returns the PortXmitConstraintErrors field.
func (c PortCounters) PortXmitConstraintErrors() uint8 { return c[pcXmitConstraintErr] }

// SetPortXmitConstraintErrors sets the PortXmitConstraintErrors field.
func (c PortCounters) SetPortXmitConstraintErrors(v uint8) { c[pcXmitConstraintErr] = v }

// PortRcvConstraintErrors returns the PortRcvConstraintErrors field.
func (c PortCounters) PortRcvConstraintErrors() uint8 { return c[pcRcvConstraintErr] }

// SetPortRcvConstraintErrors sets the PortRcvConstraintErrors field.
func (c PortCounters) SetPortRcvConstraintErrors(v uint8) { c[pcRcvConstraintErr] = v }

// CounterSelect2 returns the CounterSelect2 field (PCSel2* bits).
func (c PortCounters) CounterSelect2() uint8 { return c[pcCounterSelect2] }

// SetCounterSelect2 sets the CounterSelect2 field.
func (c PortCounters) SetCounterSelect2(v uint8) { c[pcCounterSelect2] = v }

// LocalLinkIntegrityErrors returns the 4-bit LocalLinkIntegrityErrors field.
func (c PortCounters) LocalLinkIntegrityErrors() uint8 { return c[pcLLIEBOE] >> pcNibbleShift }

// SetLocalLinkIntegrityErrors sets LocalLinkIntegrityErrors from v's low 4
// bits.
func (c PortCounters) SetLocalLinkIntegrityErrors(v uint8) {
	attrSetBits(c, pcLLIEBOE, pcNibbleShift, pcNibbleMask, v)
}

// ExcessiveBufferOverrunErrors returns the 4-bit
// ExcessiveBufferOverrunErrors field.
func (c PortCounters) ExcessiveBufferOverrunErrors() uint8 { return c[pcLLIEBOE] & pcNibbleMask }

// SetExcessiveBufferOverrunErrors sets ExcessiveBufferOverrunErrors from
// v's low 4 bits.
func (c PortCounters) SetExcessiveBufferOverrunErrors(v uint8) {
	attrSetBits(c, pcLLIEBOE, 0, pcNibbleMask, v)
}

// VL15Dropped returns the VL15Dropped field.
func (c PortCounters) VL15Dropped() uint16 { return attrBE16(c, pcVL15Dropped) }

// SetVL15Dropped sets the VL15Dropped field.
func (c PortCounters) SetVL15Dropped(v uint16) { attrPut16(c, pcVL15Dropped, v) }

// PortXmitData returns the PortXmitData field, in 4-octet words.
func (c PortCounters) PortXmitData() uint32 { return attrBE32(c, pcXmitData) }

// SetPortXmitData sets the PortXmitData field.
func (c PortCounters) SetPortXmitData(v uint32) { attrPut32(c, pcXmitData, v) }

// PortRcvData returns the PortRcvData field, in 4-octet words.
func (c PortCounters) PortRcvData() uint32 { return attrBE32(c, pcRcvData) }

// SetPortRcvData sets the PortRcvData field.
func (c PortCounters) SetPortRcvData(v uint32) { attrPut32(c, pcRcvData, v) }

// PortXmitPkts returns the PortXmitPkts field.
func (c PortCounters) PortXmitPkts() uint32 { return attrBE32(c, pcXmitPkts) }

// SetPortXmitPkts sets the PortXmitPkts field.
func (c PortCounters) SetPortXmitPkts(v uint32) { attrPut32(c, pcXmitPkts, v) }

// PortRcvPkts returns the PortRcvPkts field.
func (c PortCounters) PortRcvPkts() uint32 { return attrBE32(c, pcRcvPkts) }

// SetPortRcvPkts sets the PortRcvPkts field.
func (c PortCounters) SetPortRcvPkts(v uint32) { attrPut32(c, pcRcvPkts, v) }

// PortXmitWait returns the PortXmitWait field: ticks during which data was
// ready but the port could not send for lack of credits or arbitration.
func (c PortCounters) PortXmitWait() uint32 { return attrBE32(c, pcXmitWait) }

// SetPortXmitWait sets the PortXmitWait field.
func (c PortCounters) SetPortXmitWait(v uint32) { attrPut32(c, pcXmitWait, v) }

// PortCountersFields holds every PortCounters field. A PMA can keep its
// counters in one and bump them with SatAdd.
type PortCountersFields struct {
	PortSelect                   uint8
	CounterSelect                uint16
	SymbolErrorCounter           uint16
	LinkErrorRecoveryCounter     uint8
	LinkDownedCounter            uint8
	PortRcvErrors                uint16
	PortRcvRemotePhysicalErrors  uint16
	PortRcvSwitchRelayErrors     uint16
	PortXmitDiscards             uint16
	PortXmitConstraintErrors     uint8
	PortRcvConstraintErrors      uint8
	CounterSelect2               uint8
	LocalLinkIntegrityErrors     uint8 // 4 bits
	ExcessiveBufferOverrunErrors uint8 // 4 bits
	VL15Dropped                  uint16
	PortXmitData                 uint32
	PortRcvData                  uint32
	PortXmitPkts                 uint32
	PortRcvPkts                  uint32
	PortXmitWait                 uint32
}

// Reset zeroes the counters that sel (PCSel* bits) and sel2 (PCSel2* bits)
// select, as a PMA does on Set(PortCounters).
func (f *PortCountersFields) Reset(sel uint16, sel2 uint8) {
	counters := []struct {
		bit  uint16
		zero func()
	}{
		{PCSelSymbolError, func() { f.SymbolErrorCounter = 0 }},
		{PCSelLinkErrorRecovery, func() { f.LinkErrorRecoveryCounter = 0 }},
		{PCSelLinkDowned, func() { f.LinkDownedCounter = 0 }},
		{PCSelRcvErrors, func() { f.PortRcvErrors = 0 }},
		{PCSelRcvRemotePhysicalErrors, func() { f.PortRcvRemotePhysicalErrors = 0 }},
		{PCSelRcvSwitchRelayErrors, func() { f.PortRcvSwitchRelayErrors = 0 }},
		{PCSelXmitDiscards, func() { f.PortXmitDiscards = 0 }},
		{PCSelXmitConstraintErrors, func() { f.PortXmitConstraintErrors = 0 }},
		{PCSelRcvConstraintErrors, func() { f.PortRcvConstraintErrors = 0 }},
		{PCSelLocalLinkIntegrityErrors, func() { f.LocalLinkIntegrityErrors = 0 }},
		{PCSelExcessiveBufferOverrunErrors, func() { f.ExcessiveBufferOverrunErrors = 0 }},
		{PCSelVL15Dropped, func() { f.VL15Dropped = 0 }},
		{PCSelXmitData, func() { f.PortXmitData = 0 }},
		{PCSelRcvData, func() { f.PortRcvData = 0 }},
		{PCSelXmitPkts, func() { f.PortXmitPkts = 0 }},
		{PCSelRcvPkts, func() { f.PortRcvPkts = 0 }},
	}
	for _, c := range counters {
		if sel&c.bit != 0 {
			c.zero()
		}
	}
	if sel2&PCSel2XmitWait != 0 {
		f.PortXmitWait = 0
	}
}

// Encode writes f into c[:PortCountersSize], reserved bytes zero. c must be
// valid.
func (c PortCounters) Encode(f *PortCountersFields) {
	clear(c[:PortCountersSize])
	c.SetPortSelect(f.PortSelect)
	c.SetCounterSelect(f.CounterSelect)
	c.SetSymbolErrorCounter(f.SymbolErrorCounter)
	c.SetLinkErrorRecoveryCounter(f.LinkErrorRecoveryCounter)
	c.SetLinkDownedCounter(f.LinkDownedCounter)
	c.SetPortRcvErrors(f.PortRcvErrors)
	c.SetPortRcvRemotePhysicalErrors(f.PortRcvRemotePhysicalErrors)
	c.SetPortRcvSwitchRelayErrors(f.PortRcvSwitchRelayErrors)
	c.SetPortXmitDiscards(f.PortXmitDiscards)
	c.SetPortXmitConstraintErrors(f.PortXmitConstraintErrors)
	c.SetPortRcvConstraintErrors(f.PortRcvConstraintErrors)
	c.SetCounterSelect2(f.CounterSelect2)
	c.SetLocalLinkIntegrityErrors(f.LocalLinkIntegrityErrors)
	c.SetExcessiveBufferOverrunErrors(f.ExcessiveBufferOverrunErrors)
	c.SetVL15Dropped(f.VL15Dropped)
	c.SetPortXmitData(f.PortXmitData)
	c.SetPortRcvData(f.PortRcvData)
	c.SetPortXmitPkts(f.PortXmitPkts)
	c.SetPortRcvPkts(f.PortRcvPkts)
	c.SetPortXmitWait(f.PortXmitWait)
}

// Fields returns every field of c. c must be valid.
func (c PortCounters) Fields() PortCountersFields {
	return PortCountersFields{
		PortSelect:                   c.PortSelect(),
		CounterSelect:                c.CounterSelect(),
		SymbolErrorCounter:           c.SymbolErrorCounter(),
		LinkErrorRecoveryCounter:     c.LinkErrorRecoveryCounter(),
		LinkDownedCounter:            c.LinkDownedCounter(),
		PortRcvErrors:                c.PortRcvErrors(),
		PortRcvRemotePhysicalErrors:  c.PortRcvRemotePhysicalErrors(),
		PortRcvSwitchRelayErrors:     c.PortRcvSwitchRelayErrors(),
		PortXmitDiscards:             c.PortXmitDiscards(),
		PortXmitConstraintErrors:     c.PortXmitConstraintErrors(),
		PortRcvConstraintErrors:      c.PortRcvConstraintErrors(),
		CounterSelect2:               c.CounterSelect2(),
		LocalLinkIntegrityErrors:     c.LocalLinkIntegrityErrors(),
		ExcessiveBufferOverrunErrors: c.ExcessiveBufferOverrunErrors(),
		VL15Dropped:                  c.VL15Dropped(),
		PortXmitData:                 c.PortXmitData(),
		PortRcvData:                  c.PortRcvData(),
		PortXmitPkts:                 c.PortXmitPkts(),
		PortRcvPkts:                  c.PortRcvPkts(),
		PortXmitWait:                 c.PortXmitWait(),
	}
}

// AppendPortCounters appends the PortCountersSize-byte encoding of f to
// dst; the PMA data after it is the caller's to pad.
func AppendPortCounters(dst []byte, f *PortCountersFields) []byte {
	dst, c := attrGrow(dst, PortCountersSize)
	PortCounters(c).Encode(f)
	return dst
}

// DecodePortCounters reads PortCounters from the first PortCountersSize
// bytes of b.
func DecodePortCounters(b []byte) (PortCountersFields, error) {
	if !PortCounters(b).IsValid() {
		return PortCountersFields{}, truncated("PortCounters", len(b), PortCountersSize)
	}
	return PortCounters(b).Fields(), nil
}

// PortCountersExtended attribute (IBA 16.1.4, optional): the
// data and packet counters again, 64 bits wide.
//
//	byte  0 +---------------+---------------+-------------------------------+
//	        |   reserved    |  PortSelect   |        CounterSelect          |
//	      4 +---------------+---------------+-------------------------------+
//	        |                           reserved                            |
//	      8 +---------------------------------------------------------------+
//	        |                     PortXmitData (64)                         |
//	     16 +---------------------------------------------------------------+
//	        |                     PortRcvData (64)                          |
//	     24 +---------------------------------------------------------------+
//	        |                     PortXmitPkts (64)                         |
//	     32 +---------------------------------------------------------------+
//	        |                     PortRcvPkts (64)                          |
//	     40 +---------------------------------------------------------------+
//	        |                  PortUnicastXmitPkts (64)                     |
//	     48 +---------------------------------------------------------------+
//	        |                  PortUnicastRcvPkts (64)                      |
//	     56 +---------------------------------------------------------------+
//	        |                 PortMulticastXmitPkts (64)                    |
//	     64 +---------------------------------------------------------------+
//	        |                 PortMulticastRcvPkts (64)                     |
//	     72 +---------------------------------------------------------------+

// PortCountersExtended is a view of the PortCountersExtended attribute. Its
// methods index the slice directly: callers must check IsValid first.
type PortCountersExtended []byte

// IsValid reports whether c is long enough to hold PortCountersExtended.
func (c PortCountersExtended) IsValid() bool { return len(c) >= PortCountersExtendedSize }

// PortSelect returns the PortSelect field.
func (c PortCountersExtended) PortSelect() uint8 { return c[pcExtPortSelect] }

// SetPortSelect sets the PortSelect field.
func (c PortCountersExtended) SetPortSelect(v uint8) { c[pcExtPortSelect] = v }

// CounterSelect returns the CounterSelect field (PCExtSel* bits).
func (c PortCountersExtended) CounterSelect() uint16 { return attrBE16(c, pcExtCounterSelect) }

// SetCounterSelect sets the CounterSelect field.
func (c PortCountersExtended) SetCounterSelect(v uint16) { attrPut16(c, pcExtCounterSelect, v) }

// PortXmitData returns the PortXmitData field, in 4-octet words.
func (c PortCountersExtended) PortXmitData() uint64 { return attrBE64(c, pcExtXmitData) }

// SetPortXmitData sets the PortXmitData field.
func (c PortCountersExtended) SetPortXmitData(v uint64) { attrPut64(c, pcExtXmitData, v) }

// PortRcvData returns the PortRcvData field, in 4-octet words.
func (c PortCountersExtended) PortRcvData() uint64 { return attrBE64(c, pcExtRcvData) }

// SetPortRcvData sets the PortRcvData field.
func (c PortCountersExtended) SetPortRcvData(v uint64) { attrPut64(c, pcExtRcvData, v) }

// PortXmitPkts returns the PortXmitPkts field.
func (c PortCountersExtended) PortXmitPkts() uint64 { return attrBE64(c, pcExtXmitPkts) }

// SetPortXmitPkts sets the PortXmitPkts field.
func (c PortCountersExtended) SetPortXmitPkts(v uint64) { attrPut64(c, pcExtXmitPkts, v) }

// PortRcvPkts returns the PortRcvPkts field.
func (c PortCountersExtended) PortRcvPkts() uint64 { return attrBE64(c, pcExtRcvPkts) }

// SetPortRcvPkts sets the PortRcvPkts field.
func (c PortCountersExtended) SetPortRcvPkts(v uint64) { attrPut64(c, pcExtRcvPkts, v) }

// PortUnicastXmitPkts returns the PortUnicastXmitPkts field.
func (c PortCountersExtended) PortUnicastXmitPkts() uint64 {
	return attrBE64(c, pcExtUnicastXmitPkts)
}

// SetPortUnicastXmitPkts sets the PortUnicastXmitPkts field.
func (c PortCountersExtended) SetPortUnicastXmitPkts(v uint64) {
	attrPut64(c, pcExtUnicastXmitPkts, v)
}

// PortUnicastRcvPkts returns the PortUnicastRcvPkts field.
func (c PortCountersExtended) PortUnicastRcvPkts() uint64 {
	return attrBE64(c, pcExtUnicastRcvPkts)
}

// SetPortUnicastRcvPkts sets the PortUnicastRcvPkts field.
func (c PortCountersExtended) SetPortUnicastRcvPkts(v uint64) {
	attrPut64(c, pcExtUnicastRcvPkts, v)
}

// PortMulticastXmitPkts returns the PortMulticastXmitPkts field.
func (c PortCountersExtended) PortMulticastXmitPkts() uint64 {
	return attrBE64(c, pcExtMcastXmitPkts)
}

// SetPortMulticastXmitPkts sets the PortMulticastXmitPkts field.
func (c PortCountersExtended) SetPortMulticastXmitPkts(v uint64) {
	attrPut64(c, pcExtMcastXmitPkts, v)
}

// PortMulticastRcvPkts returns the PortMulticastRcvPkts field.
func (c PortCountersExtended) PortMulticastRcvPkts() uint64 {
	return attrBE64(c, pcExtMcastRcvPkts)
}

// SetPortMulticastRcvPkts sets the PortMulticastRcvPkts field.
func (c PortCountersExtended) SetPortMulticastRcvPkts(v uint64) {
	attrPut64(c, pcExtMcastRcvPkts, v)
}

// PortCountersExtendedFields holds every PortCountersExtended field.
type PortCountersExtendedFields struct {
	PortSelect            uint8
	CounterSelect         uint16
	PortXmitData          uint64
	PortRcvData           uint64
	PortXmitPkts          uint64
	PortRcvPkts           uint64
	PortUnicastXmitPkts   uint64
	PortUnicastRcvPkts    uint64
	PortMulticastXmitPkts uint64
	PortMulticastRcvPkts  uint64
}

// Reset zeroes the counters that sel (PCExtSel* bits) selects, as a PMA
// does on Set(PortCountersExtended).
func (f *PortCountersExtendedFields) Reset(sel uint16) {
	counters := []*uint64{
		&f.PortXmitData, &f.PortRcvData, &f.PortXmitPkts, &f.PortRcvPkts,
		&f.PortUnicastXmitPkts, &f.PortUnicastRcvPkts,
		&f.PortMulticastXmitPkts, &f.PortMulticastRcvPkts,
	}
	for i, c := range counters {
		if sel&(1<<i) != 0 {
			*c = 0
		}
	}
}

// Encode writes f into c[:PortCountersExtendedSize], reserved bytes zero. c
// must be valid.
func (c PortCountersExtended) Encode(f *PortCountersExtendedFields) {
	clear(c[:PortCountersExtendedSize])
	c.SetPortSelect(f.PortSelect)
	c.SetCounterSelect(f.CounterSelect)
	c.SetPortXmitData(f.PortXmitData)
	c.SetPortRcvData(f.PortRcvData)
	c.SetPortXmitPkts(f.PortXmitPkts)
	c.SetPortRcvPkts(f.PortRcvPkts)
	c.SetPortUnicastXmitPkts(f.PortUnicastXmitPkts)
	c.SetPortUnicastRcvPkts(f.PortUnicastRcvPkts)
	c.SetPortMulticastXmitPkts(f.PortMulticastXmitPkts)
	c.SetPortMulticastRcvPkts(f.PortMulticastRcvPkts)
}

// Fields returns every field of c. c must be valid.
func (c PortCountersExtended) Fields() PortCountersExtendedFields {
	return PortCountersExtendedFields{
		PortSelect:            c.PortSelect(),
		CounterSelect:         c.CounterSelect(),
		PortXmitData:          c.PortXmitData(),
		PortRcvData:           c.PortRcvData(),
		PortXmitPkts:          c.PortXmitPkts(),
		PortRcvPkts:           c.PortRcvPkts(),
		PortUnicastXmitPkts:   c.PortUnicastXmitPkts(),
		PortUnicastRcvPkts:    c.PortUnicastRcvPkts(),
		PortMulticastXmitPkts: c.PortMulticastXmitPkts(),
		PortMulticastRcvPkts:  c.PortMulticastRcvPkts(),
	}
}

// AppendPortCountersExtended appends the PortCountersExtendedSize-byte
// encoding of f to dst; the PMA data after it is the caller's to pad.
func AppendPortCountersExtended(dst []byte, f *PortCountersExtendedFields) []byte {
	dst, c := attrGrow(dst, PortCountersExtendedSize)
	PortCountersExtended(c).Encode(f)
	return dst
}

// DecodePortCountersExtended reads PortCountersExtended from the first
// PortCountersExtendedSize bytes of b.
func DecodePortCountersExtended(b []byte) (PortCountersExtendedFields, error) {
	if !PortCountersExtended(b).IsValid() {
		return PortCountersExtendedFields{},
			truncated("PortCountersExtended", len(b), PortCountersExtendedSize)
	}
	return PortCountersExtended(b).Fields(), nil
}
