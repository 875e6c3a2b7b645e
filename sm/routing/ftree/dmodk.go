package ftree

import (
	"fmt"
	"slices"

	"ibfab/sm/routing"
	"ibfab/topologies"
)

// dmodk routes fat trees by D-mod-K, the deterministic routing of seed
// 003's real-life fat trees (RLFT) and of most fat-tree literature:
// destinations are numbered d = 0, 1, … in host order (by leaf, then by
// the leaf port they hang off), and a switch of stage ℓ (leaves are stage
// 1) sends destination d, when it is not below it, up its up port number
// ⌊d / K^(ℓ−1)⌋ mod K, counted from 0 among its up ports in port order;
// from the switch where the route turns, the one way down. K is the
// stages' up-port count; where stages differ (a two-level fat tree whose
// leaves have more up ports than hosts), the divisor at stage ℓ is the
// product of the up-port counts of the stages below, as for parallel
// generalized fat trees. On an RLFT every leaf sends N/K of its
// destinations up each up port, and every down link of the tree carries
// one destination: the route from anywhere to d crosses the top switch
// whose word is d's lowest n−1 digits.
//
// Stages, up and down are ftree's (ftreeRanks, ftreeDirections: a stage
// is a rank plus one), so a fabric that is not a fat tree is refused the
// same way, and ftree's per-destination search (ftreeDest) says which
// ports are minimal. The host order comes from the cabling, not from
// names (readFatTree): leaves in the order a walk down from the top
// switch with the lowest GUID meets them, each switch's down ports in
// port order, so that the leaves below one switch are consecutive; on
// an RLFT it is the generator's order. The walk is the one of
// topologies.LayoutFatTree, which the harness numbers hosts by
// (topologies.FatTreeLeaves), so the two cannot drift. When the formula's
// port is not a minimal one (a link of the tree is missing), the
// destination takes the minimal up port the same number selects among
// those left, so routes stay minimal and connected. The 2^LMC LIDs of a
// port shift the number by their alias index; multipath (--lmc) routes
// the aliases anew anyway.
//
// Switch LIDs are routed as ftree routes them (up*/down*, through a
// valley between top switches) and left out of the deadlock checks
// (Routes.SwitchLIDsExempt); the CA routes are up*/down* with the ranks
// as directions (Routes.Up), so the verifier checks both that they never
// turn from down to up and that their channel dependency graph is
// acyclic.
type dmodk struct{}

func init() {
	routing.RegisterEngine("dmodk", func(routing.Options) (routing.Engine, error) { return dmodk{}, nil })
}

func (dmodk) Name() string { return "dmodk" }

func (e dmodk) Route(f *routing.Fabric) (*routing.Routes, error) {
	ft, err := readFatTree(f)
	if err != nil {
		return nil, fmt.Errorf("dmodk: %w", err)
	}
	r := routing.NewRoutes(e.Name(), f)
	r.SwitchLIDsExempt = true
	r.Up = ft.up
	x := newFtreeDest(f, r, ft.order)
	key := 0
	for i, dst := range f.Ends() {
		if dst.Switch < 0 {
			continue
		}
		if d := ft.dest[i]; d >= 0 {
			x.route(i, dst, ft.pick(x, d))
		} else {
			x.route(i, dst, spread(key)) // a switch LID: ftree's route
		}
		key += dst.NumLIDs()
	}
	return r, nil
}

// fatTree is a fabric read as a fat tree: what dmodk and the up ports of
// adaptive routing (FatTreeUpPorts) need.
type fatTree struct {
	f       *routing.Fabric
	rank    []int    // ftreeRanks: 0 for a leaf; -1 for a CA
	up      [][]bool // ftreeDirections
	order   []int    // the switches from the highest rank down (rankOrder)
	upPorts [][]int  // [node] a switch's up ports in port order
	leaves  []int    // leaf switches in host order
	leafIdx []int    // [node] index in leaves, -1 for other nodes
	// dest[i] is end port i's host index d when it is a CA port
	// cabled to a leaf, -1 otherwise (switch ports 0).
	dest []int
	// divisor[r] is the product of the up-port counts of ranks below r
	// (K^r on an RLFT); arity[r] the most up ports a switch of rank r
	// has (K below the top, 0 at it).
	divisor, arity []int
}

