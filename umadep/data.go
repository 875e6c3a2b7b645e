package umadep

import (
	"time"

	"ibfab/agent"
	"ibfab/rmpp"
	"ibfab/umadproto"
	"ibfab/wire/mad"
)

// qkeyGSI is the well-known Q_Key of QP1.
const qkeyGSI = 0x8001_0000

// fromClient sends what a client wrote to its umad connection, as the
// kernel's ib_umad_write does: the agent must be the connection's; the
// MAD is zero-padded to 256 bytes, or, for an agent registered with RMPP
// whose MAD has the Active flag, cut into an RMPP transfer; a request gets
// the agent's 32 bits in the top of its TID and, with a timeout, waits
// for its response (resent Retries times, then handed back with status
// ETIMEDOUT); a GMP carries the P_Key at pkey_index in the port's table.
func (s *Server) fromClient(uc *conn, dgram []byte) {
	s.st.FromClients.Add(1)
	u, m, err := umadproto.DecodeUserMAD(dgram, int(uc.hdrSize.Load()))
	if err != nil || len(m) < mad.MADHeaderSize {
		s.st.BadMessages.Add(1)
		return
	}
	s.mu.Lock()
	var a *agentReg
	if u.AgentID < MaxAgents {
		a = uc.agents[u.AgentID]
	}
	s.mu.Unlock()
	if a == nil {
		s.st.BadMessages.Add(1)
		return
	}
	hdr := mad.MAD(m)
	class := hdr.MgmtClass()
	useRMPP := a.rmpp() && mad.RMPPClass(class) && len(m) >= mad.RMPPHeaderEnd && mad.RMPP(m).Active()
	if !useRMPP {
		if len(m) > mad.MADSize {
			s.st.BadMessages.Add(1)
			return
		}
		m = append(m, make([]byte, mad.MADSize-len(m))...)
		hdr = mad.MAD(m)
	}
	orig := append([]byte(nil), m[:mad.MADHeaderSize]...)
	resp := isResponse(hdr)
	if !resp {
		hdr.SetTransactionID(uint64(a.hi)<<32 | hdr.TransactionID()&0xffff_ffff)
	}
	req := agent.Request{Port: uc.port, DLID: u.LID, SL: u.SL, DestQP: u.QPN}
	if !class.IsSubn() {
		req.PKey = s.pkeyAt(uc.port, u.PKeyIndex)
	}
	var p *pending
	if !resp && u.TimeoutMS > 0 {
		p = &pending{a: a, tid: hdr.TransactionID(), class: class, req: req, hdr: u, orig: orig, msg: m,
			timeout: time.Duration(u.TimeoutMS) * time.Millisecond, tries: int(u.Retries)}
		s.mu.Lock()
		if old := s.mu.pending[p.tid]; old != nil {
			old.stopTimerLocked()
		}
		s.mu.pending[p.tid] = p
		s.mu.Unlock()
	}
	s.transmit(req, m, useRMPP, u, p)
}

// transmit sends m from req's address: as one MAD, or as an RMPP
// transfer. p, when set, is the request waiting for its response: its
// time starts when the MAD has left (an RMPP transfer's, at once: the
// transfer's windows are timed by the transfer).
func (s *Server) transmit(req agent.Request, m []byte, useRMPP bool, u umadproto.UserMAD, p *pending) {
	if !useRMPP {
		req.MAD = m
		s.enqueueOut(outMAD{req: req, after: p})
		return
	}
	if p != nil {
		s.arm(p)
	}
	h := mad.MAD(m)
	key := xferKey{port: req.Port, tid: h.TransactionID(), class: h.MgmtClass(), lid: req.DLID, resp: h.IsResponse()}
	timeout, retries := time.Duration(u.TimeoutMS)*time.Millisecond, int(u.Retries)
	if timeout <= 0 {
		timeout, retries = rmppTimeout, rmppRetries
	}
	var snd *rmpp.Sender
	snd, err := rmpp.NewSender(rmpp.SenderConfig{
		Clock: s.clk, Timeout: timeout, Retries: retries,
		Send: func(seg []byte) error {
			r := req
			r.MAD = seg
			s.enqueue(r)
			return nil
		},
		Done: func(err error) {
			s.mu.Lock()
			if s.mu.senders[key] == snd {
				delete(s.mu.senders, key)
			}
			s.mu.Unlock()
			if err != nil {
				s.st.RMPPFailed.Add(1)
				s.logf("umadep: RMPP send of TID %#x to LID %d: %v", key.tid, key.lid, err)
				return
			}
			s.st.RMPPSent.Add(1)
		},
	}, m)
	if err != nil {
		s.st.BadMessages.Add(1)
		return
	}
	s.mu.Lock()
	if old := s.mu.senders[key]; old != nil {
		old.Cancel()
	}
	s.mu.senders[key] = snd
	s.mu.Unlock()
	snd.Start()
}

