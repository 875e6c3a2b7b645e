// Package madfuzz attacks a fabric's agents with MADs built to break them,
// through a madport.Port (a soft HCA's attach point, or memport in unit
// tests), and checks that the fabric survives: `ibfab fuzz` runs it.
//
// Each MAD is one of several shapes, chosen from a seeded source so that a
// run can be repeated: a directed-route SMP of a known or random
// attribute with a random modifier and payload; a directed route made
// wrong (hop count past 63, a hop pointer past the count, a loop, the
// return bit set on the way out, a port past the switch's); a LID-routed
// SMP or GMP of every class the fabric serves and of some it does not,
// every method, valid and random attribute IDs; wrong base or class
// versions; random M_Key, CC_Key and SM_Key; RMPP headers with random
// types, flags, lengths and segment numbers (0 among them); and mutations
// of the MADs sent so far (bytes flipped, set, copied). A madport.Port
// carries whole 256-byte MADs: truncated and oversized MADs and bad
// packet headers are for a raw-frame fuzzer on a veth, not this one.
//
// The invariant checked while it runs: after every CheckEvery MADs, a
// NodeInfo Get by directed route reaches every node of the topology and
// is answered; the run stops at the first check a node fails, and the
// report names the node and the fuzz MADs sent just before. The caller checks what the port cannot see (processes
// alive, memory).
package madfuzz
