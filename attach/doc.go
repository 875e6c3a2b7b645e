// Package attach is a soft HCA's attach point: it serves the ibsim client
// protocol (package simproto) on the HCA's abstract sockets, so that
// unmodified OpenSM and infiniband-diags run with LD_PRELOAD=libumad2sim.so
// in the HCA's namespace, and our SM through package simclient, send their
// MADs into the fabric as real frames from the HCA's port.
//
//	srv, _ := attach.New(attach.Config{NodeID: name})  // before the HCA:
//	h, _ := hca.New(hca.Config{..., MADClient: srv})   // it delivers to srv
//	srv.Attach(h)
//	srv.Start()                                         // in the HCA's namespace
//	defer srv.Close()
//	... srv.Stats()
//
// # Clients
//
// Start binds "<base>:ctl" and one MAD socket "<base>:out<n>" per slot
// (Config.MaxClients of them, 32 by default: ibsim has 10), and serves any
// number of clients up to that at once: an SM and several diagnostics.
// Connect gives a client the lowest free slot and connects the slot's
// socket to the client's, so that the socket a MAD arrives on names its
// sender. Every client attaches at Config.Port; a client asking for a node
// (umad2sim's SIM_HOST) other than Config.NodeID is refused, as ibsim
// refuses an unknown node, and so is a second client asking to be the SM.
// Clients killed without saying Disconnect are found when writing to them
// fails, or when a slot or the SM role is wanted and their socket is gone.
//
// Control queries are answered from the HCA's own SMA (local.go): NodeInfo
// and PortInfo by agent.LocalGet at the client's port, which is what an SM
// reading the port would see, exempt from M_Key protection as a real HCA's
// local MAD interface is; the vendor fields
// from NodeInfo; GUID and GID from the node GUID and PortInfo's GID prefix,
// as ibsim does; P_Keys from the agent's table; the LID and state from the
// agent and the port. SetIsSM (or Connect with IsSM) sets the port's IsSM
// capability while some client of the port is an SM.
//
// # MADs
//
// A client's MAD leaves through hca.SendMAD from the client's port:
// directed-route SMPs by their path on VL15, LID-routed SMPs and GMPs to
// the datagram's DLID and destination QP, with SL 0. The attach point does
// what the kernel's MAD layer does on a real host (rmpp.go): the MAD is
// zeroed past the length the client gave (libumad2sim leaves stack bytes
// there), an RMPP-active DATA MAD (OpenSM's SA answers) gets the RMPP
// header of a one-segment transfer, and a GMP carries the P_Key of entry
// 0 of the port's P_Key table, what the kernel sends for pkey_index 0:
// the ibsim protocol carries no P_Key index, so no other is possible.
// Requests that get a response (Get, Set, GetTable, Report, Trap, ...)
// have the client's slot written into bits 63-48 of their TID, as ibsim
// does, and are remembered: the response the HCA delivers (a TrapRepress
// for a Trap, matched on the slot and the low 32 bits of its TID) is
// matched by TID, its TID restored to the client's, and queued for that
// client. A request without a response within Config.Timeout is resent
// Config.Retries times, then handed back to its client with status
// ETIMEDOUT: the kernel's MAD layer does that for OpenSM on real hardware,
// and OpenSM waits for it (its Trap 144 included). A response that
// nothing waits for (a late one) is dropped and counted, as the kernel
// drops it. A client is told the length the kernel would report: 36 +
// PayloadLength for a one-segment RMPP transfer, 256 otherwise.
// Transfers of more than one segment are not done: libumad2sim cuts a
// longer MAD to 256 bytes before the attach point sees it. A client that
// does RMPP itself (it writes version 1, DATA and a segment number into
// its segments, as package rmpp does for ibsm's SA) has its headers left
// alone and is given the ACK, STOP and ABORT of its transfers; no other
// client gets one (a libumad2sim client would take an ACK for a new
// request): on a host the kernel consumes them. The umad endpoint
// (package umadep), which the HCA offers every MAD first, does RMPP in
// full for the clients of ibfab's umad shim.
//
// A request (a MAD that is not a response) goes to the client that takes
// its class (route.go): SMPs and SubnAdm requests to the port's SM
// client, the one in the lowest slot if several are (a SubnAdm Report to
// the last non-SM client that sent a SubnAdm MAD); another class to the
// client that most recently sent a MAD of it (not back to the client whose
// own request it is, looped back to its node), else to the one client
// that has sent nothing yet and is not the SM (a server such as ibping -S
// waiting for its first request). libumad2sim tells the server nothing
// of the classes a client registers and would fail on a MAD of a class
// it did not, so when no client qualifies, or two idle ones do, nobody
// gets it: a Get or Set is answered with status "unsupported
// method/attribute", as the kernel answers a request no agent is
// registered for, and anything else is dropped and counted.
//
// Delivery never blocks the HCA: each client has a queue, its receive
// list, drained in order by its own goroutine, which waits while the
// client does not read; past Config.QueueLen (the kernel's 200,000) a
// MAD is dropped and counted.
//
// # Bad input
//
// Control messages of the wrong size or magic are counted and ignored, as
// ibsim ignores them; those of an unknown type, or naming a slot the
// sender does not hold, are answered with CtlError. MAD datagrams of the
// wrong size are counted and dropped; MADs the agent finds malformed are
// its to count. Nothing a client sends can make the server panic.
//
// # Status
//
// Stats returns the clients, the control and MAD counters, the outstanding
// requests, timeouts, retries and drops by reason, JSON-friendly.
package attach
