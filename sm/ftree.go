package sm

import "fmt"

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
	RegisterEngine("ftree", func(RoutingOptions) (Engine, error) { return ftree{}, nil })
}

func (ftree) Name() string { return "ftree" }

func (e ftree) Route(f *Fabric) (*Routes, error) {
	n := f.Topo.NumNodes()
	rank := make([]int, n)
	for i := range rank {
		rank[i] = -1
	}
	var queue []int
	for _, s := range f.Switches() {
		for _, a := range f.arcs(s) {
			if !f.IsSwitch(a.Peer) {
				rank[s] = 0
				queue = append(queue, s)
				break
			}
		}
	}
	if len(queue) == 0 {
		return nil, fmt.Errorf("%w: ftree: no switch has a CA", ErrRouting)
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, a := range f.arcs(u) {
			if f.IsSwitch(a.Peer) && rank[a.Peer] < 0 {
				rank[a.Peer] = rank[u] + 1
				queue = append(queue, a.Peer)
			}
		}
	}
	r := newRoutes(e.Name(), f)
	r.SwitchLIDsExempt = true
	r.Up = make([][]bool, n)
	for i := range n {
		r.Up[i] = make([]bool, f.Topo.Node(i).NumPorts+1)
	}
	for _, s := range f.Switches() {
		if rank[s] < 0 {
			return nil, fmt.Errorf("%w: ftree: %s reaches no leaf switch", ErrRouting, f.Topo.Node(s).Name)
		}
		for _, a := range f.arcs(s) {
			switch {
			case !f.IsSwitch(a.Peer):
				r.Up[a.Peer][a.PeerPort] = true
			case rank[a.Peer] == rank[s]+1:
				r.Up[s][a.Port] = true
			case rank[a.Peer] != rank[s]-1:
				return nil, fmt.Errorf("%w: ftree: not a fat tree: %s (rank %d) is cabled to %s (rank %d)",
					ErrRouting, f.Topo.Node(s).Name, rank[s], f.Topo.Node(a.Peer).Name, rank[a.Peer])
			}
		}
	}

	order := rankOrder(f, rank)
	// below[s]: s reaches the destination switch going down only.
	below := make([]bool, n)
	upDist := make([]int, n)
	key := 0
	for i, dst := range f.ends {
		if dst.Switch < 0 {
			continue
		}
		t := dst.Switch
		clear(below)
		below[t] = true
		queue = append(queue[:0], t)
		for len(queue) > 0 {
			u := queue[0]
			queue = queue[1:]
			for _, a := range f.arcs(u) {
				if r.Up[u][a.Port] && f.IsSwitch(a.Peer) && !below[a.Peer] {
					below[a.Peer] = true
					queue = append(queue, a.Peer)
				}
			}
		}
		// upDist[s]: up hops from s to a switch above the destination,
		// settled in rank order from the top down.
		for _, s := range order {
			upDist[s] = -1
			if below[s] {
				upDist[s] = 0
				continue
			}
			for _, a := range f.arcs(s) {
				if r.Up[s][a.Port] && f.IsSwitch(a.Peer) && upDist[a.Peer] >= 0 && (upDist[s] < 0 || upDist[a.Peer]+1 < upDist[s]) {
					upDist[s] = upDist[a.Peer] + 1
				}
			}
		}
		var hops []int // minimum hops to a switch destination, for the valleys
		for _, s := range f.Switches() {
			var cands []int
			for _, a := range f.arcs(s) {
				if !f.IsSwitch(a.Peer) {
					continue
				}
				down := below[s] && !r.Up[s][a.Port] && below[a.Peer]
				up := !below[s] && upDist[s] > 0 && r.Up[s][a.Port] && upDist[a.Peer] == upDist[s]-1
				if down || up {
					cands = append(cands, a.Port)
				}
			}
			if upDist[s] < 0 {
				if dst.Port != 0 {
					continue // the verifier reports it
				}
				if hops == nil {
					hops = switchDistances(f, t)
				}
				for _, a := range f.arcs(s) {
					if f.IsSwitch(a.Peer) && hops[s] > 0 && hops[a.Peer] == hops[s]-1 {
						cands = append(cands, a.Port)
					}
				}
			}
			r.Computed++
			r.PerStep[i]++
			for k := range dst.NumLIDs() {
				port := dst.SwitchPort
				if s != t {
					if len(cands) == 0 {
						continue
					}
					port = cands[(key+k)%len(cands)]
				}
				r.LFT[s][int(dst.LID)+k] = uint8(port)
			}
		}
		key += dst.NumLIDs()
	}
	return r, nil
}

// rankOrder returns the switches from the highest rank down.
func rankOrder(f *Fabric, rank []int) []int {
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
