package agent

import "ibfab/wire/mad"

// The adaptive routing agent: ibfab's vendor class 0x0A (wire/mad/ar.go,
// docs/adaptive-routing.md), Get and Set of ARInfo, ARGroupTable and
// ARLIDTable, Get of ClassPortInfo, on switches. The values are stored
// under mu; every Set that changes what the switch forwards by publishes a
// new ARTable (ar_api.go), built from the whole stored state, for the
// crossbar to load per packet. A Set is checked whole before any of it is
// stored: a mode the switch does not do, a threshold outside 1..100, an
// AFC VL beyond the switch's data VLs, a group top or a group block beyond
// GroupCap, a port mask naming port 0 or a port the switch does not have,
// a LID block beyond LIDCap or a group index beyond GroupCap is an invalid
// field, and nothing changes.
//
// A CA has no adaptive routing: it answers every attribute of the class
// with MethodAttrUnsupported (after the version and method checks), so a
// manager that asks learns "no AR here" rather than timing out, as it
// would on a node without an agent for the class.

// Defaults of the adaptive routing agent.
const (
	// DefaultARGroupCap is the groups a switch's ARGroupTable holds: 64,
	// group 0 ("none") included; a fat tree needs one group per distinct
	// set of up ports.
	DefaultARGroupCap = 64
	// DefaultARThreshold is the threshold after reset, seed 003's 75 %.
	DefaultARThreshold = 75
)

// arState is a switch's stored adaptive routing configuration.
type arState struct {
	enable    bool
	mode      mad.ARMode
	threshold uint8
	afcVL     uint8
	groupTop  uint16
	groups    []mad.PortMask // GroupCap of them; groups[0] stays empty
	// lids holds the group of each LID set so far; LIDs past its end
	// have none. It grows with the highest block set, not to LIDCap, so
	// a table covers the subnet's LIDs rather than 48K.
	lids []uint16
}

// arInitLocked sets up the state at first use.
func (a *Agent) arInitLocked() *arState {
	if a.ar == nil {
		a.ar = &arState{}
	}
	r := a.ar
	if r.groups == nil {
		r.threshold = DefaultARThreshold
		r.groups = make([]mad.PortMask, a.cfg.ARGroupCap)
	}
	return r
}

// arServe serves one attribute: data is the request's attribute data,
// overwritten with the response's; changed says whether a Set changed the
// stored state.
type arServe func(a *Agent, r *arState, set bool, mod uint32, data []byte) (st mad.Status, changed bool)

// arAttrs is the dispatch table of a switch: the handler and whether Set
// is valid.
var arAttrs = map[mad.AttrID]struct {
	serve arServe
	set   bool
}{
	mad.AttrClassPortInfo: {serve: arClassPortInfo},
	mad.AttrARInfo:        {serve: arInfo, set: true},
	mad.AttrARGroupTable:  {serve: arGroupTable, set: true},
	mad.AttrARLIDTable:    {serve: arLIDTable, set: true},
}

// receiveAR answers a class 0x0A request addressed to the node.
func (a *Agent) receiveAR(in Inbound, m []byte) []Outbound {
	a.stats.arRequests.Add(1)
	a.respondGMP(m, a.serveAR(mad.MAD(m)))
	return a.gmpReply(in, m)
}

