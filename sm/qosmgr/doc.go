// Package qosmgr is the subnet manager's QoS manager: flows admitted by
// package sm/qos, their reservations written into the high-priority VL
// arbitration tables of every output port on their paths, SLtoVL mapping
// SL n to VL n, LimitOfHighPriority keeping best effort alive. After each
// sweep and assimilation (Sweep) every admitted flow's path is checked
// again: a flow whose route moved is admitted on its new path (reroute)
// or reported lost. Requests come in through Config.Flows at start and
// control calls (Serve: add, del, list) at run time; every decision goes
// out as an Event to Config.OnEvent, the last of a write carrying the
// VLArbitration blocks and SMPs the write took.
//
// The manager knows nothing of the SM: package sm hands it the paths of
// its routes on the subnet up (Paths) and the writer of the arbitration
// tables (Tables), and holds it behind sm.QoSManager. The tables are not
// sent from here because they are the VL table distribution's: one
// shadow, and one low-priority table per port that the manager shares
// with best effort; the distribution asks HighTable and HighLimit of each
// port it configures.
package qosmgr
