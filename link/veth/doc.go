// Package veth is the real link.Endpoint: an AF_PACKET raw socket bound to
// one interface (a veth end, or any Ethernet netdev such as a VXLAN device)
// in the current network namespace.
//
// Receive: the socket is bound to every protocol and a classic BPF filter,
// attached before the bind so nothing slips through, passes only the
// EtherTypes 0x88B5 (data) and 0x88B6 (link); PACKET_IGNORE_OUTGOING keeps a
// port from hearing its own frames. One goroutine, started by Attach, blocks
// in the Go runtime's poller (no busy polling), reads each frame into one
// reused buffer, strips the Ethernet header and hands the IBA packet to the
// Dispatcher. Close closes the socket, which wakes the blocked read.
//
// Send: WritePacket prepends an Ethernet header (destination the peer's MAC
// once a frame from it has been seen, broadcast before that, which a
// point-to-point veth delivers all the same; source the interface's MAC) in
// a reused buffer and writes the frame with one system call.
//
// Carrier: the interface's IFF_LOWER_UP flag, read at Open and then followed
// through an rtnetlink link subscription (no polling). A veth loses it when
// either end is set down or deleted; a peer process that merely dies leaves
// it up, and the port layer's link-liveness timeout notices that instead.
// An Endpoint follows one interface instance: once that is deleted its
// carrier stays down, and a re-created interface needs a new Endpoint.
package veth
