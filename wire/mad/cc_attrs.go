package mad

// The congestion control attributes (IBA Annex A10.4.3), as OpenSM's
// ib_types.h and libibmad's field tables lay them out. Each is a typed view
// over the management data (CongestionLog: the log data) with a Fields
// struct; reserved bits are zero when encoded and ignored when decoded.

// CongestionInfo (A10.4.3.3): what the node's congestion control can do.
//
//	byte 0 +-------------------------------+---------------+---------------+
//	       |      CongestionInfo (16)      |ControlTableCap|   reserved    |
//	       +-------------------------------+---------------+---------------+
const (
	ciInfo            = 0
	ciControlTableCap = 2
	// CongestionInfoSize is the bytes CongestionInfo uses.
	CongestionInfoSize = 4
)

// CongestionInfoFields holds CongestionInfo: CongestionInfo's bit 0 says
// the switch supports credit starvation; ControlTableCap is the number of
// 64-entry blocks of a CA port's CongestionControlTable.
type CongestionInfoFields struct {
	CongestionInfo  uint16
	ControlTableCap uint8
}

// CongestionInfo is a view of the CongestionInfo attribute.
type CongestionInfo []byte

// IsValid reports whether c is long enough.
func (c CongestionInfo) IsValid() bool { return len(c) >= CongestionInfoSize }

// Encode writes f into c[:CongestionInfoSize].
func (c CongestionInfo) Encode(f *CongestionInfoFields) {
	clear(c[:CongestionInfoSize])
	attrPut16(c, ciInfo, f.CongestionInfo)
	c[ciControlTableCap] = f.ControlTableCap
}

// Fields returns c's fields.
func (c CongestionInfo) Fields() CongestionInfoFields {
	return CongestionInfoFields{CongestionInfo: attrBE16(c, ciInfo), ControlTableCap: c[ciControlTableCap]}
}

// AppendCongestionInfo appends the encoding of f to dst.
func AppendCongestionInfo(dst []byte, f *CongestionInfoFields) []byte {
	dst, c := attrGrow(dst, CongestionInfoSize)
	CongestionInfo(c).Encode(f)
	return dst
}

// DecodeCongestionInfo reads CongestionInfo from b.
func DecodeCongestionInfo(b []byte) (CongestionInfoFields, error) {
	if !CongestionInfo(b).IsValid() {
		return CongestionInfoFields{}, truncated("CongestionInfo", len(b), CongestionInfoSize)
	}
	return CongestionInfo(b).Fields(), nil
}

// CongestionKeyInfo (A10.4.3.4): the CC_Key and its protection.
//
//	byte  0 +---------------------------------------------------------------+
//	        |                          CC_Key (64)                          |
//	      8 +-+-----------------------------+-------------------------------+
//	        |P|         reserved            |      CC_KeyLeasePeriod        |
//	     12 +-+-----------------------------+-------------------------------+
//	        |      CC_KeyViolations         |           reserved            |
//	     16 +-------------------------------+-------------------------------+
const (
	ckKey         = 0
	ckProtect     = 8
	ckProtectBit  = 0x80
	ckLeasePeriod = 10
	ckViolations  = 12
	// CongestionKeyInfoSize is the bytes CongestionKeyInfo uses.
	CongestionKeyInfoSize = 16
)

// CongestionKeyInfoFields holds CongestionKeyInfo.
type CongestionKeyInfoFields struct {
	CCKey       uint64
	ProtectBit  bool
	LeasePeriod uint16 // seconds
	Violations  uint16
}

// CongestionKeyInfo is a view of the CongestionKeyInfo attribute.
type CongestionKeyInfo []byte

// IsValid reports whether c is long enough.
func (c CongestionKeyInfo) IsValid() bool { return len(c) >= CongestionKeyInfoSize }

