// Package simclient is a madport.Port over the ibsim client protocol
// (package simproto): it attaches an SM or a diagnostic to Debian's ibsim
// or to a soft HCA's attach point (package attach) alike, by socket base
// name ("sim" by default, the name both serve), in the caller's network
// namespace.
//
//	c, err := simclient.Dial(ctx, simclient.Config{Name: "sim"})
//	...
//	c.Send(madport.MAD{LID: 0xffff, Data: smp})   // one MAD, no waiting
//	m, err := c.Recv(ctx)                         // responses, traps, SM requests
//
// # Sockets and namespaces
//
// Dial binds the client's two abstract sockets, "<base>:ctl<id>" and
// "<base>:in<id>", and connects. The id is the pid for the first client of
// a process and pid + k·2^22 for the k-th after it (pids stay below 2^22),
// so that several clients of one process, and of many, never share a
// name. Abstract sockets belong to the network namespace of the thread
// that creates them: call Dial on a thread inside the server's namespace
// (fabricnet.Do); after that the Client works from any goroutine.
//
// # MADs
//
// Send wraps a MAD in a simproto.Request: DLID and destination QP from the
// madport.MAD, SLID 0xffff for a permissive DLID and 0 ("the port's LID")
// otherwise, source QP 0 for SMPs and 1 for GMPs. The protocol carries no
// SL, P_Key or Q_Key: the server uses SL 0, the default partition and the
// GSI's well-known Q_Key. Send does not wait.
//
// Recv reads the socket on the caller's goroutine and returns what the
// server sent (responses, traps, MADs for the SM) with the source LID and
// QP and the status: a request handed back with status
// simproto.StatusTimeout (ETIMEDOUT) got no answer, which ibsim reports at
// once when it cannot route a MAD and the attach point after its response
// timeout. The socket's kernel buffer queues what arrives between Recvs;
// the data socket is connected to the server's, so the kernel takes
// datagrams from that socket only and does not cap them at
// net.unix.max_dgram_qlen. Concurrent Recvs take turns; each returns when
// its context ends.
//
// ibsim writes the client's slot into bits 63-48 of the transaction ID of
// every request; the Client puts back the caller's bits in what it
// receives (it remembers the last 4096 requests), so the caller sees its
// own TIDs.
//
// # Control
//
// Info asks the server for the port's NodeInfo and PortInfo; SetIsSM sets
// or clears the port's IsSM capability (and, with ibsim and the attach
// point, makes this client the one unsolicited MADs go to). Control round
// trips are serialised and bounded by Config.CtlTimeout. Close says
// Disconnect and releases the sockets; Recv then returns madport.ErrClosed.
package simclient
