// Package sm is ibfab's subnet manager, independent of its transport: it
// talks to the fabric through a madport.Port (the ibsim client protocol,
// umad on a real HCA, or memport's in-memory fabric of agents).
//
// # A sweep
//
// SM.Sweep brings a subnet up in four phases, each timed and counted in
// SMPs (Result, which marshals to the JSON line ibsm prints):
//
//   - discovery: full directed-route discovery in propagation order, as in
//     the thesis's chapter 5 (discover.go); LIDs are given as nodes
//     answer, from a LIDMap that keeps them stable across sweeps and,
//     through Config.LIDFile, across restarts; LMC gives CA ports 2^LMC
//     LIDs. The SM then holds the SM election (sminfo.go).
//   - routing: a pluggable engine (sm/routing and its engine packages;
//     routing.Engines: updn-fera and updn-pira from the thesis's chapter
//     6, minhop, ftree, dmodk: D-mod-K on fat trees, seed 003) computes
//     every switch's linear forwarding table, and routing.Verify checks
//     the result before any of it is sent: every pair of end ports connected through the tables,
//     the channel dependency graph acyclic, no down→up turn for up*/down*.
//   - distribution: NodeDescriptions read; SwitchInfo, LFT blocks, SLtoVL
//     and VL arbitration tables written (configure.go; with
//     Config.VLTables keep, the devices keep their own SLtoVL and
//     arbitration tables); later sweeps send only what changed.
//   - activation: every cabled port configured (MTU, VLs, LIDs, SM LID)
//     and moved Init → Armed, then all of them Active.
//
// # Changes
//
// SM.Run sweeps, then watches: it answers SMInfo requests, represses
// traps, and takes every change in with SM.Assimilate (the thesis's
// chapters 5 to 7), one Result with event "assimilation" each:
//
//   - detection (Config.Detect, partial.go): a sweep reads SwitchInfo of
//     every switch, LID-routed, every SweepFactor × the last sweep's
//     duration (or SweepInterval), the other SMs asked for their SMInfo
//     at the same time; a switch with PortStateChange set is
//     cleared and its ports read. A Trap 128 has its switch cleared and
//     read at once, back along the route the trap came (traproute.go). A port Down where a link was is a deactivation, one
//     up where none was an activation; everything a sweep (and the traps
//     meanwhile) finds is one assimilation;
//   - discovery (Config.Discovery): partial, the thesis's protocol of
//     WAITING/REACHABLE/MISSING devices and destinationDevices, new
//     devices explored and lost ones found again through LID-routed
//     prefixes and directed suffixes (probe.go), LIDs kept; or full,
//     from scratch;
//   - routing: the engine, or with Config.Provisional PIRa first and FERa
//     after on the same up*/down* graph (provisional.go);
//   - distribution (Config.Distribution, protect.go): full deactivation,
//     ports at cut nodes, dependencies at cut nodes (SLtoVL to VL15,
//     tracked and undone), or none; only the LFT blocks that change go;
//     a port set Down retrains with its link's far end, as on silicon:
//     the Sets go in waves that never need a dark link, and both ends
//     are read back in Init before the tables (deactivate.go);
//     Config.OnTables hears of every forwarding state on the way
//     (TableState), which VerifyState and TransitionCheck check;
//   - activation, LID-routed with Config.LIDActivation; after a
//     deactivation it takes back the traps and PortStateChange the
//     deactivation caused, when the switches' ports are as expected.
//
// A subnet that fails to come up, or an SMInfo Set, fall back to light
// sweeps every SweepInterval and full sweeps.
//
// # Other SMs
//
// The election, handover and failover of IBA 14.4, as OpenSM behaves
// (sminfo.go, standby.go): a standby SM polls the master's SMInfo and
// sends nothing else; when the master stops answering it takes the subnet
// over keeping LIDs and, when they verify, the forwarding tables; a master
// hands over to a higher SM it finds, at a sweep or by that SM's Trap
// 144. Config.OnSMEvent hears of every transition.
//
// # Transactions
//
// Every SMP is a transaction with a TID (package sm/txn): at most
// Config.Window in flight, each resent after Config.Timeout up to
// Config.Retries times. The
// window adapts (AIMD, as TCP's): a lost SMP (one that times out while
// SMPs sent after it are answered) halves it, down to 1, and runs of
// answers widen it again, back to Config.Window; Result.WindowMin says how
// narrow it got in a sweep.
// Everything runs on the caller's goroutine, and timeouts are timers on a
// clock.Clock: the port's own when it has one (ClockPort, as memport's
// manual clock), so tests on a fake fabric time out without sleeping.
//
// # Ports
//
// OpenPort resolves port specs ("sim:NAME", "umad:CA:PORT", "fake:FILE")
// through the schemes registered with RegisterPort by the packages that
// implement them.
package sm