// Encode writes f into c[:CongestionKeyInfoSize].
func (c CongestionKeyInfo) Encode(f *CongestionKeyInfoFields) {
	clear(c[:CongestionKeyInfoSize])
	attrPut64(c, ckKey, f.CCKey)
	attrSetFlag(c, ckProtect, ckProtectBit, f.ProtectBit)
	attrPut16(c, ckLeasePeriod, f.LeasePeriod)
	attrPut16(c, ckViolations, f.Violations)
}

// Fields returns c's fields.
func (c CongestionKeyInfo) Fields() CongestionKeyInfoFields {
	return CongestionKeyInfoFields{
		CCKey:       attrBE64(c, ckKey),
		ProtectBit:  c[ckProtect]&ckProtectBit != 0,
		LeasePeriod: attrBE16(c, ckLeasePeriod),
		Violations:  attrBE16(c, ckViolations),
	}
}

// AppendCongestionKeyInfo appends the encoding of f to dst.
func AppendCongestionKeyInfo(dst []byte, f *CongestionKeyInfoFields) []byte {
	dst, c := attrGrow(dst, CongestionKeyInfoSize)
	CongestionKeyInfo(c).Encode(f)
	return dst
}

// DecodeCongestionKeyInfo reads CongestionKeyInfo from b.
func DecodeCongestionKeyInfo(b []byte) (CongestionKeyInfoFields, error) {
	if !CongestionKeyInfo(b).IsValid() {
		return CongestionKeyInfoFields{}, truncated("CongestionKeyInfo", len(b), CongestionKeyInfoSize)
	}
	return CongestionKeyInfo(b).Fields(), nil
}

// CongestionLog (A10.4.3.5), in the log data area (224 bytes): a common
// head, then the switch or the CA form.
//
//	byte 0 +---------------+---------------+-------------------------------+
//	       |    LogType    |CongestionFlags|  LogEventsCounter (16)        |
//	switch +---------------+---------------+-------------------------------+
//	     4 |                   CurrentTimeStamp (32)                       |
//	     8 |                   PortMap (256 bits)                          |
//	    40 |        CongestionEntryList: 15 events of 12 bytes             |
//	  CA   +-------------------------------+-------------------------------+
//	     4 | ThresholdCongestionEventMap   |           reserved            |
//	     8 +-------------------------------+-------------------------------+
//	       |                   CurrentTimeStamp (32)                       |
//	    12 |        CongestionEntryList: 13 events of 16 bytes             |
//
// A switch event (the same in libibmad's fields, OpenSM's ib_types.h):
//
//	0 +-------------------------------+-------------------------------+
//	  |            SLID               |            DLID               |
//	4 +-------+-----------------------+-------------------------------+
//	  |  SL   |                    reserved                           |
//	8 +-------+-------------------------------------------------------+
//	  |                        Timestamp (32)                         |
//
// A CA event as OpenSM's ib_types.h (ib_cong_log_event_ca_t) and the IBTA
// errata proposal of 2008 lay it out, which OPA's derivation of it (Linux
// hfi1) follows too. libibmad's field table (what ibccquery prints)
// differs: it puts SL and Service_Type after Local_QP and reads a
// Local_LID where the others have Remote_LID, so ibccquery prints those
// fields of a CA entry from other bits than these.
//
//	 0 +-----------------------------------------------+---------------+
//	   |             Local_QP_CN_Entry (24)            |   reserved    |
//	 4 +-----------------------------------------------+-------+-------+
//	   |         Remote_QP_Number_CN_Entry (24)        |  SL   |SvcType|
//	 8 +-------------------------------+-------------------------------+
//	   |     Remote_LID_CN_Entry       |           reserved            |
//	12 +-------------------------------+-------------------------------+
//	   |                    Timestamp_CN_Entry (32)                    |
//
// An entry of all zeros is an empty slot (ibccquery prints none for it).
const (
	clLogType       = 0
	clFlags         = 1
	clEventsCounter = 2
	clSwitchTime    = 4
	clSwitchPortMap = 8
	clSwitchEvents  = 40
	clCAEventMap    = 4
	clCATime        = 8
	clCAEvents      = 12

	clswSLID      = 0
	clswDLID      = 2
	clswSL        = 4
	clswTimestamp = 8
	clswSize      = 12

	clcaLocalQP   = 0
	clcaRemoteQP  = 4
	clcaSLService = 7
	clcaRemoteLID = 8
	clcaTimestamp = 12
	clcaSize      = 16

	qpnMask = 0xffffff

	// CongestionLogSize is the bytes CongestionLog uses.
	CongestionLogSize = CCLogDataSize
	// CongestionLogSwitchEvents and CongestionLogCAEvents are the
	// entries each form carries.
	CongestionLogSwitchEvents = 15
	CongestionLogCAEvents     = 13
)

