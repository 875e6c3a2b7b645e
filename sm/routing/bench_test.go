package routing_test

import (
	"testing"

	"ibfab/sm/routing"
	_ "ibfab/sm/routing/ftree"
	_ "ibfab/sm/routing/minhop"
	_ "ibfab/sm/routing/updn"
	"ibfab/topologies"
)

// BenchmarkRoute times each engine, and the verifier, on the thesis's
// irregular networks of 128 and 256 4-port switches and on a 432-host
// two-level fat tree. Compare engines by their ratios: absolute times
// depend on the machine.
func BenchmarkRoute(b *testing.B) {
	nets := []struct {
		name string
		gen  func() (*topologies.Topology, error)
	}{
		{"irregular128", func() (*topologies.Topology, error) { return topologies.Irregular(128, 4, 1, 1) }},
		{"irregular256", func() (*topologies.Topology, error) { return topologies.Irregular(256, 4, 1, 1) }},
		{"fattree432", func() (*topologies.Topology, error) { return topologies.FatTree(18, 12, 24) }},
	}
	for _, n := range nets {
		topo, err := n.gen()
		if err != nil {
			b.Fatal(err)
		}
		f, err := routing.NewFabric(topo, 0, 1, 0)
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range routing.Engines() {
			e, err := routing.NewEngine(name, routing.Options{})
			if err != nil {
				b.Fatal(err)
			}
			r, err := e.Route(f)
			if err != nil {
				continue // ftree on a network that is not a fat tree
			}
			b.Run(n.name+"/"+name, func(b *testing.B) {
				for b.Loop() {
					if _, err := e.Route(f); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(r.Computed), "entries")
			})
			b.Run(n.name+"/"+name+"/verify", func(b *testing.B) {
				for b.Loop() {
					routing.Verify(f, r)
				}
			})
		}
	}
}
