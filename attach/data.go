package attach

import (
	"bytes"
	"errors"
	"net"
	"os"
	"syscall"
	"time"

	"ibfab/agent"
	"ibfab/hca"
	"ibfab/internal/clock"
	"ibfab/simproto"
	"ibfab/wire/mad"
)

var _ hca.MADClient = (*Server)(nil)

// tidLowMask keeps the TID bits a client owns; the server writes the
// client's slot into the 16 above them, as ibsim does.
const tidLowMask = 1<<48 - 1

// pending is a client's request waiting for its response.
type pending struct {
	client *client
	key    uint64 // the TID as sent: the client's, slot in bits 63-48
	orig   uint64 // the TID as the client sent it
	req    agent.Request
	dgram  []byte // the client's datagram, handed back on timeout
	tries  int
	timer  clock.Timer
}

// expectsResponse reports whether a request with method m gets a response
// the sender waits for: what the kernel's MAD layer times out. A Trap is
// answered by a TrapRepress (OpenSM sends its Trap 144 expecting one).
func expectsResponse(m mad.Method) bool {
	switch m {
	case mad.MethodGet, mad.MethodSet, mad.MethodReport, mad.MethodGetTable, mad.MethodDelete,
		mad.MethodTrap, methodGetTraceTable, methodGetMulti:
		return true
	}
	return false
}

// isResponse reports whether m answers a request, as the kernel's MAD
// layer sees it (ib_response_mad): the R bit, or a TrapRepress, which
// answers a Trap.
func isResponse(m mad.MAD) bool {
	return m.IsResponse() || m.Method() == mad.MethodTrapRepress
}

// SA methods wire/mad does not name.
const (
	methodGetTraceTable mad.Method = 0x13
	methodGetMulti      mad.Method = 0x14
)

// serveSlot reads the MADs of the slot's clients until its socket is
// closed.
func (s *Server) serveSlot(sl *slot) {
	defer s.wg.Done()
	buf := make([]byte, 2*simproto.RequestSize)
	for {
		n, err := sl.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.isClosed() {
				return
			}
			s.st.bad.Add(1)
			time.Sleep(errorPause) // never spin on an error that persists
			continue
		}
		s.mu.Lock()
		c := sl.cl
		if c != nil && c.gone {
			c = nil
		}
		s.mu.Unlock()
		switch {
		case c == nil:
			s.drop(DropUnconnected)
		case !simproto.Request(buf[:n]).IsValid():
			s.st.bad.Add(1)
		default:
			s.fromClient(c, bytes.Clone(buf[:n]))
		}
	}
}

// fromClient sends a client's MAD out through the HCA, after noting the
// requests that wait for a response and the class the client sends (see
// route.go). It does what the kernel's MAD layer does to a MAD written to
// umad: zero-pads it past the client's length, completes the RMPP header
// of a one-segment transfer (rmpp.go), and sends a GMP with the P_Key of
// the port's P_Key index 0 (the protocol carries no pkey_index).
func (s *Server) fromClient(c *client, dgram []byte) {
	h := s.device()
	if h == nil {
		s.drop(DropNotAttached)
		return
	}
	r := simproto.Request(dgram)
	n := r.Length()
	if n < mad.MADHeaderSize {
		s.st.bad.Add(1) // not even a MAD header
		return
	}
	m := bytes.Clone(r.MAD())
	length := int(min(n, mad.MADSize))
	clear(m[length:])
	s.mu.Lock()
	userRMPP := c.userRMPP
	s.mu.Unlock()
	switch rm := rmppMAD(m); {
	case rm.isControl():
		userRMPP = true
	case userRMPP:
		// It writes its own headers, all of them: a bad one goes out
		// as it wrote it, as from a raw agent on a real host.
	case rm.isClientSegment():
		userRMPP = rm.isMultiSegment()
	case rm.isActive():
		rm.sealOneSegment(length)
	}
	hdr := mad.MAD(m)
	req := agent.Request{Port: c.port, DLID: r.DLID(), DestQP: r.DestQP(), MAD: m}
	if !hdr.MgmtClass().IsSubn() {
		req.PKey = defaultPKey(h, c.port)
	}
	var p *pending
	s.mu.Lock()
	if c.gone {
		s.mu.Unlock()
		s.drop(DropClientGone)
		return
	}
	s.noteSentLocked(c, hdr)
	if userRMPP {
		c.userRMPP = true
	}
	if rmppMAD(m).isControl() {
		// An ACK, STOP or ABORT waits for nothing, whatever its method.
	} else if !isResponse(hdr) && expectsResponse(hdr.Method()) {
		orig := hdr.TransactionID()
		key := orig&tidLowMask | uint64(c.slot.n)<<48
		hdr.SetTransactionID(key)
		p = &pending{client: c, key: key, orig: orig, req: req, dgram: dgram}
		if old := s.mu.pending[key]; old != nil {
			old.timer.Stop() // the client resends a request: the new one waits
		}
		s.mu.pending[key] = p
		p.timer = s.clk.AfterFunc(s.timeout(hdr), func() { s.expire(p) })
	}
	s.mu.Unlock()
	s.st.madsIn.Add(1)
	if err := h.SendMAD(req); err != nil {
		s.drop(DropSendFailed)
		if p != nil && s.forget(p) {
			s.handBack(p) // no use waiting for it
		}
	}
}