// CongestionLog LogType values.
const (
	CongestionLogSwitch uint8 = 1
	CongestionLogCA     uint8 = 2
)

// CongestionLogSwitchEvent is one entry of a switch's log: a packet the
// switch marked (SL 4 bits), and when, in TimeStamp units.
type CongestionLogSwitchEvent struct {
	SLID, DLID uint16
	SL         uint8
	Timestamp  uint32
}

// CongestionLogCAEvent is one entry of a CA's log: a CCTI that reached its
// trigger threshold. The QPs are 24 bits, SL and ServiceType 4 bits
// (ServiceType 0 RC, 1 UC, 2 RD, 3 UD).
type CongestionLogCAEvent struct {
	LocalQP     uint32
	RemoteQP    uint32
	SL          uint8
	ServiceType uint8
	RemoteLID   uint16
	Timestamp   uint32
}

// CongestionLogFields holds CongestionLog. EventsCounter is the switch's
// LogEventsCounter or the CA's ThresholdEventCounter; EventMap is the CA's
// ThresholdCongestionEventMap (a bit per SL), PortMap the switch's (port
// n is bit n%8 of byte 31-n/8). A switch log uses Switch, a CA log CA;
// unused entries are zero.
type CongestionLogFields struct {
	LogType          uint8
	CongestionFlags  uint8
	EventsCounter    uint16
	EventMap         uint16
	CurrentTimeStamp uint32
	PortMap          [PortMaskSize]byte
	Switch           [CongestionLogSwitchEvents]CongestionLogSwitchEvent
	CA               [CongestionLogCAEvents]CongestionLogCAEvent
}

// CongestionLog is a view of the CongestionLog attribute.
type CongestionLog []byte

// IsValid reports whether c is long enough.
func (c CongestionLog) IsValid() bool { return len(c) >= CongestionLogSize }

// Encode writes f into c[:CongestionLogSize]: the common head, and the
// switch or CA form LogType names (another LogType writes the head only).
func (c CongestionLog) Encode(f *CongestionLogFields) {
	clear(c[:CongestionLogSize])
	c[clLogType] = f.LogType
	c[clFlags] = f.CongestionFlags
	attrPut16(c, clEventsCounter, f.EventsCounter)
	switch f.LogType {
	case CongestionLogSwitch:
		attrPut32(c, clSwitchTime, f.CurrentTimeStamp)
		copy(c[clSwitchPortMap:], f.PortMap[:])
		for i, e := range f.Switch {
			b := c[clSwitchEvents+i*clswSize:]
			attrPut16(b, clswSLID, e.SLID)
			attrPut16(b, clswDLID, e.DLID)
			attrSetHiNibble(b, clswSL, e.SL)
			attrPut32(b, clswTimestamp, e.Timestamp)
		}
	case CongestionLogCA:
		attrPut16(c, clCAEventMap, f.EventMap)
		attrPut32(c, clCATime, f.CurrentTimeStamp)
		for i, e := range f.CA {
			b := c[clCAEvents+i*clcaSize:]
			attrPut32(b, clcaLocalQP, (e.LocalQP&qpnMask)<<8)
			attrPut32(b, clcaRemoteQP, (e.RemoteQP&qpnMask)<<8)
			attrSetHiNibble(b, clcaSLService, e.SL)
			attrSetLoNibble(b, clcaSLService, e.ServiceType)
			attrPut16(b, clcaRemoteLID, e.RemoteLID)
			attrPut32(b, clcaTimestamp, e.Timestamp)
		}
	}
}

