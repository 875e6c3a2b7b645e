package bench

import (
	"fmt"

	"ibfab/topologies"
)

// portName is "node[port]", as status prints peers.
func portName(t *topologies.Topology, p topologies.PortRef) string {
	return fmt.Sprintf("%s[%d]", t.Node(p.Node).Name, p.Port)
}
