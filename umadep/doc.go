// Package umadep is a soft HCA's kernel-semantics MAD endpoint: what the
// kernel's ib_umad devices give a process on a real host, served over the
// protocol of package umadproto on an abstract socket in the HCA's
// namespace. The LD_PRELOAD shim in umadshim/ puts unmodified libibumad
// programs (OpenSM, infiniband-diags, ibping) on it; Go programs use
// umadproto.Dial.
//
//	ep := umadep.New(umadep.Config{Clock: clk})
//	ep.Attach(umadep.HCAPort(h))
//	ep.Start()                      // in the HCA's namespace
//	... hca MADClient: if !ep.Claim(port, o) { attachPoint.DeliverMAD(port, o) }
//
// # Agents
//
// A umad connection (one open umadN: one HCA port) registers agents as
// the kernel's register ioctls do (Register): QP 0 for the subnet
// management classes, QP 1 for the others, a class version, a 128-bit
// method mask, an OUI in the vendor range 2, an RMPP version; class 0
// makes an agent that only sends. A method already registered for the
// class and version on the port is refused (EINVAL), so one server owns
// each method. Each agent gets 32 bits, written into the top of the TID
// of every request it sends (their top bit set, so they never collide
// with the ibsim-protocol attach point's slot numbers).
//
// # Dispatch (Claim)
//
// A MAD the HCA received for its local side goes, in this order:
//   - an RMPP ACK, STOP or ABORT to the transfer it belongs to (port,
//     TID, class, peer LID) that the endpoint is sending or receiving;
//   - a response (R bit, or TrapRepress) to the agent its TID's top 32
//     bits name, if one of that agent's requests waits for it; else it
//     is dropped, as the kernel drops a late response;
//   - a request to the agent of the port registered for its class,
//     version and method (and OUI).
//
// What none claims goes on to the ibsim-protocol attach point, which
// answers a Get or Set no one takes with "unsupported method/attribute".
// An agent registered with RMPP version 1 (and without FlagUserRMPP) gets
// an RMPP transfer reassembled (package rmpp: ACKs, window, aborts), and
// is told its whole length, as the kernel reports it.
//
// # Sends
//
// A MAD written to a umad connection goes out of the connection's port
// from its agent (which must be the connection's): zero-padded to 256
// bytes, or, when the agent does RMPP and the MAD has the Active flag,
// cut into a transfer of any length. Sends wait in a queue with no bound
// a client reaches (the kernel puts what its send queue cannot take on an
// overflow list), and what the HCA receives for a client waits on the
// connection's receive list, up to the kernel's 200,000. A request with
// timeout_ms waits for its response, timed from when it left the HCA (the
// kernel times it from the send's completion, so a burst does not time
// out while queued); without one in time it is resent retries times, then
// handed back to the client with status ETIMEDOUT and its MAD header, as
// the kernel hands back a timed-out send. A GMP carries the P_Key at its
// pkey_index in the port's table (the default partition for an index past
// it or an empty entry): the P_Key in the BTH on the wire. A received
// MAD's header tells its source LID, SL, QP, and the index of its P_Key
// in the port's table. All MADs go to the HCA from one goroutine, so a MAD
// looped back to the node finds no lock of its sender held.
//
// # sysfs
//
// The control op Sysfs renders, live from the HCA's SMA, the files
// libibumad reads under /sys/class: infiniband/<ca>/{node_type,
// node_guid, sys_image_guid, fw_ver, hw_rev, hca_type, node_desc} and per
// port ports/N/{lid, lid_mask_count, sm_lid, sm_sl, state, phys_state,
// rate, cap_mask, link_layer, gids/0, pkeys/I}, and infiniband_mad/
// {abi_version, umadN/{ibdev,port}, issmN/{ibdev,port}}, umadN and issmN
// standing for port N+1. An open issm connection sets the port's IsSM
// capability bit until it closes (one at a time, as the kernel allows).
//
// # Bad input
//
// A hello of the wrong size, magic or version closes the connection; an
// unknown role, a bad port or token gets its errno in the reply; a
// malformed control request gets EINVAL; a send with a bad header, an
// agent the connection does not hold, or a MAD over 256 bytes that is not
// an RMPP transfer is counted and dropped (the kernel fails the write).
package umadep