// Fields returns c's fields.
func (c CongestionLog) Fields() CongestionLogFields {
	f := CongestionLogFields{LogType: c[clLogType], CongestionFlags: c[clFlags], EventsCounter: attrBE16(c, clEventsCounter)}
	switch f.LogType {
	case CongestionLogSwitch:
		f.CurrentTimeStamp = attrBE32(c, clSwitchTime)
		copy(f.PortMap[:], c[clSwitchPortMap:])
		for i := range f.Switch {
			b := c[clSwitchEvents+i*clswSize:]
			f.Switch[i] = CongestionLogSwitchEvent{SLID: attrBE16(b, clswSLID), DLID: attrBE16(b, clswDLID),
				SL: attrHiNibble(b[clswSL]), Timestamp: attrBE32(b, clswTimestamp)}
		}
	case CongestionLogCA:
		f.EventMap = attrBE16(c, clCAEventMap)
		f.CurrentTimeStamp = attrBE32(c, clCATime)
		for i := range f.CA {
			b := c[clCAEvents+i*clcaSize:]
			f.CA[i] = CongestionLogCAEvent{
				LocalQP:     attrBE32(b, clcaLocalQP) >> 8,
				RemoteQP:    attrBE32(b, clcaRemoteQP) >> 8,
				SL:          attrHiNibble(b[clcaSLService]),
				ServiceType: b[clcaSLService] & piNibbleMask,
				RemoteLID:   attrBE16(b, clcaRemoteLID),
				Timestamp:   attrBE32(b, clcaTimestamp),
			}
		}
	}
	return f
}

// AppendCongestionLog appends the encoding of f to dst.
func AppendCongestionLog(dst []byte, f *CongestionLogFields) []byte {
	dst, c := attrGrow(dst, CongestionLogSize)
	CongestionLog(c).Encode(f)
	return dst
}

// DecodeCongestionLog reads CongestionLog from b.
func DecodeCongestionLog(b []byte) (CongestionLogFields, error) {
	if !CongestionLog(b).IsValid() {
		return CongestionLogFields{}, truncated("CongestionLog", len(b), CongestionLogSize)
	}
	return CongestionLog(b).Fields(), nil
}

// SwitchCongestionSetting (A10.4.3.6).
//
//	byte  0 +---------------------------------------------------------------+
//	        |                        Control_Map (32)                       |
//	      4 |                     Victim_Mask (256 bits)                    |
//	     36 |                     Credit_Mask (256 bits)                    |
//	     68 +-------+-------+---------------+-------+-----------------------+
//	        |Thresh |  rsv  |  Packet_Size  |CS_Thr |       reserved        |
//	     72 +-------+-------+---------------+-------+-----------------------+
//	        |       CS_ReturnDelay          |         Marking_Rate          |
//	     76 +-------------------------------+-------------------------------+
const (
	scControlMap    = 0
	scVictimMask    = 4
	scCreditMask    = 36
	scThreshold     = 68
	scPacketSize    = 69
	scCSThreshold   = 70
	scCSReturnDelay = 72
	scMarkingRate   = 74
	// SwitchCongestionSettingSize is the bytes SwitchCongestionSetting uses.
	SwitchCongestionSettingSize = 76
	// PortMaskSize is the bytes of a 256-port mask.
	PortMaskSize = 32
)

// Control_Map bits of SwitchCongestionSetting: the components a Set
// changes.
const (
	SwitchCongVictimMask uint32 = 1 << iota
	SwitchCongCreditMask
	SwitchCongThreshold // Threshold and Packet_Size
	SwitchCongCSThreshold
	SwitchCongMarkingRate
)

