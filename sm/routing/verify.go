package routing

import (
	"errors"
	"fmt"
	"strings"

	"ibfab/topologies"
	"ibfab/wire/mad"
)

// Errors the verifier reports.
var (
	ErrDisconnected = errors.New("sm: route set leaves LID pairs unconnected")
	ErrCreditLoop   = errors.New("sm: route set has a cycle in its channel dependency graph")
	ErrDownUp       = errors.New("sm: route set turns from a down link to an up link")
)

// maxFailures bounds the failures a Report spells out.
const maxFailures = 8

// Report is what Verify found.
type Report struct {
	Pairs       int      // (source end port, destination LID) pairs checked
	Unconnected int      // pairs whose packets the tables do not deliver
	Failures    []string // the first few unconnected pairs, and why
	Channels    int      // directed links
	Deps        int      // channel dependencies: (in link, out link) turns routes take
	Cycle       []string // a dependency cycle, as channels, when there is one
	// CycleLayer is the VL layer whose graph has Cycle (Routes.Layers):
	// each layer's channels are its own, so each is checked alone.
	CycleLayer int
	DownUp     int // down→up turns taken (when the route set knows directions)
}

// Connected reports whether every pair is connected.
func (r *Report) Connected() bool { return r.Unconnected == 0 }

// DeadlockFree reports whether the channel dependency graph is acyclic
// and no route turns from down to up.
func (r *Report) DeadlockFree() bool { return len(r.Cycle) == 0 && r.DownUp == 0 }

// Err returns nil for a connected, deadlock-free route set, else an error
// wrapping ErrDisconnected, ErrCreditLoop or ErrDownUp (the first that
// applies) with the details.
func (r *Report) Err() error {
	switch {
	case !r.Connected():
		return fmt.Errorf("%w: %d of %d pairs: %s", ErrDisconnected, r.Unconnected, r.Pairs, strings.Join(r.Failures, "; "))
	case len(r.Cycle) > 0 && r.CycleLayer > 0:
		return fmt.Errorf("%w: layer %d: %s", ErrCreditLoop, r.CycleLayer, strings.Join(r.Cycle, " -> "))
	case len(r.Cycle) > 0:
		return fmt.Errorf("%w: %s", ErrCreditLoop, strings.Join(r.Cycle, " -> "))
	case r.DownUp > 0:
		return fmt.Errorf("%w: %d turns", ErrDownUp, r.DownUp)
	}
	return nil
}

// Verify checks a route set against its fabric, as the SM does before it
// distributes one. Connectivity: a packet from every end port (switch port
// 0, cabled CA port) to every LID of every other end port must arrive,
// following the tables hop by hop: no missing entry, no port 0 or dead
// port, no U-turn (an entry naming the port the packet came in by, which
// a switch drops), no loop. Deadlock freedom: the channel dependency graph
// (channels are directed links; a route entering a switch by one and
// leaving by another makes the second depend on the first) must be
// acyclic; and with link directions (Routes.Up) no route may take a down
// link then an up link. Routes to switch LIDs stay out of the deadlock
// checks when the route set says so (Routes.SwitchLIDsExempt). With VL
// layers (Routes.Layers > 1) every layer has its own graph, each checked
// on its own: a LID's packets travel on its layer's VL from end to end,
// so only the turns of one layer wait on each other; down→up turns count
// in layer 0 alone, the engine's.
func Verify(f *Fabric, r *Routes) *Report {
	v := &verifier{f: f, r: r, rep: &Report{}}
	v.channels()
	v.turns = make([][][]bool, max(1, r.Layers))
	for l := range v.turns {
		v.turns[l] = newTurns(f)
	}
	v.state = make([]uint8, f.Topo.NumNodes())
	for lid := 1; lid <= int(r.MaxLID); lid++ {
		if _, ok := f.Owner(uint16(lid)); ok {
			v.destination(uint16(lid))
		}
	}
	v.cycle()
	return v.rep
}

