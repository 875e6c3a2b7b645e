package agent

import "ibfab/wire/mad"

// nodeInfoLocked serves Get(NodeInfo). PortGUID and LocalPortNum depend on
// the port the SMP came in on: a switch has one port GUID (port 0's) and
// reports the physical arrival port; a CA reports the port's own GUID.
func (a *Agent) nodeInfoLocked(c *smpCtx) mad.Status {
	clear(c.data)
	mad.NodeInfo(c.data).Encode(&mad.NodeInfoFields{
		BaseVersion:     mad.BaseVersion,
		ClassVersion:    mad.SubnVersion,
		NodeType:        a.cfg.Type,
		NumPorts:        a.cfg.NumPorts,
		SystemImageGUID: a.cfg.SystemImageGUID,
		NodeGUID:        a.cfg.NodeGUID,
		PortGUID:        a.portGUID(c.port),
		PartitionCap:    a.cfg.PartitionCap,
		DeviceID:        a.cfg.DeviceID,
		Revision:        a.cfg.Revision,
		LocalPortNum:    c.port,
		VendorID:        a.cfg.VendorID,
	})
	return mad.StatusOK
}

// nodeDescLocked serves Get(NodeDescription).
func (a *Agent) nodeDescLocked(c *smpCtx) mad.Status {
	clear(c.data)
	mad.NodeDescription(c.data).SetText(a.cfg.Description)
	return mad.StatusOK
}

// guidInfoLocked serves GUIDInfo of the SMA's port: the modifier is the
// block number. Entry 0 is the port GUID and read-only; the SM may set the
// others (alias GUIDs).
func (a *Agent) guidInfoLocked(c *smpCtx) mad.Status {
	sma := a.smaPort(c.port)
	p := &a.port[sma]
	size := int(p.info.GUIDCap)
	first := int(c.mod) * mad.GUIDsPerBlock
	if c.mod > 0xff || first >= size {
		return mad.StatusInvalidField
	}
	b := mad.GUIDInfo(c.data)
	var guids []uint64
	if p.mgmt != nil {
		guids = p.mgmt.guids
	}
	if c.set {
		m := p.mgmtState()
		if m.guids == nil {
			m.guids = make([]uint64, size)
			m.guids[0] = a.portGUID(sma)
		}
		for i := range mad.GUIDsPerBlock {
			if j := first + i; j > 0 && j < size {
				m.guids[j] = b.GUID(i)
			}
		}
		guids = m.guids
	}
	clear(c.data)
	for i := range mad.GUIDsPerBlock {
		switch j := first + i; {
		case j >= size:
		case guids != nil:
			b.SetGUID(i, guids[j])
		case j == 0:
			b.SetGUID(i, a.portGUID(sma)) // no alias set: only the port GUID
		}
	}
	return mad.StatusOK
}
