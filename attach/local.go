package attach

import (
	"bytes"
	"errors"
	"fmt"

	"ibfab/agent"
	"ibfab/hca"
	"ibfab/wire/mad"
)

// Control queries are answered from the HCA's own SMA, by a directed-route
// Get with hop count 0 through agent.Send: the answer is exactly what an
// SM reading the port would see, live fields included. The agent applies
// the M_Key rules to it like to any SMP; once an SM protects the port at
// level 2 or more the Get goes unanswered (and counts as a violation), so
// the last good answer is kept and patched with what the agent exports
// (LIDs, SM LID, LMC, port state).

const attrNodeDescription = mad.AttrNodeDescription

// localTIDTag marks the TIDs of the server's own Gets, which never leave
// the node.
const localTIDTag = 0x5a5a << 48

var errNoAnswer = errors.New("attach: the SMA did not answer")

type cacheKey struct {
	attr mad.AttrID
	port uint8
}

// localGet returns the data of a Get of attr at the SMA of port.
func (s *Server) localGet(h *hca.HCA, port uint8, attr mad.AttrID, mod uint32) ([]byte, error) {
	tid := localTIDTag | s.tids.Add(1)&tidLowMask
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: tid, AttrID: attr, AttrModifier: mod})
	if err != nil {
		return nil, err
	}
	for _, o := range h.Agent().Send(agent.Request{Port: port, MAD: b}) {
		m := mad.DRSMP(o.MAD)
		if !o.Local || !m.IsValid() || !m.MAD().IsResponse() || m.MAD().TransactionID() != tid {
			continue
		}
		if st := m.Status(); st != mad.StatusOK {
			return nil, fmt.Errorf("attach: local Get(%v): status %v", attr, st)
		}
		return bytes.Clone(m.Data()), nil
	}
	return nil, errNoAnswer
}

// cached returns the last good answer for k, or stores d as it.
func (s *Server) cached(k cacheKey, d []byte) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d != nil {
		s.mu.cache[k] = d
		return d, true
	}
	c, ok := s.mu.cache[k]
	return bytes.Clone(c), ok
}

// nodeInfo returns the NodeInfo the SMA of port answers.
func (s *Server) nodeInfo(h *hca.HCA, port uint8) (mad.NodeInfo, bool) {
	d, _ := s.localGet(h, port, mad.AttrNodeInfo, 0)
	d, ok := s.cached(cacheKey{mad.AttrNodeInfo, port}, d)
	return mad.NodeInfo(d), ok
}

// portInfo returns the PortInfo of port.
func (s *Server) portInfo(h *hca.HCA, port uint8) (mad.PortInfo, bool) {
	d, err := s.localGet(h, port, mad.AttrPortInfo, uint32(port))
	if err == nil {
		s.cached(cacheKey{mad.AttrPortInfo, port}, d)
		return mad.PortInfo(d), true
	}
	d, ok := s.cached(cacheKey{mad.AttrPortInfo, port}, nil)
	if !ok {
		return nil, false
	}
	pi := mad.PortInfo(d)
	c := h.Agent().PortConfig(port)
	pi.SetLID(c.LID)
	pi.SetLMC(c.LMC)
	pi.SetMasterSMLID(c.MasterSMLID)
	pi.SetMasterSMSL(c.MasterSMSL)
	if p := h.Port(port); p != nil {
		st := p.State()
		pi.SetPortState(st.Port)
		pi.SetPortPhysicalState(st.Phys)
	}
	return pi, true
}

// nodeDescText returns the text of NodeDescription data d.
func nodeDescText(d []byte) string {
	if !mad.NodeDescription(d).IsValid() {
		return ""
	}
	return mad.NodeDescription(d).Text()
}