// defaultPKey returns the P_Key the kernel puts on a GMP sent with
// pkey_index 0: entry 0 of the port's P_Key table, or the default
// partition while that entry is empty (base 0, which no port accepts).
func defaultPKey(h Device, port uint8) mad.PKey {
	if keys := h.Agent().PKeys(port); len(keys) > 0 && keys[0].Base() != 0 {
		return keys[0]
	}
	return mad.DefaultPKey
}

// forget removes p from the outstanding requests, and reports whether it
// was there.
func (s *Server) forget(p *pending) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.pending[p.key] != p {
		return false
	}
	p.timer.Stop()
	delete(s.mu.pending, p.key)
	return true
}

// pendingForLocked returns the request response m answers, or nil; mu
// held. A TrapRepress is found by the slot and the low 32 bits of its
// TID: it is not a response to libumad2sim, which writes the sending
// client's agent number into bits 47-32 of it as of any request (the
// kernel leaves a TrapRepress's TID alone), and OpenSM, the only client
// that sends traps, matches them on those bits too.
func (s *Server) pendingForLocked(m mad.MAD) *pending {
	tid := m.TransactionID()
	if m.Method() != mad.MethodTrapRepress {
		return s.mu.pending[tid]
	}
	const agentBits = 0xffff << 32
	for _, p := range s.mu.pending {
		if p.key&^agentBits == tid&^agentBits && mad.MAD(p.req.MAD).Method() == mad.MethodTrap {
			return p
		}
	}
	return nil
}

// timeout returns how long request m waits for its response.
func (s *Server) timeout(m mad.MAD) time.Duration {
	if c := m.MgmtClass(); c == mad.ClassSubnLID || c == mad.ClassSubnDirected {
		return s.cfg.Timeout
	}
	return s.cfg.GMPTimeout
}

// expire runs when p's response is overdue: it resends p, or hands it back.
func (s *Server) expire(p *pending) {
	s.mu.Lock()
	if s.mu.pending[p.key] != p {
		s.mu.Unlock()
		return
	}
	if p.tries < s.cfg.Retries {
		p.tries++
		p.timer = s.clk.AfterFunc(s.timeout(mad.MAD(p.req.MAD)), func() { s.expire(p) })
		s.mu.Unlock()
		s.st.retries.Add(1)
		if h := s.device(); h != nil && h.SendMAD(p.req) != nil {
			s.drop(DropSendFailed)
		}
		return
	}
	delete(s.mu.pending, p.key)
	s.mu.Unlock()
	s.handBack(p)
}

// handBack gives a request that got no response back to its client with
// status ETIMEDOUT, as the kernel reports a send that timed out.
func (s *Server) handBack(p *pending) {
	s.st.timeouts.Add(1)
	r := simproto.Request(p.dgram)
	r.SetStatus(simproto.StatusTimeout)
	s.toClient(p.client, p.dgram)
}

