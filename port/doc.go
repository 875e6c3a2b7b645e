// Package port is one InfiniBand port's link layer (IBA 1.2.1 chapter 7),
// shared by the soft switch and the soft HCA: it sits on a link.Endpoint
// (a veth, or an in-memory pipe in tests) and gives the node above it a
// Send method and a Receiver callback.
//
// # Transmit
//
// Send queues a packet on the VL its LRH names. One transmitter goroutine
// per port sends, in this order: flow-control packets that are due, then
// VL15, then the data VL the arbiter picks among those whose head packet
// the peer has credit for (arbiter.go: high and low tables of 64 (VL,
// weight) entries and LimitOfHighPriority, IBA §7.6.9). Packets are paced:
// one never starts before the previous one's serialization time at the
// link's 8b/10b data rate at the width and speed it trained at (4X SDR =
// 8 Gb/s) has passed, by sleeping on the
// injected clock, never by spinning (tx.go states the error bound).
//
// # Credits
//
// Data VLs are lossless: per VL, in 64-byte blocks, with the spec's 12-bit
// FCTBS, FCCL and ABR counters carried by real flow-control link packets
// (credits.go has the arithmetic). A port sends them when the link trains,
// when the node releases received packets and the peer's remaining credit
// has fallen to half the buffer (updates coalesce), and every
// KeepaliveInterval (one VL in turn once the link is up). A sender without credit waits (PortXmitWait counts
// it); nothing is dropped for lack of buffer. VL15 is not flow controlled:
// an SMP that finds the VL15 buffer full is dropped (VL15Dropped).
//
// Each data VL has its own receive buffer (Config.RxBlocks, or per VL
// Config.VLBlocks; 0 means none, never credited), which SetVLBlocks
// resizes at run time. The sender side knows its peer's buffers only from
// their credits: Downstream gives, per VL, the largest window the peer
// advertised since the link trained and how much of it is used now, the
// downstream occupancy a switch's adaptive routing compares.
//
// # Receive
//
// DeliverPacket verifies each packet (CRCs, lengths), checks it against
// the port's state and VLs, takes its blocks from the VL's receive buffer
// and hands it to the Receiver as a pooled Packet. The blocks come back,
// and the peer gets the credit, when the node calls Packet.Release: a
// switch releases an input packet only when the output port has sent it,
// which is what makes backpressure reach the source hop by hop. The
// last release also calls Config.OnRelease, which tells an input-queued
// switch that the head of a FIFO has left.
//
// # States
//
// The physical state follows the carrier and the peer's training frame
// and link packets; the logical state follows it and the SM (IBA §7.2):
//
//	physical:  Disabled <--SM--> Polling --peer's training frame and
//	                               ^        link packets--> LinkUp
//	                               |                          |
//	                               +-- carrier lost, no link -+
//	                                   packet for LivenessTimeout,
//	                                   SM Set Down or Polling (reset)
//
// What the SM does to a port reaches its peer as on silicon, through the
// medium (link.Transmitter): Disabled turns the transmitter off until the
// SM sets Polling again; Set Down, and Polling on a link that is up,
// retrain it: the transmitter goes dark for RetrainDelay and both ends
// train again. Before going dark the port still sends VL15 for DrainTime,
// so that the SMA's answer to the Set leaves first.
//
// # Width and speed
//
// A port supports the widths and speeds silicon of its cable's rate
// trains at, enables them all out of reset (SetLinkEnabled changes that
// for the next training), and trains at the widest width and fastest
// speed both ends enabled, learnt from the peer's training frame
// (link.Training, physical-layer signalling kept out of the IBA packet
// stream); the pacer runs at that rate (training.go).
//
//	logical:   Down --LinkUp--> Init --SM Set--> Armed --SM Set--> Active
//	            ^                 |    (SMPs      |    or first    (all
//	            |                 |     only)     |    data packet  traffic)
//	            +---- link lost or SM Set Down ---+------------------+
//
// In Init only SMPs (VL15) go out or come in; Armed also takes in data
// packets, and the first one makes the port Active; Active passes
// everything. What a state does not let through is dropped and counted.
// Going Down drops every queued packet (link down while queued), and the
// port loses its receive buffer as silicon does: the packets it received
// before, which a switch has queued on other ports, are orphans. Send
// refuses them and DropOrphans, which a switch calls on each of its ports
// when one goes Down, removes them; both count them on the port that went
// Down (input port down). A state change is reported through
// Config.OnStateChange, which the SMA turns into PortStateChange and
// Trap 128.
//
// # Counters
//
// Counters and CountersExtended return the PMA attributes' counters;
// Drops returns drops by cause (design §3), to which the node adds the
// causes only it knows (CountDrop: unroutable, Pout = Pin, P_Key).
//
// # Locking
//
// One mutex per port, mu, guards all of its state; nothing blocks while
// holding it. Calls that leave the port (Endpoint.WritePacket, the
// Receiver, OnStateChange, Packet.Release, which may enter another port)
// are made with mu released, so a switch's ports never hold two port locks
// at once. Timer callbacks take mu themselves.
package port
