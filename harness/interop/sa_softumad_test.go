package interop_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
)

// TestSAIBSMSoftUMAD runs ibsm on a soft HCA's MAD endpoint (--port
// softumad, the code ibsm runs on a real HCA's umad device with) and asks
// its SA from another HCA and from its own: saquery's tables are longer
// than one MAD, so they go as RMPP transfers the endpoint cuts, as the
// kernel does for an agent registered with RMPP; then osmtest's flows.
func TestSAIBSMSoftUMAD(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	fabrictest.ShimLibrary(t)
	testenv.RequireProgram(t, "osmtest", "opensm")
	topo := madrouteTopo(t)
	f := fabrictest.Up(t, "sasu", topo, harness.UpOptions{})
	startIBSMOn(t, f, "ca0", "softumad")
	for _, at := range []string{"ca2", "ca0"} {
		t.Run(at, func(t *testing.T) {
			nr := saquery(t, f, at, []string{"NR"})
			assert.Len(t, madrouteRecords(nr), len(topo.Nodes()), "NodeRecords:\n%s", nr)
			pir := saquery(t, f, at, []string{"PIR"})
			assert.NotEmpty(t, madrouteRecords(pir), "PortInfoRecords")
		})
	}
	inv := filepath.Join(t.TempDir(), "osmtest.dat")
	for _, flow := range []string{"c", "a", "v"} {
		out, errOut, err := f.Shim("ca2", "osmtest", "-f", flow, "-i", inv)
		if !assert.NoError(t, err, "osmtest -f %s:\n%s\n%s", flow, fabrictest.Tail(out, 20), errOut) {
			continue
		}
		assert.Contains(t, out+errOut, "PASS", "osmtest -f %s", flow)
		t.Logf("osmtest -f %s: %s", flow, strings.TrimSpace(fabrictest.Tail(out, 2)))
	}
}
