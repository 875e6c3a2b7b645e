package qos

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"ibfab/sm/arbtable"
	"ibfab/wire/mad"
)

// Params are a manager's policy; zero fields take the defaults.
type Params struct {
	// Size is the most high-priority entries managed per port (a power
	// of two; 64, the whole IBA table). A port whose VLArbitrationHighCap
	// is smaller gets the largest power of two within it, and a Budget
	// cut in the same proportion, so that shares and bounds hold there
	// too.
	Size int
	// Model is the table-maintenance model of package arbtable.
	Model arbtable.Model
	// Budget is the weight, in 64-byte units, that the high-priority
	// table of a port may hold in all: the length of its longest cycle.
	// A flow's share of the high table is its weight over Budget.
	Budget int
	// MaxEntryWeight caps the weight of one entry (at most 255): the
	// latency bounds grow with it, and a flow that needs more weight takes
	// more entries, a smaller distance.
	MaxEntryWeight int
	// Share is the fraction of a link's rate the high table is promised
	// (LimitOfHighPriority is set to keep it); best effort gets the rest
	// whenever it has packets, and all that QoS flows leave unused.
	Share float64
}

// Defaults of Params.
const (
	DefaultSize   = mad.VLArbMaxEntries
	DefaultModel  = arbtable.Model4
	DefaultBudget = 4096 // 256 KiB per high-priority cycle
	DefaultShare  = 0.8
	// DefaultMaxEntryWeight is 8 KiB per entry: whole packets of any
	// payload up to 4 KiB, two of 2 KiB.
	DefaultMaxEntryWeight = 128
)

// maxWeight is the largest weight an entry can hold.
const maxWeight = 255

// highLimitUnit is what one unit of LimitOfHighPriority lets the high
// table send before a low-priority packet gets its chance.
const highLimitUnit = 4096

func (p *Params) normalize() error {
	p.Size, p.Model, p.Budget = cmp.Or(p.Size, DefaultSize), cmp.Or(p.Model, DefaultModel), cmp.Or(p.Budget, DefaultBudget)
	p.Share, p.MaxEntryWeight = cmp.Or(p.Share, DefaultShare), cmp.Or(p.MaxEntryWeight, DefaultMaxEntryWeight)
	switch {
	case p.Size < 2 || p.Size > mad.VLArbMaxEntries || p.Size&(p.Size-1) != 0:
		return fmt.Errorf("%w: table size %d, want a power of two 2-64", ErrParams, p.Size)
	case p.Budget < 1 || p.Budget > p.Size*maxWeight:
		return fmt.Errorf("%w: budget %d, want 1-%d units", ErrParams, p.Budget, p.Size*maxWeight)
	case p.MaxEntryWeight < (MaxPayload+UDOverhead+63)/64 || p.MaxEntryWeight > maxWeight:
		return fmt.Errorf("%w: entry weight %d, want %d-%d units (a packet of the largest payload)", ErrParams,
			p.MaxEntryWeight, (MaxPayload+UDOverhead+63)/64, maxWeight)
	case !(p.Share > 0 && p.Share < 1):
		return fmt.Errorf("%w: share %v, want 0 < share < 1", ErrParams, p.Share)
	}
	if _, err := arbtable.New(p.Size, p.Model); err != nil {
		return fmt.Errorf("%w: %w", ErrParams, err)
	}
	return nil
}

// Errors.
var (
	ErrParams    = errors.New("qos: bad parameters")
	ErrDuplicate = errors.New("qos: flow exists")
	ErrUnknown   = errors.New("qos: no such flow")
)

// RejectError is a flow that a port of its path cannot hold.
type RejectError struct {
	Flow   string
	Port   string // the output port that refused, as Link.Name
	Reason string
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("qos: flow %s rejected at %s: %s", e.Flow, e.Port, e.Reason)
}

// PortKey names an output port: a node GUID and a port number.
type PortKey struct {
	GUID uint64
	Port int
}

