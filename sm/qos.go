package sm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"ibfab/sm/qos"
	"ibfab/sm/qosmgr"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// The QoS manager lives in package sm/qosmgr; these are its types and
// values under the names sm's callers (cmd/ibsm, the harness) know.
type (
	QoSConfig     = qosmgr.Config
	QoSAction     = qosmgr.Action
	QoSEvent      = qosmgr.Event
	QoSOp         = qosmgr.Op
	QoSReply      = qosmgr.Reply
	QoSPortReport = qosmgr.PortReport
)

// QoS actions and control calls: see package qosmgr.
const (
	QoSAdmit   = qosmgr.ActionAdmit
	QoSReject  = qosmgr.ActionReject
	QoSPending = qosmgr.ActionPending
	QoSRelease = qosmgr.ActionRelease
	QoSReroute = qosmgr.ActionReroute
	QoSLost    = qosmgr.ActionLost
	QoSOpAdd   = qosmgr.OpAdd
	QoSOpDel   = qosmgr.OpDel
	QoSOpList  = qosmgr.OpList
)

// PhaseQoS is the phase that admits flows and writes their tables.
const PhaseQoS = "qos"

// QoSManager is the QoS manager as the SM drives it (qosmgr.Manager),
// always from the SM's goroutine: after a sweep or an assimilation, for
// a control call, and while the VL tables are distributed.
type QoSManager interface {
	// Sweep re-checks the flows' paths on p, admits the waiting ones,
	// writes the tables through w; it returns the write's problems.
	Sweep(ctx context.Context, p qosmgr.Paths, w qosmgr.Tables) ([]string, error)
	// Serve carries out a control call; p is nil while the subnet is
	// not up.
	Serve(ctx context.Context, op QoSOp, req qos.Request, p qosmgr.Paths, w qosmgr.Tables) (QoSReply, error)
	// HighTable is port k's high-priority arbitration table.
	HighTable(k qos.PortKey) [mad.VLArbMaxEntries]mad.VLArbEntry
	// HighLimit is the VLHighLimit of a port running mtu bytes.
	HighLimit(mtu int) uint8
}

var (
	_ QoSManager    = (*qosmgr.Manager)(nil)
	_ qosmgr.Paths  = qosPaths{}
	_ qosmgr.Tables = qosTables{}
)

// qosState is the manager, the control calls of other goroutines that
// wait for the SM's, and the VLArbitration blocks the distribution
// changed (vlArb counts them) since a table write began.
type qosState struct {
	QoSManager
	inbox  chan qosCall
	blocks int
}

func newQoSState(c *QoSConfig) (*qosState, error) {
	m, err := qosmgr.New(c)
	if err != nil {
		return nil, err
	}
	return &qosState{QoSManager: m, inbox: make(chan qosCall, 16)}, nil
}

// qosPhase re-checks the admitted flows' paths on the subnet just
// brought up, admits the waiting ones, and writes the tables that
// changed.
func (s *SM) qosPhase(ctx context.Context, res *Result) error {
	if s.qos == nil {
		return nil
	}
	return s.phase(res, PhaseQoS, func() error {
		problems, err := s.qos.Sweep(ctx, qosPaths{s}, qosTables{s})
		res.Problems = append(res.Problems, problems...)
		return err
	})
}

// qosTables writes the arbitration tables of every configured port for
// the manager; the shadow leaves out the blocks the devices hold
// already.
type qosTables struct{ s *SM }

func (w qosTables) Write(ctx context.Context) (qosmgr.Written, error) {
	s, sn := w.s, w.s.subnet
	var wr qosmgr.Written
	if sn == nil {
		return wr, nil
	}
	smps := s.tx.Sends()
	s.qos.blocks = 0 // the distribution's writes before are the sweep's
	problem := func(format string, args ...any) { wr.Problems = append(wr.Problems, fmt.Sprintf(format, args...)) }
	for _, p := range s.plan(sn) {
		s.vlArb(sn, p, problem)
	}
	err := s.tx.Run(ctx)
	wr.Blocks, wr.SMPs = s.qos.blocks, s.tx.Sends()-smps
	s.qos.blocks = 0
	return wr, err
}

