package attach

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"ibfab/internal/fifo"
	"ibfab/simproto"
)

// serveCtl answers control messages until the control socket is closed.
func (s *Server) serveCtl() {
	defer s.wg.Done()
	buf := make([]byte, 2*simproto.CtlSize)
	for {
		n, from, err := recvFrom(s.ctlRC, buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.isClosed() {
				return
			}
			s.st.bad.Add(1)
			time.Sleep(errorPause) // never spin on an error that persists
			continue
		}
		s.st.ctlMessages.Add(1)
		req, err := simproto.DecodeCtl(buf[:n])
		if err != nil {
			s.st.bad.Add(1) // ibsim ignores these too: nothing to answer
			continue
		}
		resp := s.handleCtl(&req, &from)
		if resp.Type == simproto.CtlError {
			s.st.ctlErrors.Add(1)
		}
		if err := sendTo(s.ctlRC, simproto.AppendCtl(nil, &resp), &from); err != nil {
			s.logf("attach: answering %v to client %d: %v", req.Type, req.ClientID, err)
		}
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

// handleCtl returns the answer to one control message: the message with
// its data replaced by the answer, or its type set to CtlError.
func (s *Server) handleCtl(req *simproto.CtlFields, from *rawAddr) simproto.CtlFields {
	resp := *req
	resp.Data = [simproto.CtlDataSize]byte{}
	fail := func() simproto.CtlFields {
		resp.Type = simproto.CtlError
		resp.Data = req.Data
		return resp
	}
	if req.Type == simproto.CtlConnect {
		ci, err := s.connect(req, from)
		if err != nil {
			s.st.refused.Add(1)
			s.logf("attach: refused client %d: %v", ci.ID, err)
			return fail()
		}
		ci.Encode(resp.Data[:])
		return resp
	}
	c := s.clientAt(req.ClientID, from)
	if c == nil || !req.Type.Valid() || req.Type == simproto.CtlError {
		s.st.bad.Add(1)
		return fail()
	}
	h := s.device() // set: clients connect only once attached
	d := resp.Data[:]
	switch req.Type {
	case simproto.CtlDisconnect:
		s.disconnect(c, "disconnect")
	case simproto.CtlGetPort:
		ps := simproto.PortState{LID: h.Agent().PortConfig(c.port).LID}
		if st, ok := h.PortState(c.port); ok {
			ps.State = uint8(st)
		}
		ps.Encode(d)
	case simproto.CtlGetVendor:
		ni, ok := s.nodeInfo(h, c.port)
		if !ok {
			return fail()
		}
		v := simproto.Vendor{VendorID: ni.VendorID(), PartID: uint32(ni.DeviceID()), HWVer: ni.Revision(), FWVer: 1}
		v.Encode(d)
	case simproto.CtlGetGID:
		pi, ok := s.portInfo(h, c.port)
		if !ok {
			return fail()
		}
		// ibsim's choice, kept: the node GUID, not the port's.
		g := simproto.GID{Prefix: pi.GIDPrefix(), GUID: h.Agent().NodeGUID()}
		g.Encode(d)
	case simproto.CtlGetGUID:
		simproto.EncodeGUID(d, h.Agent().NodeGUID())
	case simproto.CtlGetNodeInfo:
		ni, ok := s.nodeInfo(h, c.port)
		if !ok {
			return fail()
		}
		copy(d, ni)
	case simproto.CtlGetPortInfo:
		p := req.Data[0]
		if p == 0 || p > h.NumPorts() {
			p = c.port
		}
		pi, ok := s.portInfo(h, p)
		if !ok {
			return fail()
		}
		copy(d, pi)
	case simproto.CtlSetIsSM:
		on, _ := simproto.DecodeIsSM(req.Data[:]) // 64 bytes: cannot fail
		s.setIsSM(c, on)
	case simproto.CtlGetPKeys:
		keys := h.Agent().PKeys(c.port)
		k := make([]uint16, min(len(keys), simproto.NumPKeys))
		for i := range k {
			k[i] = uint16(keys[i])
		}
		simproto.EncodePKeys(d, k)
	}
	return resp
}

// clientAt returns the client in slot id if from is its control address.
func (s *Server) clientAt(id uint32, from *rawAddr) *client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if int(id) >= len(s.slots) {
		return nil
	}
	c := s.slots[id].cl
	if c == nil || c.gone || c.ctl != from.key() {
		return nil
	}
	return c
}

// connect attaches a new client: a free slot whose socket is connected to
// the client's MAD socket. It returns the answer's ClientInfo.
func (s *Server) connect(req *simproto.CtlFields, from *rawAddr) (simproto.ClientInfo, error) {
	ci, _ := simproto.DecodeClientInfo(req.Data[:]) // 64 bytes: cannot fail
	h := s.device()
	if h == nil {
		return ci, errors.New("no HCA attached yet")
	}
	node := s.NodeID()
	if ci.NodeID != "" && ci.NodeID != node && ci.NodeID != truncNodeID(node) {
		return ci, fmt.Errorf("asks for node %q, this is %q", ci.NodeID, node)
	}
	if ci.ID == 0 {
		return ci, errors.New("client id 0")
	}
	port := s.cfg.Port
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return ci, ErrClosed
	}
	reaped := false
	free := s.freeSlotLocked()
	if free == nil || (ci.IsSM && s.smLocked(port) != nil) {
		// Clients killed without a Disconnect hold slots (and the SM
		// role) until found dead.
		reaped = s.reapLocked()
		free = s.freeSlotLocked()
	}
	var err error
	switch {
	case free == nil:
		err = fmt.Errorf("all %d slots taken", len(s.slots))
	case ci.IsSM && s.smLocked(port) != nil:
		err = errors.New("an SM is already attached")
	default:
		if err = connectTo(free.conn, simproto.Addr(simproto.InName(s.cfg.Name, ci.ID))); err != nil {
			err = fmt.Errorf("connecting to its socket %q: %w", simproto.InName(s.cfg.Name, ci.ID), err)
		}
	}
	if err != nil {
		s.mu.Unlock()
		if reaped {
			s.updateIsSM(h, port)
		}
		return ci, err
	}
	c := &client{slot: free, id: ci.ID, ctl: from.key(), port: port, issm: ci.IsSM,
		out: fifo.New[[]byte](s.cfg.QueueLen), done: make(chan struct{})}
	free.cl = c
	s.wg.Add(1)
	s.mu.Unlock()
	go s.writer(c)
	s.st.connects.Add(1)
	if ci.IsSM || reaped {
		s.updateIsSM(h, port)
	}
	role := ""
	if ci.IsSM {
		role = " as SM"
	}
	s.logf("attach: client %d (id %d) connected at port %d%s", free.n, ci.ID, port, role)
	return simproto.ClientInfo{ID: free.n, QP: ci.QP, IsSM: ci.IsSM, NodeID: node}, nil
}

