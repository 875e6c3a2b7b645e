package bench

import "ibfab/topologies"

// backToBack is two HCAs cabled to each other.
func backToBack() (*topologies.Topology, error) {
	return build([]topologies.Node{
		{Type: topologies.CA, Name: "ca1", NumPorts: 1, GUID: 0x2000},
		{Type: topologies.CA, Name: "ca2", NumPorts: 1, GUID: 0x3000},
	}, [][2]topologies.PortRef{{{Node: 0, Port: 1}, {Node: 1, Port: 1}}})
}

// star is two HCAs on one switch.
func star() (*topologies.Topology, error) {
	return build([]topologies.Node{
		{Type: topologies.Switch, Name: "sw1", NumPorts: 4, GUID: 0x1000},
		{Type: topologies.CA, Name: "ca1", NumPorts: 1, GUID: 0x2000},
		{Type: topologies.CA, Name: "ca2", NumPorts: 1, GUID: 0x3000},
	}, [][2]topologies.PortRef{
		{{Node: 1, Port: 1}, {Node: 0, Port: 1}},
		{{Node: 2, Port: 1}, {Node: 0, Port: 2}},
	})
}

func build(nodes []topologies.Node, links [][2]topologies.PortRef) (*topologies.Topology, error) {
	topo := topologies.New()
	for _, n := range nodes {
		if _, err := topo.AddNode(n); err != nil {
			return nil, err
		}
	}
	for _, l := range links {
		if err := topo.Connect(l[0], l[1], 0, 0); err != nil {
			return nil, err
		}
	}
	return topo, nil
}
