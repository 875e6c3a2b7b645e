package capture

import (
	"encoding/binary"
	"fmt"
	"time"
)

// ERF record header (Endace ERF, as carried inside pcap LINKTYPE_ERF):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|          timestamp (64-bit little-endian, 32.32 fixed point)  |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|     type      |     flags     |         rlen (big-endian)     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|        lctr (big-endian)      |         wlen (big-endian)     |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                 payload: the IBA packet from the LRH or the   |
//	|                 link packet's first byte                      |
const (
	erfTimestamp = 0
	erfType      = 8
	erfFlags     = 9
	erfRlen      = 10
	erfLctr      = 12
	erfWlen      = 14

	// ERFHeaderSize is the size of an ERF record header without extensions.
	ERFHeaderSize = 16

	erfTypeExtMask  = 0x80 // type bit: extension headers follow
	erfFlagVarLen   = 0x04 // flags bit: variable-length record (no padding)
	erfTypeFieldMax = 0x7f

	// LinkPacketSize is the size of an IBA link packet (flow control:
	// Op, FCTBS, VL, FCCL, LPCRC).
	LinkPacketSize = 6

	// linkRecordSize is what a link packet is padded to in a record.
	// Wireshark's link-packet dissector (4.0 and earlier) also runs its
	// data-packet column code over the record, reading an LRH and, by the
	// LNH bits that FCTBS happens to hold, a GRH or BTH behind it; a bare
	// 6-byte record then always decodes as malformed. Zero padding to 64
	// bytes, like an Ethernet minimum frame, covers every LNH value; the
	// Reader strips it again.
	linkRecordSize = 64
)

//go:generate go tool stringer -type=RecordType -linecomment

// RecordType is the ERF record type of a capture record.
type RecordType uint8

// ERF record types for InfiniBand.
const (
	// TypeInfiniBand: data packet from the LRH on
	TypeInfiniBand RecordType = 21 // INFINIBAND
	// TypeInfiniBandLink: link packet (flow control)
	TypeInfiniBandLink RecordType = 25 // INFINIBAND_LINK
)

// putERFHeader writes a header for a packet of n bytes captured at ts.
func putERFHeader(b []byte, t RecordType, ts time.Time, n int) {
	sec := uint64(ts.Unix())
	frac := (uint64(ts.Nanosecond()) << 32) / uint64(time.Second)
	binary.LittleEndian.PutUint64(b[erfTimestamp:], sec<<32|frac)
	b[erfType] = byte(t)
	b[erfFlags] = erfFlagVarLen
	binary.BigEndian.PutUint16(b[erfRlen:], uint16(ERFHeaderSize+n))
	binary.BigEndian.PutUint16(b[erfLctr:], 0)
	binary.BigEndian.PutUint16(b[erfWlen:], uint16(n))
}

// parseERF splits one ERF record into its type, timestamp and payload.
func parseERF(rec []byte) (RecordType, time.Time, []byte, error) {
	if len(rec) < ERFHeaderSize {
		return 0, time.Time{}, nil, fmt.Errorf("capture: ERF record of %d bytes, shorter than its %d-byte header", len(rec), ERFHeaderSize)
	}
	if rec[erfType]&erfTypeExtMask != 0 {
		return 0, time.Time{}, nil, fmt.Errorf("capture: ERF extension headers are not supported")
	}
	rlen := int(binary.BigEndian.Uint16(rec[erfRlen:]))
	wlen := int(binary.BigEndian.Uint16(rec[erfWlen:]))
	if rlen < ERFHeaderSize || rlen > len(rec) {
		return 0, time.Time{}, nil, fmt.Errorf("capture: ERF rlen %d outside [%d, %d]", rlen, ERFHeaderSize, len(rec))
	}
	payload := rec[ERFHeaderSize:rlen]
	if wlen < len(payload) {
		payload = payload[:wlen] // the rest is padding
	}
	ts := binary.LittleEndian.Uint64(rec[erfTimestamp:])
	sec := int64(ts >> 32)
	nsec := int64(((ts & 0xffffffff) * uint64(time.Second)) >> 32)
	return RecordType(rec[erfType] & erfTypeFieldMax), time.Unix(sec, nsec).UTC(), payload, nil
}
