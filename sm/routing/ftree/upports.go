package ftree

import "ibfab/sm/routing"

// UpPorts is what adaptive routing may choose from on a fat tree (seed
// 003): at each switch, for each destination LID that is not below it,
// the up ports that lead to the destination by a minimal path, in port
// order. Below the turn the path down is unique, so a destination below
// the switch (its leaf reached going down only) has no alternatives. On a
// complete fat tree such as an RLFT the alternatives are all the switch's
// up ports, for every destination not below it; where links are missing,
// only the up ports from which the destination is still reached minimally
// (ftree's candidates), so an adapted packet is never sent where it
// cannot arrive, and every route any choice makes is up*/down*, so no
// choice can close a credit loop.
//
// Only CA ports have alternatives: the LIDs of switches (management
// traffic, routed through a valley between top switches) keep their one
// route. The AR manager turns these sets into the switches' AR groups.
type UpPorts struct {
	f  *routing.Fabric
	ft *fatTree
	// alts[s][leaf] is switch s's alternatives for the CA ports of the
	// leaf of that index (fatTree.leaves); nil when the leaf is below s.
	alts [][][]int
}

// FatTreeUpPorts reads f as a fat tree (as dmodk does; the same error on
// a fabric that is not one, wrapping ErrRouting) and returns its up ports.
func FatTreeUpPorts(f *routing.Fabric) (*UpPorts, error) {
	ft, err := readFatTree(f)
	if err != nil {
		return nil, err
	}
	n := f.Topo.NumNodes()
	u := &UpPorts{f: f, ft: ft, alts: make([][][]int, n)}
	for _, s := range f.Switches() {
		u.alts[s] = make([][]int, len(ft.leaves))
	}
	x := newFtreeDest(f, &routing.Routes{Up: ft.up}, ft.order) // it reads only the directions
	for li, t := range ft.leaves {
		x.markBelow(t)
		x.settleUpDist()
		for _, s := range f.Switches() {
			if !x.below[s] && x.upDist[s] > 0 {
				u.alts[s][li] = x.candidates(s)
			}
		}
	}
	return u, nil
}

// Up returns switch node s's up ports in port order: those cabled to a
// switch one stage higher. nil for a top switch and for a node that is no
// switch.
func (u *UpPorts) Up(s int) []int {
	if s < 0 || s >= len(u.ft.upPorts) {
		return nil
	}
	return u.ft.upPorts[s]
}

// Alternatives returns the up ports switch node s may send lid's packets
// out of: nil when lid belongs to no CA port, or to one below s, or when
// s is no switch. The slice is shared: do not change it.
func (u *UpPorts) Alternatives(s int, lid uint16) []int {
	if s < 0 || s >= len(u.alts) || u.alts[s] == nil {
		return nil
	}
	i, ok := u.f.Owner(lid)
	if !ok {
		return nil
	}
	if li := u.Leaf(i); li >= 0 {
		return u.alts[s][li]
	}
	return nil
}

// Leaves returns the number of leaf switches.
func (u *UpPorts) Leaves() int { return len(u.ft.leaves) }

// LeafAlternatives returns switch node s's alternatives for the CA ports
// of the leaf of index li (as Leaf numbers them): nil when the leaf is
// below s. The slice is shared: do not change it.
func (u *UpPorts) LeafAlternatives(s, li int) []int { return u.alts[s][li] }

// Leaf returns the index, 0 to Leaves()-1 in host order, of the leaf
// that end port i (in Fabric.EndPorts order) hangs off when it is a CA
// port, else -1.
func (u *UpPorts) Leaf(i int) int {
	if u.ft.dest[i] < 0 {
		return -1
	}
	return u.ft.leafIdx[u.f.Ends()[i].Switch]
}

// Stage returns the stage of switch node s, 1 for a leaf (ftree's rank
// plus one), 0 for a node that is no switch.
func (u *UpPorts) Stage(s int) int {
	if s < 0 || s >= len(u.ft.rank) || !u.f.IsSwitch(s) {
		return 0
	}
	return u.ft.rank[s] + 1
}

// HostIndex returns the D-mod-K destination number of the CA port that
// owns lid (dmodk's host order, which topologies.LayoutFatTree gives on
// the same cabling); false for a LID of no CA port.
func (u *UpPorts) HostIndex(lid uint16) (int, bool) {
	i, ok := u.f.Owner(lid)
	if !ok || u.ft.dest[i] < 0 {
		return 0, false
	}
	return u.ft.dest[i], true
}
