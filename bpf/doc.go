// Package bpf injects faults into a soft fabric's links in the kernel: an
// eBPF tc program (fault.c, compiled by bpf2go; the objects are committed)
// attached with TCX to a veth end drops, corrupts or delays the frames that
// match its rules, at a rate and up to a count, and counts per rule what it
// matched and what it acted on.
//
// A rule matches on the frame's EtherType (0x88B5 data, 0x88B6 link), the
// VL (of the LRH, or of a flow-control packet), the LRH's SL, DLID and
// SLID, and for MADs (QP0 and QP1) the management class, the method byte
// and the attribute ID. Actions:
//
//   - drop: the frame never reaches the wire;
//   - corrupt: one bit of the packet's last word before the ICRC (the
//     LPCRC of a link packet) is flipped, so the receiver's CRC check
//     rejects it and counts a CRC error, as a bit error on a cable would;
//   - delay: the frame gets an earliest departure time (EDT) and the fq
//     qdisc on the device holds it until then. Frames behind a delayed one
//     wait for it: a link does not reorder. Without fq on the device a
//     delay rule does nothing (SetupFQ).
//
// Each Attachment is one copy of the program and its maps on one device and
// direction, pinned in a bpffs directory (link, rules, counters, edt), so
// that it outlives the process that made it: removing the directory
// (Detach, RemoveAll) unpins the link, which detaches the program.
//
// Where to attach: a node's port reads its veth with an AF_PACKET socket,
// and the kernel hands frames to packet sockets before tc ingress runs, so
// only egress sees a frame before the receiver does; frames a port receives
// are caught at its peer's egress. Egress programs, like the fq qdisc, see
// only frames that go through the device's queueing layer: a packet socket
// with PACKET_QDISC_BYPASS set skips both.
package bpf
