package sm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"ibfab/internal/enum"
	"ibfab/sm/qos"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// QoS management: flows admitted by package qos, their reservations
// written into the high-priority VL arbitration tables of every output
// port on their paths, SLtoVL mapping SL n to VL n, LimitOfHighPriority
// keeping best effort alive. The SM re-checks every flow's path after
// each sweep and assimilation: a flow whose route moved is admitted on its
// new path or reported lost. Requests come in through Config.QoS.Flows at
// start and QoSCall at run time; decisions go out as QoSEvents.

// PhaseQoS is the phase that admits flows and writes their tables.
const PhaseQoS = "qos"

// QoSConfig turns the QoS manager on.
type QoSConfig struct {
	qos.Params
	// Flows are admitted once the subnet is up (a file of static flows).
	Flows []qos.Request
	// OnEvent hears every decision, on the SM's goroutine.
	OnEvent func(QoSEvent)
}

// QoSAction is what a QoSEvent reports.
type QoSAction uint8

//go:generate go tool stringer -type=QoSAction -linecomment

// QoS actions.
const (
	qosNone QoSAction = iota //
	// QoSAdmit: a flow holds its entries on its path.
	QoSAdmit // admit
	// QoSReject: a flow does not fit: Port refused it.
	QoSReject // reject
	// QoSPending: a flow waits for the subnet to come up.
	QoSPending // pending
	// QoSRelease: a flow was deleted.
	QoSRelease // release
	// QoSReroute: a flow's route moved and it fits on the new one.
	QoSReroute // reroute
	// QoSLost: a flow's route moved (or broke) and it no longer fits.
	QoSLost // lost
)

var qosActions = enum.New("QoS action", qosNone, QoSAdmit, QoSReject, QoSPending, QoSRelease, QoSReroute, QoSLost).Wrap(ErrConfig)

// MarshalText implements encoding.TextMarshaler.
func (a QoSAction) MarshalText() ([]byte, error) { return qosActions.Marshal(a) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *QoSAction) UnmarshalText(text []byte) error { return qosActions.Unmarshal(a, text) }

// QoSEvent is one decision of the QoS manager.
type QoSEvent struct {
	Event  string    `json:"event"` // "qos"
	Action QoSAction `json:"action"`
	ID     string    `json:"id"`
	Flow   *qos.Flow `json:"flow,omitempty"`
	Port   string    `json:"port,omitempty"`   // the port that refused (reject, lost)
	Reason string    `json:"reason,omitempty"` // why (reject, lost, pending)
	// Blocks counts the VLArbitration blocks the decision's Sets
	// changed, SMPs every SMP the table writes took.
	Blocks int    `json:"blocks"`
	SMPs   uint64 `json:"smps"`
}

// qosState is the SM's QoS manager: the admitted flows (in mgr), the
// requests that wait for a path, and the calls of other goroutines.
type qosState struct {
	cfg     QoSConfig
	mgr     *qos.Manager
	waiting []qos.Request // not yet tried on an up subnet
	inbox   chan qosCall
	blocks  int // VLArbitration blocks written since the counter was read
}

func newQoSState(c *QoSConfig) (*qosState, error) {
	m, err := qos.NewManager(c.Params)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	q := &qosState{cfg: *c, mgr: m, inbox: make(chan qosCall, 16)}
	q.cfg.Params = m.Params()
	seen := map[string]bool{}
	for _, r := range c.Flows {
		if err := r.Normalize(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("%w: flow %s given twice", ErrConfig, r.ID)
		}
		seen[r.ID] = true
		q.waiting = append(q.waiting, r)
	}
	return q, nil
}

// qosEvent sends a decision out and returns it as sent.
func (s *SM) qosEvent(e QoSEvent) *QoSEvent {
	e.Event = "qos"
	if s.qos.cfg.OnEvent != nil {
		s.qos.cfg.OnEvent(e)
	}
	return &e
}

// qosCost puts on e what the table writes since smpsBefore cost, and
// starts the block count over.
func (s *SM) qosCost(e *QoSEvent, smpsBefore uint64) {
	e.Blocks, e.SMPs = s.qos.blocks, s.tx.Sends()-smpsBefore
	s.qos.blocks = 0
}

// qosPhase re-checks the admitted flows' paths on the subnet just
// brought up, admits the waiting ones, and writes the tables that
// changed.
func (s *SM) qosPhase(ctx context.Context, res *Result) error {
	if s.qos == nil {
		return nil
	}
	s.qos.blocks = 0 // the distribution's writes are the sweep's
	return s.phase(res, PhaseQoS, func() error {
		smps := s.tx.Sends()
		events := s.qosResync()
		if err := s.qosWrite(ctx, res); err != nil {
			return err
		}
		s.qosEmit(events, smps)
		return nil
	})
}

