// Package simproto is the ibsim client protocol: the datagrams Debian's
// ibsim simulator and its LD_PRELOAD shim libumad2sim.so exchange, which a
// soft HCA's attach point (package attach) serves and our SM's port
// (package simclient) speaks. It holds the message layouts and the socket
// names, nothing that opens a socket.
//
// # Sockets
//
// Everything is a SOCK_DGRAM unix socket in the abstract namespace, which
// is per network namespace: one server per namespace and base name. The
// base name is "sim" unless the IBSIM_SOCKNAME environment variable says
// otherwise, on both sides. Each address is a NUL, the name and a trailing
// NUL (the C code counts the string's terminator in the address length):
// the name without that NUL is a different socket.
//
//	server                                  client (id: its pid)
//	"<base>:ctl"     ◄── control ──────►    "<base>:ctl<id>"
//	"<base>:out<n>"  ◄── MADs ─────────►    "<base>:in<id>"
//
// A client binds its two sockets, then sends Connect on the control
// socket with its id; the server picks a free slot n, connects its socket
// "<base>:out<n>" to "<base>:in<id>" (which must already exist), and
// answers with n, the client id every later control message carries. The
// client sends its MADs to "<base>:out<n>" and reads what comes back on
// "<base>:in<id>", so the socket a MAD arrives on tells the server who sent
// it. ibsim has 10 slots and binds every out socket when it starts.
//
// # Control messages
//
// A control message (Ctl, 80 bytes) is a magic number, the client id, a
// type, a length and 64 bytes of data; the server answers each with the
// same message, its data replaced by the answer, or its type set to
// CtlError. The header and most payloads are C structs in host byte order
// (ibsim and its clients always share a host); NodeInfo and PortInfo are
// the 64-byte SMP attributes, big-endian as on the wire. Payload layouts:
// ClientInfo (Connect), PortState (GetPort), Vendor (GetVendor), GID
// (GetGID), GUID (GetGUID), PKeys (GetPKeys), IsSM (SetIsSM), and a port
// number in the first byte of a GetPortInfo request (0: the client's port).
//
// # MADs
//
// A MAD travels in a Request (288 bytes): DLID, SLID, destination and
// source QP, a status, a length and the 256-byte MAD. The QPs, status and
// length are big-endian; each LID is a 16-bit big-endian value in the
// first two bytes of a 32-bit slot (ibsim keeps htons(lid) in a uint32 on a
// little-endian host). A status of StatusTimeout (ETIMEDOUT) on a MAD the
// server hands back means the request it carries got no answer: ibsim
// returns a MAD it cannot route that way at once.
//
// Requests and responses are told apart by the MAD's R bit. On every
// request a client sends, ibsim writes the client's slot into bits 63-48 of
// the transaction ID and routes the response back by them; umad2sim keeps
// its own agent number in bits 47-32. Requests addressed to the node that
// are not responses (traps, SMInfo, SA queries) go to the client that
// connected with, or later set, IsSM.
//
// The layouts are those of 64-bit Linux hosts (the 64-bit length of a
// Request is 8-byte aligned); only little-endian hosts were tested.
//
// Every decoder here checks sizes and never panics; each has a fuzz
// target.
package simproto
