package soak

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"ibfab/internal/enum"
	"ibfab/topologies"
)

//go:generate go tool stringer -type=Kind -linecomment

// Kind is what a disturbance does to the fabric.
type Kind uint8

// The disturbances, each undone before the fabric must settle.
const (
	// KindLinkFlap takes a link between two switches down for a while and
	// up again.
	KindLinkFlap Kind = iota // link-flap
	// KindSwitchRestart kills a switch's process (its hosts cut off) and
	// starts it again.
	KindSwitchRestart // switch-restart
	// KindSMFailover kills ibsm, the master: OpenSM, its standby, takes the
	// subnet over; ibsm starts again and, of higher priority, is handed it
	// back.
	KindSMFailover // sm-failover
	// KindPartition restarts ibsm with a partition added to (or taken from)
	// its partitions.conf.
	KindPartition // partition-change
	// KindQoS admits a QoS flow through ibsm's control socket (`ibsm qos
	// add`), or releases the one admitted before (`ibsm qos del`).
	KindQoS // qos-change
	// KindMADLoss drops a share of the SMPs each way on the SM's link
	// while a switch link flaps: the SM must sweep through the loss.
	KindMADLoss // mad-loss
)

var kinds = enum.New("disturbance kind", KindLinkFlap, KindSwitchRestart, KindSMFailover, KindPartition, KindQoS, KindMADLoss)

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) { return kinds.Marshal(k) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Kind) UnmarshalText(b []byte) error { return kinds.Unmarshal(k, b) }

// Bound is how long the fabric may take to settle after a disturbance of
// kind k is undone (the link up, the switch trained, ibsm started again,
// the QoS call answered): the SM's sweep reported done, every port that
// should be Active Active, and every flow among the traffic hosts
// delivering again. A flap costs the SM two trap-driven sweeps; a restarted
// switch must train and be swept in; an SM that starts must discover the
// subnet, find the other SM, and take the subnet over from it (OpenSM
// hands over at its next poll); under MAD loss every lost SMP waits out
// its timeout.
func Bound(k Kind) time.Duration {
	switch k {
	case KindLinkFlap:
		return 10 * time.Second
	case KindSwitchRestart:
		return 15 * time.Second
	case KindSMFailover, KindPartition:
		return 30 * time.Second
	case KindQoS:
		return 10 * time.Second
	case KindMADLoss:
		return 30 * time.Second
	}
	return 0
}

// TakesLinkDown reports whether a disturbance of kind k takes a link
// down, so that data queued for it may be lost: only these may drop
// packets, and only at the ports of their links.
func (k Kind) TakesLinkDown() bool {
	return k == KindLinkFlap || k == KindSwitchRestart || k == KindMADLoss
}

// Sweeps reports whether the SM must report a sweep done after a
// disturbance of kind k is undone (a QoS call changes tables without a
// sweep).
func (k Kind) Sweeps() bool { return k != KindQoS }

// Port names one port, as the reports and ibfab's commands do:
// "node[port]".
type Port struct {
	Node string `json:"node"`
	Port int    `json:"port"`
}

func (p Port) String() string { return fmt.Sprintf("%s[%d]", p.Node, p.Port) }

// Targets are what the schedule may disturb on a fabric: the switch links
// whose loss disconnects no host (by one end), the switches whose loss
// cuts off only their own hosts (and none of the SM and observer hosts),
// and the hosts that carry traffic (the QoS flows' ends, the partition's
// members).
type Targets struct {
	Links    []Port   `json:"links"`
	Switches []string `json:"switches"`
	Hosts    []string `json:"hosts"`
}

// FindTargets returns the targets of topo for an SM at master: links and
// switches as Targets says, keep naming the hosts whose switches must
// stay (the SM hosts and the observer), hosts the traffic hosts.
func FindTargets(topo *topologies.Topology, master string, keep, hosts []string) Targets {
	t := Targets{Hosts: slices.Clone(hosts)}
	all := len(topo.Reachable(master, nil))
	for _, l := range topo.Links() {
		a, b := topo.Node(l.A.Node), topo.Node(l.B.Node)
		if a.Type != topologies.Switch || b.Type != topologies.Switch {
			continue
		}
		if len(topo.Reachable(master, &topologies.Damage{Cut: []topologies.Link{l}})) == all {
			t.Links = append(t.Links, Port{a.Name, l.A.Port})
		}
	}
	kept := map[int]bool{}
	for _, h := range keep {
		kept[topo.SwitchOf(h)] = true
	}
	for i, n := range topo.Nodes() {
		if n.Type != topologies.Switch || kept[i] {
			continue
		}
		left := topo.Reachable(master, &topologies.Damage{Dead: map[string]bool{n.Name: true}})
		if len(left) == all-len(topo.HostsOf(n.Name)) {
			t.Switches = append(t.Switches, n.Name)
		}
	}
	return t
}

