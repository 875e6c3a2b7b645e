// Package pipe is an in-memory link.Endpoint pair, the counterpart of
// wireguard-go's bindtest. Unit tests cross-wire ports with it; a node
// process gives an HCA port without a cable one end of a pair whose
// carrier is off, a port with nothing plugged in (its far end is never
// used), so that the port exists, reads Down/Polling and counts what is
// sent to it as silicon's would. NewPair returns two endpoints
// cross-wired like the two ends of a veth, with a carrier the test switches
// (SetCarrier), a hook to drop or corrupt packets in flight (SetMutate), and
// Idle to wait until everything written has been delivered.
//
// Each endpoint has a bounded receive queue (Options.QueueLen packets) and
// one delivery goroutine, started by Attach, that makes every Dispatcher
// call of that endpoint, packets and carrier changes alike, in order. When
// the queue is full a packet written to it is dropped and counted
// (Stats.DroppedFull) and WritePacket still returns nil: the behaviour of a
// receiver whose ring overflows, which the sender cannot see. The port
// layer's credits keep data VLs from ever getting there.
//
// Closing one end does not take the other's carrier down, as with a veth
// whose process died: the survivor only stops hearing from it, and packets
// written to a closed end are dropped and counted (Stats.DroppedClosed).
package pipe
