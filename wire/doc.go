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
package wire
