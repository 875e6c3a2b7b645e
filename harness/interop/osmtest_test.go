package interop_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

// osmtestFlow is one osmtest run: its arguments (the inventory added)
// and the flow name its pass line carries.
type osmtestFlow struct {
	args []string
	name string
}

// osmtestFlows are the flows TestOsmtest runs against each SM, in order:
// c writes the inventory the others validate against. Flow e is not
// built into Debian's osmtest (no MTL vendor): it passes at once, and
// runs to show it does. The stress flows run their compiled-in counts
// (osmtest has no option for fewer).
var osmtestFlows = []osmtestFlow{
	{[]string{"-f", "c"}, "Create Inventory"},
	{[]string{"-f", "a"}, "All Validations"},
	{[]string{"-f", "v"}, "Validate Inventory"},
	{[]string{"-f", "s"}, "Services Registration"},
	{[]string{"-f", "e"}, "Event Forwarding"},
	{[]string{"-f", "q"}, "QoS: VLArb and SLtoVL"},
	{[]string{"-f", "m"}, "Multicast"},
	{[]string{"-f", "m", "-M2"}, "Multicast"},
}

// osmtestStress are the stress flows, run where the fabric is small
// enough for their fixed counts.
var osmtestStress = []osmtestFlow{
	{[]string{"-f", "f", "-s1"}, "Stress SA"},
	{[]string{"-f", "f", "-s2"}, "Stress SA"},
	{[]string{"-f", "f", "-s3"}, "Stress SA"},
}

// TestOsmtest runs unmodified osmtest's flows through the umad shim
// against OpenSM and then against ibsm (taking the subnet over with the
// LIDs OpenSM gave), on the default fabric and on a fat tree of 144
// hosts, one fabric per size with every flow on it; each flow must print
// its pass line.
func TestOsmtest(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	fabrictest.ShimLibrary(t)
	testenv.RequireProgram(t, "osmtest", "opensm")
	t.Run("default", func(t *testing.T) {
		testOsmtest(t, "osmt", topologies.Default(), true)
	})
	t.Run("fattree144", func(t *testing.T) {
		topo, err := topologies.FatTree(12, 6, 12)
		require.NoError(t, err)
		testOsmtest(t, "osmtft", topo, false)
	})
}

func testOsmtest(t *testing.T, suffix string, topo *topologies.Topology, stress bool) {
	f := fabrictest.Up(t, suffix, topo, harness.UpOptions{})
	hosts := f.Hosts()
	smNode, client := hosts[0], hosts[len(hosts)-1]
	flows := osmtestFlows
	if stress {
		flows = append(flows, osmtestStress...)
	}
	run := func(t *testing.T) {
		inv := t.TempDir() + "/osmtest.dat"
		for _, fl := range flows {
			start := time.Now()
			out, errOut, err := f.Shim(client, append([]string{"osmtest", "-i", inv}, fl.args...)...)
			pass := `OSMTEST: TEST "` + fl.name + `" PASS`
			took := time.Since(start).Round(time.Millisecond)
			if !assert.True(t, strings.Contains(out, pass), "osmtest %v (%v): %v\n%s\n%s", fl.args, took, err,
				fabrictest.Tail(out, 40), fabrictest.Tail(errOut, 10)) {
				if fl.args[1] == "c" {
					return // the rest validate against the inventory
				}
				continue
			}
			t.Logf("osmtest %v: %s in %v", fl.args, pass, took)
		}
	}
	osm := f.StartOpenSMShim(smNode)
	osm.WaitLog(t, 2*madrouteWait, 0, "SUBNET UP")
	t.Run("opensm", run)
	require.NoError(t, osm.D.Stop())
	ibsm := startIBSM(t, f, smNode)
	defer func() { _ = ibsm.Stop() }()
	time.Sleep(time.Second) // the ports learn the new SM's LID
	t.Run("ibsm", run)
}
