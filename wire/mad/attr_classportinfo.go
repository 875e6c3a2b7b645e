package mad

// ClassPortInfo (IBA 13.4.8.1): what a GMP class agent supports and where
// its redirects and traps go. Every class answers it; only the leading
// fields say what the agent can do, the redirect and trap addresses are
// zero unless an agent redirects or sends traps for the class.
//
//	    0               8               16              24            31
//	   +---------------+---------------+-------------------------------+
//	 0 |  BaseVersion  | ClassVersion  |       CapabilityMask          |
//	   +---------------+---------------+-----------------------+-------+
//	 4 |              CapabilityMask2 (27)                    |RespTim|
//	   +------------------------------------------------------+-------+
//	 8 |                       RedirectGID (128)                       |
//	   +---------------+-------+---------------------------------------+
//	24 |   RedirectTC  |Redir SL|        RedirectFL (20)               |
//	   +---------------+-------+-------+-------------------------------+
//	28 |         RedirectLID           |         RedirectP_Key         |
//	   +---------------+---------------+-------------------------------+
//	32 |   reserved    |               RedirectQP (24)                 |
//	36 |                        RedirectQ_Key                          |
//	40 |                         TrapGID (128)                         |
//	56 |    TrapTC     |Trap SL|            TrapFL (20)                |
//	60 |           TrapLID             |           TrapP_Key           |
//	64 |    TrapHL     |                 TrapQP (24)                   |
//	68 |                          TrapQ_Key                            |
//	   +---------------------------------------------------------------+
const (
	cpiBaseVersion  = 0
	cpiClassVersion = 1
	cpiCapMask      = 2
	cpiCapMask2Resp = 4
	cpiRedirectGID  = 8
	cpiRedirectTSF  = 24
	cpiRedirectLID  = 28
	cpiRedirectPKey = 30
	cpiRedirectQP   = 32
	cpiRedirectQKey = 36
	cpiTrapGID      = 40
	cpiTrapTSF      = 56
	cpiTrapLID      = 60
	cpiTrapPKey     = 62
	cpiTrapHLQP     = 64
	cpiTrapQKey     = 68

	cpiRespMask      = 0x1f // RespTimeValue: the low 5 bits of the word at 4
	cpiCapMask2Shift = 5    // CapabilityMask2: the 27 bits above it
	cpiCapMask2Mask  = 1<<27 - 1
	cpiQPMask        = 1<<24 - 1 // a QP number: the low 24 bits of its word
	cpiFLMask        = 1<<20 - 1 // a flow label: the low 20 bits of its word
	cpiSLShift       = 20
	cpiTCShift       = 24

	// ClassPortInfoSize is the bytes ClassPortInfo uses.
	ClassPortInfoSize = 72
)

// ClassPortInfo is a view of the ClassPortInfo attribute. Its methods do
// not check lengths: callers must check IsValid first, or they may panic.
type ClassPortInfo []byte

// ClassPortInfoAddr is a redirect or trap destination of ClassPortInfo.
type ClassPortInfoAddr struct {
	GID  [16]byte
	TC   uint8
	SL   uint8  // 4 bits
	FL   uint32 // 20 bits
	LID  uint16
	PKey PKey
	HL   uint8  // traps only
	QP   uint32 // 24 bits
	QKey uint32
}

// ClassPortInfoFields holds ClassPortInfo.
type ClassPortInfoFields struct {
	BaseVersion     uint8
	ClassVersion    uint8
	CapabilityMask  uint16
	CapabilityMask2 uint32 // 27 bits
	RespTimeValue   uint8  // 5 bits
	Redirect        ClassPortInfoAddr
	Trap            ClassPortInfoAddr
}

// IsValid reports whether c is long enough.
func (c ClassPortInfo) IsValid() bool { return len(c) >= ClassPortInfoSize }

// CapabilityMask returns the class's capability bits.
func (c ClassPortInfo) CapabilityMask() uint16 { return attrBE16(c, cpiCapMask) }

