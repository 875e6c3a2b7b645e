package sm

import (
	"context"
	"fmt"

	"ibfab/sm/partmgr"
	"ibfab/sm/txn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// The partition manager lives in package sm/partmgr; these are its types
// under the names sm's callers (cmd/ibsm, the harness) know.
type (
	PartitionConfig = partmgr.Config
	PartitionResult = partmgr.Result
	PartitionEvent  = partmgr.Event
)

// PhasePartition is the phase that reads and writes P_Key tables and
// partition enforcement.
const PhasePartition = "partition"

// PartitionManager is the partition manager as the SM drives it
// (partmgr.Manager), always from the SM's goroutine: in a sweep after
// distribution, before activation, so that ports come up partitioned, as
// under OpenSM; in an assimilation after the change is installed, with
// the other managers, so that the ports a change brings in get their
// tables in the same assimilation without delaying connectivity.
type PartitionManager interface {
	// Sweep brings the tables and enforcement of v's ports to the
	// file's; warn hears what went wrong. The Result is never nil.
	Sweep(ctx context.Context, v *partmgr.View, warn func(string, ...any)) (*PartitionResult, error)
	// Tables is what the ports hold, as the manager read or set it.
	Tables() map[partmgr.Key][]mad.PKey
	// Forget drops what the manager knows of node guid's ports, ForgetAll
	// of every node's.
	Forget(guid uint64)
	ForgetAll()
}

var (
	_ PartitionManager  = (*partmgr.Manager)(nil)
	_ partmgr.Sender    = (*txn.Layer)(nil)
	_ partmgr.PortInfos = subnetPortInfos{}
)

// partForget drops what the manager knows of node guid's ports.
func (s *SM) partForget(guid uint64) {
	if s.part != nil {
		s.part.Forget(guid)
	}
}

// partitionPhase brings every end port's P_Key table, and the tables and
// enforcement of the switch ports cabled to them, to what the file says.
// What fails is a warning: the subnet is up without it, and the next
// sweep tries again.
func (s *SM) partitionPhase(ctx context.Context, res *Result) error {
	if s.part == nil || s.subnet == nil {
		return nil
	}
	return s.phase(res, PhasePartition, func() error {
		warn := func(format string, args ...any) {
			res.Warnings = append(res.Warnings, "partitions: "+fmt.Sprintf(format, args...))
		}
		r, err := s.part.Sweep(ctx, s.partView(s.subnet), warn)
		res.Partitions = r
		return err
	})
}

// partView is sn as the manager addresses it: its end ports, the switch
// ports cabled to them, the switch ports cabled to switches.
func (s *SM) partView(sn *Subnet) *partmgr.View {
	v := &partmgr.View{SM: s.guid, PortInfos: subnetPortInfos{s, sn}}
	t := sn.Topo
	for _, e := range sn.EndPorts() {
		n := t.Node(e.Node)
		var capacity uint16
		if e.Node < len(sn.PartitionCap) {
			capacity = sn.PartitionCap[e.Node]
		}
		end := partmgr.End{NodeType: n.Type, Self: partmgr.Port{Key: partmgr.Key{Node: n.GUID, Port: e.Port},
			Node: e.Node, Name: portName(t, portRef(e.Node, e.Port)), Cap: int(capacity),
			Path: sn.path(e.Node, e.Port), GUID: n.GUID, Type: map[topologies.NodeType]string{
				topologies.CA: "ca", topologies.Router: "router", topologies.Switch: "switch"}[n.Type]}}
		if n.Type != topologies.Switch {
			end.Self.GUID = n.Ports[e.Port].GUID
		}
		if n.Type != topologies.Switch && e.Switch >= 0 {
			end.Peer = switchPort(sn, portRef(e.Switch, e.SwitchPort))
			end.Peer.Cap = int(sn.Switch[e.Switch].PartitionEnforcementCap)
			end.Peer.Mod = uint32(e.SwitchPort) << 16
		}
		v.Ends = append(v.Ends, end)
	}
	for _, l := range t.Links() {
		if sn.IsSwitch(l.A.Node) && sn.IsSwitch(l.B.Node) {
			v.SwitchLinks = append(v.SwitchLinks, *switchPort(sn, l.A), *switchPort(sn, l.B))
		}
	}
	return v
}

// switchPort is switch port p, its table without a capacity.
func switchPort(sn *Subnet, p topologies.PortRef) *partmgr.Port {
	n := sn.Topo.Node(p.Node)
	return &partmgr.Port{Key: partmgr.Key{Node: n.GUID, Port: p.Port}, Node: p.Node, Name: portName(sn.Topo, p),
		Path: sn.Paths[p.Node], Type: "switch-port", GUID: n.GUID}
}

// subnetPortInfos is sn's PortInfo for the manager, set with s's M_Key
// fields.
type subnetPortInfos struct {
	s  *SM
	sn *Subnet
}

func (p subnetPortInfos) PortInfo(node, port int) (mad.PortInfoFields, bool) {
	return p.sn.PortInfo[node][port], p.sn.Have[node][port]
}

func (p subnetPortInfos) ForSet(node, port int) mad.PortInfoFields {
	pi := forSet(p.sn.PortInfo[node][port])
	p.s.keyFields(p.sn, node, port, &pi) // a protected port may have read it back as 0
	return pi
}

func (p subnetPortInfos) Took(node, port int, pi mad.PortInfoFields) { p.sn.PortInfo[node][port] = pi }
