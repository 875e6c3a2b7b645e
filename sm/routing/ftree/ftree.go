package ftree

import (
	"fmt"

	"ibfab/sm/routing"
)

// ftree routes fat trees (two-level leaf/spine networks, k-ary n-trees):
// leaf switches are those with CAs, and a switch's rank is its distance
// from the nearest leaf; every switch link must join adjacent ranks, or
// the fabric is not a fat tree and ftree refuses it. Routes go up to the
// nearest switch above the destination, then down: up*/down* with ranks
// as the directions, so the route set is deadlock-free. Among several
// equally good ports, up or down, a LID takes the one its index among all
// destination LIDs selects (modulo the number of ports), which spreads
// destinations evenly over the spines, as d-mod-k routing does.
//
// The top switches of a fat tree reach each other only through a valley,
// which up*/down* forbids, so switch LIDs that a switch cannot reach by
// an up*/down* route are routed by minimum hops; they carry management
// traffic only, and the route set leaves them out of the deadlock checks
// (Routes.SwitchLIDsExempt).
type ftree struct{}

func init() {
	routing.RegisterEngine("ftree", func(routing.Options) (routing.Engine, error) { return ftree{}, nil })
}

func (ftree) Name() string { return "ftree" }

func (e ftree) Route(f *routing.Fabric) (*routing.Routes, error) {
	rank, err := ftreeRanks(f)
	if err != nil {
		return nil, err
	}
	r := routing.NewRoutes(e.Name(), f)
	r.SwitchLIDsExempt = true
	if r.Up, err = ftreeDirections(f, rank); err != nil {
		return nil, err
	}
	x := newFtreeDest(f, r, rankOrder(f, rank))
	key := 0
	for i, dst := range f.Ends() {
		if dst.Switch < 0 {
			continue
		}
		x.route(i, dst, spread(key))
		key += dst.NumLIDs()
	}
	return r, nil
}

// spread is ftree's choice among equally good ports: a LID's index among
// all destination LIDs (key for the end port's first) modulo their
// number.
func spread(key int) pickPort {
	return func(_, k int, cands []int) int { return cands[(key+k)%len(cands)] }
}

// ftreeRanks returns each switch's rank: 0 for a leaf switch (one with a
// CA), else its distance from the nearest leaf; -1 for a switch that
// reaches no leaf, and for CAs.
func ftreeRanks(f *routing.Fabric) ([]int, error) {
	rank := make([]int, f.Topo.NumNodes())
	for i := range rank {
		rank[i] = -1
	}
	var queue []int
	for _, s := range f.Switches() {
		for _, a := range f.Arcs(s) {
			if !f.IsSwitch(a.Peer) {
				rank[s] = 0
				queue = append(queue, s)
				break
			}
		}
	}
	if len(queue) == 0 {
		return nil, fmt.Errorf("%w: ftree: no switch has a CA", routing.ErrRouting)
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, a := range f.Arcs(u) {
			if f.IsSwitch(a.Peer) && rank[a.Peer] < 0 {
				rank[a.Peer] = rank[u] + 1
				queue = append(queue, a.Peer)
			}
		}
	}
	return rank, nil
}

// ftreeDirections returns up[node][port], true where leaving node through
// port goes up: from a CA to its switch, from a switch to one a rank
// higher. It refuses a fabric where a switch reaches no leaf, or a link
// joins switches whose ranks are not adjacent: not a fat tree.
func ftreeDirections(f *routing.Fabric, rank []int) ([][]bool, error) {
	up := make([][]bool, f.Topo.NumNodes())
	for i := range up {
		up[i] = make([]bool, f.Topo.Node(i).NumPorts+1)
	}
	for _, s := range f.Switches() {
		if rank[s] < 0 {
			return nil, fmt.Errorf("%w: ftree: %s reaches no leaf switch", routing.ErrRouting, f.Topo.Node(s).Name)
		}
		for _, a := range f.Arcs(s) {
			switch {
			case !f.IsSwitch(a.Peer):
				up[a.Peer][a.PeerPort] = true
			case rank[a.Peer] == rank[s]+1:
				up[s][a.Port] = true
			case rank[a.Peer] != rank[s]-1:
				return nil, fmt.Errorf("%w: ftree: not a fat tree: %s (rank %d) is cabled to %s (rank %d)",
					routing.ErrRouting, f.Topo.Node(s).Name, rank[s], f.Topo.Node(a.Peer).Name, rank[a.Peer])
			}
		}
	}
	return up, nil
}

// ftreeDest routes one destination after another; its slices are reused.
type ftreeDest struct {
	f      *routing.Fabric
	r      *routing.Routes // with Up set
	order  []int           // the switches from the highest rank down
	below  []bool          // per switch: reaches the destination switch going down only
	upDist []int           // per switch: up hops to a switch that is below; -1 none
	queue  []int
}