// DeliverMAD implements hca.MADClient: it hands a MAD the HCA received for
// its clients to the client it is for. A response (a TrapRepress too) goes
// to the client whose request it answers (by TID, whose top 16 bits name
// the client's slot), with the client's TID put back; a request goes to
// the client route.go picks for its class, or, when none can take it, is
// answered as the kernel answers a request no agent registered for. The
// client is told the length the kernel would report (rmpp.go). It never
// blocks.
func (s *Server) DeliverMAD(port uint8, o agent.Outbound) {
	if len(o.MAD) < mad.MADSize {
		s.st.bad.Add(1)
		return
	}
	h := s.device()
	if h == nil {
		s.drop(DropNotAttached)
		return
	}
	m := o.MAD // a fresh buffer we own
	hdr := mad.MAD(m)
	if rmppMAD(m).isControl() {
		// An RMPP ACK, STOP or ABORT: only for a client doing RMPP itself
		// (rmpp.go); a libumad2sim client would take an ACK for a new
		// request.
		s.rmppControl(port, o)
		return
	}
	var c *client
	if isResponse(hdr) {
		s.mu.Lock()
		p := s.pendingForLocked(hdr)
		if p != nil {
			p.timer.Stop()
			delete(s.mu.pending, p.key)
		}
		s.mu.Unlock()
		if p == nil {
			s.drop(DropNoRequest)
			return
		}
		hdr.SetTransactionID(p.orig)
		c = p.client
	} else {
		s.mu.Lock()
		c = s.takerLocked(port, hdr)
		s.mu.Unlock()
		if c == nil {
			s.unmatched(h, port, o)
			return
		}
	}
	s.toClient(c, simproto.AppendRequest(nil, &simproto.RequestFields{
		DLID: o.DLID, SLID: o.SLID, DestQP: o.DestQP, SrcQP: o.SrcQP,
		Length: uint64(receivedLength(m)), MAD: m[:mad.MADSize],
	}))
}

// rmppControl hands an RMPP ACK, STOP or ABORT to the client whose
// transfer it belongs to, if that client does RMPP itself: the one whose
// request waits with its TID (an ACK of a request's segments has the
// response method; its TID goes back to the client's), else the one
// route.go picks for a request of its class. Anything else is dropped, as
// on a host the kernel consumes it.
func (s *Server) rmppControl(port uint8, o agent.Outbound) {
	hdr := mad.MAD(o.MAD)
	s.mu.Lock()
	var c *client
	if isResponse(hdr) {
		if p := s.mu.pending[hdr.TransactionID()]; p != nil {
			c = p.client
			hdr.SetTransactionID(p.orig)
		}
	} else {
		c = s.takerLocked(port, hdr)
	}
	ok := c != nil && c.userRMPP && !c.gone
	s.mu.Unlock()
	if !ok {
		s.drop(DropRMPPControl)
		return
	}
	s.toClient(c, simproto.AppendRequest(nil, &simproto.RequestFields{
		DLID: o.DLID, SLID: o.SLID, DestQP: o.DestQP, SrcQP: o.SrcQP,
		Length: mad.MADSize, MAD: o.MAD[:mad.MADSize],
	}))
}

// toClient queues a datagram for c.
func (s *Server) toClient(c *client, dgram []byte) {
	select {
	case <-c.done:
		s.drop(DropClientGone)
		return
	default:
	}
	if !c.out.Push(dgram) {
		s.drop(DropQueueFull)
	}
}

// writer writes c's datagrams until c disconnects, then frees its slot.
func (s *Server) writer(c *client) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		if c.slot.cl == c {
			c.slot.cl = nil
		}
		s.mu.Unlock()
		for _, ok := c.out.Pop(); ok; _, ok = c.out.Pop() {
			s.drop(DropClientGone)
		}
	}()
	c.out.Serve(c.done, func(b []byte) bool { return s.write(c, b) })
}

// write writes b to c, waiting while c does not read, and reports
// whether c is still there.
func (s *Server) write(c *client, b []byte) bool {
	conn := c.slot.conn
	for {
		conn.SetWriteDeadline(time.Now().Add(writeTimeout))
		_, err := conn.Write(b)
		switch {
		case err == nil:
			s.st.madsOut.Add(1)
			return true
		case errors.Is(err, os.ErrDeadlineExceeded):
			select {
			case <-c.done:
				s.drop(DropClientGone)
				return false
			default:
				continue // a live client that has not read yet
			}
		case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOTCONN):
			// The client died without a Disconnect, as ibsim finds them.
			s.drop(DropWriteFailed)
			s.st.dead.Add(1)
			s.disconnect(c, "dead")
			return false
		default:
			s.drop(DropWriteFailed)
			return true
		}
	}
}
