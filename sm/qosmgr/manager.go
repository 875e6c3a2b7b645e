package qosmgr

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"ibfab/internal/enum"
	"ibfab/sm/qos"
	"ibfab/sm/routing"
	"ibfab/wire/mad"
)

// ErrConfig is the error of a configuration the manager refuses: the
// SM's (sm.ErrConfig), so that a caller of sm.New tells it by one error.
var ErrConfig = routing.ErrConfig

// Config turns the QoS manager on.
type Config struct {
	qos.Params
	// Flows are admitted once the subnet is up (a file of static flows).
	Flows []qos.Request
	// OnEvent hears every decision, on the SM's goroutine.
	OnEvent func(Event)
}

// Action is what an Event reports.
type Action uint8

//go:generate go tool stringer -type=Action -linecomment

// QoS actions.
const (
	actionNone Action = iota //
	// ActionAdmit: a flow holds its entries on its path.
	ActionAdmit // admit
	// ActionReject: a flow does not fit: Port refused it.
	ActionReject // reject
	// ActionPending: a flow waits for the subnet to come up.
	ActionPending // pending
	// ActionRelease: a flow was deleted.
	ActionRelease // release
	// ActionReroute: a flow's route moved and it fits on the new one.
	ActionReroute // reroute
	// ActionLost: a flow's route moved (or broke) and it no longer fits.
	ActionLost // lost
)

var actions = enum.New("QoS action", actionNone, ActionAdmit, ActionReject, ActionPending, ActionRelease,
	ActionReroute, ActionLost).Wrap(ErrConfig)

// MarshalText implements encoding.TextMarshaler.
func (a Action) MarshalText() ([]byte, error) { return actions.Marshal(a) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Action) UnmarshalText(text []byte) error { return actions.Unmarshal(a, text) }

// Event is one decision of the QoS manager.
type Event struct {
	Event  string    `json:"event"` // "qos"
	Action Action    `json:"action"`
	ID     string    `json:"id"`
	Flow   *qos.Flow `json:"flow,omitempty"`
	Port   string    `json:"port,omitempty"`   // the port that refused (reject, lost)
	Reason string    `json:"reason,omitempty"` // why (reject, lost, pending)
	// Blocks counts the VLArbitration blocks the decision's Sets
	// changed, SMPs every SMP the table writes took.
	Blocks int    `json:"blocks"`
	SMPs   uint64 `json:"smps"`
}

// Paths is the subnet up as the manager sees it: the SM's routes.
type Paths interface {
	// Path is the list of output ports from the CA port src to the CA
	// port dst on the routes in the switches, src's own port first.
	Path(src, dst string) ([]qos.Link, error)
}

// Tables writes the manager's reservations into the subnet: the SM's VL
// arbitration distribution, which asks HighTable and HighLimit of every
// port it configures and leaves out the blocks the ports hold already.
type Tables interface {
	Write(ctx context.Context) (Written, error)
}

// Written is what a write of the tables took.
type Written struct {
	Blocks   int      // VLArbitration blocks that changed
	SMPs     uint64   // every SMP sent
	Problems []string // the ports that could not be written, and why
}

// Manager is the QoS manager: the admitted flows (in adm) and the
// requests that wait for a path. It is not safe for concurrent use: the
// SM calls it from its goroutine only.
type Manager struct {
	cfg     Config
	adm     *qos.Manager
	waiting []qos.Request // not yet tried on an up subnet
}

// New returns the manager of c, its flows waiting for the subnet. An
// error wraps ErrConfig.
func New(c *Config) (*Manager, error) {
	adm, err := qos.NewManager(c.Params)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	m := &Manager{cfg: *c, adm: adm}
	m.cfg.Params = adm.Params()
	seen := map[string]bool{}
	for _, r := range c.Flows {
		if err := r.Normalize(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("%w: flow %s given twice", ErrConfig, r.ID)
		}
		seen[r.ID] = true
		m.waiting = append(m.waiting, r)
	}
	return m, nil
}

// HighTable is the high-priority arbitration table of port k: its
// flows' reservations.
func (m *Manager) HighTable(k qos.PortKey) [mad.VLArbMaxEntries]mad.VLArbEntry {
	return m.adm.HighTable(k)
}

// HighLimit is the VLHighLimit of a port running an MTU of mtu bytes.
func (m *Manager) HighLimit(mtu int) uint8 { return m.adm.HighLimit(mtu) }

// Sweep re-checks the admitted flows' paths on the subnet just brought
// up, admits the waiting requests, writes the tables that changed, and
// sends the decisions out. It returns the problems of the write.
func (m *Manager) Sweep(ctx context.Context, p Paths, w Tables) ([]string, error) {
	events := m.resync(p)
	wr, err := w.Write(ctx)
	if err != nil {
		return wr.Problems, err
	}
	for i, e := range events {
		if i == len(events)-1 {
			e.Blocks, e.SMPs = wr.Blocks, wr.SMPs
		}
		m.event(e)
	}
	return wr.Problems, nil
}

// event sends a decision out and returns it as sent.
func (m *Manager) event(e Event) *Event {
	e.Event = "qos"
	if m.cfg.OnEvent != nil {
		m.cfg.OnEvent(e)
	}
	return &e
}

