package attach

import (
	"ibfab/agent"
	"ibfab/wire/mad"
)

// Which client takes a request. On a real host the kernel delivers a
// request to the agent registered for its class (and method); an
// unsolicited Get or Set no agent is registered for gets a GetResp with
// status "unsupported method/attribute" from the kernel itself
// (generate_unmatched_resp), anything else is dropped. libumad2sim keeps
// its registrations to itself (register_agent never reaches the server),
// and handing it a MAD of a class it did not register makes it use an
// agent fd of -1, likely a crash: so a request goes to a client only when
// the client has shown it takes that class, and is otherwise answered as
// the kernel answers an unregistered one. The rules, in order:
//
//  1. SMPs (traps, SMInfo) and SubnAdm requests go to the port's SM
//     client: OpenSM registers those classes. A SubnAdm Report is the
//     exception: the SA sends it to a subscriber, so it goes by rule 2
//     to a client that is not the SM.
//  2. Other classes go to the client that most recently sent a MAD of the
//     class (it registered the class to send it): the server ibping -S
//     once it has answered, the vendstat that sent a request of it. Not
//     to the client whose own request it is, looped back to its node: a
//     client that sends a class to itself is one that asks (vendstat of
//     its own LID), and would take its request for the answer (same TID).
//  3. Else to the one client of the port that has sent nothing yet and is
//     not the SM: a server waiting for its first request (ibping -S,
//     ibsysstat -S). With two or more such clients, which one registered
//     the class cannot be told, and nobody gets it.
//  4. Else a Get or Set is answered with status 0x000C (unsupported
//     method/attribute) and anything else is dropped (DropNoClient; for
//     SM classes, DropNoSM), as the kernel does.

// noteSentLocked records that c sent m; mu held.
func (s *Server) noteSentLocked(c *client, m mad.MAD) {
	c.sent = true
	s.mu.lastSender[m.MgmtClass()] = c
}

// takerLocked returns the client request m at port goes to, or nil; mu
// held.
func (s *Server) takerLocked(port uint8, m mad.MAD) *client {
	class := m.MgmtClass()
	report := class == mad.ClassSubnAdm && m.Method() == mad.MethodReport
	if (class.IsSubn() || class == mad.ClassSubnAdm) && !report {
		return s.smLocked(port)
	}
	var self *client // the client whose request this is, if it is one of ours
	if p := s.mu.pending[m.TransactionID()]; p != nil && mad.MAD(p.req.MAD).MgmtClass() == class {
		self = p.client
	}
	if c := s.mu.lastSender[class]; c != nil && c != self && !c.gone && c.port == port && !(report && c.issm) {
		return c
	}
	var idle *client
	for _, sl := range s.slots {
		c := sl.cl
		if c == nil || c.gone || c.port != port || c.sent || c.issm {
			continue
		}
		if idle != nil {
			return nil // ambiguous
		}
		idle = c
	}
	return idle
}

// forgetSenderLocked drops c from the senders by class; mu held.
func (s *Server) forgetSenderLocked(c *client) {
	for k, v := range s.mu.lastSender {
		if v == c {
			delete(s.mu.lastSender, k)
		}
	}
}

// unmatched answers or drops a request o no client takes (rule 4).
func (s *Server) unmatched(h Device, port uint8, o agent.Outbound) {
	hdr := mad.MAD(o.MAD)
	class, meth := hdr.MgmtClass(), hdr.Method()
	resp, ok := Unmatched(port, o)
	switch {
	case class.IsSubn():
		// Only an SMInfo request or a trap for an SM that has just left
		// gets here: the SMA answers the rest itself.
		s.drop(DropNoSM)
		return
	case !ok:
		if class == mad.ClassSubnAdm && meth != mad.MethodReport {
			s.drop(DropNoSM)
		} else {
			s.drop(DropNoClient)
		}
		return
	}
	s.st.unmatched.Add(1)
	if h.SendMAD(resp) != nil {
		s.drop(DropSendFailed)
	}
}

// Unmatched returns the answer to a GMP o that arrived at port and that
// no client takes, as the kernel's MAD layer gives it: a Get or Set gets
// its response with status "unsupported method/attribute" (o's MAD is
// answered in place); ok is false for anything else, which is dropped.
func Unmatched(port uint8, o agent.Outbound) (resp agent.Request, ok bool) {
	hdr := mad.MAD(o.MAD)
	if meth := hdr.Method(); hdr.MgmtClass().IsSubn() || meth != mad.MethodGet && meth != mad.MethodSet {
		return agent.Request{}, false
	}
	hdr.SetMethod(mad.MethodGetResp)
	hdr.SetStatus(mad.StatusMethodAttrUnsupported)
	return agent.Request{Port: port, DLID: o.SLID, SL: o.SL, DestQP: o.SrcQP, PKey: o.PKey, MAD: o.MAD}, true
}