// SwitchCongestionSettingFields holds SwitchCongestionSetting. Threshold
// and CSThreshold are 4 bits; CSReturnDelay is a CCT-style
// shift:multiplier.
type SwitchCongestionSettingFields struct {
	ControlMap    uint32
	VictimMask    [PortMaskSize]byte
	CreditMask    [PortMaskSize]byte
	Threshold     uint8
	PacketSize    uint8
	CSThreshold   uint8
	CSReturnDelay uint16
	MarkingRate   uint16
}

// Merge applies the components of n that n.ControlMap selects to f, as a
// switch applies a Set, and keeps n.ControlMap.
func (f *SwitchCongestionSettingFields) Merge(n *SwitchCongestionSettingFields) {
	m := n.ControlMap
	if m&SwitchCongVictimMask != 0 {
		f.VictimMask = n.VictimMask
	}
	if m&SwitchCongCreditMask != 0 {
		f.CreditMask = n.CreditMask
	}
	if m&SwitchCongThreshold != 0 {
		f.Threshold, f.PacketSize = n.Threshold, n.PacketSize
	}
	if m&SwitchCongCSThreshold != 0 {
		f.CSThreshold, f.CSReturnDelay = n.CSThreshold, n.CSReturnDelay
	}
	if m&SwitchCongMarkingRate != 0 {
		f.MarkingRate = n.MarkingRate
	}
	f.ControlMap = m
}

// SwitchCongestionSetting is a view of the SwitchCongestionSetting
// attribute.
type SwitchCongestionSetting []byte

// IsValid reports whether c is long enough.
func (c SwitchCongestionSetting) IsValid() bool { return len(c) >= SwitchCongestionSettingSize }

// Encode writes f into c[:SwitchCongestionSettingSize].
func (c SwitchCongestionSetting) Encode(f *SwitchCongestionSettingFields) {
	clear(c[:SwitchCongestionSettingSize])
	attrPut32(c, scControlMap, f.ControlMap)
	copy(c[scVictimMask:], f.VictimMask[:])
	copy(c[scCreditMask:], f.CreditMask[:])
	attrSetHiNibble(c, scThreshold, f.Threshold)
	c[scPacketSize] = f.PacketSize
	attrSetHiNibble(c, scCSThreshold, f.CSThreshold)
	attrPut16(c, scCSReturnDelay, f.CSReturnDelay)
	attrPut16(c, scMarkingRate, f.MarkingRate)
}

// Fields returns c's fields.
func (c SwitchCongestionSetting) Fields() SwitchCongestionSettingFields {
	f := SwitchCongestionSettingFields{
		ControlMap:    attrBE32(c, scControlMap),
		Threshold:     attrHiNibble(c[scThreshold]),
		PacketSize:    c[scPacketSize],
		CSThreshold:   attrHiNibble(c[scCSThreshold]),
		CSReturnDelay: attrBE16(c, scCSReturnDelay),
		MarkingRate:   attrBE16(c, scMarkingRate),
	}
	copy(f.VictimMask[:], c[scVictimMask:])
	copy(f.CreditMask[:], c[scCreditMask:])
	return f
}

// AppendSwitchCongestionSetting appends the encoding of f to dst.
func AppendSwitchCongestionSetting(dst []byte, f *SwitchCongestionSettingFields) []byte {
	dst, c := attrGrow(dst, SwitchCongestionSettingSize)
	SwitchCongestionSetting(c).Encode(f)
	return dst
}

// DecodeSwitchCongestionSetting reads SwitchCongestionSetting from b.
func DecodeSwitchCongestionSetting(b []byte) (SwitchCongestionSettingFields, error) {
	if !SwitchCongestionSetting(b).IsValid() {
		return SwitchCongestionSettingFields{},
			truncated("SwitchCongestionSetting", len(b), SwitchCongestionSettingSize)
	}
	return SwitchCongestionSetting(b).Fields(), nil
}

