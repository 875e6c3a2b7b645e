package umad

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The ib_umad ABI, version 5 (the kernel's include/uapi/rdma/ib_user_mad.h
// and rdma_user_ioctl.h). Fields marked "host" are in the host's byte
// order, the others big-endian.
const (
	// ABIVersion is the version /sys/class/infiniband_mad/abi_version must
	// show at least.
	ABIVersion = 5
	// MaxAgents is how many agents one open umad file can register.
	MaxAgents = 32
	// StatusTimeout is the header status of a request handed back because
	// no response came within its timeout and retries: ETIMEDOUT.
	StatusTimeout = 110
	// MADSize is the size of a MAD, and of every one this package carries
	// for an agent without RMPP.
	MADSize = 256
	// MaxRMPPSize bounds a message an RMPP agent sends or receives whole
	// (the kernel cuts and reassembles its segments): a GetTableResp of
	// a large subnet's records fits, a runaway length does not.
	MaxRMPPSize = 1 << 24
	// MaxRMPPRecv is the read buffer of a file with RMPP agents: what
	// the SM is sent reassembled (a GetMulti request) is a few segments.
	MaxRMPPRecv = 1 << 18
	// MADHeaderSize is what the kernel hands back of a timed-out request:
	// its common MAD header only.
	MADHeaderSize = 24
)

// struct ib_user_mad_hdr, byte offsets on the left; the old header (before
// IB_USER_MAD_ENABLE_PKEY) is the same without the last 8 bytes:
//
//	 0 agent id          (host u32)  agent the MAD was received with / is sent with
//	 4 status            (host u32)  0, or ETIMEDOUT on a request handed back
//	 8 timeout_ms        (host u32)  how long the kernel waits for the response
//	12 retries           (host u32)  how often the kernel resends before ETIMEDOUT
//	16 length           (host u32)  header + MAD length, set on receive
//	20 qpn               (be32)      remote QP
//	24 qkey              (be32)      remote Q_Key, on send
//	28 lid               (be16)      remote LID: DLID on send, SLID on receive
//	30 sl, 31 path_bits, 32 grh_present, 33 gid_index, 34 hop_limit, 35 traffic_class
//	36 gid[16]                       remote GID when grh_present
//	52 flow_label        (be32)
//	56 pkey_index        (host u16)  new header only
//	58 reserved[6]
const (
	hdrAgentID      = 0
	hdrStatus       = 4
	hdrTimeoutMS    = 8
	hdrRetries      = 12
	hdrLength       = 16
	hdrQPN          = 20
	hdrQKey         = 24
	hdrLID          = 28
	hdrSL           = 30
	hdrPathBits     = 31
	hdrGRHPresent   = 32
	hdrGIDIndex     = 33
	hdrHopLimit     = 34
	hdrTrafficClass = 35
	hdrGID          = 36
	hdrFlowLabel    = 52
	hdrPKeyIndex    = 56
	hdrReserved     = 58

	// HeaderSize is the size of struct ib_user_mad_hdr, the header of
	// every read and write once IB_USER_MAD_ENABLE_PKEY succeeded.
	HeaderSize = 64
	// OldHeaderSize is the header's size without P_Key index support, on
	// kernels that refuse IB_USER_MAD_ENABLE_PKEY.
	OldHeaderSize = hdrPKeyIndex
)

// host is the byte order of the fields the kernel keeps in host order.
var host = binary.NativeEndian

// Errors of decoding.
var (
	ErrHeaderSize = errors.New("umad: header size must be 56 or 64")
	ErrShort      = errors.New("umad: packet too short")
	ErrLong       = errors.New("umad: packet too long")
)

// Header is a view of a umad header of HeaderSize or OldHeaderSize bytes.
// Its methods do not check lengths (PKeyIndex needs HeaderSize): callers
// check first, or they may panic.
type Header []byte

// HeaderFields holds a header, for building one.
type HeaderFields struct {
	AgentID      uint32
	Status       uint32
	TimeoutMS    uint32
	Retries      uint32
	Length       uint32
	QPN          uint32
	QKey         uint32
	LID          uint16
	SL           uint8
	PathBits     uint8
	GRHPresent   bool
	GIDIndex     uint8
	HopLimit     uint8
	TrafficClass uint8
	GID          [16]byte
	FlowLabel    uint32
	PKeyIndex    uint16 // new header only
}

// AgentID, Status, TimeoutMS, Retries, Length, QPN, QKey, LID, SL and
// PKeyIndex read the header fields of the same names.
func (h Header) AgentID() uint32   { return host.Uint32(h[hdrAgentID:]) }
func (h Header) Status() uint32    { return host.Uint32(h[hdrStatus:]) }
func (h Header) TimeoutMS() uint32 { return host.Uint32(h[hdrTimeoutMS:]) }
func (h Header) Retries() uint32   { return host.Uint32(h[hdrRetries:]) }
func (h Header) Length() uint32    { return host.Uint32(h[hdrLength:]) }
func (h Header) QPN() uint32       { return binary.BigEndian.Uint32(h[hdrQPN:]) }
func (h Header) QKey() uint32      { return binary.BigEndian.Uint32(h[hdrQKey:]) }
func (h Header) LID() uint16       { return binary.BigEndian.Uint16(h[hdrLID:]) }
func (h Header) SL() uint8         { return h[hdrSL] }
func (h Header) PKeyIndex() uint16 { return host.Uint16(h[hdrPKeyIndex:]) }

// SetStatus sets the status field.
func (h Header) SetStatus(s uint32) { host.PutUint32(h[hdrStatus:], s) }

// Encode writes f into h; the P_Key index only into a new header, the
// reserved bytes zero.
func (h Header) Encode(f *HeaderFields) {
	host.PutUint32(h[hdrAgentID:], f.AgentID)
	host.PutUint32(h[hdrStatus:], f.Status)
	host.PutUint32(h[hdrTimeoutMS:], f.TimeoutMS)
	host.PutUint32(h[hdrRetries:], f.Retries)
	host.PutUint32(h[hdrLength:], f.Length)
	binary.BigEndian.PutUint32(h[hdrQPN:], f.QPN)
	binary.BigEndian.PutUint32(h[hdrQKey:], f.QKey)
	binary.BigEndian.PutUint16(h[hdrLID:], f.LID)
	h[hdrSL] = f.SL
	h[hdrPathBits] = f.PathBits
	h[hdrGRHPresent] = b2u(f.GRHPresent)
	h[hdrGIDIndex] = f.GIDIndex
	h[hdrHopLimit] = f.HopLimit
	h[hdrTrafficClass] = f.TrafficClass
	copy(h[hdrGID:hdrFlowLabel], f.GID[:])
	binary.BigEndian.PutUint32(h[hdrFlowLabel:], f.FlowLabel)
	if len(h) >= HeaderSize {
		host.PutUint16(h[hdrPKeyIndex:], f.PKeyIndex)
		clear(h[hdrReserved:HeaderSize])
	}
}

// Fields returns the fields of h. A non-zero grh_present byte reads as
// true.
func (h Header) Fields() HeaderFields {
	f := HeaderFields{
		AgentID: h.AgentID(), Status: h.Status(), TimeoutMS: h.TimeoutMS(), Retries: h.Retries(),
		Length: h.Length(), QPN: h.QPN(), QKey: h.QKey(), LID: h.LID(), SL: h.SL(),
		PathBits: h[hdrPathBits], GRHPresent: h[hdrGRHPresent] != 0, GIDIndex: h[hdrGIDIndex],
		HopLimit: h[hdrHopLimit], TrafficClass: h[hdrTrafficClass],
		FlowLabel: binary.BigEndian.Uint32(h[hdrFlowLabel:]),
	}
	copy(f.GID[:], h[hdrGID:hdrFlowLabel])
	if len(h) >= HeaderSize {
		f.PKeyIndex = h.PKeyIndex()
	}
	return f
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func checkHeaderSize(size int) error {
	if size != HeaderSize && size != OldHeaderSize {
		return fmt.Errorf("%w, not %d", ErrHeaderSize, size)
	}
	return nil
}

// AppendPacket appends one write to a umad file: a header of hdrSize
// bytes (HeaderSize or OldHeaderSize) and the MAD, zero-padded to MADSize.
func AppendPacket(dst []byte, hdrSize int, f *HeaderFields, mad []byte) ([]byte, error) {
	if len(mad) > MADSize {
		return dst, fmt.Errorf("%w: MAD of %d bytes, at most %d", ErrLong, len(mad), MADSize)
	}
	return appendPacket(dst, hdrSize, f, mad, MADSize)
}

// AppendRMPPPacket is AppendPacket for an RMPP agent's message, which
// the kernel cuts into segments: its length, up to MaxRMPPSize, is the
// transfer's payload length, so it is not padded (the kernel pads the
// last segment).
func AppendRMPPPacket(dst []byte, hdrSize int, f *HeaderFields, mad []byte) ([]byte, error) {
	if len(mad) > MaxRMPPSize {
		return dst, fmt.Errorf("%w: message of %d bytes, at most %d", ErrLong, len(mad), MaxRMPPSize)
	}
	return appendPacket(dst, hdrSize, f, mad, len(mad))
}

// appendPacket appends the header and mad, zero-padded to size bytes.
func appendPacket(dst []byte, hdrSize int, f *HeaderFields, mad []byte, size int) ([]byte, error) {
	if err := checkHeaderSize(hdrSize); err != nil {
		return dst, err
	}
	n := len(dst)
	dst = append(dst, make([]byte, hdrSize+size)...)
	Header(dst[n : n+hdrSize]).Encode(f)
	copy(dst[n+hdrSize:], mad)
	return dst, nil
}

// DecodePacket splits one read from a umad file into its header and MAD.
// The MAD is what the read returned after the header: MADSize bytes, or
// only the common header (MADHeaderSize) for a request handed back with
// StatusTimeout; anything else is an error (see DecodeRMPPPacket). mad
// aliases b.
func DecodePacket(b []byte, hdrSize int) (f HeaderFields, mad []byte, err error) {
	return decodePacket(b, hdrSize, MADSize)
}

// DecodeRMPPPacket is DecodePacket for a file with RMPP agents, whose
// reads may hold a message the kernel reassembled: up to MaxRMPPSize.
func DecodeRMPPPacket(b []byte, hdrSize int) (f HeaderFields, mad []byte, err error) {
	return decodePacket(b, hdrSize, MaxRMPPSize)
}

func decodePacket(b []byte, hdrSize, maxLen int) (f HeaderFields, mad []byte, err error) {
	if err := checkHeaderSize(hdrSize); err != nil {
		return f, nil, err
	}
	if len(b) < hdrSize+MADHeaderSize {
		return f, nil, fmt.Errorf("%w: %d bytes, need a %d-byte header and a MAD header", ErrShort, len(b), hdrSize)
	}
	f = Header(b[:hdrSize]).Fields()
	mad = b[hdrSize:]
	switch {
	case len(mad) > maxLen:
		return f, nil, fmt.Errorf("%w: MAD of %d bytes, at most %d", ErrLong, len(mad), maxLen)
	case len(mad) < MADSize && f.Status == 0:
		return f, nil, fmt.Errorf("%w: MAD of %d bytes with status 0, want %d", ErrShort, len(mad), MADSize)
	}
	return f, mad, nil
}

// Ioctl request numbers: Linux's generic _IOC layout (direction in bits
// 31-30, size in 29-16, type 0x1b in 15-8, number in 7-0), which x86,
// arm64 and riscv use.
const (
	iocWrite   = 1
	iocRead    = 2
	ioctlMagic = 0x1b

	// regReqSize is sizeof(struct ib_user_mad_reg_req): 4 + 16 + 7 bytes,
	// padded to 4.
	regReqSize = 28

	// IoctlRegisterAgent is IB_USER_MAD_REGISTER_AGENT:
	// _IOWR(0x1b, 1, struct ib_user_mad_reg_req).
	IoctlRegisterAgent = (iocRead|iocWrite)<<30 | regReqSize<<16 | ioctlMagic<<8 | 1
	// IoctlUnregisterAgent is IB_USER_MAD_UNREGISTER_AGENT: _IOW(0x1b, 2, __u32).
	IoctlUnregisterAgent = iocWrite<<30 | 4<<16 | ioctlMagic<<8 | 2
	// IoctlEnablePKey is IB_USER_MAD_ENABLE_PKEY: _IO(0x1b, 3). It must
	// come before any other use of the file.
	IoctlEnablePKey = ioctlMagic<<8 | 3
)

// struct ib_user_mad_reg_req:
//
//	 0 id                 (host u32)  set by the kernel: the agent id
//	 4 method_mask[2]     (host unsigned long ×2, 4-aligned): bit m asks for
//	                      unsolicited requests of method m
//	20 qpn                0 (SMI) or 1 (GSI)
//	21 mgmt_class         0: send only, no unsolicited MADs
//	22 mgmt_class_version
//	23 oui[3]             vendor classes 0x30-0x4f only
//	26 rmpp_version
//	27 padding
const (
	regID      = 0
	regMask    = 4
	regQPN     = 20
	regClass   = 21
	regVersion = 22
	regOUI     = 23
	regRMPP    = 26
)

// RegReq is the argument of IoctlRegisterAgent.
type RegReq struct {
	ID           uint32 // out: the agent id
	MethodMask   [2]uint64
	QPN          uint8
	MgmtClass    uint8
	ClassVersion uint8
	OUI          [3]byte
	RMPPVersion  uint8
}

// Encode returns the ioctl argument. The method mask is two 64-bit longs,
// as a 64-bit kernel reads it (on a little-endian host it is the same
// bytes as four 32-bit longs).
func (r *RegReq) Encode() []byte {
	b := make([]byte, regReqSize)
	host.PutUint32(b[regID:], r.ID)
	host.PutUint64(b[regMask:], r.MethodMask[0])
	host.PutUint64(b[regMask+8:], r.MethodMask[1])
	b[regQPN] = r.QPN
	b[regClass] = r.MgmtClass
	b[regVersion] = r.ClassVersion
	copy(b[regOUI:regRMPP], r.OUI[:])
	b[regRMPP] = r.RMPPVersion
	return b
}

// DecodeRegReq reads an ioctl argument back, as the kernel (or a fake of
// it) does.
func DecodeRegReq(b []byte) (RegReq, error) {
	if len(b) != regReqSize {
		return RegReq{}, fmt.Errorf("%w: registration request of %d bytes, want %d", ErrShort, len(b), regReqSize)
	}
	r := RegReq{ID: host.Uint32(b[regID:]), QPN: b[regQPN], MgmtClass: b[regClass],
		ClassVersion: b[regVersion], RMPPVersion: b[regRMPP]}
	r.MethodMask[0] = host.Uint64(b[regMask:])
	r.MethodMask[1] = host.Uint64(b[regMask+8:])
	copy(r.OUI[:], b[regOUI:regRMPP])
	return r, nil
}

// SetMethod sets the bit of method m (0-127) in the mask.
func (r *RegReq) SetMethod(m uint8) { r.MethodMask[m/64&1] |= 1 << (m % 64) }

// HasMethod reports whether the bit of method m is set.
func (r *RegReq) HasMethod(m uint8) bool { return r.MethodMask[m/64&1]&(1<<(m%64)) != 0 }

// IsSMIClass reports whether class c goes through QP0: the two subnet
// management classes.
func IsSMIClass(c uint8) bool { return c == 0x01 || c == 0x81 }
