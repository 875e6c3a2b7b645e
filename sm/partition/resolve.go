package partition

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"

	"ibfab/topologies"
	"ibfab/wire/mad"
)

// DefaultPKey is the Default partition's P_Key.
const DefaultPKey mad.PKey = 0x7fff

// maxNameLen is the longest partition name OpenSM keeps; a longer one is
// cut, and never found by its name.
const maxNameLen = 31

// Fabric is what the partition manager needs to know of a subnet.
type Fabric struct {
	SM    uint64 // the SM's own port GUID: SELF, and a full member of Default
	Ports []Port // the end ports
}

// Port is an end port: a CA or router port, or a switch's port 0.
type Port struct {
	GUID uint64
	Type topologies.NodeType
	// Cap is the P_Key table's size, NodeInfo.PartitionCap.
	Cap int
	// Table is what the port holds, as read: whole blocks (32 entries),
	// ⌈Cap/32⌉ of them; shorter is padded with 0, longer cut. nil: not
	// known, so no table is computed for the port (it still counts as a
	// member).
	Table []mad.PKey
	// Peer is the switch port a CA's or router's port is cabled to; nil
	// when there is none, or the port is a switch's.
	Peer *SwitchPort
}

// SwitchPort is a switch's external port cabled to an end port.
type SwitchPort struct {
	// Cap is the switch's SwitchInfo.PartitionEnforcementCap: 0 for a
	// switch that does not enforce, whose ports the manager leaves alone.
	Cap   int
	Table []mad.PKey // as read, as Port.Table
}

// Partition is a partition in effect on a fabric.
type Partition struct {
	Name  string
	PKey  mad.PKey // the base, membership bit clear
	Line  int      // its first definition's line; 0 for the implicit Default
	IPoIB bool
	// Full and Limited are its members' port GUIDs, in increasing order.
	Full, Limited []uint64
}

// part is a partition while the file is applied.
type part struct {
	Partition
	full, limited map[uint64]bool
}

// resolver applies a configuration to a fabric's ports, as OpenSM's
// osm_prtn_make_partitions.
type resolver struct {
	f       Fabric
	ports   map[uint64]int // GUID → index in f.Ports
	parts   map[mad.PKey]*part
	counter mad.PKey            // the last P_Key generated
	indx0   map[uint64]mad.PKey // per port GUID, the key its index 0 is for (0: Default's)
	absent  map[uint64]bool     // GUIDs named that the fabric lacks
}

// walkOrder sorts P_Keys in the order OpenSM walks its partition map:
// keyed by the P_Key in network byte order read as a little-endian
// integer.
func walkOrder(a, b mad.PKey) int {
	return cmp.Compare(bits.ReverseBytes16(uint16(a)), bits.ReverseBytes16(uint16(b)))
}

// resolve returns the partitions in effect, in OpenSM's walk order.
func resolve(c *Config, f Fabric) (*resolver, error) {
	r := &resolver{f: f, ports: map[uint64]int{}, parts: map[mad.PKey]*part{},
		indx0: map[uint64]mad.PKey{}, absent: map[uint64]bool{}}
	for i, p := range f.Ports {
		r.ports[p.GUID] = i
	}
	def, _ := r.make("Default", DefaultPKey)
	noFile := c.Empty()
	for _, p := range f.Ports {
		r.add(def, p.GUID, noFile, false)
	}
	r.add(def, f.SM, true, false)
	if c != nil {
		for _, d := range c.Definitions {
			if err := r.apply(&d); err != nil {
				return nil, &Error{File: c.File, Line: d.Line, Msg: err.Error()}
			}
		}
	}
	for k, p := range r.parts {
		if len(p.full) == 0 && len(p.limited) == 0 {
			delete(r.parts, k)
		}
	}
	return r, nil
}