// SwitchPortCongestionSetting (A10.4.3.7): one 4-byte element per port, 32
// ports per block; the attribute modifier is the block.
//
//	byte 0 +-+-+---+-------+---------------+-------------------------------+
//	       |V|T|rsv|Thresh |  Packet_Size  |   Cong_Parm / Marking_Rate    |
//	       +-+-+---+-------+---------------+-------------------------------+
const (
	spFlags       = 0
	spValid       = 0x80
	spControlType = 0x40
	spPacketSize  = 1
	spCongParm    = 2
	spElementSize = 4
	// SwitchPortCongestionPorts is the ports of one block.
	SwitchPortCongestionPorts = 32
	// SwitchPortCongestionSettingSize is the bytes one block uses.
	SwitchPortCongestionSettingSize = SwitchPortCongestionPorts * spElementSize
)

// SwitchPortCongestionElement is one port's element. ControlType false sets
// congestion parameters, true credit starvation ones.
type SwitchPortCongestionElement struct {
	Valid       bool
	ControlType bool
	Threshold   uint8 // 4 bits
	PacketSize  uint8
	CongParm    uint16 // Marking_Rate for congestion
}

// SwitchPortCongestionSettingFields holds one block.
type SwitchPortCongestionSettingFields struct {
	Ports [SwitchPortCongestionPorts]SwitchPortCongestionElement
}

// SwitchPortCongestionSetting is a view of one SwitchPortCongestionSetting
// block.
type SwitchPortCongestionSetting []byte

// IsValid reports whether c is long enough.
func (c SwitchPortCongestionSetting) IsValid() bool {
	return len(c) >= SwitchPortCongestionSettingSize
}

// Encode writes f into c[:SwitchPortCongestionSettingSize].
func (c SwitchPortCongestionSetting) Encode(f *SwitchPortCongestionSettingFields) {
	clear(c[:SwitchPortCongestionSettingSize])
	for i, e := range f.Ports {
		b := c[i*spElementSize:]
		attrSetFlag(b, spFlags, spValid, e.Valid)
		attrSetFlag(b, spFlags, spControlType, e.ControlType)
		attrSetLoNibble(b, spFlags, e.Threshold)
		b[spPacketSize] = e.PacketSize
		attrPut16(b, spCongParm, e.CongParm)
	}
}

// Fields returns c's fields.
func (c SwitchPortCongestionSetting) Fields() SwitchPortCongestionSettingFields {
	var f SwitchPortCongestionSettingFields
	for i := range f.Ports {
		b := c[i*spElementSize:]
		f.Ports[i] = SwitchPortCongestionElement{
			Valid:       b[spFlags]&spValid != 0,
			ControlType: b[spFlags]&spControlType != 0,
			Threshold:   b[spFlags] & piNibbleMask,
			PacketSize:  b[spPacketSize],
			CongParm:    attrBE16(b, spCongParm),
		}
	}
	return f
}

// AppendSwitchPortCongestionSetting appends the encoding of f to dst.
func AppendSwitchPortCongestionSetting(dst []byte, f *SwitchPortCongestionSettingFields) []byte {
	dst, c := attrGrow(dst, SwitchPortCongestionSettingSize)
	SwitchPortCongestionSetting(c).Encode(f)
	return dst
}

// DecodeSwitchPortCongestionSetting reads one block from b.
func DecodeSwitchPortCongestionSetting(b []byte) (SwitchPortCongestionSettingFields, error) {
	if !SwitchPortCongestionSetting(b).IsValid() {
		return SwitchPortCongestionSettingFields{},
			truncated("SwitchPortCongestionSetting", len(b), SwitchPortCongestionSettingSize)
	}
	return SwitchPortCongestionSetting(b).Fields(), nil
}

