package umadproto

import (
	"encoding/binary"
)

// Sizes of the UserMAD header: without pkey_index (the ABI before
// IB_USER_MAD_ENABLE_PKEY) and with it.
const (
	HeaderSizeOld = 56
	HeaderSize    = 64
)

// Status values of a UserMAD the endpoint hands back.
const (
	StatusTimedOut = 110 // ETIMEDOUT: a send that got no response
)

// UserMAD is the header of struct ib_user_mad, what precedes each MAD
// read from or written to a umad device.
//
//	 0 agent_id u32 | 4 status u32 | 8 timeout_ms u32 | 12 retries u32 | 16 length u32 |
//	20 qpn be32 | 24 qkey be32 | 28 lid be16 | 30 sl | 31 path_bits | 32 grh_present |
//	33 gid_index | 34 hop_limit | 35 traffic_class | 36 gid[16] | 52 flow_label be32 |
//	56 pkey_index u16 | 58 reserved[6]
type UserMAD struct {
	AgentID    uint32
	Status     uint32
	TimeoutMS  uint32
	Retries    uint32
	Length     uint32 // on read: header and MAD bytes
	QPN        uint32
	QKey       uint32
	LID        uint16
	SL         uint8
	PathBits   uint8
	GRHPresent uint8
	GIDIndex   uint8
	HopLimit   uint8
	TClass     uint8
	GID        [16]byte
	FlowLabel  uint32
	PKeyIndex  uint16
}

var host = binary.NativeEndian

// AppendUserMAD appends u's header in the layout of size hdrSize
// (HeaderSizeOld or HeaderSize).
func AppendUserMAD(b []byte, u *UserMAD, hdrSize int) []byte {
	b = host.AppendUint32(b, u.AgentID)
	b = host.AppendUint32(b, u.Status)
	b = host.AppendUint32(b, u.TimeoutMS)
	b = host.AppendUint32(b, u.Retries)
	b = host.AppendUint32(b, u.Length)
	b = binary.BigEndian.AppendUint32(b, u.QPN)
	b = binary.BigEndian.AppendUint32(b, u.QKey)
	b = binary.BigEndian.AppendUint16(b, u.LID)
	b = append(b, u.SL, u.PathBits, u.GRHPresent, u.GIDIndex, u.HopLimit, u.TClass)
	b = append(b, u.GID[:]...)
	b = binary.BigEndian.AppendUint32(b, u.FlowLabel)
	if hdrSize == HeaderSize {
		b = host.AppendUint16(b, u.PKeyIndex)
		b = append(b, 0, 0, 0, 0, 0, 0)
	}
	return b
}

// DecodeUserMAD splits a datagram into its header (of size hdrSize) and
// the MAD after it.
func DecodeUserMAD(b []byte, hdrSize int) (UserMAD, []byte, error) {
	if hdrSize != HeaderSize && hdrSize != HeaderSizeOld {
		return UserMAD{}, nil, bad("header size %d", hdrSize)
	}
	if len(b) < hdrSize {
		return UserMAD{}, nil, bad("user MAD of %d bytes, header needs %d", len(b), hdrSize)
	}
	u := UserMAD{
		AgentID: host.Uint32(b), Status: host.Uint32(b[4:]), TimeoutMS: host.Uint32(b[8:]),
		Retries: host.Uint32(b[12:]), Length: host.Uint32(b[16:]),
		QPN: binary.BigEndian.Uint32(b[20:]), QKey: binary.BigEndian.Uint32(b[24:]),
		LID: binary.BigEndian.Uint16(b[28:]), SL: b[30], PathBits: b[31], GRHPresent: b[32],
		GIDIndex: b[33], HopLimit: b[34], TClass: b[35], FlowLabel: binary.BigEndian.Uint32(b[52:]),
	}
	copy(u.GID[:], b[36:52])
	if hdrSize == HeaderSize {
		u.PKeyIndex = host.Uint16(b[56:])
	}
	return u, b[hdrSize:], nil
}