// pkeyAt returns the P_Key at index i of port's table: what the kernel
// puts in the BTH of a GMP sent with pkey_index i. An index past the
// table, or an empty entry, gives the default partition's key.
func (s *Server) pkeyAt(port uint8, i uint16) mad.PKey {
	if p := s.port(); p != nil {
		if keys := p.PKeys(port); int(i) < len(keys) && keys[i].Base() != 0 {
			return keys[i]
		}
	}
	return mad.DefaultPKey
}

// pkeyIndex returns the index of k in port's table (an exact match first,
// then one of the same base), 0 when none.
func (s *Server) pkeyIndex(port uint8, k mad.PKey) uint16 {
	p := s.port()
	if p == nil {
		return 0
	}
	keys := p.PKeys(port)
	for i, e := range keys {
		if e == k {
			return uint16(i)
		}
	}
	for i, e := range keys {
		if e.Base() != 0 && e.Base() == k.Base() {
			return uint16(i)
		}
	}
	return 0
}

// expire runs when p's response is overdue: resent, or handed back.
func (s *Server) expire(p *pending) {
	s.mu.Lock()
	if s.mu.pending[p.tid] != p {
		s.mu.Unlock()
		return
	}
	if p.tries > 0 {
		p.tries--
		p.timer = nil
		s.mu.Unlock()
		s.st.Retries.Add(1)
		useRMPP := len(p.msg) > mad.MADSize || (p.a.rmpp() && mad.RMPPClass(p.class) && mad.RMPP(p.msg).Active())
		s.transmit(p.req, append([]byte(nil), p.msg...), useRMPP, p.hdr, p)
		return
	}
	delete(s.mu.pending, p.tid)
	s.mu.Unlock()
	s.handBack(p)
}

// handBack gives a request that got no response back to its client with
// status ETIMEDOUT and its MAD header, as the kernel does.
func (s *Server) handBack(p *pending) {
	s.st.Timeouts.Add(1)
	u := p.hdr
	u.Status = umadproto.StatusTimedOut
	s.deliver(p.a, u, p.orig)
}

// deliver queues MAD m for a's connection with header u (its agent id and
// length filled in here).
func (s *Server) deliver(a *agentReg, u umadproto.UserMAD, m []byte) {
	hs := int(a.c.hdrSize.Load())
	u.AgentID = a.id
	u.Length = uint32(hs + len(m))
	b := umadproto.AppendUserMAD(make([]byte, 0, hs+len(m)), &u, hs)
	b = append(b, m...)
	select {
	case <-a.c.done:
		s.st.Dropped.Add(1)
		return
	default:
	}
	if !a.c.out.Push(b) {
		s.st.Dropped.Add(1)
	}
}

// recvHeader is the UserMAD header of a MAD the HCA received.
func (s *Server) recvHeader(port uint8, o agent.Outbound) umadproto.UserMAD {
	u := umadproto.UserMAD{QPN: o.SrcQP, LID: o.SLID, SL: o.SL}
	if o.SrcQP != 0 {
		u.QKey = qkeyGSI
		u.PKeyIndex = s.pkeyIndex(port, o.PKey)
	}
	return u
}

