// Package armgr is the subnet manager's adaptive routing manager (seed
// 003, docs/adaptive-routing.md). Once the subnet is up, every switch
// gets, through ibfab's vendor class 0x0A (LID-routed to QP1, as the
// congestion control manager's class 0x21):
//
//   - ARGroupTable: group 1 is all the switch's up ports (the fat-tree
//     ranks of package sm/routing/ftree: a port to a switch one rank
//     higher); a further group only where, on a fat tree with links missing, a destination
//     is reached minimally through some of them alone, so an adapted
//     packet never goes where it cannot arrive: the groups are the
//     alternatives of FatTreeUpPorts. On an RLFT or a k-ary n-tree group
//     1 is the only one.
//   - ARLIDTable: every CA LID, base and LMC aliases, whose leaf is not
//     below the switch → its group; LIDs below it (one way down) and
//     switch LIDs → 0, forwarded by the LFT alone.
//   - ARInfo: the mode, threshold and AFC VL of the configuration, Enable
//     unless the mode is off, GroupTop the switch's last group.
//
// The tables are written even with the mode off, so that a mode change at
// run time (Apply: `ibsm ar set`) is one ARInfo Set per switch. A switch
// met for the first time is read (ARInfo, then the blocks the manager
// writes); after that only what differs from what it last read or wrote
// is sent, the groups first, then the LIDs, then ARInfo, so a switch
// never enables a group before its ports are in place. Every route an
// adaptive choice makes stays up*/down* on the ranks, so adaptive routing
// closes no credit loop.
//
// A fabric that is not a fat tree (ftree's ranks refuse it) gets adaptive
// routing off on every switch that answers, and, when a mode was asked
// for, an "error" Event saying why. With the manager on, the SM also
// sets SLtoVL (SL s on VL s mod the port's data VLs) and equal-weight VL
// arbitration on every port (sm.Config.VLTables is VLTablesSet): the
// static queuing schemes choose the VL by the SL, and the AFC VL is arbitrated
// as the others are.
//
// The manager knows nothing of the SM: package sm hands it the subnet a
// sweep brought up (View) and the transaction layer it sends through
// (Sender), and holds it behind sm.AdaptiveRoutingManager; the control
// calls reach it on the SM's goroutine (sm.SM.ARCall).
package armgr
