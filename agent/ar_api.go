package agent

import "ibfab/wire/mad"

// What the soft switch's adaptive routing reads from the agent: the mode,
// threshold and Adapted Flow Channel the manager set, and per destination
// LID the group of alternative output ports. The vendor class handler
// (ar.go) builds a new ARTable on every Set that changes it and publishes
// it with one atomic store, so the crossbar reads it with one atomic load
// per packet and a Set takes effect with the next packet.

// ARTable is one immutable snapshot of a switch's adaptive routing
// configuration.
type ARTable struct {
	Mode mad.ARMode
	// Threshold is the occupancy, in percent of the downstream VL's
	// buffer, at which ARAdaptiveTh and ARAFI adapt (1..100).
	Threshold uint8
	// AFCVL is the VL adapted packets travel on in ARAFI mode.
	AFCVL uint8

	// group[lid] is the index in groups of lid's alternative ports, 0
	// for none (forward by the LFT only).
	group  []uint16
	groups [][]uint8
}

// Alternatives returns the output ports a packet for dlid may be adapted
// to (the deterministic port is usually one of them), or nil when dlid
// has no group. The slice is shared: do not modify it.
func (t *ARTable) Alternatives(dlid uint16) []uint8 {
	if t == nil || int(dlid) >= len(t.group) {
		return nil
	}
	g := t.group[dlid]
	if g == 0 || int(g) >= len(t.groups) {
		return nil
	}
	return t.groups[g]
}

// NewARTable returns a table for mode, threshold and afcVL, in which
// group[lid] (0 none) indexes groups; groups[0] is ignored. The slices are
// copied.
func NewARTable(mode mad.ARMode, threshold, afcVL uint8, group []uint16, groups [][]uint8) *ARTable {
	t := &ARTable{Mode: mode, Threshold: threshold, AFCVL: afcVL, group: append([]uint16(nil), group...)}
	t.groups = make([][]uint8, len(groups))
	for i, g := range groups {
		t.groups[i] = append([]uint8(nil), g...)
	}
	return t
}

// ARTable returns the switch's current adaptive routing table; never nil
// (mode off with no groups until the manager sets one).
func (a *Agent) ARTable() *ARTable {
	if t := a.arTable.Load(); t != nil {
		return t
	}
	return &ARTable{}
}

// SetARTable publishes t as the switch's adaptive routing table, as the
// vendor class handler does after a Set; the engines' unit tests set one
// with it.
func (a *Agent) SetARTable(t *ARTable) { a.arTable.Store(t) }