func (s *Server) freeSlotLocked() *slot {
	for _, sl := range s.slots {
		if sl.cl == nil {
			return sl
		}
	}
	return nil
}

// smLocked returns the client unsolicited MADs at port go to: the SM
// client in the lowest slot, as ibsim picks it.
func (s *Server) smLocked(port uint8) *client {
	for _, sl := range s.slots {
		if c := sl.cl; c != nil && !c.gone && c.issm && c.port == port {
			return c
		}
	}
	return nil
}

// reapLocked disconnects the clients whose MAD socket is gone: connecting
// to it again fails. It reports whether it disconnected any.
func (s *Server) reapLocked() (any bool) {
	for _, sl := range s.slots {
		c := sl.cl
		if c == nil || c.gone {
			continue
		}
		err := connectTo(sl.conn, simproto.Addr(simproto.InName(s.cfg.Name, c.id)))
		if errors.Is(err, syscall.ECONNREFUSED) {
			s.st.dead.Add(1)
			s.disconnectLocked(c, "dead")
			any = true
		}
	}
	return any
}

// disconnect detaches c: it gets nothing more, its outstanding requests
// are forgotten and, if it was the SM, the port's IsSM is recomputed. Its
// slot is free once its writer has stopped.
func (s *Server) disconnect(c *client, reason string) {
	s.mu.Lock()
	was := s.disconnectLocked(c, reason)
	s.mu.Unlock()
	if was {
		if h := s.device(); h != nil {
			s.updateIsSM(h, c.port)
		}
	}
}

// disconnectLocked is disconnect with mu held; it reports whether c was
// the SM client, whose IsSM the caller must update once mu is released.
func (s *Server) disconnectLocked(c *client, reason string) (wasSM bool) {
	if c.gone {
		return false
	}
	c.gone, c.reason = true, reason
	close(c.done)
	s.forgetSenderLocked(c)
	for k, p := range s.mu.pending {
		if p.client == c {
			p.timer.Stop()
			delete(s.mu.pending, k)
		}
	}
	s.st.disconnects.Add(1)
	s.logf("attach: client %d (id %d) disconnected: %s", c.slot.n, c.id, reason)
	return c.issm
}

// setIsSM records c's IsSM and updates the port's capability.
func (s *Server) setIsSM(c *client, on bool) {
	s.mu.Lock()
	if c.gone {
		s.mu.Unlock()
		return
	}
	c.issm = on
	s.mu.Unlock()
	if h := s.device(); h != nil {
		s.updateIsSM(h, c.port)
	}
}

// updateIsSM sets the IsSM capability of port when one of its clients is
// an SM, and clears it when none is.
func (s *Server) updateIsSM(h Device, port uint8) {
	// Serialised, so that the last change of the clients is the last one
	// applied.
	s.issmMu.Lock()
	defer s.issmMu.Unlock()
	s.mu.Lock()
	on := s.smLocked(port) != nil
	s.mu.Unlock()
	if err := h.Agent().SetIsSM(port, on); err != nil {
		s.logf("attach: IsSM of port %d: %v", port, err)
	}
}

// truncNodeID returns id as it fits in ClientInfo.NodeID.
func truncNodeID(id string) string {
	if len(id) >= simproto.NodeIDSize {
		return id[:simproto.NodeIDSize-1]
	}
	return id
}