// VerifyTables checks tables a distribution holds at one moment (an
// sm.TableState) as the data plane would run them: packets from every CA
// port to every LID of r, through r.LFT, dropped at the turns blocked
// ([switch][in*(N+1)+out]: the switch drops data entering by in and
// leaving by out) and at ports active ([node][port]) says pass no data.
// The turns taken are recorded in turns, of the same shape as blocked
// (nil: a fresh table), and the dependency graph of all it holds is
// checked for a cycle; Deps and DownUp (on r.Up) count the turns recorded
// anew.
func VerifyTables(f *Fabric, r *Routes, blocked, active, turns [][]bool) *Report {
	v := &verifier{f: f, r: r, rep: &Report{}, blocked: blocked, active: active, caOnly: true}
	v.channels()
	if turns == nil {
		turns = make([][]bool, f.Topo.NumNodes())
		for _, sw := range f.Switches() {
			n := f.Topo.Node(sw).NumPorts + 1
			turns[sw] = make([]bool, n*n)
		}
	}
	v.turns = [][][]bool{turns}
	v.state = make([]uint8, f.Topo.NumNodes())
	for lid := 1; lid <= int(r.MaxLID); lid++ {
		if _, ok := f.Owner(uint16(lid)); ok {
			v.destination(uint16(lid))
		}
	}
	v.cycle()
	return v.rep
}

type verifier struct {
	f     *Fabric
	r     *Routes
	rep   *Report
	chans [][]int  // [node][port] -> channel id of the link leaving there, -1 none
	names []string // channel id -> name
	// turns[layer][switch][in*(N+1)+out]: a route of the layer enters
	// by in and leaves by out.
	turns [][][]bool
	layer int      // the current destination's layer
	state []uint8  // per switch, for the current destination: 0 unknown, 1 on stack, 2 ok, 3 fails
	why   []string // per switch: why it fails
	// exempt: the current destination's turns stay out of the deadlock
	// checks (Routes.SwitchLIDsExempt).
	exempt   bool
	peers    [][]topologies.PortRef // [node][port]: the cabled peer, Node -1 for none
	isSwitch []bool

	// For tables held in a distribution (VerifyTables): blocked turns
	// drop data, inactive ports pass none, and only CA ports send it.
	blocked [][]bool // [switch][in*(N+1)+out]; nil: none
	active  [][]bool // [node][port]; nil: every port
	caOnly  bool
}

// isBlocked reports whether switch s drops data entering by in and
// leaving by out.
func (v *verifier) isBlocked(s, in, out int) bool {
	if v.blocked == nil || v.blocked[s] == nil {
		return false
	}
	n := v.f.Topo.Node(s).NumPorts + 1
	return in < n && out < n && v.blocked[s][in*n+out]
}

// leaves reports whether data can leave switch s by port out: the port
// is cabled and, in a TableState, its link passes data. A packet routed
// to a port that passes none is dropped, and waits for nothing.
func (v *verifier) leaves(s, out int) bool {
	if v.active == nil {
		return true
	}
	peer, ok := v.peer(s, out)
	return ok && v.linkActive(s, out, peer)
}

// linkActive reports whether data crosses the link at port p of node i,
// cabled to peer: both ends pass data.
func (v *verifier) linkActive(i, p int, peer topologies.PortRef) bool {
	if v.active == nil {
		return true
	}
	return v.active[i][p] && v.active[peer.Node][peer.Port]
}

const (
	vUnknown uint8 = iota
	vVisiting
	vOK
	vFails
)

// peer returns the port cabled to port p of node i.
func (v *verifier) peer(i, p int) (topologies.PortRef, bool) {
	r := v.peers[i][p]
	return r, r.Node >= 0
}

func (v *verifier) channels() {
	t := v.f.Topo
	v.chans = make([][]int, t.NumNodes())
	v.peers = make([][]topologies.PortRef, t.NumNodes())
	v.isSwitch = make([]bool, t.NumNodes())
	for i := range t.NumNodes() {
		v.isSwitch[i] = v.f.IsSwitch(i)
		v.peers[i] = make([]topologies.PortRef, t.Node(i).NumPorts+1)
		for p := range v.peers[i] {
			r, ok := t.Peer(topologies.PortRef{Node: i, Port: p})
			if !ok || p == 0 {
				r = topologies.PortRef{Node: -1}
			}
			v.peers[i][p] = r
		}
		v.chans[i] = make([]int, t.Node(i).NumPorts+1)
		for p := range v.chans[i] {
			v.chans[i][p] = -1
		}
		for _, a := range v.f.Arcs(i) {
			v.chans[i][a.Port] = len(v.names)
			v.names = append(v.names, fmt.Sprintf("%s[%d]->%s[%d]", t.Node(i).Name, a.Port, t.Node(a.Peer).Name, a.PeerPort))
		}
	}
	v.rep.Channels = len(v.names)
}

