// Package sm is ibfab's subnet manager, independent of its transport: it
// talks to the fabric through a madport.Port (the ibsim client protocol,
// umad on a real HCA, or madporttest's in-memory fabric of agents).
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
//   - routing: a pluggable engine (Engines: updn-fera and updn-pira from
//     the thesis's chapter 6, minhop, ftree) computes every switch's
//     linear forwarding table, and Verify checks the result before any of
//     it is sent: every pair of end ports connected through the tables,
//     the channel dependency graph acyclic, no down→up turn for up*/down*.
//   - distribution: NodeDescriptions read; SwitchInfo, LFT blocks, SLtoVL
//     and VL arbitration tables written (configure.go); later sweeps send
//     only what changed.
//   - activation: every cabled port configured (MTU, VLs, LIDs, SM LID)
//     and moved Init → Armed, then all of them Active.
//
// SM.Run sweeps, then watches: it answers SMInfo requests, represses
// traps, makes a light sweep (SwitchInfo.PortStateChange of every switch)
// every Config.SweepInterval, and sweeps again when something changed.
//
// # Transactions
//
// Every SMP is a transaction with a TID (txn.go): at most Config.Window in
// flight, each resent after Config.Timeout up to Config.Retries times.
// Everything runs on the caller's goroutine, and timeouts are timers on a
// clock.Clock: the port's own when it has one (ClockPort, as madporttest's
// manual clock), so tests on a fake fabric time out without sleeping.
//
// # Ports
//
// OpenPort resolves port specs ("sim:NAME", "umad:CA:PORT", "fake:FILE")
// through the schemes registered with RegisterPort by the packages that
// implement them.
package sm