// RespTimeValue returns the agent's response time value (4.096 µs × 2^v).
func (c ClassPortInfo) RespTimeValue() uint8 {
	return uint8(attrBE32(c, cpiCapMask2Resp) & cpiRespMask)
}

// Encode writes f into c[:ClassPortInfoSize].
func (c ClassPortInfo) Encode(f *ClassPortInfoFields) {
	clear(c[:ClassPortInfoSize])
	c[cpiBaseVersion] = f.BaseVersion
	c[cpiClassVersion] = f.ClassVersion
	attrPut16(c, cpiCapMask, f.CapabilityMask)
	attrPut32(c, cpiCapMask2Resp, (f.CapabilityMask2&cpiCapMask2Mask)<<cpiCapMask2Shift|uint32(f.RespTimeValue&cpiRespMask))
	c.putAddr(&f.Redirect, cpiRedirectGID, cpiRedirectTSF, cpiRedirectLID, cpiRedirectPKey, cpiRedirectQP, cpiRedirectQKey)
	c.putAddr(&f.Trap, cpiTrapGID, cpiTrapTSF, cpiTrapLID, cpiTrapPKey, cpiTrapHLQP, cpiTrapQKey)
	c[cpiTrapHLQP] = f.Trap.HL
}

func (c ClassPortInfo) putAddr(a *ClassPortInfoAddr, gid, tsf, lid, pkey, qp, qkey int) {
	copy(c[gid:gid+16], a.GID[:])
	attrPut32(c, tsf, uint32(a.TC)<<cpiTCShift|uint32(a.SL&piNibbleMask)<<cpiSLShift|a.FL&cpiFLMask)
	attrPut16(c, lid, a.LID)
	attrPut16(c, pkey, uint16(a.PKey))
	attrPut32(c, qp, a.QP&cpiQPMask)
	attrPut32(c, qkey, a.QKey)
}

func (c ClassPortInfo) addr(gid, tsf, lid, pkey, qp, qkey int) ClassPortInfoAddr {
	var a ClassPortInfoAddr
	copy(a.GID[:], c[gid:gid+16])
	w := attrBE32(c, tsf)
	a.TC, a.SL, a.FL = uint8(w>>cpiTCShift), uint8(w>>cpiSLShift)&piNibbleMask, w&cpiFLMask
	a.LID = attrBE16(c, lid)
	a.PKey = PKey(attrBE16(c, pkey))
	a.QP = attrBE32(c, qp) & cpiQPMask
	a.QKey = attrBE32(c, qkey)
	return a
}

// Fields returns c's fields.
func (c ClassPortInfo) Fields() ClassPortInfoFields {
	f := ClassPortInfoFields{
		BaseVersion:     c[cpiBaseVersion],
		ClassVersion:    c[cpiClassVersion],
		CapabilityMask:  c.CapabilityMask(),
		CapabilityMask2: attrBE32(c, cpiCapMask2Resp) >> cpiCapMask2Shift,
		RespTimeValue:   c.RespTimeValue(),
		Redirect:        c.addr(cpiRedirectGID, cpiRedirectTSF, cpiRedirectLID, cpiRedirectPKey, cpiRedirectQP, cpiRedirectQKey),
		Trap:            c.addr(cpiTrapGID, cpiTrapTSF, cpiTrapLID, cpiTrapPKey, cpiTrapHLQP, cpiTrapQKey),
	}
	f.Trap.HL = c[cpiTrapHLQP]
	return f
}

// AppendClassPortInfo appends the encoding of f to dst.
func AppendClassPortInfo(dst []byte, f *ClassPortInfoFields) []byte {
	dst, c := attrGrow(dst, ClassPortInfoSize)
	ClassPortInfo(c).Encode(f)
	return dst
}

// DecodeClassPortInfo reads ClassPortInfo from b.
func DecodeClassPortInfo(b []byte) (ClassPortInfoFields, error) {
	if !ClassPortInfo(b).IsValid() {
		return ClassPortInfoFields{}, truncated("ClassPortInfo", len(b), ClassPortInfoSize)
	}
	return ClassPortInfo(b).Fields(), nil
}