// qosArbTables is what vlArb writes with QoS on: best effort (VL 0)
// alone in the low-priority table, the manager's reservations in the high
// one.
func (s *SM) qosArbTables(sn *Subnet, p portPlan) (low, high [mad.VLArbMaxEntries]mad.VLArbEntry) {
	low[0] = mad.VLArbEntry{VL: 0, Weight: s.cfg.VLArbWeight}
	high = s.qos.HighTable(qos.PortKey{GUID: sn.Topo.Node(p.node).GUID, Port: p.port})
	return low, high
}

// qosHighLimit is the VLHighLimit of a port running mtu: 0 without QoS.
func (s *SM) qosHighLimit(mtu mad.MTU) uint8 {
	if s.qos == nil {
		return 0
	}
	return s.qos.HighLimit(mtu.Bytes())
}

// sl2vlTable is the SLtoVL table of a port running vls: QoS's mapping
// when it is on, else with multipath layers SL s on VL s mod the layers
// on every port alike (a packet must keep its layer's VL end to end),
// else the SLs spread over the port's data VLs.
func (s *SM) sl2vlTable(vls uint8) []byte {
	switch {
	case s.qos == nil && s.layers > 1:
		return sl2vlSpread(s.layers)
	case s.qos == nil:
		return sl2vl(vls)
	}
	f := mad.SLtoVLMappingTableFields{VL: qos.SLtoVL(mad.NumDataVLs(vls))}
	return mad.AppendSLtoVLMappingTable(nil, &f)
}

// qosPaths are the paths of the SM's routes on its subnet, for the
// manager; they hold once the routes are in the switches.
type qosPaths struct{ s *SM }

// Path is the list of output ports from the CA port src to the CA port
// dst (resolvePort's specs).
func (q qosPaths) Path(srcSpec, dstSpec string) ([]qos.Link, error) {
	sn, rt := q.s.subnet, q.s.routes
	if sn == nil || rt == nil {
		return nil, errors.New("subnet not up")
	}
	src, err := sn.resolvePort(srcSpec)
	if err != nil {
		return nil, fmt.Errorf("src: %w", err)
	}
	dst, err := sn.resolvePort(dstSpec)
	if err != nil {
		return nil, fmt.Errorf("dst: %w", err)
	}
	if src == dst {
		return nil, errors.New("src and dst are the same port")
	}
	dlid := sn.LID[dst.Node][dst.Port]
	var path []qos.Link
	at := src
	for range sn.Topo.NumNodes() + 1 {
		l, err := sn.qosLink(at)
		if err != nil {
			return nil, err
		}
		path = append(path, l)
		peer, ok := sn.Topo.Peer(at)
		if !ok {
			return nil, fmt.Errorf("%s has no link", l.Name)
		}
		if peer == dst {
			return path, nil
		}
		if !sn.IsSwitch(peer.Node) {
			return nil, fmt.Errorf("the route reaches %s, not the destination", portName(sn.Topo, peer))
		}
		out := rt.LFT[peer.Node][dlid]
		if int(dlid) >= len(rt.LFT[peer.Node]) || out == mad.LFTNoPort || out == 0 {
			return nil, fmt.Errorf("%s does not route LID %d", sn.Topo.Node(peer.Node).Name, dlid)
		}
		at = topologies.PortRef{Node: peer.Node, Port: int(out)}
	}
	return nil, fmt.Errorf("the route to LID %d loops", dlid)
}

// qosLink describes output port p for the manager.
func (sn *Subnet) qosLink(p topologies.PortRef) (qos.Link, error) {
	name := portName(sn.Topo, p)
	if !sn.Have[p.Node][p.Port] {
		return qos.Link{}, fmt.Errorf("%s: no PortInfo", name)
	}
	pi := sn.PortInfo[p.Node][p.Port]
	rate, err := mad.DataRate(pi.LinkWidthActive, pi.SpeedActive()) // the real rate: NDR, not QDR
	if err != nil {
		return qos.Link{}, fmt.Errorf("%s: %w", name, err)
	}
	return qos.Link{Key: qos.PortKey{GUID: sn.Topo.Node(p.Node).GUID, Port: p.Port}, Name: name,
		Rate: rate, MTU: pi.NeighborMTU.Bytes(), DataVLs: mad.NumDataVLs(pi.OperationalVLs),
		HighCap: int(pi.VLArbitrationHighCap)}, nil
}