// resync moves every admitted flow whose route changed and tries the
// waiting requests; it returns the decisions.
func (m *Manager) resync(p Paths) []Event {
	var out []Event
	for _, f := range m.adm.Flows() {
		path, err := p.Path(f.Src, f.Dst)
		if err == nil && samePorts(f.Keys(), path) {
			continue
		}
		_, _ = m.adm.Release(f.ID)
		if err != nil {
			out = append(out, Event{Action: ActionLost, ID: f.ID, Reason: err.Error()})
			continue
		}
		nf, err := m.adm.Admit(f.Request, path)
		out = append(out, decision(ActionReroute, ActionLost, f.ID, nf, err))
	}
	waiting := m.waiting
	m.waiting = nil
	for _, r := range waiting {
		out = append(out, m.admit(p, r))
	}
	return out
}

// admit admits one request on its current path.
func (m *Manager) admit(p Paths, r qos.Request) Event {
	path, err := p.Path(r.Src, r.Dst)
	if err != nil {
		return Event{Action: ActionReject, ID: r.ID, Reason: err.Error()}
	}
	f, err := m.adm.Admit(r, path)
	return decision(ActionAdmit, ActionReject, r.ID, f, err)
}

// decision is the event of an admission: ok when it succeeded, else fail
// with the refusing port.
func decision(ok, fail Action, id string, f *qos.Flow, err error) Event {
	if err == nil {
		return Event{Action: ok, ID: id, Flow: f}
	}
	e := Event{Action: fail, ID: id, Reason: err.Error()}
	var rej *qos.RejectError
	if errors.As(err, &rej) {
		e.Port, e.Reason = rej.Port, rej.Reason
	}
	return e
}

func samePorts(a []qos.PortKey, path []qos.Link) bool {
	return slices.EqualFunc(a, path, func(k qos.PortKey, l qos.Link) bool { return k == l.Key })
}

// Op is a control call on the QoS manager.
type Op uint8

// QoS control calls.
const (
	OpAdd Op = iota + 1
	OpDel
	OpList
)

// Reply answers a control call: the decision of an add or del, or the
// flows of a list.
type Reply struct {
	Event   *Event        `json:"event,omitempty"`
	Flows   []*qos.Flow   `json:"flows,omitempty"`
	Waiting []qos.Request `json:"waiting,omitempty"`
	Ports   []PortReport  `json:"ports,omitempty"`
}

// PortReport is the state of one port's high-priority table.
type PortReport struct {
	GUID   string `json:"guid"`
	Port   int    `json:"port"`
	Weight int    `json:"weight"` // units reserved
	Budget int    `json:"budget"`
	Free   int    `json:"free_entries"`
}

// Serve carries out one control call: p is the subnet up, nil while it
// is not (an add then waits for it), and w writes the tables an add or
// a del changed.
func (m *Manager) Serve(ctx context.Context, op Op, req qos.Request, p Paths, w Tables) (Reply, error) {
	switch op {
	case OpList:
		return Reply{Flows: m.adm.Flows(), Waiting: slices.Clone(m.waiting), Ports: m.ports()}, nil
	case OpDel:
		return m.del(ctx, req.ID, w)
	case OpAdd:
		return m.add(ctx, req, p, w)
	}
	return m.refuse(req.ID, fmt.Sprintf("unknown op %d", op)), nil
}

// refuse is the reply of a call rejected before it changed anything.
func (m *Manager) refuse(id, reason string) Reply {
	return Reply{Event: m.event(Event{Action: ActionReject, ID: id, Reason: reason})}
}

func (m *Manager) add(ctx context.Context, req qos.Request, p Paths, w Tables) (Reply, error) {
	if err := req.Normalize(); err != nil {
		return m.refuse(req.ID, err.Error()), nil
	}
	_, dup := m.adm.Flow(req.ID)
	if dup || slices.ContainsFunc(m.waiting, func(r qos.Request) bool { return r.ID == req.ID }) {
		return m.refuse(req.ID, "a flow of that id exists"), nil
	}
	if p == nil {
		m.waiting = append(m.waiting, req)
		return Reply{Event: m.event(Event{Action: ActionPending, ID: req.ID, Reason: "subnet not up"})}, nil
	}
	return m.apply(ctx, m.admit(p, req), w)
}

func (m *Manager) del(ctx context.Context, id string, w Tables) (Reply, error) {
	if i := slices.IndexFunc(m.waiting, func(r qos.Request) bool { return r.ID == id }); i >= 0 {
		m.waiting = slices.Delete(m.waiting, i, i+1)
		return Reply{Event: m.event(Event{Action: ActionRelease, ID: id})}, nil
	}
	f, err := m.adm.Release(id)
	if f == nil {
		return m.refuse(id, err.Error()), nil
	}
	return m.apply(ctx, Event{Action: ActionRelease, ID: id, Flow: f}, w)
}

// apply writes the tables a decision changed and reports it.
func (m *Manager) apply(ctx context.Context, e Event, w Tables) (Reply, error) {
	wr, err := w.Write(ctx)
	if len(wr.Problems) > 0 && e.Reason == "" {
		e.Reason = "writing tables: " + strings.Join(wr.Problems, "; ")
	}
	e.Blocks, e.SMPs = wr.Blocks, wr.SMPs
	return Reply{Event: m.event(e)}, err
}

func (m *Manager) ports() []PortReport {
	var out []PortReport
	for _, k := range m.adm.Ports() {
		w, budget, free := m.adm.Reserved(k)
		out = append(out, PortReport{GUID: fmt.Sprintf("%#016x", k.GUID), Port: k.Port, Weight: w,
			Budget: budget, Free: free})
	}
	return out
}
