package mad

// The attributes of ibfab's adaptive routing class (ar.go), laid out in
// the attribute data the way the congestion control attributes are:
// typed views with a Fields struct; reserved bits are zero when encoded
// and ignored when decoded. docs/adaptive-routing.md says what a switch
// does with them.

// ARInfo (0x0010, Get/Set, modifier 0): what the switch's adaptive
// routing can do (read only: a Set leaves it) and how it is configured.
//
//	byte  0 +---------------+-+-------------+-------------------------------+
//	        |ModesSupported |A|  reserved   |          GroupCap             |
//	      4 +---------------+-+-------------+-------------------------------+
//	        |            LIDCap             |          GroupTop             |
//	      8 +-+-------------+---------------+---------------+-------+-------+
//	        |E|  reserved   |     Mode      |   Threshold   |  rsv  | AFCVL |
//	     12 +-+-------------+---------------+---------------+-------+-------+
//	        |                          reserved                             |
//	     16 +---------------------------------------------------------------+
//
// ModesSupported has bit m set for each ARMode m the switch does; A
// (AFISupported) says it can mark adapted packets (the BTH adapted bit)
// and move them to an Adapted Flow Channel. GroupCap is the groups its
// ARGroupTable holds (indices 0..GroupCap-1; 0 is "no group"), LIDCap the
// LIDs its ARLIDTable holds (0..LIDCap-1). GroupTop is the highest group
// the manager uses: groups above it are empty whatever was set. E
// (Enable) turns adaptive routing on in Mode; with E clear the switch
// forwards by the LFT alone. Threshold is the downstream VL occupancy, in
// percent (1..100), at which the threshold modes adapt; AFCVL the VL of
// the Adapted Flow Channel in AFI mode.
const (
	aiModes     = 0
	aiCapFlags  = 1
	aiAFIBit    = 0x80
	aiGroupCap  = 2
	aiLIDCap    = 4
	aiGroupTop  = 6
	aiFlags     = 8
	aiEnableBit = 0x80
	aiMode      = 9
	aiThreshold = 10
	aiAFCVL     = 11
	aiAFCVLMask = 0x0f
	// ARInfoSize is the bytes ARInfo uses.
	ARInfoSize = 16
	// ARThresholdMax is the highest threshold, 100 %.
	ARThresholdMax = 100
)

// ARInfoFields holds ARInfo. Mode is a whole byte on the wire, so a mode
// the switch does not know survives decoding, for the agent to refuse.
type ARInfoFields struct {
	ModesSupported uint8 // bit m: ARMode m
	AFISupported   bool
	GroupCap       uint16
	LIDCap         uint16
	GroupTop       uint16
	Enable         bool
	Mode           ARMode
	Threshold      uint8 // percent, 1..100
	AFCVL          uint8 // 4 bits
}

// ValidThreshold reports whether t is a threshold a switch takes: a
// percentage of 1 to 100.
func ValidThreshold(t uint8) bool { return t >= 1 && t <= ARThresholdMax }

// ARInfo is a view of the ARInfo attribute.
type ARInfo []byte

// IsValid reports whether a is long enough.
func (a ARInfo) IsValid() bool { return len(a) >= ARInfoSize }

// Encode writes f into a[:ARInfoSize].
func (a ARInfo) Encode(f *ARInfoFields) {
	clear(a[:ARInfoSize])
	a[aiModes] = f.ModesSupported
	attrSetFlag(a, aiCapFlags, aiAFIBit, f.AFISupported)
	attrPut16(a, aiGroupCap, f.GroupCap)
	attrPut16(a, aiLIDCap, f.LIDCap)
	attrPut16(a, aiGroupTop, f.GroupTop)
	attrSetFlag(a, aiFlags, aiEnableBit, f.Enable)
	a[aiMode] = uint8(f.Mode)
	a[aiThreshold] = f.Threshold
	attrSetLoNibble(a, aiAFCVL, f.AFCVL)
}

// Fields returns a's fields.
func (a ARInfo) Fields() ARInfoFields {
	return ARInfoFields{
		ModesSupported: a[aiModes],
		AFISupported:   a[aiCapFlags]&aiAFIBit != 0,
		GroupCap:       attrBE16(a, aiGroupCap),
		LIDCap:         attrBE16(a, aiLIDCap),
		GroupTop:       attrBE16(a, aiGroupTop),
		Enable:         a[aiFlags]&aiEnableBit != 0,
		Mode:           ARMode(a[aiMode]),
		Threshold:      a[aiThreshold],
		AFCVL:          a[aiAFCVL] & aiAFCVLMask,
	}
}

// AppendARInfo appends the encoding of f to dst.
func AppendARInfo(dst []byte, f *ARInfoFields) []byte {
	dst, a := attrGrow(dst, ARInfoSize)
	ARInfo(a).Encode(f)
	return dst
}

// DecodeARInfo reads ARInfo from b.
func DecodeARInfo(b []byte) (ARInfoFields, error) {
	if !ARInfo(b).IsValid() {
		return ARInfoFields{}, truncated("ARInfo", len(b), ARInfoSize)
	}
	return ARInfo(b).Fields(), nil
}

// PortMask is a set of ports 0..255 as IBA's 256-bit masks hold them (the
// CongestionLog's PortMap, SwitchCongestionSetting's masks): port n is
// bit n%8 of byte 31-n/8, so port 0 is the last byte's low bit.
type PortMask [PortMaskSize]byte