// portRef is port p of node i.
func portRef(i, p int) topologies.PortRef { return topologies.PortRef{Node: i, Port: p} }

// portName names a port as "node[port]", by NodeDescription when the
// SM read one.
func portName(t *topologies.Topology, p topologies.PortRef) string {
	return fmt.Sprintf("%s[%d]", describe(t.Node(p.Node)), p.Port)
}

// resolvePort finds a CA port by LID (decimal), node GUID (0x…), or
// node name or description, with ":PORT" for a port other
// than 1.
func (sn *Subnet) resolvePort(spec string) (topologies.PortRef, error) {
	if lid, err := strconv.ParseUint(spec, 10, 16); err == nil {
		i, ok := sn.Owner(uint16(lid))
		if !ok {
			return topologies.PortRef{}, fmt.Errorf("no port has LID %d", lid)
		}
		e := sn.EndPorts()[i]
		return topologies.PortRef{Node: e.Node, Port: e.Port}, nil
	}
	name, port := spec, 1
	if k := strings.LastIndexByte(spec, ':'); k > 0 {
		n, err := strconv.Atoi(spec[k+1:])
		if err != nil || n < 1 {
			return topologies.PortRef{}, fmt.Errorf("%q: bad port", spec)
		}
		name, port = spec[:k], n
	}
	for i, n := range sn.Topo.Nodes() {
		if n.Type == topologies.Switch {
			continue
		}
		if strings.EqualFold(name, fmt.Sprintf("%#016x", n.GUID)) || name == n.Name || name == n.Description {
			if port > n.NumPorts || sn.LID[i][port] == 0 {
				return topologies.PortRef{}, fmt.Errorf("%s has no port %d with a LID", name, port)
			}
			return topologies.PortRef{Node: i, Port: port}, nil
		}
	}
	return topologies.PortRef{}, fmt.Errorf("no CA %q", name)
}

// qosCall is a control call waiting for the SM's goroutine.
type qosCall struct {
	op    QoSOp
	req   qos.Request
	reply chan QoSReply
}

// ErrNoQoS is QoSCall's error on an SM without QoS.
var ErrNoQoS = errors.New("QoS is off (ibsm --qos)")

// QoSCall hands a control call to the SM's goroutine and waits for its
// answer. It is safe for concurrent use; the SM serves calls while it
// watches the subnet (Run), not during a sweep.
func (s *SM) QoSCall(ctx context.Context, op QoSOp, req qos.Request) (QoSReply, error) {
	if s.qos == nil {
		return QoSReply{}, ErrNoQoS
	}
	c := qosCall{op: op, req: req, reply: make(chan QoSReply, 1)}
	r, err := handOff(ctx, s, s.qos.inbox, c, c.reply)
	if err == nil && r.Event != nil && r.Event.Action == QoSReject && op != QoSOpAdd {
		return r, errors.New(r.Event.Reason)
	}
	return r, err
}

// serveQoS answers the control calls that came in.
func (s *SM) serveQoS(ctx context.Context) error {
	if s.qos == nil {
		return nil
	}
	return serveInbox(ctx, s.qos.inbox, s.qosServe)
}

// qosServe carries out one call, its writes in the QoS phase; before the
// subnet is up the manager has no paths, and an add waits.
func (s *SM) qosServe(ctx context.Context, c qosCall) error {
	var p qosmgr.Paths
	if s.installed {
		p = qosPaths{s}
	}
	s.tx.SetPhase(PhaseQoS)
	r, err := s.qos.Serve(ctx, c.op, c.req, p, qosTables{s})
	s.tx.SetPhase(PhaseWatch)
	c.reply <- r
	return err
}