// qosResync moves every admitted flow whose route changed and tries the
// waiting requests; it returns the decisions.
func (s *SM) qosResync() []QoSEvent {
	var out []QoSEvent
	for _, f := range s.qos.mgr.Flows() {
		path, err := s.qosPath(f.Request)
		if err == nil && samePorts(f.Keys(), path) {
			continue
		}
		_, _ = s.qos.mgr.Release(f.ID)
		if err != nil {
			out = append(out, QoSEvent{Action: QoSLost, ID: f.ID, Reason: err.Error()})
			continue
		}
		nf, err := s.qos.mgr.Admit(f.Request, path)
		out = append(out, decision(QoSReroute, QoSLost, f.ID, nf, err))
	}
	waiting := s.qos.waiting
	s.qos.waiting = nil
	for _, r := range waiting {
		out = append(out, s.qosAdmit(r))
	}
	return out
}

// qosAdmit admits one request on its current path.
func (s *SM) qosAdmit(r qos.Request) QoSEvent {
	path, err := s.qosPath(r)
	if err != nil {
		return QoSEvent{Action: QoSReject, ID: r.ID, Reason: err.Error()}
	}
	f, err := s.qos.mgr.Admit(r, path)
	return decision(QoSAdmit, QoSReject, r.ID, f, err)
}

// decision is the event of an admission: ok when it succeeded, else fail
// with the refusing port.
func decision(ok, fail QoSAction, id string, f *qos.Flow, err error) QoSEvent {
	if err == nil {
		return QoSEvent{Action: ok, ID: id, Flow: f}
	}
	e := QoSEvent{Action: fail, ID: id, Reason: err.Error()}
	var rej *qos.RejectError
	if errors.As(err, &rej) {
		e.Port, e.Reason = rej.Port, rej.Reason
	}
	return e
}

// qosEmit sends the decisions out, the last one carrying what the table
// writes cost.
func (s *SM) qosEmit(events []QoSEvent, smpsBefore uint64) {
	for i, e := range events {
		if i == len(events)-1 {
			s.qosCost(&e, smpsBefore)
		}
		s.qosEvent(e)
	}
}

// qosWrite writes the arbitration tables of every configured port; the
// shadow leaves out the blocks the devices hold already.
func (s *SM) qosWrite(ctx context.Context, res *Result) error {
	sn := s.subnet
	problem := func(format string, args ...any) { res.Problems = append(res.Problems, fmt.Sprintf(format, args...)) }
	for _, p := range s.plan(sn) {
		s.vlArb(sn, p, problem)
	}
	return s.tx.Run(ctx)
}

// qosArbTables is what vlArb writes with QoS on: best effort (VL 0)
// alone in the low-priority table, the manager's reservations in the high
// one.
func (s *SM) qosArbTables(sn *Subnet, p portPlan) (low, high [mad.VLArbMaxEntries]mad.VLArbEntry) {
	low[0] = mad.VLArbEntry{VL: 0, Weight: s.cfg.VLArbWeight}
	high = s.qos.mgr.HighTable(qos.PortKey{GUID: sn.Topo.Node(p.node).GUID, Port: p.port})
	return low, high
}

