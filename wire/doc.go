// Package wire encodes and decodes the InfiniBand frames that cross the
// soft fabric's links.
//
// A frame on a veth is an Ethernet II frame whose EtherType says what it
// carries: EtherTypeData (0x88B5) an IBA data packet exactly as it is on an
// IB link (LRH [GRH] BTH [DETH] payload ICRC VCRC), EtherTypeLink (0x88B6) an
// IBA link packet (flow control). Each header is a typed view over bytes
// (LRH, GRH, BTH, DETH, FlowControl) with named offsets and one accessor pair
// per field; callers check IsValid before reading fields. The same views back
// the gopacket layers registered in layers.go, so gopacket tools and the
// capture path decode every frame. Management datagrams (the payload of
// QP0/QP1 packets) live in the subpackage mad.
//
// Sending: AppendUD builds a sealed UD packet (a MAD, say) in one call;
// other packets are laid out with the views and finished by Seal, which
// fills in PktLen, GRH PayLen, ICRC and VCRC. A switch that rewrites the VL
// calls SealVCRC. Link packets come from AppendFlowControl.
//
// Receiving: Verify checks a data packet's length, VCRC and ICRC without
// allocating, and its error wraps ErrShort, ErrPktLen, ErrVCRC, ErrICRC, …
// so a port can count PortRcvErrors by cause; VerifyFlowControl does the same
// for link packets. For decoding, a gopacket.DecodingLayerParser over
// layers.Ethernet, LRHLayer, GRHLayer, BTHLayer, DETHLayer and
// FlowControlLayer allocates nothing per packet; set the DETHLayer's BTH
// field to the parser's BTHLayer so that QP0/QP1 payloads go on to
// mad.LayerTypeMAD.
package wire
