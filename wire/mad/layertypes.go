package mad

import "github.com/gopacket/gopacket"

// Layer types of this package, in gopacket's application range; the wire
// package holds 1000-1009.
var (
	// LayerTypeMAD is the common MAD header carried by QP0/QP1 packets.
	LayerTypeMAD = gopacket.RegisterLayerType(1010, gopacket.LayerTypeMetadata{Name: "IBMAD", Decoder: gopacket.DecodeFunc(decodeMAD)})
)