// readFatTree reads f as a fat tree, or fails as ftree does on a fabric
// that is not one (wrapping ErrRouting).
func readFatTree(f *routing.Fabric) (*fatTree, error) {
	rank, err := ftreeRanks(f)
	if err != nil {
		return nil, err
	}
	up, err := ftreeDirections(f, rank)
	if err != nil {
		return nil, err
	}
	n := f.Topo.NumNodes()
	ft := &fatTree{f: f, rank: rank, up: up, order: rankOrder(f, rank),
		upPorts: make([][]int, n), leafIdx: make([]int, n), dest: make([]int, len(f.Ends()))}
	top := 0
	for _, s := range f.Switches() {
		top = max(top, rank[s])
		for _, a := range f.Arcs(s) {
			if up[s][a.Port] {
				ft.upPorts[s] = append(ft.upPorts[s], a.Port)
			}
		}
	}
	ft.arity = make([]int, top+1)
	for _, s := range f.Switches() {
		ft.arity[rank[s]] = max(ft.arity[rank[s]], len(ft.upPorts[s]))
	}
	ft.divisor = make([]int, top+1)
	for r := range ft.divisor {
		ft.divisor[r] = 1
		if r > 0 {
			// Saturate rather than overflow on a deep tree: a
			// divisor above any host index sends every d up port 0.
			ft.divisor[r] = min(ft.divisor[r-1]*max(ft.arity[r-1], 1), len(f.Ends())+1)
		}
	}
	ft.orderLeaves()
	for i := range ft.dest {
		ft.dest[i] = -1
	}
	d := 0
	for _, s := range ft.leaves {
		for _, a := range f.Arcs(s) {
			if f.IsSwitch(a.Peer) || a.PeerPort >= len(f.LID[a.Peer]) || f.LID[a.Peer][a.PeerPort] == 0 {
				continue
			}
			if i, ok := f.Owner(f.LID[a.Peer][a.PeerPort]); ok {
				ft.dest[i] = d
				d++
			}
		}
	}
	return ft, nil
}

// orderLeaves puts the leaves in host order: topologies.FatTreeLeaves's,
// whose stages are the ranks plus one, so that dmodk and the layout the
// experiments number hosts by agree.
func (ft *fatTree) orderLeaves() {
	stage := make([]int, len(ft.rank))
	for i, r := range ft.rank {
		stage[i] = r + 1 // 0 for a CA, as FatTreeLeaves wants
	}
	ft.leaves = topologies.FatTreeLeaves(ft.f.Topo, stage)
	for i := range ft.leafIdx {
		ft.leafIdx[i] = -1
	}
	for i, s := range ft.leaves {
		ft.leafIdx[s] = i
	}
}

// upIndex is D-mod-K's up-port number at a switch of rank r for
// destination d: ⌊d / divisor[r]⌋ mod arity[r].
func (ft *fatTree) upIndex(r, d int) int {
	if ft.arity[r] == 0 {
		return 0
	}
	return d / ft.divisor[r] % ft.arity[r]
}

// pick is D-mod-K's choice for the CA port whose host index is d, its
// k-th LID numbered d+k: going down, the one way on an RLFT (else the
// ports in turn); going up, upChoice's.
func (ft *fatTree) pick(x *ftreeDest, d int) pickPort {
	return func(s, k int, cands []int) int {
		if x.below[s] {
			return cands[(d+k)%len(cands)]
		}
		return ft.upChoice(s, d+k, cands)
	}
}

// upChoice returns the up port of switch s for destination number d:
// D-mod-K's when it is among the minimal ones, cands, else the one the
// same number selects among cands.
func (ft *fatTree) upChoice(s, d int, cands []int) int {
	idx := ft.upIndex(ft.rank[s], d)
	if ups := ft.upPorts[s]; idx < len(ups) && slices.Contains(cands, ups[idx]) {
		return ups[idx]
	}
	return cands[idx%len(cands)]
}
