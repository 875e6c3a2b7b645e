package mad

import "github.com/gopacket/gopacket"

// Layer types of this package, in gopacket's application range: the wire
// package holds 1900-1909 and this package 1910-1919 (see wire/layers.go for
// why the top of the range).
var (
	// LayerTypeMAD is the common MAD header carried by QP0/QP1 packets.
	LayerTypeMAD = gopacket.RegisterLayerType(1910, gopacket.LayerTypeMetadata{Name: "IBMAD", Decoder: gopacket.DecodeFunc(decodeMAD)})
	// LayerTypeSMP is the body of a LID-routed SMP (class 0x01).
	LayerTypeSMP = gopacket.RegisterLayerType(1911, gopacket.LayerTypeMetadata{Name: "IBSMP", Decoder: gopacket.DecodeFunc(decodeSMP)})
	// LayerTypeDRSMP is the body of a directed-route SMP (class 0x81).
	LayerTypeDRSMP = gopacket.RegisterLayerType(1912, gopacket.LayerTypeMetadata{Name: "IBDRSMP", Decoder: gopacket.DecodeFunc(decodeDRSMP)})
	// LayerTypePMA is the body of a performance management MAD (class 0x04).
	LayerTypePMA = gopacket.RegisterLayerType(1913, gopacket.LayerTypeMetadata{Name: "IBPMA", Decoder: gopacket.DecodeFunc(decodePMA)})
)
