package sm

import (
	"fmt"
	"slices"

	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// smpRoute is how the SM addresses a device (thesis 5.4): LID-routed all
// the way (path nil), purely directed (lid 0), or LID-routed to the switch
// whose LID is lid and directed from there along path, the mixed route
// partial discovery uses to reach past a failure without the SMI cost of
// a directed hop at every switch.
type smpRoute struct {
	lid  uint16  // the LID-routed part's destination; 0: none
	path []uint8 // the directed part, path[0] unused; nil: none
}

// drRoute is a purely directed route.
func drRoute(path []uint8) smpRoute { return smpRoute{path: path} }

// lidRoute is a LID-routed one.
func lidRoute(lid uint16) smpRoute { return smpRoute{lid: lid} }

// extend returns the route one directed hop further, out of port.
func (r smpRoute) extend(port int) smpRoute {
	if r.path == nil {
		return smpRoute{lid: r.lid, path: []uint8{0, uint8(port)}}
	}
	return smpRoute{lid: r.lid, path: extend(r.path, port)}
}

// hops returns the directed hops of r.
func (r smpRoute) hops() int {
	if len(r.path) == 0 {
		return 0
	}
	return len(r.path) - 1
}

// request returns a request along r; smLID is the DrSLID of a mixed
// route, the LID its answer goes back to.
func (r smpRoute) request(smLID uint16, attr mad.AttrID, mod uint32) txn.Request {
	switch {
	case r.path == nil:
		return txn.Request{LID: r.lid, Attr: attr, Mod: mod}
	case r.lid != 0:
		return txn.Request{DR: true, LID: r.lid, DrSLID: smLID, Path: slices.Clone(r.path), Attr: attr, Mod: mod}
	}
	return txn.Request{DR: true, Path: slices.Clone(r.path), Attr: attr, Mod: mod}
}

// String spells r as the thesis does: "1→4, (4,3)" is LID-routed to LID 4,
// then out of port 4 and port 3.
func (r smpRoute) String() string {
	var s string
	if r.lid != 0 {
		s = fmt.Sprintf("→%d", r.lid)
	}
	if r.path != nil {
		if s != "" {
			s += ", "
		}
		s += "("
		for i, p := range r.path[1:] {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprint(p)
		}
		s += ")"
	}
	return s
}
