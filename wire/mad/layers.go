package mad

import "github.com/gopacket/gopacket"

// decodeMAD is a placeholder until the MAD layer lands.
func decodeMAD(data []byte, p gopacket.PacketBuilder) error {
	return p.NextDecoder(gopacket.LayerTypePayload)
}
