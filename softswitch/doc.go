// Package softswitch is the node engine of a soft InfiniBand switch: the
// crossbar that joins one port.Port per cabled physical port and the switch's
// subnet management agent (agent.Agent, port 0). The switch process wraps it
// around veth endpoints; tests wrap it around pipes.
//
// # Data path
//
//	          port i (input)                               port o (output)
//	link ──► DeliverPacket ──► Receive(i) ──┬─ DLID unicast: agent.OutPort ──┐
//	         (CRCs, state,     (crossbar)   ├─ DLID multicast: MulticastPorts├─► Send ──► link
//	          VL buffer)                    │   VL: VLFor(i, o, SL), VL15 kept│   (queue, arbiter,
//	                                        │   rewrite LRH VL + VCRC        ┘    credits, pacing)
//	                                        └─ QP0/QP1 for the switch ──► agent.HandleMAD
//	                                                                        │ []Outbound
//	                                               wire.AppendUD ◄──────────┘ (VL15 SMPs, GMPs)
//
// A forwarded packet is the input port's own buffer: Receive hands it to the
// output's Send, which releases it after the bytes have left, and only then
// does the input port get its blocks back and credit the upstream peer.
// When the crossbar routes a packet depends on the switch architecture
// (arch.go): at once in the VOQ switch (the default: every packet is queued
// at its output on arrival), when it reaches the head of its input port's
// FIFO for its VL in the IQ switch, where the input port's release hook
// (port.Config.OnRelease) says the head has left. Where it goes is the
// LFT's port, or, under adaptive routing (adaptive.go; the agent's
// ARTable), the least occupied downstream among the destination's
// alternative ports, by the credits each output holds; in AFI mode an
// adapted packet is marked (BTH adapted bit) and kept on the AFC VL.
// That is virtual cut-through with backpressure (design §3): a stalled output
// stops the input, the input's credits stop the upstream sender, and nothing
// is dropped for lack of space. Multicast takes one reference per extra
// output; an output whose SL→VL mapping differs from the first one gets a
// copy, since the shared bytes can carry only one VL.
//
// Drops the crossbar decides are counted on the input port by cause
// (port.CountDrop): unroutable (no LFT or MFT entry, or the switch's own LID
// without a MAD), Pout = Pin, output not Active (data VLs; SMPs pass in Init
// and Armed), VL mapping (a data SL mapped to VL15), link down (uncabled or
// Down output), P_Key violation on a port with inbound partition
// enforcement (PortRcvConstraintErrors). A data packet that fails the
// outbound partition check of its output port is counted on that port
// (port.CountXmitDrop, PortXmitConstraintErrors); see forward.go for the
// rules. Drops of Send (state, VL, malformed) are counted by the
// output port itself. A MAD for the switch that is too short to be one is
// counted as malformed on the input port; the agent counts the rest.
//
// # Seams
//
// The agent sees the ports through portagent's Control and
// Counters; the switch's own part of a PortInfo Set is the VL arbitration
// the SM programmed, which syncArbitration copies to the port.
// Port state changes reach the agent through port.Config.OnStateChange, which
// calls agent.PortStateChanged; the agent raises Trap 128 through the
// switch's Sender, which routes it like any MAD it returns. A port going
// Down also makes the switch drop, from every port's queues, the packets
// that came in on it (port.Port.DropOrphans): its input buffer is gone,
// and with it the dependencies of the old routes that a deactivation is
// meant to end.
//
// # Locking
//
// The switch itself holds no lock on the data path. The ports are reached
// through atomic pointers, set once in New (a port may start receiving
// before its neighbours exist, which then count as link down); the agent's
// forwarding tables are lock-free reads. Each port's Receiver runs on that
// port's delivery goroutine without the port's lock, so Receive may call
// another port's Send, and the agent (which never calls out with its lock
// held) may be called from any of them. Nothing here waits on another port:
// Send never blocks because the switch runs its ports with an unbounded
// transmit queue (its input buffers bound what it can queue). The IQ
// FIFOs have one small lock per input port, never held while routing: a
// head is routed by whichever goroutine made it the head (the input's
// delivery goroutine, or the one whose release let the previous head go),
// unless another one is routing that input's heads already.
package softswitch
