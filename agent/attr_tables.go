package agent

import (
	"slices"

	"ibfab/wire/mad"
)

// pkeyTableLocked serves P_KeyTable (IBA 14.2.5.7): the modifier holds the
// block in its low 16 bits and, on a switch, the port in bits 16-23; a CA
// serves the table of the port the SMP came in on. Entries past the
// table's size read as 0 and are not written.
func (a *Agent) pkeyTableLocked(c *smpCtx) mad.Status {
	if c.mod>>24 != 0 {
		return mad.StatusInvalidField
	}
	block := int(c.mod & 0xffff)
	port := a.smaPort(c.port)
	if a.isSwitch() {
		port = uint8(c.mod >> 16)
	}
	size := a.pkeyCap(port)
	first := block * mad.PKeysPerBlock
	if first >= size {
		return mad.StatusInvalidField
	}
	t := mad.PKeyTable(c.data)
	slot := &a.tables.pkeys[port]
	if c.set {
		cur := *slot.Load()
		changed := false
		for i := range mad.PKeysPerBlock {
			if j := first + i; j < size && cur[j] != t.PKey(i) {
				changed = true
			}
		}
		// Tables are shared until they change (resetPKeys): an SM
		// that writes what a port holds leaves it shared.
		if changed {
			keys := slices.Clone(cur)
			for i := range mad.PKeysPerBlock {
				if j := first + i; j < size {
					keys[j] = t.PKey(i)
				}
			}
			slot.Store(&keys)
		}
	}
	keys := *slot.Load()
	clear(c.data)
	for i := range mad.PKeysPerBlock {
		if j := first + i; j < size {
			t.SetPKey(i, keys[j])
		}
	}
	return mad.StatusOK
}

// sl2vlLocked serves SLtoVLMappingTable (IBA 14.2.5.8). On a switch the
// modifier names the input and output port (and, in a Set, may say "all
// input ports" or "all output ports"); a CA has one table per port and
// serves the one of the port the SMP came in on.
func (a *Agent) sl2vlLocked(c *smpCtx) mad.Status {
	t := mad.SLtoVLMappingTable(c.data)
	ins, outs := []uint8{0}, []uint8{a.smaPort(c.port)}
	if a.isSwitch() {
		m, err := mad.ParseSLtoVLModifier(c.mod)
		if err != nil || (!c.set && (m.AllInPorts || m.AllOutPorts)) {
			return mad.StatusInvalidField
		}
		ins, outs = []uint8{m.InPort}, []uint8{m.OutPort}
		if m.AllInPorts {
			ins = a.allPorts()
		}
		if m.AllOutPorts {
			outs = a.allPorts()
		}
		for _, p := range append(ins, outs...) {
			if p > a.cfg.NumPorts {
				return mad.StatusInvalidField
			}
		}
	}
	if c.set {
		var vls [mad.NumSLs]uint8
		for sl := range vls {
			vls[sl] = t.VL(sl)
		}
		for _, in := range ins {
			cur := *a.tables.sl2vl[in].Load()
			if !slices.ContainsFunc(outs, func(out uint8) bool { return cur[out] != vls }) {
				continue // as it is: the row stays shared
			}
			row := slices.Clone(cur)
			for _, out := range outs {
				row[out] = vls
			}
			a.tables.sl2vl[in].Store(&row)
		}
	}
	vls := (*a.tables.sl2vl[ins[0]].Load())[outs[0]]
	clear(c.data)
	for sl, vl := range vls {
		t.SetVL(sl, vl)
	}
	return mad.StatusOK
}

// allPorts returns 0..NumPorts.
func (a *Agent) allPorts() []uint8 {
	ps := make([]uint8, int(a.cfg.NumPorts)+1)
	for i := range ps {
		ps[i] = uint8(i)
	}
	return ps
}

// vlarbLocked serves VLArbitrationTable (IBA 14.2.5.9): the modifier names
// one of four 32-entry blocks (both halves of the low-priority table, then
// of the high-priority one) and, on a switch, the output port. Blocks past
// the port's VLArbitrationHighCap/LowCap are an invalid field; entries
// past the cap inside a block read as 0 and are not written.
func (a *Agent) vlarbLocked(c *smpCtx) mad.Status {
	blk, port, err := mad.ParseVLArbModifier(c.mod)
	if err != nil {
		return mad.StatusInvalidField
	}
	if !a.isSwitch() {
		port = a.smaPort(c.port)
	} else if port > a.cfg.NumPorts {
		return mad.StatusInvalidField
	}
	info := &a.port[port].info
	size := int(info.VLArbitrationLowCap)
	if blk.High() {
		size = int(info.VLArbitrationHighCap)
	}
	first := blk.FirstEntry()
	if first >= size {
		return mad.StatusInvalidField
	}
	cfg := a.VLArbitration(port)
	table := &cfg.Low
	if blk.High() {
		table = &cfg.High
	}
	t := mad.VLArbitrationTable(c.data)
	if c.set {
		for i := range mad.VLArbEntriesPerBlock {
			if j := first + i; j < size {
				table[j] = mad.VLArbEntry{VL: t.VL(i), Weight: t.Weight(i)}
			}
		}
		if cfg != *a.tables.vlarb[port].Load() {
			a.tables.vlarb[port].Store(&cfg) // else the shared setup stays
		}
		a.applyVLArbLocked(c, port)
	}
	clear(c.data)
	for i := range mad.VLArbEntriesPerBlock {
		if j := first + i; j < size {
			t.SetVL(i, table[j].VL)
			t.SetWeight(i, table[j].Weight)
		}
	}
	return mad.StatusOK
}
