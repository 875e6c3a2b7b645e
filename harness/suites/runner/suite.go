package runner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"ibfab/bpf"
	"ibfab/harness/clab"
	"ibfab/internal/enum"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

//go:generate go tool stringer -type=Kind -linecomment

// Kind is what an Action does.
type Kind uint8

// The actions a suite can take.
const (
	// LinkDown sets Node[Port]'s veth down: both ends lose the link.
	LinkDown Kind = iota // link-down
	// LinkUp sets it up again.
	LinkUp // link-up
	// LinkFlap takes it Count times down and up, Period each.
	LinkFlap // link-flap
	// KillNode SIGKILLs the node's process.
	KillNode // kill
	// Restart starts the node's process again.
	Restart // restart
	// AddFault installs Rule on Node[Port]'s egress (port 0: every port).
	AddFault // fault
	// ClearFault removes every fault rule.
	ClearFault // fault-clear
	// KillSM SIGKILLs the subnet manager.
	KillSM // sm-kill
	// StartSM starts it again, on the same HCA with the same flags.
	StartSM // sm-start
	// AddPiece hot-adds Piece's nodes and links (ibfab add).
	AddPiece // add
)

var kinds = enum.New("action kind", LinkDown, LinkUp, LinkFlap, KillNode, Restart, AddFault, ClearFault, KillSM, StartSM, AddPiece)

