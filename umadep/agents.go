package umadep

import (
	"syscall"

	"ibfab/umadproto"
	"ibfab/wire/mad"
)

// Register registers an agent on uc's port, with the kernel's rules
// (ib_umad's register ioctls, ib_register_mad_agent): QP 0 or 1; the
// subnet management classes only on QP 0 and the others only on QP 1;
// class 0 registers an agent that only sends; a method of the class and
// version already registered by another agent of the port (of the same
// OUI in the vendor range 2) is refused (EINVAL), and so is an RMPP
// version other than 0 or 1, or a flag other than FlagUserRMPP. The id
// is the lowest free of the connection's MaxAgents (ENOMEM when none).
func (s *Server) Register(uc *conn, r umadproto.Registration) (uint32, syscall.Errno) {
	class := mad.MgmtClass(r.MgmtClass)
	switch {
	case r.QPN > 1,
		r.RMPPVersion > 1,
		r.Flags&^umadproto.FlagUserRMPP != 0,
		r.MgmtClass != 0 && class.IsSubn() != (r.QPN == 0),
		r.MgmtClass == 0 && r.QPN == 0:
		return 0, syscall.EINVAL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.MgmtClass != 0 {
		for _, a := range s.mu.agents {
			if a.port == uc.port && a.reg.MgmtClass == r.MgmtClass && a.reg.ClassVersion == r.ClassVersion &&
				(!vendor2(class) || a.reg.OUI == r.OUI) && overlap(a.reg.MethodMask, r.MethodMask) {
				return 0, syscall.EINVAL
			}
		}
	}
	for id := range uc.agents {
		if uc.agents[id] != nil {
			continue
		}
		s.mu.nextHi++
		a := &agentReg{id: uint32(id), hi: hiTIDBase | s.mu.nextHi&0x7fff_ffff, c: uc, reg: r, port: uc.port}
		uc.agents[id] = a
		s.mu.agents[a.hi] = a
		return uint32(id), 0
	}
	return 0, syscall.ENOMEM
}

func vendor2(c mad.MgmtClass) bool { return c >= 0x30 && c <= 0x4f }

func overlap(a, b [4]uint32) bool {
	for i := range a {
		if a[i]&b[i] != 0 {
			return true
		}
	}
	return false
}

// requestAgentLocked returns the agent of port registered for request m
// (find_mad_agent): class, class version, the method in its mask, and in
// the vendor range 2 the OUI; nil when none. s.mu is held.
func (s *Server) requestAgentLocked(port uint8, m mad.MAD) *agentReg {
	class, meth := m.MgmtClass(), uint8(m.Method())
	var oui uint32
	if vendor2(class) && len(m) >= 40 {
		oui = uint32(m[37])<<16 | uint32(m[38])<<8 | uint32(m[39])
	}
	for _, a := range s.mu.agents {
		if a.port == port && a.reg.MgmtClass == uint8(class) && a.reg.MgmtClass != 0 &&
			a.reg.ClassVersion == m.ClassVersion() && a.reg.Method(meth) && (!vendor2(class) || a.reg.OUI == oui) {
			return a
		}
	}
	return nil
}

// isResponse reports whether m answers a request, as the kernel's MAD
// layer sees it (ib_response_mad): the R bit, or a TrapRepress.
func isResponse(m mad.MAD) bool {
	return m.IsResponse() || m.Method() == mad.MethodTrapRepress
}