// Link is an output port of a path, as the manager needs it.
type Link struct {
	Key  PortKey
	Name string // for reports: "sw3[2]"
	Rate uint64 // data rate, bits per second
	MTU  int    // bytes
	// DataVLs the port runs: the flow's VL must be one of them.
	DataVLs int
	// HighCap is the port's VLArbitrationHighCap: the entries of its
	// high-priority table (0: Params.Size).
	HighCap int
}

// Hop is a flow's reservation at one output port.
type Hop struct {
	Port    string  `json:"port"`
	VL      uint8   `json:"vl"`       // the flow's SL maps to it at this port
	Level   int     `json:"level"`    // the model's request level: distance 2^Level
	Entries int     `json:"entries"`  // Size >> Level
	Weight  int     `json:"weight"`   // per entry, 64-byte units
	BoundUs float64 `json:"bound_us"` // the port's latency bound for the flow

	key PortKey
	id  arbtable.ID
}

// Flow is an admitted flow.
type Flow struct {
	Request
	SL      uint8   `json:"sl"`
	BoundUs float64 `json:"bound_us"` // end to end: the sum of the hops'
	Hops    []Hop   `json:"hops"`
}

// Keys returns the output ports the flow holds entries at.
func (f *Flow) Keys() []PortKey {
	out := make([]PortKey, len(f.Hops))
	for i, h := range f.Hops {
		out[i] = h.key
	}
	return out
}

// Manager keeps every port's high-priority table and the flows admitted.
// It is not safe for concurrent use.
type Manager struct {
	p     Params
	ports map[PortKey]*portTable
	flows map[string]*Flow
}

// portTable is one port's high-priority table: the model's allocation
// and what each allocation holds.
type portTable struct {
	t      *arbtable.Table
	budget int // units it may hold in all
	weight int // units reserved, the sum over owners
	owners map[arbtable.ID]entry
}

// entry is what every slot of one allocation holds.
type entry struct {
	flow   string
	vl     uint8
	weight int // per entry
}

// NewManager returns a manager with no flows.
func NewManager(p Params) (*Manager, error) {
	if err := p.normalize(); err != nil {
		return nil, err
	}
	return &Manager{p: p, ports: map[PortKey]*portTable{}, flows: map[string]*Flow{}}, nil
}

// Params returns the manager's normalized parameters.
func (m *Manager) Params() Params { return m.p }

// HighLimit is the LimitOfHighPriority that keeps the high table at Share
// of a link whose low-priority packets are at most mtu bytes: after
// HighLimit×4096 bytes of high priority, one low packet.
func (m *Manager) HighLimit(mtu int) uint8 {
	h := m.p.Share / (1 - m.p.Share) * float64(mtu)
	return uint8(min(254, max(1, math.Ceil(h/highLimitUnit))))
}

// Admit reserves req on every output port of path, or on none; a port
// that cannot hold it gives a *RejectError.
func (m *Manager) Admit(req Request, path []Link) (*Flow, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	if _, ok := m.flows[req.ID]; ok {
		return nil, fmt.Errorf("%w: %s", ErrDuplicate, req.ID)
	}
	if len(path) == 0 {
		return nil, &RejectError{Flow: req.ID, Port: "-", Reason: "no path"}
	}
	f := &Flow{Request: req}
	perHop := req.LatencyUs
	if req.Scope == EndToEnd {
		perHop /= float64(len(path))
	}
	for _, l := range path {
		h, err := m.plan(&req, l, perHop)
		if err != nil {
			return nil, err
		}
		f.Hops = append(f.Hops, h)
		f.BoundUs += h.BoundUs
	}
	f.SL = slOfLevel(f.Hops[0].Level)
	tried := map[PortKey]*arbtable.Table{}
	for i, l := range path {
		if l.DataVLs < 2 {
			return nil, &RejectError{Flow: req.ID, Port: l.Name, Reason: "runs one data VL: none apart from best effort"}
		}
		f.Hops[i].VL = SLtoVL(l.DataVLs)[f.SL]
		pt, err := m.table(l)
		if err != nil {
			return nil, &RejectError{Flow: req.ID, Port: l.Name, Reason: err.Error()}
		}
		t, ok := tried[l.Key]
		if !ok {
			t = pt.t.Clone()
			tried[l.Key] = t
		}
		h := &f.Hops[i]
		if need := h.Entries * h.Weight; pt.weight+need > pt.budget {
			return nil, &RejectError{Flow: req.ID, Port: l.Name,
				Reason: fmt.Sprintf("weight: %d of %d units reserved, the flow needs %d", pt.weight, pt.budget, need)}
		}
		id, err := t.Insert(h.Level)
		if err != nil {
			return nil, &RejectError{Flow: req.ID, Port: l.Name,
				Reason: fmt.Sprintf("entries: %d of %d free, the flow needs %d at distance %d", t.Free(), t.Size(), h.Entries, 1<<h.Level)}
		}
		h.id, h.key = id, l.Key
	}
	for _, h := range f.Hops {
		pt := m.ports[h.key]
		pt.t = tried[h.key]
		pt.weight += h.Entries * h.Weight
		pt.owners[h.id] = entry{flow: req.ID, vl: h.VL, weight: h.Weight}
	}
	m.flows[req.ID] = f
	return f, nil
}