// MarshalText implements encoding.TextMarshaler.
func (x Kind) MarshalText() ([]byte, error) { return kinds.Marshal(x) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (x *Kind) UnmarshalText(b []byte) error { return kinds.Unmarshal(x, b) }

// Action is one fault (or repair) a suite applies.
type Action struct {
	Kind   Kind
	Node   string
	Port   int
	Period time.Duration // LinkFlap
	Count  int           // LinkFlap
	Rule   bpf.Rule      // AddFault
	// Ingress puts an AddFault rule on the frames the port receives.
	Ingress bool
	// Piece builds what AddPiece adds.
	Piece func() *topologies.Piece
}

func (a Action) String() string {
	switch a.Kind {
	case LinkDown, LinkUp:
		return fmt.Sprintf("%s %s[%d]", a.Kind, a.Node, a.Port)
	case LinkFlap:
		return fmt.Sprintf("%s %s[%d] %d× %v", a.Kind, a.Node, a.Port, a.Count, a.Period)
	case KillNode, Restart:
		return fmt.Sprintf("%s %s", a.Kind, a.Node)
	case AddPiece:
		var names []string
		for _, n := range a.Piece().Topology.Nodes() {
			names = append(names, n.Name)
		}
		return fmt.Sprintf("add %s", strings.Join(names, ", "))
	case AddFault:
		port := "on every port"
		if a.Port != 0 {
			port = fmt.Sprintf("on port %d", a.Port)
		}
		dir := "sent"
		if a.Ingress {
			dir = "received"
		}
		return fmt.Sprintf("fault on frames %s %s by %s: %v", dir, port, a.Node, a.Rule)
	}
	return a.Kind.String()
}

// Step is an Action at a time after the traffic has settled.
type Step struct {
	At time.Duration
	Action
}

// Suite is one failure-injection scenario.
type Suite struct {
	Name    string
	Summary string
	// Topology builds the fabric.
	Topology  func() (*topologies.Topology, error)
	TimeScale float64
	// SMNode is the HCA ibsm runs on ("" = the topology's first CA);
	// SMArgs are ibsm's flags after --port sim --json.
	SMNode string
	SMArgs []string
	// NodeArgs are flags for every node process (ibswitch -h).
	NodeArgs []string
	// Load is each host's offered load in % of its link's data rate, to
	// every other host uniformly; Payload the bytes per packet.
	Load    float64
	Payload int
	// BringUp acts before ibsm starts (faults during the first sweep).
	BringUp []Action
	// Steps act, in order of At, after Warmup of traffic.
	Steps  []Step
	Warmup time.Duration
	// Bound is the time within which, after the last step, every port that
	// should be Active is, and ibsm has taken the change in: in real time
	// at time scale 1, stretched by TimeScale (the fabric's traps, link
	// training and answers all slow down with it). See restoreBound.
	Bound time.Duration
	// Steady is the time of the survivors' traffic after restoration,
	// during which nothing may be lost.
	Steady time.Duration
	// Capture is a port ("NODE[PORT]") whose frames are captured from the
	// first step until restoration.
	Capture string
	// StayActive: every cabled port stays Active throughout (faults that
	// must not disturb the fabric, such as an SM crash).
	StayActive bool
	// StableLIDs: every port has the same LID after the steps as before.
	StableLIDs bool
}

// ibsm's timers in the shipped suites. A sweep every smSweepInterval backs
// the traps up: a trap is an SMP on VL15, which drops what overflows its
// buffer, and under traffic some are lost. SMPs wait smTimeout for their
// answer, in ibsm and at the SM's HCA (IbsmHCAArgs): on a loaded machine
// 200 ms is too short.
const (
	smSweepInterval = 3 * time.Second
	smTimeout       = time.Second
)

// DefaultSMArgs is the mechanism the shipped suites run ibsm with: change
// assimilation by trap, partial discovery, provisional routes and
// cut-node dependencies (the thesis's improved mechanism).
var DefaultSMArgs = []string{"--detect", "both", "--sweep-interval", smSweepInterval.String(), "--timeout", smTimeout.String(), "--discovery", "partial", "--provisional", "--distribution", "cut-deps"}

// BasicSMArgs is the thesis's basic mechanism: full discovery, FERa routes,
// distribution by full deactivation.
var BasicSMArgs = []string{"--detect", "both", "--sweep-interval", smSweepInterval.String(), "--timeout", smTimeout.String(), "--discovery", "full", "--distribution", "full-deactivation", "--routing", "updn-fera"}

// restoreBound is a suite's Bound in rounds of ibsm's own timers. One
// round is a sweep interval (a change whose trap was lost is heard at the
// next sweep) plus an SMP timeout (an SMP of the assimilation lost and
// waited for): what taking a change in costs at worst on an idle machine.
// The suites run on a 2-core machine shared with every node process, the
// traffic generators and the capture, where a round's discovery, routing
// and distribution wait for the CPU: the shipped suites allow 4 rounds, 5
// where more is done after the last step (a flap still flapping, a new
// SM's first full sweep).
func restoreBound(rounds int) time.Duration {
	return time.Duration(rounds) * (smSweepInterval + smTimeout)
}

// scaledBound is Bound at the suite's time scale.
func (s Suite) scaledBound() time.Duration {
	return time.Duration(float64(s.Bound) * max(s.TimeScale, 1))
}

// vl15Loss drops rate (per million) of the SMPs of class c that node
// sends (ingress: receives) on every port.
func vl15Loss(node string, ingress bool, c mad.MgmtClass, rate uint32) Action {
	return Action{Kind: AddFault, Node: node, Ingress: ingress, Rule: bpf.Rule{Action: bpf.Drop, Rate: rate,
		Match: bpf.Match{Fields: bpf.FieldVL | bpf.FieldClass, VL: 15, Class: c}}}
}

func defaultFabric() (*topologies.Topology, error) { return topologies.Default(), nil }

// base is what the shipped suites share: the default fabric, ibsm on ca4
// (the thesis's SM node), light uniform traffic.
func base(name, summary string) Suite {
	return Suite{
		Name: name, Summary: summary, Topology: defaultFabric, SMNode: "ca4",
		SMArgs: DefaultSMArgs, Load: 0.05, Payload: 2048,
		Warmup: 2 * time.Second, Bound: restoreBound(4), Steady: 2 * time.Second,
		Capture: "ca4[1]",
	}
}

// Builtin returns the shipped suites.
func Builtin() []Suite {
	link := base("link-failure", "a link between two switches (sw2-sw6) fails; the SM routes around it")
	link.Steps = []Step{{At: 0, Action: Action{Kind: LinkDown, Node: "sw2", Port: 3}}}
	link.Capture = "sw2[3]"

	sw := base("switch-failure", "switch sw6 crashes (its host ca12 is cut off); the SM routes the rest around it")
	sw.Steps = []Step{{At: 0, Action: Action{Kind: KillNode, Node: "sw6"}}}

	flap := base("flap-storm", "two inter-switch links flap three times each, 1 s down, 1 s up, half a second apart")
	flap.Steps = []Step{
		{At: 0, Action: Action{Kind: LinkFlap, Node: "sw3", Port: 4, Period: time.Second, Count: 3}},
		{At: 500 * time.Millisecond, Action: Action{Kind: LinkFlap, Node: "sw2", Port: 2, Period: time.Second, Count: 3}},
	}
	flap.Bound = restoreBound(5)

	// The loss sits on the SM's link, which every SMP and every answer
	// crosses: 10 % each way. On every link of the fabric, an SMP to a
	// switch five hops away would be lost 65 % of the time, beyond what
	// any number of retries makes up for in one sweep.
	loss := base("vl15-loss", "10 % of the SMPs (classes 0x81 and 0x01 on VL15) are dropped each way on the SM's link during bring-up; the SM's retries bring the subnet up")
	for _, in := range []bool{false, true} {
		loss.BringUp = append(loss.BringUp,
			vl15Loss("ca4", in, mad.ClassSubnDirected, bpf.RateOne/10),
			vl15Loss("ca4", in, mad.ClassSubnLID, bpf.RateOne/10))
	}
	loss.Steps = []Step{{At: 0, Action: Action{Kind: ClearFault}}}

	add := base("switch-hot-add", "switch sw16 with hosts ca17 and ca18 is cabled to sw8 and sw9 of the running fabric (the thesis's Fig. 68); the SM brings it in and the new hosts talk to the old ones")
	add.Steps = []Step{{At: 0, Action: Action{Kind: AddPiece, Piece: topologies.Thesis8AddPiece}}}
	// sw8[3] is not cabled before the add: capture the link to sw8 instead,
	// which carries the SMPs that find sw16 and some of its hosts' traffic.
	add.Capture = "sw3[2]"

	crash := base("sm-restart", "the SM crashes (SIGKILL) and is started again: the fabric stays Active and the new SM takes over with the same LIDs")
	crash.Steps = []Step{
		{At: 0, Action: Action{Kind: KillSM}},
		{At: 2 * time.Second, Action: Action{Kind: StartSM}},
	}
	crash.StayActive, crash.StableLIDs = true, true
	// The new SM sweeps the whole subnet before it reports.
	crash.Bound = restoreBound(5)
	return []Suite{link, sw, flap, loss, add, crash}
}

// PlaceOnHosts places topo, s's fabric, on hosts hosts for a run over
// hosts (Options.Hosts), with every link s sets down, up or flaps between
// two hosts (clab.PlaceApart): a suite that fails a link then fails one
// carried by VXLAN devices, the case a fabric over machines adds. It
// returns nil for one host, and fails for bad hosts, a suite link that is
// not a cabled port of topo or cannot go between hosts, and a suite that
// adds nodes (hot-added nodes are placed on no host).
func (s Suite) PlaceOnHosts(topo *topologies.Topology, hosts int) ([]int, error) {
	switch {
	case hosts < 0:
		return nil, fmt.Errorf("--hosts %d: want 1 or more", hosts)
	case hosts <= 1:
		return nil, nil
	}
	var apart []topologies.Link
	actions := append([]Action(nil), s.BringUp...)
	for _, st := range s.Steps {
		actions = append(actions, st.Action)
	}
	for _, a := range actions {
		switch a.Kind {
		case AddPiece:
			return nil, fmt.Errorf("suite %s adds nodes, which a fabric over hosts does not place: run it on one host", s.Name)
		case LinkDown, LinkUp, LinkFlap:
		default:
			continue
		}
		i, ok := topo.Lookup(a.Node)
		if !ok {
			return nil, fmt.Errorf("suite %s: link %s[%d]: the fabric has no node %q", s.Name, a.Node, a.Port, a.Node)
		}
		if a.Port == 0 {
			return nil, fmt.Errorf("suite %s: %s of every port of %s: name the port to run between hosts", s.Name, a.Kind, a.Node)
		}
		l, ok := topo.LinkAt(topologies.PortRef{Node: i, Port: a.Port})
		if !ok {
			return nil, fmt.Errorf("suite %s: link %s[%d]: the port is not cabled", s.Name, a.Node, a.Port)
		}
		if !slices.Contains(apart, l) {
			apart = append(apart, l)
		}
	}
	host, err := clab.PlaceApart(topo, hosts, clab.Capacity(topo.NumNodes(), hosts), apart)
	if err != nil {
		return nil, fmt.Errorf("suite %s on %d hosts: %w", s.Name, hosts, err)
	}
	return host, nil
}

// Lookup returns the shipped suite name.
func Lookup(name string) (Suite, bool) {
	i := slices.IndexFunc(Builtin(), func(s Suite) bool { return s.Name == name })
	if i < 0 {
		return Suite{}, false
	}
	return Builtin()[i], true
}

// Names lists the shipped suites.
func Names() []string {
	var out []string
	for _, s := range Builtin() {
		out = append(out, s.Name)
	}
	return out
}

// fabricName is a fabric name for suite s (names are [a-z0-9_]).
func fabricName(s string) string {
	return "s_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.ToLower(s))
}