func (v *verifier) fail(src string, lid uint16, why string) {
	v.rep.Unconnected++
	if len(v.rep.Failures) < maxFailures {
		v.rep.Failures = append(v.rep.Failures, fmt.Sprintf("%s to LID %d: %s", src, lid, why))
	}
}

// destination checks every source's way to lid and records the turns.
func (v *verifier) destination(lid uint16) {
	f, t := v.f, v.f.Topo
	dst, _ := f.Owner(lid)
	v.exempt = v.r.SwitchLIDsExempt && f.Ends()[dst].Port == 0 && f.IsSwitch(f.Ends()[dst].Node)
	v.layer = min(v.r.LayerOf(f, lid), len(v.turns)-1)
	clear(v.state)
	if v.why == nil {
		v.why = make([]string, t.NumNodes())
	}
	for i, src := range f.Ends() {
		if i == dst || (v.caOnly && v.isSwitch[src.Node]) {
			continue
		}
		v.rep.Pairs++
		name := func() string { return fmt.Sprintf("%s port %d", t.Node(src.Node).Name, src.Port) }
		if src.Port == 0 { // a switch
			if ok, why := v.reach(src.Node, 0, lid); !ok {
				v.fail(name(), lid, why)
			}
			continue
		}
		peer, ok := v.peer(src.Node, src.Port)
		switch {
		case !ok:
			v.fail(name(), lid, "port not cabled")
		case !v.linkActive(src.Node, src.Port, peer):
			v.fail(name(), lid, "port not active")
		case !v.isSwitch[peer.Node]:
			if o, ok := f.Owner(lid); !ok || f.Ends()[o].Node != peer.Node || f.Ends()[o].Port != peer.Port {
				v.fail(name(), lid, "cabled to a CA that is not the destination")
			}
		default:
			if ok, why := v.reach(peer.Node, peer.Port, lid); !ok {
				v.fail(name(), lid, why)
			}
		}
	}
}

// reach reports whether a packet for lid entering switch s by port in
// (0: sent by s itself) arrives, and records its turns. Whether s
// delivers does not depend on in, except that the entry must not be in
// (a U-turn), so the rest of the walk is memoized per destination.
func (v *verifier) reach(s, in int, lid uint16) (bool, string) {
	t := v.f.Topo
	out := int(v.r.LFT[s][lid])
	if in != 0 && out == in {
		return false, fmt.Sprintf("%s sends it back out of port %d, where it came in", t.Node(s).Name, in)
	}
	if in != 0 && v.isBlocked(s, in, out) {
		return false, fmt.Sprintf("%s drops it from port %d to %d (SLtoVL to VL15)", t.Node(s).Name, in, out)
	}
	if out != mad.LFTNoPort && out <= t.Node(s).NumPorts && in != 0 && out != 0 && !v.exempt && v.leaves(s, out) {
		v.turn(s, in, out)
	}
	switch v.state[s] {
	case vOK:
		return true, ""
	case vFails:
		return false, v.why[s]
	case vVisiting:
		return false, fmt.Sprintf("forwarding loop through %s", t.Node(s).Name)
	}
	v.state[s] = vVisiting
	ok, why := v.forward(s, out, lid)
	v.state[s] = vOK
	if !ok {
		v.state[s], v.why[s] = vFails, why
	}
	return ok, why
}

