// Package link is the seam between a port's data plane and the medium it
// sends on: one Endpoint per port, carrying whole IBA packets (data or link)
// and reporting the medium's carrier. The port logic (credits, pacing,
// arbitration, port state, in package port) sees only this interface.
//
// Implementations live in subpackages, one per medium:
//
//   - veth: an AF_PACKET socket on a veth end (Linux), the real fabric;
//   - pipe: a cross-wired in-memory pair, for unit tests;
//   - sniff: a decorator that copies every packet to an ERF pcap capture.
//
// linktest holds the conformance suite all of them pass, a recording
// Dispatcher and a goroutine leak check, for their tests and their users'.
//
// Packets cross the seam without the Ethernet header: the endpoint adds and
// strips whatever framing its medium needs, and Kind says which EtherType
// the packet travels under. Besides IBA data and link packets, a port
// sends training frames (Training: the link widths and speeds it enabled),
// the physical-layer signalling of real link training, which the capture
// path leaves out. An endpoint that implements Transmitter lets its port
// go dark, so the peer loses the carrier as on a dark fibre.
package link