// newFtreeDest returns the search over r's directions (r.Up), order the
// switches from the highest rank down (rankOrder).
func newFtreeDest(f *routing.Fabric, r *routing.Routes, order []int) *ftreeDest {
	n := f.Topo.NumNodes()
	return &ftreeDest{f: f, r: r, order: order, below: make([]bool, n), upDist: make([]int, n)}
}

// pickPort chooses the port of switch s for the k-th LID of a
// destination among cands, its equally good ports (never empty): ftree
// spreads LIDs over them, dmodk follows D-mod-K.
type pickPort func(s, k int, cands []int) int

// route fills every switch's entries for the end port dst, the i-th, each
// LID's port chosen by pick where the switch has a choice.
func (x *ftreeDest) route(i int, dst routing.EndPort, pick pickPort) {
	f, r, t := x.f, x.r, dst.Switch
	x.markBelow(t)
	x.settleUpDist()
	var hops []int // minimum hops to a switch destination, for the valleys
	for _, s := range f.Switches() {
		cands := x.candidates(s)
		if x.upDist[s] < 0 {
			if dst.Port != 0 {
				continue // the verifier reports it
			}
			if hops == nil {
				hops = routing.SwitchDistances(f, t)
			}
			cands = append(cands, valleyPorts(f, s, hops)...)
		}
		r.Computed++
		r.PerStep[i]++
		for k := range dst.NumLIDs() {
			port := dst.SwitchPort
			if s != t {
				if len(cands) == 0 {
					continue
				}
				port = pick(s, k, cands)
			}
			r.LFT[s][int(dst.LID)+k] = uint8(port)
		}
	}
}

// markBelow sets below for the switches that reach t going down only:
// those t reaches going up only.
func (x *ftreeDest) markBelow(t int) {
	f, up := x.f, x.r.Up
	clear(x.below)
	x.below[t] = true
	x.queue = append(x.queue[:0], t)
	for len(x.queue) > 0 {
		u := x.queue[0]
		x.queue = x.queue[1:]
		for _, a := range f.Arcs(u) {
			if up[u][a.Port] && f.IsSwitch(a.Peer) && !x.below[a.Peer] {
				x.below[a.Peer] = true
				x.queue = append(x.queue, a.Peer)
			}
		}
	}
}

// settleUpDist sets upDist, in rank order from the top down, so that a
// switch's upper neighbours are settled before it.
func (x *ftreeDest) settleUpDist() {
	f, up, upDist := x.f, x.r.Up, x.upDist
	for _, s := range x.order {
		upDist[s] = -1
		if x.below[s] {
			upDist[s] = 0
			continue
		}
		for _, a := range f.Arcs(s) {
			if up[s][a.Port] && f.IsSwitch(a.Peer) && upDist[a.Peer] >= 0 && (upDist[s] < 0 || upDist[a.Peer]+1 < upDist[s]) {
				upDist[s] = upDist[a.Peer] + 1
			}
		}
	}
}

// candidates returns the ports of switch s that are equally good for the
// destination: down toward it when s reaches it going down only, else up
// toward the nearest switches that do.
func (x *ftreeDest) candidates(s int) []int {
	f, up := x.f, x.r.Up
	var cands []int
	for _, a := range f.Arcs(s) {
		if !f.IsSwitch(a.Peer) {
			continue
		}
		down := x.below[s] && !up[s][a.Port] && x.below[a.Peer]
		goUp := !x.below[s] && x.upDist[s] > 0 && up[s][a.Port] && x.upDist[a.Peer] == x.upDist[s]-1
		if down || goUp {
			cands = append(cands, a.Port)
		}
	}
	return cands
}

// valleyPorts returns the ports of switch s on a shortest path to the
// switch whose distances hops holds: for a switch LID no up*/down* route
// reaches.
func valleyPorts(f *routing.Fabric, s int, hops []int) []int {
	var ports []int
	for _, a := range f.Arcs(s) {
		if f.IsSwitch(a.Peer) && hops[s] > 0 && hops[a.Peer] == hops[s]-1 {
			ports = append(ports, a.Port)
		}
	}
	return ports
}

// rankOrder returns the switches from the highest rank down.
func rankOrder(f *routing.Fabric, rank []int) []int {
	var order []int
	top := 0
	for _, s := range f.Switches() {
		top = max(top, rank[s])
	}
	for k := top; k >= 0; k-- {
		for _, s := range f.Switches() {
			if rank[s] == k {
				order = append(order, s)
			}
		}
	}
	return order
}