// CACongestionSetting (A10.4.3.8): per-SL throttling parameters of a CA
// port.
//
//	byte  0 +-------------------------------+-------------------------------+
//	        |        Port_Control           |         Control_Map           |
//	      4 +-------------------------------+---------------+---------------+
//	        |        CCTI_Timer             | CCTI_Increase |Trigger_Thresh |
//	      8 +---------------+---------------+---------------+---------------+
//	        |   CCTI_Min    |                   reserved                    |
//	     12 +---------------+-----------------------------------------------+
//	        ~        entries for SL1..SL15, 8 bytes each                    ~
//	    132 +---------------------------------------------------------------+
const (
	caPortControl      = 0
	caControlMap       = 2
	caEntries          = 4
	caEntrySize        = 8
	caeTimer           = 0
	caeIncrease        = 2
	caeTriggerThresh   = 3
	caeCCTIMin         = 4
	CACongestionSLs    = 16
	caCongestionLength = caEntries + CACongestionSLs*caEntrySize
	// CACongestionSettingSize is the bytes CACongestionSetting uses.
	CACongestionSettingSize = caCongestionLength
)

// CACongestionEntry is one SL's entry.
type CACongestionEntry struct {
	CCTITimer        uint16 // 1.024 µs units
	CCTIIncrease     uint8
	TriggerThreshold uint8
	CCTIMin          uint8
}

// CACongestionSettingFields holds CACongestionSetting.
type CACongestionSettingFields struct {
	PortControl uint16 // bit 0: SL/port based rather than QP based
	ControlMap  uint16 // one bit per SL: the entries a Set changes
	Entries     [CACongestionSLs]CACongestionEntry
}

// Merge applies the entries n.ControlMap selects and n's PortControl to
// f, as a CA applies a Set, and keeps n.ControlMap.
func (f *CACongestionSettingFields) Merge(n *CACongestionSettingFields) {
	for sl := range f.Entries {
		if n.ControlMap&(1<<sl) != 0 {
			f.Entries[sl] = n.Entries[sl]
		}
	}
	f.PortControl, f.ControlMap = n.PortControl, n.ControlMap
}

// CACongestionSetting is a view of the CACongestionSetting attribute.
type CACongestionSetting []byte

// IsValid reports whether c is long enough.
func (c CACongestionSetting) IsValid() bool { return len(c) >= CACongestionSettingSize }

// Encode writes f into c[:CACongestionSettingSize].
func (c CACongestionSetting) Encode(f *CACongestionSettingFields) {
	clear(c[:CACongestionSettingSize])
	attrPut16(c, caPortControl, f.PortControl)
	attrPut16(c, caControlMap, f.ControlMap)
	for i, e := range f.Entries {
		b := c[caEntries+i*caEntrySize:]
		attrPut16(b, caeTimer, e.CCTITimer)
		b[caeIncrease] = e.CCTIIncrease
		b[caeTriggerThresh] = e.TriggerThreshold
		b[caeCCTIMin] = e.CCTIMin
	}
}

// Fields returns c's fields.
func (c CACongestionSetting) Fields() CACongestionSettingFields {
	f := CACongestionSettingFields{PortControl: attrBE16(c, caPortControl), ControlMap: attrBE16(c, caControlMap)}
	for i := range f.Entries {
		b := c[caEntries+i*caEntrySize:]
		f.Entries[i] = CACongestionEntry{
			CCTITimer:        attrBE16(b, caeTimer),
			CCTIIncrease:     b[caeIncrease],
			TriggerThreshold: b[caeTriggerThresh],
			CCTIMin:          b[caeCCTIMin],
		}
	}
	return f
}

// AppendCACongestionSetting appends the encoding of f to dst.
func AppendCACongestionSetting(dst []byte, f *CACongestionSettingFields) []byte {
	dst, c := attrGrow(dst, CACongestionSettingSize)
	CACongestionSetting(c).Encode(f)
	return dst
}

