package interop_test

import (
	"testing"

	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
)

// portStatus returns the status of port num of node, as ibfab status
// shows it.
func portStatus(t *testing.T, f *fabrictest.Fabric, node string, num int) nodeproc.PortStatus {
	t.Helper()
	for _, p := range f.For(t).Node(node).Ports {
		if p.Port == num {
			return p
		}
	}
	t.Fatalf("%s has no port %d in its status", node, num)
	return nodeproc.PortStatus{}
}
