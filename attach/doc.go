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
// the datagram's DLID and destination QP, with SL 0 and the default P_Key
// (the protocol carries neither). Requests that get a response (Get, Set,
// GetTable, Report, ...) have the client's slot written into bits 63-48 of
// their TID, as ibsim does, and are remembered: the response the HCA
// delivers is matched by TID, its TID restored to the client's, and queued
// for that client. A request without a response within Config.Timeout is
// resent Config.Retries times, then handed back to its client with status
// ETIMEDOUT: the kernel's MAD layer does that for OpenSM on real hardware,
// and OpenSM waits for it. A response that nothing waits for (a late one)
// is dropped and counted, as the kernel drops it. MADs that are not
// responses (traps, SMInfo requests from other SMs, SA queries) go to the
// port's SM client, the one in the lowest slot if several are.
//
// Delivery never blocks the HCA: each client has a queue
// (Config.QueueLen) drained by its own goroutine; a full queue drops.
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