// forward follows switch s's entry out for lid.
func (v *verifier) forward(s, out int, lid uint16) (bool, string) {
	f, t := v.f, v.f.Topo
	name := t.Node(s).Name
	o, _ := f.Owner(lid)
	owner := f.Ends()[o]
	switch {
	case out == mad.LFTNoPort:
		return false, name + " has no entry"
	case out > t.Node(s).NumPorts:
		return false, fmt.Sprintf("%s entry names port %d of %d", name, out, t.Node(s).NumPorts)
	case out == 0:
		if owner.Node == s {
			return true, ""
		}
		return false, name + " delivers it to itself"
	}
	peer, ok := v.peer(s, out)
	switch {
	case !ok:
		return false, fmt.Sprintf("%s port %d is not cabled", name, out)
	case !v.linkActive(s, out, peer):
		return false, fmt.Sprintf("%s port %d does not pass data", name, out)
	case v.isSwitch[peer.Node]:
		return v.reach(peer.Node, peer.Port, lid)
	case owner.Node == peer.Node && owner.Port == peer.Port:
		return true, ""
	}
	return false, fmt.Sprintf("%s port %d leads to %s port %d, not the destination", name, out, t.Node(peer.Node).Name, peer.Port)
}

// turn records that a route enters switch s by in and leaves by out.
func (v *verifier) turn(s, in, out int) {
	n := v.f.Topo.Node(s).NumPorts + 1
	turns := v.turns[v.layer]
	if turns[s][in*n+out] {
		return
	}
	turns[s][in*n+out] = true
	v.rep.Deps++
	if v.layer == 0 && v.r.Up != nil && v.r.Up[s][in] && v.r.Up[s][out] {
		// Entering s by in comes down when leaving by in would go up;
		// leaving by out going up then makes it a down→up turn.
		v.rep.DownUp++
	}
}

// newTurns returns an empty turn table for f's switches.
func newTurns(f *Fabric) [][]bool {
	turns := make([][]bool, f.Topo.NumNodes())
	for _, s := range f.Switches() {
		n := f.Topo.Node(s).NumPorts + 1
		turns[s] = make([]bool, n*n)
	}
	return turns
}

// cycle looks for a cycle in each layer's channel dependency graph and
// reports the first.
func (v *verifier) cycle() {
	for l, turns := range v.turns {
		if v.layerCycle(turns) {
			v.rep.CycleLayer = l
			return
		}
	}
}

// layerCycle looks for a cycle in the channel dependency graph of one
// layer's turns, and reports whether it found one (in rep.Cycle).
func (v *verifier) layerCycle(turns [][]bool) bool {
	f, t := v.f, v.f.Topo
	// succ[c] lists the channels that depend on channel c.
	succ := make([][]int, len(v.names))
	for _, s := range f.Switches() {
		n := t.Node(s).NumPorts + 1
		for in := 1; in < n; in++ {
			peer, ok := t.Peer(topologies.PortRef{Node: s, Port: in})
			if !ok {
				continue
			}
			c := v.chans[peer.Node][peer.Port] // the link into s by in
			for out := 1; out < n; out++ {
				if turns[s][in*n+out] && c >= 0 && v.chans[s][out] >= 0 {
					succ[c] = append(succ[c], v.chans[s][out])
				}
			}
		}
	}
	color := make([]uint8, len(succ)) // 0 white, 1 grey, 2 black
	parent := make([]int, len(succ))
	type frame struct{ c, next int }
	for start := range succ {
		if color[start] != 0 {
			continue
		}
		stack := []frame{{start, 0}}
		color[start] = 1
		parent[start] = -1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(succ[top.c]) {
				color[top.c] = 2
				stack = stack[:len(stack)-1]
				continue
			}
			n := succ[top.c][top.next]
			top.next++
			switch color[n] {
			case 0:
				color[n], parent[n] = 1, top.c
				stack = append(stack, frame{n, 0})
			case 1:
				// A back edge: the cycle is n … top.c → n.
				var cyc []int
				for c := top.c; c != n && c >= 0; c = parent[c] {
					cyc = append(cyc, c)
				}
				cyc = append(cyc, n)
				for i := len(cyc) - 1; i >= 0; i-- {
					v.rep.Cycle = append(v.rep.Cycle, v.names[cyc[i]])
				}
				v.rep.Cycle = append(v.rep.Cycle, v.names[n])
				return true
			}
		}
	}
	return false
}