// qosHighLimit is the VLHighLimit of a port running mtu: 0 without QoS.
func (s *SM) qosHighLimit(mtu mad.MTU) uint8 {
	if s.qos == nil {
		return 0
	}
	return s.qos.mgr.HighLimit(mtu.Bytes())
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

// qosPath is the list of output ports from r's source to its destination
// on the SM's routes; its callers run once they are in the switches.
func (s *SM) qosPath(r qos.Request) ([]qos.Link, error) {
	sn, rt := s.subnet, s.routes
	if sn == nil || rt == nil {
		return nil, errors.New("subnet not up")
	}
	src, err := sn.resolvePort(r.Src)
	if err != nil {
		return nil, fmt.Errorf("src: %w", err)
	}
	dst, err := sn.resolvePort(r.Dst)
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

// portName names a port as "node[port]", by NodeDescription when the
// SM read one.
func portName(t *topologies.Topology, p topologies.PortRef) string {
	n := t.Node(p.Node)
	name := n.Description
	if name == "" {
		name = n.Name
	}
	return fmt.Sprintf("%s[%d]", name, p.Port)
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

func samePorts(a []qos.PortKey, path []qos.Link) bool {
	return slices.EqualFunc(a, path, func(k qos.PortKey, l qos.Link) bool { return k == l.Key })
}

// QoSOp is a control call on the QoS manager.
type QoSOp uint8

// QoS control calls.
const (
	QoSOpAdd QoSOp = iota + 1
	QoSOpDel
	QoSOpList
)

// qosCall is a control call waiting for the SM's goroutine.
type qosCall struct {
	op    QoSOp
	req   qos.Request
	reply chan QoSReply
}

// QoSReply answers a control call: the decision of an add or del, or the
// flows of a list.
type QoSReply struct {
	Event   *QoSEvent       `json:"event,omitempty"`
	Flows   []*qos.Flow     `json:"flows,omitempty"`
	Waiting []qos.Request   `json:"waiting,omitempty"`
	Ports   []QoSPortReport `json:"ports,omitempty"`
}

// QoSPortReport is the state of one port's high-priority table.
type QoSPortReport struct {
	GUID   string `json:"guid"`
	Port   int    `json:"port"`
	Weight int    `json:"weight"` // units reserved
	Budget int    `json:"budget"`
	Free   int    `json:"free_entries"`
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

// qosServe carries out one call.
func (s *SM) qosServe(ctx context.Context, c qosCall) error {
	var r QoSReply
	defer func() { c.reply <- r }()
	switch c.op {
	case QoSOpList:
		r.Flows, r.Waiting, r.Ports = s.qos.mgr.Flows(), slices.Clone(s.qos.waiting), s.qosPorts()
		return nil
	case QoSOpDel:
		return s.qosDel(ctx, c.req.ID, &r)
	case QoSOpAdd:
		return s.qosAdd(ctx, c.req, &r)
	}
	r.Event = s.qosEvent(QoSEvent{Action: QoSReject, ID: c.req.ID, Reason: fmt.Sprintf("unknown op %d", c.op)})
	return nil
}

func (s *SM) qosAdd(ctx context.Context, req qos.Request, r *QoSReply) error {
	if err := req.Normalize(); err != nil {
		r.Event = s.qosEvent(QoSEvent{Action: QoSReject, ID: req.ID, Reason: err.Error()})
		return nil
	}
	_, dup := s.qos.mgr.Flow(req.ID)
	if dup || slices.ContainsFunc(s.qos.waiting, func(w qos.Request) bool { return w.ID == req.ID }) {
		r.Event = s.qosEvent(QoSEvent{Action: QoSReject, ID: req.ID, Reason: "a flow of that id exists"})
		return nil
	}
	if !s.installed {
		s.qos.waiting = append(s.qos.waiting, req)
		r.Event = s.qosEvent(QoSEvent{Action: QoSPending, ID: req.ID, Reason: "subnet not up"})
		return nil
	}
	return s.qosApply(ctx, s.qosAdmit(req), r)
}

func (s *SM) qosDel(ctx context.Context, id string, r *QoSReply) error {
	if i := slices.IndexFunc(s.qos.waiting, func(w qos.Request) bool { return w.ID == id }); i >= 0 {
		s.qos.waiting = slices.Delete(s.qos.waiting, i, i+1)
		r.Event = s.qosEvent(QoSEvent{Action: QoSRelease, ID: id})
		return nil
	}
	f, err := s.qos.mgr.Release(id)
	if f == nil {
		r.Event = s.qosEvent(QoSEvent{Action: QoSReject, ID: id, Reason: err.Error()})
		return nil
	}
	return s.qosApply(ctx, QoSEvent{Action: QoSRelease, ID: id, Flow: f}, r)
}

// qosApply writes the tables a decision changed and reports it.
func (s *SM) qosApply(ctx context.Context, e QoSEvent, r *QoSReply) error {
	smps := s.tx.Sends()
	s.tx.SetPhase(PhaseQoS)
	res := &Result{}
	err := s.qosWrite(ctx, res)
	s.tx.SetPhase(PhaseWatch)
	if len(res.Problems) > 0 && e.Reason == "" {
		e.Reason = "writing tables: " + strings.Join(res.Problems, "; ")
	}
	s.qosCost(&e, smps)
	r.Event = s.qosEvent(e)
	return err
}

func (s *SM) qosPorts() []QoSPortReport {
	var out []QoSPortReport
	for _, k := range s.qos.mgr.Ports() {
		w, budget, free := s.qos.mgr.Reserved(k)
		out = append(out, QoSPortReport{GUID: fmt.Sprintf("%#016x", k.GUID), Port: k.Port, Weight: w,
			Budget: budget, Free: free})
	}
	return out
}