// serveAR serves an adaptive routing request in place and returns its
// status.
func (a *Agent) serveAR(h mad.MAD) mad.Status {
	set, st := getOrSet(h, mad.ARVersion)
	if st != mad.StatusOK {
		return st
	}
	attr, ok := arAttrs[h.AttrID()]
	if !a.isSwitch() || !ok || set && !attr.set {
		return mad.StatusMethodAttrUnsupported
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.arInitLocked()
	st, changed := attr.serve(a, r, set, h.AttrModifier(), mad.ARMAD(h).Data())
	if changed {
		a.SetARTable(a.arTableLocked(r))
		a.stats.arUpdates.Add(1)
	}
	return st
}

// arTableLocked builds the table the crossbar reads from r: the mode is
// off unless enabled, groups above GroupTop are empty.
func (a *Agent) arTableLocked(r *arState) *ARTable {
	mode := r.mode
	if !r.enable {
		mode = mad.AROff
	}
	groups := make([][]uint8, int(r.groupTop)+1)
	for g := 1; g < len(groups); g++ {
		groups[g] = r.groups[g].Ports()
	}
	return NewARTable(mode, r.threshold, r.afcVL, r.lids, groups)
}

// arCaps returns ARInfo's capability fields: every mode, AFI, the
// switch's group table and a LID table as large as its LFT.
func (a *Agent) arCaps() mad.ARInfoFields {
	return mad.ARInfoFields{ModesSupported: mad.ARModesAll, AFISupported: true,
		GroupCap: a.cfg.ARGroupCap, LIDCap: a.cfg.LinearFDBCap}
}

// arClassPortInfo: versions and RespTimeValue; no capabilities, no
// redirection, no traps.
func arClassPortInfo(a *Agent, _ *arState, _ bool, _ uint32, data []byte) (mad.Status, bool) {
	clear(data)
	mad.ClassPortInfo(data).Encode(&mad.ClassPortInfoFields{BaseVersion: mad.BaseVersion,
		ClassVersion: mad.ARVersion, RespTimeValue: a.cfg.RespTimeValue})
	return mad.StatusOK, false
}

func arInfo(a *Agent, r *arState, set bool, mod uint32, data []byte) (mad.Status, bool) {
	if mod != 0 {
		return mad.StatusInvalidField, false
	}
	f := a.arCaps()
	changed := false
	if set {
		n := mad.ARInfo(data).Fields()
		switch {
		case !n.Mode.IsValid() || f.ModesSupported&n.Mode.Bit() == 0,
			!mad.ValidThreshold(n.Threshold),
			int(n.AFCVL) >= mad.NumDataVLs(a.cfg.VLCap),
			n.GroupTop >= f.GroupCap:
			return mad.StatusInvalidField, false
		}
		changed = n.Enable != r.enable || n.Mode != r.mode || n.Threshold != r.threshold ||
			n.AFCVL != r.afcVL || n.GroupTop != r.groupTop
		r.enable, r.mode, r.threshold, r.afcVL, r.groupTop = n.Enable, n.Mode, n.Threshold, n.AFCVL, n.GroupTop
	}
	f.Enable, f.Mode, f.Threshold, f.AFCVL, f.GroupTop = r.enable, r.mode, r.threshold, r.afcVL, r.groupTop
	clear(data)
	mad.ARInfo(data).Encode(&f)
	return mad.StatusOK, changed
}

// arGroupTable: the modifier is the block of groups; a block past
// GroupCap is an invalid field, groups past it in the last block read as
// empty and may only be set empty. Group 0 is "none": its mask is not
// stored and reads as empty.
func arGroupTable(a *Agent, r *arState, set bool, mod uint32, data []byte) (mad.Status, bool) {
	if mod >= uint32(len(r.groups)+mad.ARGroupsPerBlock-1)/mad.ARGroupsPerBlock {
		return mad.StatusInvalidField, false
	}
	first := int(mod) * mad.ARGroupsPerBlock
	changed := false
	if set {
		n := mad.ARGroupTable(data).Fields()
		for i := range n.Groups {
			g := first + i
			if g == 0 || n.Groups[i].IsZero() {
				continue
			}
			if g >= len(r.groups) || !a.arPortsValid(&n.Groups[i]) {
				return mad.StatusInvalidField, false
			}
		}
		for i := range n.Groups {
			if g := first + i; g > 0 && g < len(r.groups) && r.groups[g] != n.Groups[i] {
				r.groups[g], changed = n.Groups[i], true
			}
		}
	}
	var f mad.ARGroupTableFields
	for i := range f.Groups {
		if g := first + i; g > 0 && g < len(r.groups) {
			f.Groups[i] = r.groups[g]
		}
	}
	clear(data)
	mad.ARGroupTable(data).Encode(&f)
	return mad.StatusOK, changed
}

// arPortsValid reports whether m names only ports 1..NumPorts: port 0
// (the switch's management port) carries no data.
func (a *Agent) arPortsValid(m *mad.PortMask) bool {
	for _, p := range m.Ports() {
		if p == 0 || p > a.cfg.NumPorts {
			return false
		}
	}
	return true
}

// arLIDTable: the modifier is the block of 64 LIDs; a block past LIDCap
// is an invalid field, LIDs past it in the last block read as 0 and may
// only be set 0; a group index must be below GroupCap.
func arLIDTable(a *Agent, r *arState, set bool, mod uint32, data []byte) (mad.Status, bool) {
	lidCap := int(a.cfg.LinearFDBCap)
	if mod >= uint32(lidCap+mad.ARLIDsPerBlock-1)/mad.ARLIDsPerBlock {
		return mad.StatusInvalidField, false
	}
	first := int(mod) * mad.ARLIDsPerBlock
	changed := false
	if set {
		n := mad.ARLIDTable(data).Fields()
		for i, g := range n.Groups {
			if g != 0 && (first+i >= lidCap || int(g) >= len(r.groups)) {
				return mad.StatusInvalidField, false
			}
		}
		for i, g := range n.Groups {
			lid := first + i
			if lid >= len(r.lids) {
				if g == 0 {
					continue
				}
				r.lids = append(r.lids, make([]uint16, lid+1-len(r.lids))...)
			}
			if r.lids[lid] != g {
				r.lids[lid], changed = g, true
			}
		}
	}
	var f mad.ARLIDTableFields
	for i := range f.Groups {
		if lid := first + i; lid < len(r.lids) {
			f.Groups[i] = r.lids[lid]
		}
	}
	clear(data)
	mad.ARLIDTable(data).Encode(&f)
	return mad.StatusOK, changed
}
