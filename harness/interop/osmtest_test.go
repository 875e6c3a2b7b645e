package interop_test

import (
	"path"
	"regexp"
	"slices"
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
// runs to show it does.
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

// The stress flows run their compiled-in counts (osmtest has no option
// for fewer): -s1 100,000 single-MAD queries, -s2 4,000 whole NodeRecord,
// PathRecord and PortInfoRecord tables, -s3 20,000 PathRecord queries by
// GUID pair. On the default fabric all three; on the fat tree -s3 alone:
// -s1 asks the same small queries whatever the fabric, and -s2's path
// tables of 162 nodes would move about 2 GB of RMPP segments.
var (
	osmtestStressPath = []osmtestFlow{{[]string{"-f", "f", "-s3"}, "Stress SA"}}
	osmtestStressAll  = append([]osmtestFlow{{[]string{"-f", "f", "-s1"}, "Stress SA"},
		{[]string{"-f", "f", "-s2"}, "Stress SA"}}, osmtestStressPath...)
)

// TestOsmtest runs unmodified osmtest's flows through the umad shim
// against OpenSM and then against ibsm (taking the subnet over with the
// LIDs OpenSM gave), on the default fabric and on a fat tree of 144
// hosts, one fabric per size with every flow on it; each flow must print
// its pass line, and ibsm must keep the multicast groups OpenSM keeps.
// It takes about 3.5 minutes on the default fabric (the stress flows
// most of it) and 6 on the fat tree (-f a and -f v validate every path
// of 162 end ports, about 1.5 minutes each per SM).
func TestOsmtest(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	fabrictest.ShimLibrary(t)
	testenv.RequireProgram(t, "osmtest", "opensm")
	t.Run("default", func(t *testing.T) {
		testOsmtest(t, "osmt", topologies.Default(), osmtestStressAll)
	})
	t.Run("fattree144", func(t *testing.T) {
		topo, err := topologies.FatTree(12, 6, 12)
		require.NoError(t, err)
		testOsmtest(t, "osmtft", topo, osmtestStressPath)
	})
}

func testOsmtest(t *testing.T, suffix string, topo *topologies.Topology, stress []osmtestFlow) {
	f := fabrictest.Up(t, suffix, topo, harness.UpOptions{})
	hosts := f.Hosts()
	smNode, client := hosts[0], hosts[len(hosts)-1]
	flows := append(slices.Clip(osmtestFlows), stress...)
	groups := map[string][]string{} // the multicast groups left after the flows, by SM
	run := func(t *testing.T) {
		defer func() { groups[path.Base(t.Name())] = mcGroups(f.For(t), client) }()
		dir := t.TempDir()
		t.Chdir(dir) // osmtest -f q writes qos.txt where it runs
		inv := dir + "/osmtest.dat"
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
	// The multicast flows leave the groups they made (osmtest's groups
	// go with their last member): ibsm keeps the groups OpenSM keeps.
	if len(groups) == 2 { // both ran (-run may pick one)
		assert.Equal(t, groups["opensm"], groups["ibsm"], "multicast groups after the flows")
	}
}

// mcGroups returns the MGIDs saquery -g lists at node.
func mcGroups(f *fabrictest.Fabric, node string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`MGID\.+(\S+)`).FindAllStringSubmatch(f.MustShim(node, "saquery", "-g"), -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}