// plan chooses the flow's level and weight at one port: the largest
// distance that meets the per-hop bound, with entries enough to carry the
// weight at MaxEntryWeight units each.
func (m *Manager) plan(req *Request, l Link, perHopUs float64) (Hop, error) {
	reject := func(format string, args ...any) (Hop, error) {
		return Hop{}, &RejectError{Flow: req.ID, Port: l.Name, Reason: fmt.Sprintf(format, args...)}
	}
	if l.Rate == 0 || l.MTU <= 0 {
		return reject("no rate or MTU known")
	}
	if req.Payload > l.MTU {
		return reject("payload %d bytes over the port's MTU %d", req.Payload, l.MTU)
	}
	pkt := req.PacketBytes()
	blocks := (pkt + 63) / 64
	size, budget := m.sizeFor(l)
	if size < 2 {
		return reject("its high-priority table holds %d entries", l.HighCap)
	}
	units := int(math.Ceil(req.Mbps * 1e6 * float64(budget) / (m.p.Share * float64(l.Rate))))
	emax := levels(size)
	for lvl := emax; lvl >= 0; lvl-- {
		entries := size >> lvl
		perEntry := ceilDiv(units, entries*blocks) * blocks
		if perEntry > m.p.MaxEntryWeight {
			continue // the weight needs more entries
		}
		bound := m.bound(lvl, l, pkt, budget)
		if bound > perHopUs {
			continue
		}
		return Hop{Port: l.Name, Level: lvl, Entries: entries, Weight: perEntry, BoundUs: bound}, nil
	}
	if b := m.bound(0, l, pkt, budget); b > perHopUs {
		return reject("latency %.1f µs per hop is below the %.1f µs the port promises at distance 1", perHopUs, b)
	}
	return reject("%.0f Mb/s needs more than %d entries of %d units", req.Mbps, size, m.p.MaxEntryWeight)
}

// bound is the latency bound, in µs, of a flow at level lvl of port l
// (whose table holds budget units) with packets of pkt bytes: the longest gap between two of its entries,
// the low-priority packets the high limit lets in meanwhile and one in
// progress, and its own packet.
func (m *Manager) bound(lvl int, l Link, pkt, budget int) float64 {
	d := 1 << lvl
	gap := min((d-1)*m.p.MaxEntryWeight, budget) * 64
	h := int(m.HighLimit(l.MTU)) * highLimitUnit
	low := (ceilDiv(gap, h) + 1) * l.MTU
	return float64(gap+low+pkt) * 8 / float64(l.Rate) * 1e6
}