// DecodeCACongestionSetting reads CACongestionSetting from b.
func DecodeCACongestionSetting(b []byte) (CACongestionSettingFields, error) {
	if !CACongestionSetting(b).IsValid() {
		return CACongestionSettingFields{}, truncated("CACongestionSetting", len(b), CACongestionSettingSize)
	}
	return CACongestionSetting(b).Fields(), nil
}

// CongestionControlTable (A10.4.3.9): one 64-entry block; the attribute
// modifier is the block. Each entry is shift (2 bits) : multiplier (14).
//
//	byte  0 +-------------------------------+-------------------------------+
//	        |         CCTI_Limit            |           reserved            |
//	      4 +-------------------------------+-------------------------------+
//	        |          entry 0              |           entry 1             |
//	        ~                          ... entry 63                         ~
//	    132 +---------------------------------------------------------------+
const (
	cctLimit   = 0
	cctEntries = 4
	// CCTEntriesPerBlock is the entries of one block.
	CCTEntriesPerBlock = 64
	// CongestionControlTableSize is the bytes one block uses.
	CongestionControlTableSize = cctEntries + 2*CCTEntriesPerBlock
)

// CongestionControlTableFields holds one block: CCTILimit is the highest
// valid index of the whole table, Entries the block's shift:multiplier
// words.
type CongestionControlTableFields struct {
	CCTILimit uint16
	Entries   [CCTEntriesPerBlock]uint16
}

// CCTEntry composes a table entry from its shift (2 bits) and multiplier
// (14 bits).
func CCTEntry(shift uint8, multiplier uint16) uint16 {
	return uint16(shift&3)<<14 | multiplier&0x3fff
}

// CongestionControlTable is a view of one CongestionControlTable block.
type CongestionControlTable []byte

// IsValid reports whether c is long enough.
func (c CongestionControlTable) IsValid() bool { return len(c) >= CongestionControlTableSize }

// Encode writes f into c[:CongestionControlTableSize].
func (c CongestionControlTable) Encode(f *CongestionControlTableFields) {
	clear(c[:CongestionControlTableSize])
	attrPut16(c, cctLimit, f.CCTILimit)
	for i, e := range f.Entries {
		attrPut16(c, cctEntries+2*i, e)
	}
}

// Fields returns c's fields.
func (c CongestionControlTable) Fields() CongestionControlTableFields {
	f := CongestionControlTableFields{CCTILimit: attrBE16(c, cctLimit)}
	for i := range f.Entries {
		f.Entries[i] = attrBE16(c, cctEntries+2*i)
	}
	return f
}

// AppendCongestionControlTable appends the encoding of f to dst.
func AppendCongestionControlTable(dst []byte, f *CongestionControlTableFields) []byte {
	dst, c := attrGrow(dst, CongestionControlTableSize)
	CongestionControlTable(c).Encode(f)
	return dst
}

// DecodeCongestionControlTable reads one block from b.
func DecodeCongestionControlTable(b []byte) (CongestionControlTableFields, error) {
	if !CongestionControlTable(b).IsValid() {
		return CongestionControlTableFields{},
			truncated("CongestionControlTable", len(b), CongestionControlTableSize)
	}
	return CongestionControlTable(b).Fields(), nil
}

// TimeStampSize is the bytes the TimeStamp attribute (A10.4.3.10) uses: one
// 32-bit free-running time in 1.024 µs units.
const TimeStampSize = 4

// TimeStamp is a view of the TimeStamp attribute.
type TimeStamp []byte

// IsValid reports whether c is long enough.
func (c TimeStamp) IsValid() bool { return len(c) >= TimeStampSize }

// Value returns the time stamp.
func (c TimeStamp) Value() uint32 { return attrBE32(c, 0) }

// SetValue sets the time stamp.
func (c TimeStamp) SetValue(v uint32) { attrPut32(c, 0, v) }
