package fabrictest

import (
	"ibfab/harness"
	"ibfab/topologies"
)

// Add hot-adds piece p to the running fabric (harness.Add) and extends
// f.Topo with it, the piece's nodes after the fabric's, failing the test
// on error. An SM made before the add does not know the new nodes: make
// a new one with NewSM.
func (f *Fabric) Add(p *topologies.Piece, o harness.AddOptions) {
	f.tb.Helper()
	if _, err := harness.Add(f.Name, p, o); err != nil {
		f.tb.Fatalf("add: %v", err)
	}
	u, err := f.Topo.Extend(p)
	if err != nil {
		f.tb.Fatalf("add: extending the test's topology: %v", err)
	}
	f.Topo = u
}
