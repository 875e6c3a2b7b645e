// Package memport provides Port, an in-memory madport.Port backed by
// a memfabric.Fabric: the management software under test sits on one
// node's port (a CA port, or a switch's port 0), its sends go into that
// node's SMI as the node's own SM's would, the fabric moves them hop by
// hop through the agents, and what the agents hand back to the SM comes
// out of Recv.
//
// The fabric is synchronous: Send runs it until nothing is in flight, so
// the answers to everything sent are queued before Send returns. Recv
// with nothing queued lets emulated time pass instead of blocking: it
// advances the fabric's manual clock to its next timer (an agent's trap
// repeat, or a timeout the caller scheduled on Clock), runs the fabric
// again and looks once more. A caller that schedules its timeouts on
// Clock therefore sees lost requests time out at once and in a fixed
// order, with no sleeping; Recv blocks only when no timer is left.
//
// Several ports of one fabric, each read by a goroutine of its own (two
// subnet managers electing a master), join a Group: what one sends wakes
// the other's Recv at once, and the clock moves only when all of them
// wait with nothing queued (group.go).
//
// The fabric changes at run time through the port (changes.go): nodes
// lose power and get it back (PowerOff, PowerOn), links go down and up
// (SetLink), pieces are cabled in (AddPiece). The neighbours' agents see
// their ports change and send Trap 128 to the SM as a real fabric's
// switches do.
package memport
