package agent

import "ibfab/wire/mad"

// switchInfoLocked serves SwitchInfo (IBA 14.2.5.4). A Set changes
// LinearFDBTop, MulticastFDBTop, the default ports and LifeTimeValue;
// writing 1 to PortStateChange clears it, 0 leaves it alone. The
// capabilities are read-only.
func (a *Agent) switchInfoLocked(c *smpCtx) mad.Status {
	if c.mod != 0 {
		return mad.StatusInvalidField
	}
	s := &a.sw
	if c.set {
		req := mad.SwitchInfo(c.data).Fields()
		if req.LinearFDBTop >= s.info.LinearFDBCap {
			return mad.StatusInvalidField
		}
		s.info.LinearFDBTop = req.LinearFDBTop
		s.info.MulticastFDBTop = req.MulticastFDBTop
		s.info.DefaultPort = req.DefaultPort
		s.info.DefaultMulticastPrimaryPort = req.DefaultMulticastPrimaryPort
		s.info.DefaultMulticastNotPrimaryPort = req.DefaultMulticastNotPrimaryPort
		s.info.LifeTimeValue = req.LifeTimeValue
		if req.PortStateChange {
			// The SM has seen the change: a trap still waiting for the
			// SM's LID would only make it sweep again.
			s.portStateChange = false
			a.trap.pending = false
		}
		a.tables.lftTop.Store(uint32(req.LinearFDBTop))
	}
	info := s.info
	info.PortStateChange = s.portStateChange
	clear(c.data)
	mad.SwitchInfo(c.data).Encode(&info)
	return mad.StatusOK
}

// lftLocked serves LinearForwardingTable: the modifier is the block
// number, and a block past LinearFDBCap is an invalid field.
func (a *Agent) lftLocked(c *smpCtx) mad.Status {
	block, err := mad.ParseLFTModifier(c.mod)
	if err != nil || int(block) >= a.tables.lftBlocks {
		return mad.StatusInvalidField
	}
	t := mad.LinearForwardingTable(c.data)
	if c.set {
		var b lftBlock
		for i := range b {
			b[i] = t.Port(i)
		}
		a.tables.lftSlot(int(block)).Store(&b)
	}
	clear(c.data)
	b := a.tables.lftAt(int(block))
	for i := range mad.LFTEntriesPerBlock {
		p := uint8(mad.LFTNoPort)
		if b != nil {
			p = b[i]
		}
		t.SetPort(i, p)
	}
	return mad.StatusOK
}

// mftLocked serves MulticastForwardingTable: the modifier names a block of
// 32 MLIDs and a position, the group of 16 ports whose bits the block's
// masks carry.
func (a *Agent) mftLocked(c *smpCtx) mad.Status {
	block, pos, err := mad.ParseMFTModifier(c.mod)
	if err != nil || int(block) >= len(a.tables.mft) || int(pos)*mad.MFTPortsPerMask > int(a.cfg.NumPorts) {
		return mad.StatusInvalidField
	}
	slot := &a.tables.mft[block]
	t := mad.MulticastForwardingTable(c.data)
	if c.set {
		var b mftBlock
		if old := slot.Load(); old != nil {
			b = *old
		}
		for i := range b {
			mask := t.PortMask(i)
			for j := range mad.MFTPortsPerMask {
				port := pos*mad.MFTPortsPerMask + uint8(j)
				_, bit := mad.MFTPortBit(port)
				w, m := port/64, uint64(1)<<(port%64)
				if mask&bit != 0 && port <= a.cfg.NumPorts {
					b[i][w] |= m
				} else {
					b[i][w] &^= m
				}
			}
		}
		slot.Store(&b)
	}
	clear(c.data)
	if b := slot.Load(); b != nil {
		for i := range b {
			var mask uint16
			for j := range mad.MFTPortsPerMask {
				port := pos*mad.MFTPortsPerMask + uint8(j)
				if _, bit := mad.MFTPortBit(port); b[i].Has(port) {
					mask |= bit
				}
			}
			t.SetPortMask(i, mask)
		}
	}
	return mad.StatusOK
}
