// Package sniff is a link.Endpoint decorator that copies every packet
// crossing it, in both directions, to a capture.Writer: ERF records of type
// 21 for data packets and 25 for link packets, the pcap format tshark and
// Wireshark read as ibdump's. It plays the part of gVisor's sniffer
// endpoint: wrap a port's endpoint before attaching the port, and the port
// does not know it is being watched.
//
// Timestamps come from the injected clock (emulated time under
// --time-scale). The first failed capture write stops the capture, not the
// link; Err reports it.
package sniff