// Disturbance is one entry of the schedule: after Gap of quiet (the
// fabric settled), Kind is done to Target for Hold, then undone.
type Disturbance struct {
	Kind Kind          `json:"kind"`
	Gap  time.Duration `json:"gap_ns"`
	Hold time.Duration `json:"hold_ns"`
	// Target: the link (one end) a flap takes down; the switch restarted;
	// for a QoS flow its source and destination host; for a partition its
	// member hosts.
	Link    *Port    `json:"link,omitempty"`
	Switch  string   `json:"switch,omitempty"`
	Hosts   []string `json:"hosts,omitempty"`
	LossPct int      `json:"loss_pct,omitempty"` // MAD loss: the share of SMPs dropped each way
}

// Target is the disturbance's target in words.
func (d Disturbance) Target() string {
	switch {
	case d.Link != nil && d.LossPct > 0:
		return fmt.Sprintf("%s, %d %% of SMPs lost", d.Link, d.LossPct)
	case d.Link != nil:
		return d.Link.String()
	case d.Switch != "":
		return d.Switch
	case len(d.Hosts) > 0:
		return fmt.Sprint(d.Hosts)
	}
	return "ibsm"
}

// The schedule's ranges: the quiet before each disturbance and how long
// it holds; quick runs the short ends.
const (
	minGap, maxGap   = 2 * time.Second, 20 * time.Second
	quickGapMax      = 3 * time.Second
	minHold, maxHold = 500 * time.Millisecond, 3 * time.Second
)

// Schedule returns n disturbances drawn from seed over tg: the same seed
// and targets give the same schedule. With quick, the first len(kinds)
// are every kind once in a seeded order (so that even a short run is
// mixed), the gaps short; the rest, and all of a full run's, are drawn
// with every kind as likely. n ≤ 0 gives none.
func Schedule(seed uint64, n int, quick bool, tg Targets) []Disturbance {
	rng := rand.New(rand.NewPCG(seed, seed^0x50a4))
	order := kinds.Values()
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	gapMax := maxGap
	if quick {
		gapMax = quickGapMax
	}
	var out []Disturbance
	for i := range max(n, 0) {
		k := order[rng.IntN(len(order))]
		if quick && i < len(order) {
			k = order[i]
		}
		out = append(out, draw(rng, k, gapMax, tg))
	}
	return out
}

// lossPcts are the shares of SMPs a MAD-loss disturbance drops each way
// on the SM's link. Silicon loses next to none: a link whose errors cost
// it even 1 % of its packets trips its PHY error threshold and retrains
// (the port goes down), and OpenSM's defaults (a poll every 10 s, 4 of
// them, each with the MAD layer's 3 resends) never give up a live master
// over such loss. Up to 10 % still makes the SMs' retries work (one SMP
// in five fails its first attempt at 10 % each way) while each poll or
// Set gets through within its resends (all four attempts fail about one
// time in 770). At the 20 % the soak first drew, a full sweep of the default
// fabric (some 130 transactions) lost one outright nine times in ten,
// and OpenSM, polling each second with 2 retries as here, gave ibsm up:
// what silicon does not do (docs/suites.md, Soak).
var lossPcts = []int{1, 2, 5, 10}

// draw fills in a disturbance of kind k from rng.
func draw(rng *rand.Rand, k Kind, gapMax time.Duration, tg Targets) Disturbance {
	d := Disturbance{Kind: k, Gap: between(rng, minGap, gapMax), Hold: between(rng, minHold, maxHold)}
	pick := func(n int) int { return rng.IntN(max(n, 1)) }
	switch k {
	case KindLinkFlap, KindMADLoss:
		if len(tg.Links) > 0 {
			l := tg.Links[pick(len(tg.Links))]
			d.Link = &l
		}
		if k == KindMADLoss {
			d.LossPct = lossPcts[rng.IntN(len(lossPcts))]
		}
	case KindSwitchRestart:
		if len(tg.Switches) > 0 {
			d.Switch = tg.Switches[pick(len(tg.Switches))]
		}
	case KindQoS:
		if len(tg.Hosts) >= 2 {
			i := pick(len(tg.Hosts))
			j := (i + 1 + pick(len(tg.Hosts)-1)) % len(tg.Hosts)
			d.Hosts = []string{tg.Hosts[i], tg.Hosts[j]}
		}
	case KindPartition:
		for _, h := range tg.Hosts {
			if rng.IntN(2) == 0 || len(d.Hosts) == 0 && h == tg.Hosts[len(tg.Hosts)-1] {
				d.Hosts = append(d.Hosts, h)
			}
		}
	case KindSMFailover:
	}
	return d
}

// between draws a duration in [lo, hi], to the millisecond.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	ms := int64((hi - lo) / time.Millisecond)
	return lo + time.Duration(rng.Int64N(ms+1))*time.Millisecond
}
