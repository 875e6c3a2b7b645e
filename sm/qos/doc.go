// Package qos is ibsm's QoS admission: it turns a flow's request (source,
// destination, mean bandwidth, latency bound) into entries of the
// high-priority VL arbitration table of every output port on the flow's
// path, with the table-management model of package arbtable (seed 002,
// Alfaro's methodology), and says which port refused a flow that does not
// fit.
//
// The mapping, per output port of rate R and MTU M:
//
//   - Bandwidth becomes weight. The high-priority tables of a port hold at
//     most Budget 64-byte units of weight in all. Every reserved VL is
//     served at least its weight over Budget of what the high table sends
//     when all are backlogged, and the high table gets at least Share of
//     the link (LimitOfHighPriority is set so, and the rest goes to best
//     effort, which is never starved). A flow of b bit/s therefore
//     reserves ⌈b·Budget/(Share·R)⌉ units, rounded up so that each of its
//     entries holds whole packets of the flow's size: an entry then sends
//     exactly that many packets, never a partial one that the arbiter
//     would round up at its neighbours' expense.
//   - Latency becomes distance. Between two consecutive entries of a set
//     at distance d the arbiter serves at most d−1 other entries, each of
//     at most MaxEntryWeight units, and all of them together at most Budget; best
//     effort slips in one packet per LimitOfHighPriority×4096 bytes. The
//     bound of a level is that gap plus a low-priority packet in progress
//     and the flow's own packet, over R. The flow takes the largest
//     distance whose bound meets its per-hop latency (an end-to-end bound
//     is split evenly over the hops), or a smaller one when its weight
//     needs more entries than the distance gives.
//
// Flows are assigned an SL by their level on the first hop (SL n for
// level n = 1..6, SL 7 for level 0), and SLtoVL maps SL n to VL n, or to
// the last VL of a port with fewer: flows of one latency class share a
// VL, and none shares one with best effort (SL 0 on VL 0, the only VL of
// the low-priority table). Admission is all or nothing: every port of the path takes the
// flow, or none keeps it, and the error names the port that refused.
package qos
