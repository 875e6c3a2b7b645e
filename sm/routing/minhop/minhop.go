package minhop

import "ibfab/sm/routing"

// minhop routes every LID along a shortest path, spreading the LIDs that
// share a destination switch over the equally short ports by how many
// LIDs each already carries (fewest first, then the lowest port), LID by
// LID, so the 2^LMC LIDs of a port take different paths where there are
// several. It does not promise deadlock freedom: on a topology with cycles
// its channel dependency graph may have one, which the verifier reports.
// Routes to switch LIDs stay out of that check (Routes.SwitchLIDsExempt).
type minhop struct{}

func init() {
	routing.RegisterEngine("minhop", func(routing.Options) (routing.Engine, error) { return minhop{}, nil })
}

func (minhop) Name() string { return "minhop" }

func (e minhop) Route(f *routing.Fabric) (*routing.Routes, error) {
	r := routing.NewRoutes(e.Name(), f)
	r.SwitchLIDsExempt = true
	n := f.Topo.NumNodes()
	load := make([][]int, n) // [switch][port] LIDs routed through it
	for _, s := range f.Switches() {
		load[s] = make([]int, f.Topo.Node(s).NumPorts+1)
	}
	distTo := map[int][]int{} // destination switch -> hop counts, computed once
	for i, dst := range f.Ends() {
		if dst.Switch < 0 {
			continue
		}
		d, ok := distTo[dst.Switch]
		if !ok {
			d = routing.SwitchDistances(f, dst.Switch)
			distTo[dst.Switch] = d
		}
		for _, s := range f.Switches() {
			for k := range dst.NumLIDs() {
				lid := int(dst.LID) + k
				port := -1
				switch {
				case s == dst.Switch:
					port = dst.SwitchPort
				case d[s] > 0:
					for _, a := range f.Arcs(s) {
						if f.IsSwitch(a.Peer) && d[a.Peer] == d[s]-1 && (port < 0 || load[s][a.Port] < load[s][port]) {
							port = a.Port
						}
					}
				}
				if port < 0 {
					continue
				}
				r.LFT[s][lid] = uint8(port)
				load[s][port]++
				if k == 0 {
					r.Computed++
					r.PerStep[i]++
				}
			}
		}
	}
	return r, nil
}
