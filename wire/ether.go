package wire

import (
	"encoding/binary"
	"slices"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// A frame on a veth is an Ethernet II header followed by one IBA packet
// (no FCS: the IBA CRCs protect the packet):
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                   destination MAC (6 bytes)                   |
//	+                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                               |                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
//	|                     source MAC (6 bytes)                      |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|           EtherType           |  IBA packet (LRH or link packet) ...
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Frames shorter than the Ethernet minimum may arrive padded; decoders find
// the end of the IBA packet from the LRH PktLen (data) or the fixed size
// (link), never from the frame length.
const (
	// EtherTypeData marks an IBA data packet (IEEE local experimental 1),
	// the role of an SDP-delimited packet on an IB link.
	EtherTypeData = 0x88B5
	// EtherTypeLink marks an IBA link packet (IEEE local experimental 2),
	// the role of an SLP-delimited packet.
	EtherTypeLink = 0x88B6

	// EthernetSize is the size of an Ethernet II header.
	EthernetSize = 14
	// MACSize is the size of a MAC address.
	MACSize = 6

	ethDst  = 0
	ethSrc  = 6
	ethType = 12
)

// AppendEthernet appends an Ethernet II header (dst, src, etherType) to b and
// returns the extended slice, ready for the IBA packet to be appended after
// it (AppendUD, AppendFlowControl). It does not allocate when cap(b)
// suffices.
func AppendEthernet(b []byte, dst, src [MACSize]byte, etherType uint16) []byte {
	start := len(b)
	b = slices.Grow(b, EthernetSize)[:start+EthernetSize]
	h := b[start:]
	copy(h[ethDst:], dst[:])
	copy(h[ethSrc:], src[:])
	binary.BigEndian.PutUint16(h[ethType:], etherType)
	return b
}

// Teach gopacket's Ethernet layer our EtherTypes, so that both
// gopacket.NewPacket(frame, layers.LayerTypeEthernet, …) and a
// DecodingLayerParser starting at Ethernet chain into the IBA layers.
func init() {
	layers.EthernetTypeMetadata[EtherTypeData] = layers.EnumMetadata{
		DecodeWith: gopacket.DecodeFunc(decodeLRH), Name: "IBAData", LayerType: LayerTypeLRH}
	layers.EthernetTypeMetadata[EtherTypeLink] = layers.EnumMetadata{
		DecodeWith: gopacket.DecodeFunc(decodeFlowControl), Name: "IBALink", LayerType: LayerTypeFlowControl}
}