// Claim takes a MAD the HCA received for its local clients when it is
// the endpoint's, and reports whether it was:
//
//  1. An RMPP ACK, STOP or ABORT of a transfer the endpoint is sending
//     (by port, TID, class and the peer's LID) goes to that transfer; a
//     STOP or ABORT of one it is receiving, to that one.
//  2. A response (R bit, or TrapRepress) whose TID's top 32 bits name an
//     agent goes to that agent, when one of its requests waits for it
//     (else it is dropped, as the kernel drops it); an RMPP DATA for an
//     agent registered with RMPP is reassembled first.
//  3. A request goes to the agent of the port registered for its class,
//     version and method (and OUI), reassembled likewise.
//
// Anything else is not claimed: the caller passes it on (to the ibsim
// protocol attach point). Claim never blocks.
func (s *Server) Claim(port uint8, o agent.Outbound) bool {
	m := mad.MAD(o.MAD)
	if len(m) < mad.MADSize {
		return false
	}
	class := m.MgmtClass()
	isRMPP := mad.RMPPClass(class) && mad.RMPP(m).Active()
	key := xferKey{port: port, tid: m.TransactionID(), class: class, lid: o.SLID, resp: m.IsResponse()}
	if isRMPP {
		switch mad.RMPP(m).Type() {
		case mad.RMPPTypeAck, mad.RMPPTypeStop, mad.RMPPTypeAbort:
			// A receiver answers with the R bit of the DATA flipped, a
			// sender aborts with it kept.
			sndKey := key
			sndKey.resp = !key.resp
			s.mu.Lock()
			snd := s.mu.senders[sndKey]
			rcv := s.mu.receivers[key]
			s.mu.Unlock()
			switch {
			case snd != nil:
				_ = snd.Handle(m)
			case rcv != nil && mad.RMPP(m).Type() != mad.RMPPTypeAck:
				_, _, _ = rcv.Handle(m)
			default:
				return false
			}
			s.st.Claimed.Add(1)
			return true
		}
	}
	s.mu.Lock()
	var a *agentReg
	var p *pending
	resp := isResponse(m)
	if resp {
		a = s.mu.agents[uint32(m.TransactionID()>>32)]
		if a != nil && a.port != port {
			a = nil
		}
		if a != nil {
			p = s.mu.pending[m.TransactionID()]
			if p != nil && p.a != a {
				p = nil
			}
		}
	} else {
		a = s.requestAgentLocked(port, m)
	}
	s.mu.Unlock()
	if a == nil {
		return false
	}
	s.st.Claimed.Add(1)
	u := s.recvHeader(port, o)
	if !isRMPP || !a.rmpp() {
		s.complete(a, p, resp, u, o.MAD)
		return true
	}
	rcv := s.receiver(key, o, p)
	if rcv == nil {
		return true
	}
	if p != nil && !rcv.Ended() {
		// The transfer answers p: it is not overdue while it arrives;
		// the receiver's own time limit bounds it. A finished transfer's
		// repeated segment answers nothing: p keeps its timer.
		s.mu.Lock()
		p.stopTimerLocked()
		s.mu.Unlock()
	}
	msg, done, err := rcv.Handle(o.MAD)
	switch {
	case err != nil && rcv.Ended():
		s.st.RMPPFailed.Add(1)
		s.fail(p)
	case done:
		s.st.RMPPRecv.Add(1)
		s.complete(a, p, resp, u, msg)
	}
	return true
}

// fail hands back p, whose response transfer failed, if it still waits.
func (s *Server) fail(p *pending) {
	if p == nil {
		return
	}
	s.mu.Lock()
	waiting := s.mu.pending[p.tid] == p
	if waiting {
		delete(s.mu.pending, p.tid)
	}
	s.mu.Unlock()
	if waiting {
		s.handBack(p)
	}
}

// complete delivers a whole MAD (or reassembled transfer) to a; a
// response takes its request off the waiting list, and one that nothing
// waits for (it came late) is dropped, as the kernel drops it, unless the
// agent does RMPP itself.
func (s *Server) complete(a *agentReg, p *pending, resp bool, u umadproto.UserMAD, m []byte) {
	if resp && p == nil && a.reg.Flags&umadproto.FlagUserRMPP == 0 {
		s.st.Dropped.Add(1)
		return
	}
	if p != nil {
		s.mu.Lock()
		if s.mu.pending[p.tid] != p {
			s.mu.Unlock()
			s.st.Dropped.Add(1)
			return
		}
		p.stopTimerLocked()
		delete(s.mu.pending, p.tid)
		s.mu.Unlock()
	}
	s.deliver(a, u, m)
}

// receiver returns the receiver of the transfer key, made on its first
// packet; it stays (answering repeated last segments) until the RMPP
// total time after it began.
func (s *Server) receiver(key xferKey, o agent.Outbound, p *pending) *rmpp.Receiver {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.mu.receivers[key]; r != nil {
		return r
	}
	back := agent.Request{Port: key.port, DLID: o.SLID, SL: o.SL, DestQP: o.SrcQP, PKey: o.PKey}
	var r *rmpp.Receiver
	r, err := rmpp.NewReceiver(rmpp.ReceiverConfig{
		Clock: s.clk, Window: s.cfg.RMPPWindow,
		Send: func(m []byte) error {
			req := back
			req.MAD = m
			s.enqueue(req)
			return nil
		},
		Done: func(error) {
			s.st.RMPPFailed.Add(1)
			s.fail(p)
		},
	})
	if err != nil {
		return nil
	}
	s.mu.receivers[key] = r
	s.clk.AfterFunc(rmpp.DefaultTotalTime+time.Second, func() {
		s.mu.Lock()
		if s.mu.receivers[key] == r {
			delete(s.mu.receivers, key)
		}
		s.mu.Unlock()
		r.Cancel()
	})
	return r
}

// DeliverMAD implements hca.MADClient for an endpoint alone: what it does
// not claim is dropped.
func (s *Server) DeliverMAD(port uint8, o agent.Outbound) {
	if !s.Claim(port, o) {
		s.st.Dropped.Add(1)
	}
}