// apply adds one definition's members to its partition.
func (r *resolver) apply(d *Definition) error {
	p, err := r.make(d.Name, d.PKey&mad.PKeyBaseMask)
	if err != nil {
		return err
	}
	if p.Line == 0 && p.PKey != DefaultPKey {
		p.Line = d.Line
	}
	p.IPoIB = p.IPoIB || d.IPoIB
	for _, m := range d.Members {
		full := m.Membership.IsFull()
		switch m.Kind {
		case MemberGUID:
			if !r.add(p, m.GUID, full, d.Indx0) {
				r.absent[m.GUID] = true
			}
		case MemberSelf:
			r.add(p, r.f.SM, full, d.Indx0)
		default:
			for _, port := range r.f.Ports {
				if m.Kind == MemberAll || port.Type == kindType[m.Kind] {
					r.add(p, port.GUID, full, d.Indx0)
				}
			}
		}
	}
	return nil
}

var kindType = map[MemberKind]topologies.NodeType{
	MemberAllCAs: topologies.CA, MemberAllSwitches: topologies.Switch, MemberAllRouters: topologies.Router}

// make returns the partition of pkey (a base), made if new. A P_Key of 0
// means "by name, else generated".
func (r *resolver) make(name string, pkey mad.PKey) (*part, error) {
	if len(name) > maxNameLen {
		name = name[:maxNameLen]
		// OpenSM compares the name as given with the one it kept: a
		// name too long is never found.
		if pkey == 0 {
			var err error
			if pkey, err = r.generate(); err != nil {
				return nil, err
			}
		}
	}
	if pkey == 0 {
		if name != "" {
			for _, k := range r.order() {
				if r.parts[k].Name == name {
					return r.parts[k], nil
				}
			}
		}
		var err error
		if pkey, err = r.generate(); err != nil {
			return nil, err
		}
	}
	if p := r.parts[pkey]; p != nil {
		return p, nil // definitions of one P_Key merge; the first name stays
	}
	if name == "" {
		name = fmt.Sprintf("%04x", uint16(pkey))
	}
	p := &part{Partition: Partition{Name: name, PKey: pkey}, full: map[uint64]bool{}, limited: map[uint64]bool{}}
	r.parts[pkey] = p
	return p, nil
}

// generate returns the lowest P_Key above the last one generated that no
// partition has.
func (r *resolver) generate() (mad.PKey, error) {
	for r.counter < DefaultPKey-1 {
		r.counter++
		if r.parts[r.counter] == nil {
			return r.counter, nil
		}
	}
	return 0, fmt.Errorf("no P_Key left to generate for a partition without one")
}

// add makes port guid a member of p, as OpenSM's osm_prtn_add_port: a
// port the fabric lacks is skipped (add reports false); a port named
// again keeps its last membership; indx0 claims the port's index 0 for
// p's key.
func (r *resolver) add(p *part, guid uint64, full, indx0 bool) bool {
	if _, ok := r.ports[guid]; !ok {
		return false
	}
	key := p.PKey
	if full {
		key |= mad.PKeyFullMember
	}
	switch {
	case indx0:
		r.indx0[guid] = key
	case r.indx0[guid].Base() == p.PKey:
		delete(r.indx0, guid)
	}
	delete(p.full, guid)
	delete(p.limited, guid)
	if full {
		p.full[guid] = true
	} else {
		p.limited[guid] = true
	}
	return true
}

// order returns the partitions' P_Keys in OpenSM's walk order.
func (r *resolver) order() []mad.PKey {
	keys := make([]mad.PKey, 0, len(r.parts))
	for k := range r.parts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, walkOrder)
	return keys
}

// partitions returns the partitions in effect, in walk order.
func (r *resolver) partitions() []Partition {
	var out []Partition
	for _, k := range r.order() {
		p := r.parts[k]
		q := p.Partition
		q.Full, q.Limited = sortedKeys(p.full), sortedKeys(p.limited)
		out = append(out, q)
	}
	return out
}

func sortedKeys(m map[uint64]bool) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// keysOf returns the keys port guid is to hold, in the order OpenSM
// queues them: the partitions in walk order, each with the limited key
// or the full one.
func (r *resolver) keysOf(guid uint64) []mad.PKey {
	var out []mad.PKey
	for _, k := range r.order() {
		p := r.parts[k]
		switch {
		case p.limited[guid]:
			out = append(out, k)
		case p.full[guid]:
			out = append(out, k|mad.PKeyFullMember)
		}
	}
	return out
}
