package mgmtplane

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"ibfab/agent"
	"ibfab/bpf"
	"ibfab/memfabric"
	"ibfab/topologies"
)

// The management plane's faults: the rules of ibfab fault (package bpf's
// Rule: drop, corrupt or delay, at a rate, up to a limit, on the MADs a
// match picks) applied to the MADs leaving a node's port, as the eBPF
// program applies them to the frames leaving a veth end. A corrupted MAD
// is one the receiver's ICRC check drops, so it is dropped here.

// FaultArgs installs rule on the MADs leaving node's port.
type FaultArgs struct {
	Node string   `json:"node"`
	Port uint8    `json:"port"`
	Rule bpf.Rule `json:"rule"`
}

// FaultEntry is an installed rule and its counters.
type FaultEntry struct {
	Node     string       `json:"node"`
	Port     uint8        `json:"port"`
	Slot     int          `json:"slot"`
	Rule     bpf.Rule     `json:"rule"`
	Counters bpf.Counters `json:"counters"`
}

// ClearArgs names the port whose rules to remove (Port 0: every port of
// Node; Node "": every rule).
type ClearArgs struct {
	Node string `json:"node"`
	Port uint8  `json:"port"`
}

// fault is an installed rule.
type fault struct {
	node    int
	entry   FaultEntry
	acted   uint64
	matched uint64
}

// faults are the plane's rules, held under fmu (the egress hook runs in
// Run, which fmu serializes).
type faults struct {
	rules []*fault
	rng   *rand.Rand
}

// addFault installs a rule and returns it with its slot: the lowest free
// one of its port, as bpf.Attachment numbers them.
func (p *Plane) addFault(args json.RawMessage) (any, error) {
	var a FaultArgs
	i, err := p.nodeArgs(args, &a, func() string { return a.Node })
	if err != nil {
		return nil, err
	}
	if err := a.Rule.Validate(); err != nil {
		return nil, err
	}
	if _, ok := p.topo.LinkAt(topologies.PortRef{Node: i, Port: int(a.Port)}); !ok {
		return nil, fmt.Errorf("mgmtplane: %s[%d] is not cabled", a.Node, a.Port)
	}
	var e FaultEntry
	p.Do(func(f *memfabric.Fabric) {
		slot := 0
		for slices.ContainsFunc(p.faults.rules, func(r *fault) bool {
			return r.node == i && r.entry.Port == a.Port && r.entry.Slot == slot
		}) {
			slot++
		}
		if slot >= bpf.MaxRules {
			err = fmt.Errorf("mgmtplane: %s[%d]: all %d rule slots in use", a.Node, a.Port, bpf.MaxRules)
			return
		}
		e = FaultEntry{Node: a.Node, Port: a.Port, Slot: slot, Rule: a.Rule}
		p.faults.rules = append(p.faults.rules, &fault{node: i, entry: e})
		f.SetEgress(p.egress)
	})
	return e, err
}

// listFaults returns every rule with its counters, by node, port and
// slot.
func (p *Plane) listFaults() []FaultEntry {
	var out []FaultEntry
	p.Do(func(*memfabric.Fabric) {
		for _, r := range p.faults.rules {
			e := r.entry
			e.Counters = bpf.Counters{Matched: r.matched, Acted: r.acted}
			out = append(out, e)
		}
	})
	slices.SortFunc(out, func(a, b FaultEntry) int {
		if a.Node != b.Node {
			return strings.Compare(a.Node, b.Node)
		}
		if a.Port != b.Port {
			return int(a.Port) - int(b.Port)
		}
		return a.Slot - b.Slot
	})
	return out
}

// clearFaults removes the rules args names and returns how many.
func (p *Plane) clearFaults(args json.RawMessage) (int, error) {
	var a ClearArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return 0, err
	}
	n := 0
	p.Do(func(f *memfabric.Fabric) {
		before := len(p.faults.rules)
		p.faults.rules = slices.DeleteFunc(p.faults.rules, func(r *fault) bool {
			return a.Node == "" || r.entry.Node == a.Node && (a.Port == 0 || r.entry.Port == a.Port)
		})
		n = before - len(p.faults.rules)
		if len(p.faults.rules) == 0 {
			f.SetEgress(nil)
		}
	})
	return n, nil
}

// egress is the fabric's Egress while rules are installed: the first
// rule of the port that matches and acts decides, as the eBPF program's
// slots do.
func (p *Plane) egress(node int, o *agent.Outbound) (drop bool, delay time.Duration) {
	if p.faults.rng == nil {
		p.faults.rng = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x1bfab))
	}
	for _, r := range p.faults.rules {
		e := &r.entry
		if r.node != node || e.Port != o.Port || !e.Rule.Match.MatchesMAD(o.VL, o.SL, o.DLID, o.SLID, o.MAD) {
			continue
		}
		r.matched++
		if e.Rule.Limit != 0 && r.acted >= e.Rule.Limit || p.faults.rng.Uint32N(bpf.RateOne) >= e.Rule.Rate {
			continue
		}
		r.acted++
		if e.Rule.Action == bpf.Delay {
			return false, e.Rule.Delay
		}
		return true, 0
	}
	return false, 0
}
