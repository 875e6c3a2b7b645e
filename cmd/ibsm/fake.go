package main

import (
	"fmt"

	"ibfab/agent/agenttest"
	"ibfab/madport"
	"ibfab/madport/madporttest"
	"ibfab/sm"
	"ibfab/topologies"
)

// The fake scheme: an in-memory fabric of agents (agent/agenttest) built
// from a topology file, or the default fabric, with the SM on the file's
// first node (a CA's first cabled port, or a switch's port 0), where ibsim
// attaches its SM too. For demos and tests: everything runs inside ibsm.
func init() {
	sm.RegisterPort("fake", openFake)
}

// fakePort closes its fabric with the port.
type fakePort struct {
	*madporttest.Port
	f *agenttest.Fabric
}

func (p *fakePort) Close() error {
	err := p.Port.Close()
	p.f.Close()
	return err
}

func openFake(file string) (madport.Port, error) {
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
	f, err := agenttest.NewFabric(topo)
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
	p, err := madporttest.New(f, 0, uint8(port))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fakePort{Port: p, f: f}, nil
}
