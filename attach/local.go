package attach

import (
	"ibfab/wire/mad"
)

// Control queries are answered from the HCA's own SMA through
// agent.LocalGet: exactly what an SM reading the port would see, live
// fields included, and, like the local MAD interface of a real HCA's
// driver, exempt from M_Key protection, so a port an SM protects still
// answers its clients' port queries.

const attrNodeDescription = mad.AttrNodeDescription

// localGet returns the data of a Get of attr at the SMA of port.
func (s *Server) localGet(h Device, port uint8, attr mad.AttrID, mod uint32) ([]byte, error) {
	return h.Agent().LocalGet(port, attr, mod)
}

// nodeInfo returns the NodeInfo the SMA of port answers.
func (s *Server) nodeInfo(h Device, port uint8) (mad.NodeInfo, bool) {
	d, err := s.localGet(h, port, mad.AttrNodeInfo, 0)
	return mad.NodeInfo(d), err == nil
}

// portInfo returns the PortInfo of port.
func (s *Server) portInfo(h Device, port uint8) (mad.PortInfo, bool) {
	d, err := s.localGet(h, port, mad.AttrPortInfo, uint32(port))
	return mad.PortInfo(d), err == nil
}

// nodeDescText returns the text of NodeDescription data d.
func nodeDescText(d []byte) string {
	if !mad.NodeDescription(d).IsValid() {
		return ""
	}
	return mad.NodeDescription(d).Text()
}
