// Package hca is the soft HCA's node engine: what the ibhca process runs
// behind its control socket and attach point, without any of the process
// around it (sockets, flags, namespaces), so it is unit-tested over
// in-memory pipes on a manual clock.
//
//	             SendMAD(agent.Request)          MADClient.DeliverMAD
//	attach point ──────────────────────►  HCA  ─────────────────────► attach point
//	 (issue 4)                            │  │
//	          SendUD / Generator ─────────┘  └── agent.Agent (one CA SMA+PMA
//	                                     │       for the node; PortControl and
//	                 port.Port per link  │       Counters are the ports)
//	                 (credits, pacing,   │
//	                  port states)  ─────┘ Receiver: demux by BTH DestQP
//
// # Structure
//
// New builds one agent for the node (the agent's API is per node: it takes
// the arrival port with each MAD) and one port.Port per link.Endpoint. The
// agent sees the ports through portagent's Control and Counters;
// the HCA's own part of a PortInfo Set is the LID, which becomes the SLID of
// what the HCA sends. Every port state change is reported back with
// agent.PortStateChanged.
//
// # Receive
//
// Each port's Receiver parses LRH [GRH] BTH DETH and demultiplexes on
// DestQP: QP0 (SMPs, which the port accepts only on VL15) and QP1 (GMPs:
// PMA, later SA) go to agent.HandleMAD; what the agent returns is wrapped
// with wire.AppendUD(out.UDFields()) and sent, or, for Local outbounds
// (responses to the attached SM's requests, traps, SMInfo), handed to the
// MADClient. With a MADClient, GMPs the agent does not serve (every GMP
// response, requests of classes other than PerfMgt) are Local too
// (agent.Config.LocalGMP): an SA's answer to saquery at a node that is not
// the SM's reaches the attach point, which finds its client by TID. Other
// QPs are the UD data QP: the P_Key is checked against the
// port's table (agent.PKeyMatch; violations are counted as the port's
// DropPKey, PortRcvConstraintErrors), then the packet is counted and, when
// its payload carries a generator's send stamp, its one-way latency goes
// into the port's log-scale histogram (a flow's, into its flow's record).
// A packet that is not UD is counted
// as malformed and dropped. Every packet is released before Receive
// returns, so the peer gets its credit back at once.
//
// # Send
//
// SendMAD passes a MAD of the attached SM through agent.Send, which applies
// the originator's side of the directed-route rules; SMPs leave on VL15,
// GMPs on the VL the port's SLtoVL table gives their SL. SendUD sends one UD
// datagram from DataQP on the SL's VL.
//
// # Traffic
//
// A Generator makes Poisson arrivals at an offered load in percent of the
// port's data rate (width × speed × 8/10), counted in whole wire packets,
// to destinations uniform over a LID list or a hot spot taking a fraction
// of them, with a seeded RNG. It is driven by a timer of the injected clock:
// each callback sends every arrival due by now and sets the timer for the
// next, so it never spins and never blocks; arrivals that find the port's
// queue longer than MaxBacklog are counted as backlogged, not queued. A
// generator whose queue is full sleeps until about half of it should have
// drained, at the rate it last drained, counting the arrivals meanwhile in
// one step: a load far above what the fabric carries costs its host almost
// no CPU.
//
// # Flows
//
// Flows (StartFlow, StopFlow, FlowsSent) run beside a port's generator,
// several at once, each to one destination on one SL at a rate in bits/s
// of wire bytes, CBR or Poisson. A flow's packet is stamped when it is
// generated and waits in the flow's own bounded backlog until its VL's
// queue in the port holds fewer than a few packets: the port's queues are
// per VL, shared, while the backlog is the flow's, so a flow starved by
// arbitration shows per flow as backlog, source drops and latency. The
// payload carries a FlowTag (ID, sequence) after the send stamp; the
// receiving port accounts each (source LID, ID) on its own
// (FlowsReceived): packets, wire and payload bytes, loss and reordering,
// latency percentiles and a bounded time series, leaving the port's
// histogram to best effort.
//
// A flow may send messages (MessageBytes): each arrival is split into
// Payload-sized packets, all stamped with the message's generation time;
// the rate counts their wire bytes, every counter counts packets.
//
// # Congestion control
//
// Each port has a congestion control agent (Annex A10; cca.go, cnp.go).
// A UD data packet that arrives with FECN is answered with a CNP (BTH
// opcode 0x80, BECN set, LRH and BTH only) to its SLID, from the DLID it
// came to (an alias, with LMC), on its SL, to its source QP; CNPs are
// never answered. A CNP, or any packet with BECN, is a notification for
// the state of (destination base LID, SL) at the port it comes to; the
// settings are the agent's CACongestionSetting and CongestionControlTable
// for the port (agent.CCCASettings), read on each notification and timer
// tick, and an SL takes part only when its CCTI_Timer and CCTI_Increase
// are both set: with nothing programmed nothing acts. The state is kept
// per destination and SL whether Port_Control says SL- or QP-based: the
// HCA has one data QP, and its flows (one destination and SL each) stand
// for the QPs of a QP-based CA.
//
// In IBA mode (the default) a notification adds CCTI_Increase to the
// CCTI (from CCTI_Min, at most CCTI_Limit; a CCTI at or above
// Trigger_Threshold logs agent.CCLogCA), and a timer of CCTI_Timer ×
// 1.024 µs takes one off per period down to CCTI_Min, where it stops. The
// table entry at the CCTI, shift:multiplier, is the inter-packet delay
// (CCADelay: the packet's wire time at the port's rate, shifted right by
// shift, times multiplier, as Linux hfi1 reads it): a packet to the
// destination and SL leaves no sooner than the one before plus its wire
// time plus the IPD. A flow keeps what waits in its source backlog and
// wakes on a clock timer when the IPD ends (its stamps are generation
// times, so the wait is latency at the receiver); a generator, having no
// source queue, counts the arrivals held back as backlogged.
//
// In DRB mode (seed 004 §4.6) nothing is throttled: a destination's paths
// are its aliases base..base+min(2^LMC, cap)−1, the LMC being the
// sending port's own; alias i is sent on SL (flow SL + i). A notification
// counts on the path its SLID names and opens the next path while fewer
// than the cap are open; packets go over the open paths by smooth
// weighted round robin, path i weighing 1/(1 + its notifications); each
// CCTI_Timer period without a notification closes the most recently
// opened path (never the base) and halves the counts. Mode off counts
// notifications and ignores them. SetCCA sets the mode of every port;
// CCAStatus reports counters and every destination's state.
//
// # Status
//
// Stats returns every port's state, LID, data counters, drops by cause,
// latency histogram and generator counters as a JSON-friendly struct, the
// shape the control socket exposes.
package hca
