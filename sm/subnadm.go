package sm

import (
	"context"
	"errors"

	"ibfab/madport"
	"ibfab/sm/routing"
	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// SubnetAdmin is a Subnet Administrator that runs beside the SM on its
// port (package sm/sa). The SM calls it from its own goroutine only: the
// SA needs no locks to read the View it was given.
type SubnetAdmin interface {
	// HandleMAD takes a SubnAdm (class 0x03) MAD that reached the SM's
	// port while the SM is master.
	HandleMAD(m madport.MAD)
	// Update gives the SA the SM's view after a sweep or an assimilation
	// changed it; the View is the SA's to keep.
	Update(v *View)
	// TakeSets returns the Sets the SA wants sent now (MFT blocks), once
	// each; SetDone then reports each one's outcome.
	TakeSets() []SASet
	SetDone(s SASet, err error)
}

// SASet is an SMP Set a SubnetAdmin asks the SM to send: attribute attr
// with modifier mod and data to node (an index into the View's Subnet),
// directed-route.
type SASet struct {
	Node int
	Attr mad.AttrID
	Mod  uint32
	Data []byte
	Tag  any // the SA's
}

// View is a read-only snapshot of what the SM knows, for the SA: the
// subnet as discovered and configured, the route set installed, the P_Key
// tables written and the SMs met. Its slices and maps are shared with
// the SM and must not be changed.
type View struct {
	Subnet *Subnet
	Routes *routing.Routes
	// PKeys[{node GUID, port}] is a port's P_Key table as written; nil
	// when partitions are not managed (every port holds 0xFFFF only).
	PKeys map[PortKey][]mad.PKey
	// SMs are the SMInfo of this SM (first, SM_Key shown) and of the
	// others, with their port's LID.
	SMs []SMRecord
	// Blocks are the SLtoVLMappingTable and VLArbitrationTable blocks the
	// SM wrote (with QoS, adaptive routing or --vl-tables set), by port
	// and attribute modifier as sent (an SLtoVL modifier may name all
	// input or output ports). Tables the SM left alone are not in it.
	Blocks map[BlockKey][]byte
}

// BlockKey names a block the SM wrote: node GUID, port (0 for a switch's
// SLtoVL, which its modifier places), attribute and modifier.
type BlockKey struct {
	NodeGUID uint64
	Port     int
	Attr     mad.AttrID
	Mod      uint32
}

// PortKey names a port by its node's GUID and number.
type PortKey struct {
	NodeGUID uint64
	Port     int
}

// SMRecord is one SM's SMInfo and LID.
type SMRecord struct {
	LID  uint16
	Info mad.SMInfoFields
}

// errNoSuchNode fails an SASet for a node the subnet does not have.
var errNoSuchNode = errors.New("sm: SA set for a node not in the subnet")

// SetSubnetAdmin attaches a. A standby or non-active SM does not pass it
// requests; the master does. Call before the first sweep.
func (s *SM) SetSubnetAdmin(a SubnetAdmin) { s.sa = a }

// view returns the SM's current View.
func (s *SM) view() *View {
	v := &View{Subnet: s.subnet, Routes: s.routes}
	if s.part != nil {
		v.PKeys = map[PortKey][]mad.PKey{}
		for k, t := range s.part.Tables() {
			v.PKeys[PortKey{k.Node, k.Port}] = t
		}
	}
	v.Blocks = map[BlockKey][]byte{}
	for k, b := range s.shadow {
		if k.attr == mad.AttrSLtoVLMapping || k.attr == mad.AttrVLArbitration {
			v.Blocks[BlockKey{k.guid, k.port, k.attr, k.mod}] = b
		}
	}
	v.SMs = append(v.SMs, SMRecord{LID: s.lidOfSM(), Info: s.mySMInfo(true)})
	for _, g := range s.remoteGUIDs() {
		r := s.remotes[g]
		v.SMs = append(v.SMs, SMRecord{LID: r.lid, Info: r.info})
	}
	return v
}

func (s *SM) lidOfSM() uint16 {
	if s.subnet != nil {
		return s.subnet.SMLID
	}
	return 0
}

// subnAdm hands a SubnAdm MAD to the SA when this SM is master; a
// standby's SA is silent, as the spec has it (only the master SM's SA
// answers).
func (s *SM) subnAdm(m madport.MAD) {
	if s.sa == nil || s.state != mad.SMStateMaster {
		s.tx.CountUnexpected()
		return
	}
	s.serveSAView()
	s.sa.HandleMAD(m)
}

// serveSAView gives the SA a new View when the subnet or routes changed
// since the last, once they are installed (mid-sweep the SA keeps the
// last installed one).
func (s *SM) serveSAView() {
	if s.subnet == nil || !s.installed || (s.subnet == s.saSubnet && s.routes == s.saRoutes) {
		return
	}
	s.saSubnet, s.saRoutes = s.subnet, s.routes
	s.sa.Update(s.view())
}

// serveSA, between sweeps on a master, brings the SA's view up to date
// and sends the Sets it asks for.
func (s *SM) serveSA(ctx context.Context) error {
	if s.sa == nil || s.state != mad.SMStateMaster || !s.installed {
		return nil
	}
	s.serveSAView()
	sets := s.sa.TakeSets()
	if len(sets) == 0 {
		return nil
	}
	for _, set := range sets {
		if set.Node < 0 || s.subnet == nil || set.Node >= len(s.subnet.Paths) {
			s.sa.SetDone(set, errNoSuchNode)
			continue
		}
		s.tx.Set(txn.Request{DR: true, Path: s.subnet.Paths[set.Node], Attr: set.Attr, Mod: set.Mod, Data: set.Data},
			func(r *txn.Response) { s.sa.SetDone(set, r.Err) })
	}
	return s.tx.Run(ctx)
}

// View returns what the SM knows now, as the SA is given it.
func (s *SM) View() *View { return s.view() }
