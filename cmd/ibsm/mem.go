package main

import (
	"fmt"

	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/sm"
	"ibfab/topologies"
)

// The mem scheme (also spelled fake, its first name): an in-memory fabric of agents (memfabric) built
// from a topology file, or the default fabric, with the SM on the file's
// first node (a CA's first cabled port, or a switch's port 0), where ibsim
// attaches its SM too. For demos and tests: everything runs inside ibsm.
func init() {
	sm.RegisterPort("mem", openMem)
	sm.RegisterPort("fake", openMem)
}

// memPort closes its fabric with the port.
type memPort struct {
	*memport.Port
	f *memfabric.Fabric
}

func (p *memPort) Close() error {
	err := p.Port.Close()
	p.f.Close()
	return err
}

func openMem(file string) (madport.Port, error) {
	topo := topologies.Default()
	if file != "" {
		var err error
		if topo, err = topologies.ParseFile(file); err != nil {
			return nil, err
		}
	}
	if topo.NumNodes() == 0 {
		return nil, fmt.Errorf("%s: no nodes", file)
	}
	f, err := memfabric.NewFabric(topo)
	if err != nil {
		return nil, err
	}
	port := 0
	if n := topo.Node(0); n.Type != topologies.Switch {
		port = 1
		for p := 1; p <= n.NumPorts; p++ {
			if _, ok := topo.LinkAt(topologies.PortRef{Node: 0, Port: p}); ok {
				port = p
				break
			}
		}
	}
	p, err := memport.New(f, 0, uint8(port))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &memPort{Port: p, f: f}, nil
}
