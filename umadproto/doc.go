// Package umadproto is the protocol of a soft HCA's kernel-semantics MAD
// endpoint (package umadep): what a process sees of the kernel's ib_umad
// device, carried over an abstract unix SOCK_SEQPACKET socket in the HCA's
// network namespace, "@ibfab-umad" (or the name in $IBFAB_UMAD_SOCKET).
// The LD_PRELOAD library in umadshim/ maps libibumad's calls onto it, and
// Dial gives Go programs the same endpoint.
//
// # Connections
//
// Every connection opens with a Hello from the client (16 bytes: magic
// "IBFU", version 1, a role and the HCA port, a token) and one reply from
// the server (magic, version, an errno, the connection's token). Roles:
//
//   - RoleUMAD is one open /dev/infiniband/umadN: after the hello each
//     datagram the client sends is what a process writes to the device,
//     and each the server sends is what it reads: a UserMAD header (56
//     bytes, or 64 once the pkey_index ABI is enabled) followed by the
//     MAD. The server's reply token names the connection for the control
//     connection that registers its agents.
//   - RoleControl carries requests and replies, one datagram each: a
//     4-byte op and its arguments; a 4-byte errno (0 on success) and the
//     result. A control connection hello'd with a umad token acts on that
//     connection (register, unregister, enable pkey: the device's
//     ioctls); any may read the port's sysfs attributes.
//   - RoleISSM is one open /dev/infiniband/issmN: while it stays open the
//     port's IsSM capability bit is set.
//
// # Byte order
//
// The UserMAD header is struct ib_user_mad_hdr of the kernel: agent_id,
// status, timeout_ms, retries and length in host order, qpn, qkey, lid
// and flow_label in network order, pkey_index in host order. The hello
// and control messages are little-endian, which is host order on every
// machine ibfab runs on; the C side checks this at build time.
//
// # Semantics
//
// They are the kernel's (drivers/infiniband/core/user_mad.c and mad.c),
// described in package umadep: agents registered with class, version,
// method mask and RMPP version receive the requests they registered for
// and the responses to their own requests (the high 32 bits of a
// request's TID are the agent's), requests are resent on timeout and
// handed back with status ETIMEDOUT, RMPP transfers are cut and
// reassembled, and a send's pkey_index picks the P_Key on the wire.
package umadproto
