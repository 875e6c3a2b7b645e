// Package mgmtplane runs every node of a topology in one process: the
// management plane of a fabric without its data plane, as ibsim is, at
// sizes a process per node cannot reach. The agents are the node
// processes' own (package agent: SMA, PMA, CC, the vendor AR class,
// M_Key, traps), joined in memory by memfabric, which moves each MAD
// hop by hop along the topology's links.
//
// A CA's client side is what a soft HCA gives its clients: the umad
// endpoint (umadep: kernel semantics, RMPP, any number of clients) and
// the ibsim-protocol attach point (attach: libumad2sim's), opened on
// demand (Plane.Open) under names of their own, since all of them live
// in one network namespace: an idle CA of a 100,000-node fabric costs
// its agent and nothing else.
//
// Time is the fabric's manual clock (internal/clock.Manual) moved along
// with the wall clock: the loop (Plane.run) advances it to now, which
// fires the agents' timers, moves every MAD in flight until none is,
// and hands what reached a CA's client side to its endpoints, on each
// MAD a client sends and otherwise at the agents' next deadline (at
// least every maxIdle).
//
//	p, _ := mgmtplane.New(topo, mgmtplane.Config{})
//	p.Start()
//	names, _ := p.Open("ca1") // names.UMAD, names.Sim: the sockets to attach at
package mgmtplane