// Release frees a flow's entries on every port it held.
func (m *Manager) Release(id string) (*Flow, error) {
	f, ok := m.flows[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknown, id)
	}
	var errs []error
	for _, h := range f.Hops {
		pt := m.ports[h.key]
		if err := pt.t.Release(h.id); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", h.Port, err))
		}
		pt.weight -= h.Entries * h.Weight
		delete(pt.owners, h.id)
	}
	delete(m.flows, id)
	return f, errors.Join(errs...)
}

// Flow returns an admitted flow.
func (m *Manager) Flow(id string) (*Flow, bool) {
	f, ok := m.flows[id]
	return f, ok
}

// Flows returns the admitted flows by ID.
func (m *Manager) Flows() []*Flow {
	out := make([]*Flow, 0, len(m.flows))
	for _, f := range m.flows {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b *Flow) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Ports returns every port that has held a reservation.
func (m *Manager) Ports() []PortKey {
	out := make([]PortKey, 0, len(m.ports))
	for k := range m.ports {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b PortKey) int { return cmp.Or(cmp.Compare(a.GUID, b.GUID), a.Port-b.Port) })
	return out
}

// Reserved returns the weight reserved at a port, the weight it may hold
// and its free entries; a port never seen reads as empty and of Size.
func (m *Manager) Reserved(k PortKey) (weight, budget, free int) {
	pt, ok := m.ports[k]
	if !ok {
		return 0, m.p.Budget, m.p.Size
	}
	return pt.weight, pt.budget, pt.t.Free()
}

// HighTable returns the high-priority table of a port: each slot holds
// the VL and weight of the flow the model put there; free slots have
// weight 0, which the arbiter skips.
func (m *Manager) HighTable(k PortKey) [mad.VLArbMaxEntries]mad.VLArbEntry {
	var out [mad.VLArbMaxEntries]mad.VLArbEntry
	pt, ok := m.ports[k]
	if !ok {
		return out
	}
	for p := range pt.t.Size() {
		if id, ok := pt.t.Owner(p); ok {
			e := pt.owners[id]
			out[p] = mad.VLArbEntry{VL: e.vl, Weight: uint8(e.weight)}
		}
	}
	return out
}

// table returns port l's table, made on first use at the size its cap
// allows.
func (m *Manager) table(l Link) (*portTable, error) {
	if pt, ok := m.ports[l.Key]; ok {
		return pt, nil
	}
	size, budget := m.sizeFor(l)
	t, err := arbtable.New(size, m.p.Model)
	if err != nil {
		return nil, err
	}
	pt := &portTable{t: t, budget: budget, owners: map[arbtable.ID]entry{}}
	m.ports[l.Key] = pt
	return pt, nil
}

// sizeFor is the table size and budget of port l: the largest power of
// two within its cap and Size, and Budget in proportion.
func (m *Manager) sizeFor(l Link) (size, budget int) {
	if pt, ok := m.ports[l.Key]; ok {
		return pt.t.Size(), pt.budget
	}
	limit := m.p.Size
	if l.HighCap > 0 {
		limit = min(limit, l.HighCap)
	}
	size = 1
	for size*2 <= limit {
		size *= 2
	}
	if limit < 1 {
		size = 0
	}
	return size, m.p.Budget * size / m.p.Size
}

// slOfLevel is the SL of a flow whose first hop has level lvl: SL lvl
// for levels 1-6, SL 7 for level 0 (distance 1, every entry).
func slOfLevel(lvl int) uint8 {
	if lvl == 0 {
		return 7
	}
	return uint8(min(lvl, 6))
}

// SLtoVL is the SL-to-VL mapping QoS runs on a port with dataVLs data
// VLs: best effort (SL 0, and SLs 8-15) on VL 0, SL n of 1-7 on VL n,
// or on the port's last VL when it has fewer, so that flows never share
// a VL with best effort.
func SLtoVL(dataVLs int) [16]uint8 {
	var out [16]uint8
	if dataVLs < 2 {
		return out
	}
	for sl := 1; sl < 8; sl++ {
		out[sl] = uint8(min(sl, dataVLs-1))
	}
	return out
}

func levels(size int) int {
	n := 0
	for size > 1 {
		size >>= 1
		n++
	}
	return n
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