// PortMaskOf returns the mask of ports.
func PortMaskOf(ports ...uint8) PortMask {
	var m PortMask
	for _, p := range ports {
		m.Add(p)
	}
	return m
}

// Has reports whether port p is in m.
func (m *PortMask) Has(p uint8) bool { return m[PortMaskSize-1-int(p)/8]&(1<<(p%8)) != 0 }

// Add puts port p in m.
func (m *PortMask) Add(p uint8) { m[PortMaskSize-1-int(p)/8] |= 1 << (p % 8) }

// Ports returns the ports in m, lowest first; nil for none.
func (m *PortMask) Ports() []uint8 {
	var out []uint8
	for p := range 256 {
		if m.Has(uint8(p)) {
			out = append(out, uint8(p))
		}
	}
	return out
}

// IsZero reports whether m holds no port.
func (m *PortMask) IsZero() bool { return *m == PortMask{} }

// ARGroupTable (0x0011, Get/Set): one block of groups of alternative
// output ports; the attribute modifier is the block, holding groups
// 7·block .. 7·block+6. Each group is a 256-bit PortMask; group 0 means
// "no alternatives" and its mask is ignored. Seven 32-byte masks are as
// many as the 232-byte data area holds.
//
//	byte   0 +---------------------------------------------------------------+
//	         |                group 7·block+0: PortMask (256 bits)           |
//	      32 +---------------------------------------------------------------+
//	         ~                ... group 7·block+6                            ~
//	     224 +---------------------------------------------------------------+
const (
	// ARGroupsPerBlock is the groups of one ARGroupTable block.
	ARGroupsPerBlock = 7
	// ARGroupTableSize is the bytes one block uses.
	ARGroupTableSize = ARGroupsPerBlock * PortMaskSize
)

// ARGroupTableFields holds one block of groups.
type ARGroupTableFields struct {
	Groups [ARGroupsPerBlock]PortMask
}

// ARGroupTable is a view of one ARGroupTable block.
type ARGroupTable []byte

// IsValid reports whether a is long enough.
func (a ARGroupTable) IsValid() bool { return len(a) >= ARGroupTableSize }

// Encode writes f into a[:ARGroupTableSize].
func (a ARGroupTable) Encode(f *ARGroupTableFields) {
	for i := range f.Groups {
		copy(a[i*PortMaskSize:], f.Groups[i][:])
	}
}

// Fields returns a's fields.
func (a ARGroupTable) Fields() ARGroupTableFields {
	var f ARGroupTableFields
	for i := range f.Groups {
		copy(f.Groups[i][:], a[i*PortMaskSize:])
	}
	return f
}

// AppendARGroupTable appends the encoding of f to dst.
func AppendARGroupTable(dst []byte, f *ARGroupTableFields) []byte {
	dst, a := attrGrow(dst, ARGroupTableSize)
	ARGroupTable(a).Encode(f)
	return dst
}

// DecodeARGroupTable reads one block of groups from b.
func DecodeARGroupTable(b []byte) (ARGroupTableFields, error) {
	if !ARGroupTable(b).IsValid() {
		return ARGroupTableFields{}, truncated("ARGroupTable", len(b), ARGroupTableSize)
	}
	return ARGroupTable(b).Fields(), nil
}

// ARLIDTable (0x0012, Get/Set): one block of 64 LIDs, each with the
// 16-bit index of its group of alternatives (0: none, forward by the LFT
// alone); the attribute modifier is the block, holding LIDs 64·block ..
// 64·block+63, the LIDs of the LinearForwardingTable block of the same
// number.
//
//	byte   0 +-------------------------------+-------------------------------+
//	         |   group of LID 64·block+0     |   group of LID 64·block+1     |
//	       4 +-------------------------------+-------------------------------+
//	         ~                     ... LID 64·block+63                       ~
//	     128 +---------------------------------------------------------------+
const (
	// ARLIDsPerBlock is the LIDs of one ARLIDTable block.
	ARLIDsPerBlock = LFTEntriesPerBlock
	// ARLIDTableSize is the bytes one block uses.
	ARLIDTableSize = 2 * ARLIDsPerBlock
)

// ARLIDTableFields holds one block: the group of each of its LIDs.
type ARLIDTableFields struct {
	Groups [ARLIDsPerBlock]uint16
}

// ARLIDTable is a view of one ARLIDTable block.
type ARLIDTable []byte

// IsValid reports whether a is long enough.
func (a ARLIDTable) IsValid() bool { return len(a) >= ARLIDTableSize }

// Encode writes f into a[:ARLIDTableSize].
func (a ARLIDTable) Encode(f *ARLIDTableFields) {
	for i, g := range f.Groups {
		attrPut16(a, 2*i, g)
	}
}

// Fields returns a's fields.
func (a ARLIDTable) Fields() ARLIDTableFields {
	var f ARLIDTableFields
	for i := range f.Groups {
		f.Groups[i] = attrBE16(a, 2*i)
	}
	return f
}

// AppendARLIDTable appends the encoding of f to dst.
func AppendARLIDTable(dst []byte, f *ARLIDTableFields) []byte {
	dst, a := attrGrow(dst, ARLIDTableSize)
	ARLIDTable(a).Encode(f)
	return dst
}

// DecodeARLIDTable reads one block of LIDs from b.
func DecodeARLIDTable(b []byte) (ARLIDTableFields, error) {
	if !ARLIDTable(b).IsValid() {
		return ARLIDTableFields{}, truncated("ARLIDTable", len(b), ARLIDTableSize)
	}
	return ARLIDTable(b).Fields(), nil
}
