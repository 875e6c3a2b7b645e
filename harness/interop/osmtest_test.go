package interop_test

import (
	"regexp"
	"slices"
	"strings"
	"sync"
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
	// onSMHost runs the flow on the SM's host whatever the fabric's
	// client: its queries loop back in the HCA rather than wait on hops.
	onSMHost bool
}

// osmtestFlows are the flows TestOsmtest runs against each SM, in order:
// c writes the inventory the others validate against. Flow e is not
// built into Debian's osmtest (no MTL vendor): it passes at once, and
// runs to show it does.
var osmtestFlows = []osmtestFlow{
	{args: []string{"-f", "c"}, name: "Create Inventory"},
	{args: []string{"-f", "a"}, name: "All Validations"},
	osmtestValidate,
	{args: []string{"-f", "s"}, name: "Services Registration"},
	{args: []string{"-f", "e"}, name: "Event Forwarding"},
	{args: []string{"-f", "q"}, name: "QoS: VLArb and SLtoVL"},
	{args: []string{"-f", "m"}, name: "Multicast"},
	{args: []string{"-f", "m", "-M2"}, name: "Multicast"},
}

// osmtestValidate is flow v: it makes the same queries as the validations
// of flow a (osmtest -v counts every validation call alike), so the fat
// tree, where each takes over a minute, runs a alone.
var osmtestValidate = osmtestFlow{args: []string{"-f", "v"}, name: "Validate Inventory"}

// The stress flows run their compiled-in counts (osmtest has no option
// for fewer): -s1 100,000 single-MAD queries, -s2 4,000 whole NodeRecord,
// PathRecord and PortInfoRecord tables, -s3 20,000 PathRecord queries by
// GUID pair. On the default fabric all three; on the fat tree -s3 alone:
// -s1 asks the same small queries whatever the fabric, and -s2's path
// tables of 162 nodes would move about 2 GB of RMPP segments. -s1 runs on
// the SM's host: its round trips through a switch would make it the
// longest flow, and they test the switch no more than -f a's do.
var (
	osmtestStressPath = []osmtestFlow{{args: []string{"-f", "f", "-s3"}, name: "Stress SA"}}
	osmtestStressAll  = append([]osmtestFlow{{args: []string{"-f", "f", "-s1"}, name: "Stress SA", onSMHost: true},
		{args: []string{"-f", "f", "-s2"}, name: "Stress SA"}}, osmtestStressPath...)
)

// TestOsmtest runs unmodified osmtest's flows through the umad shim
// against OpenSM and against ibsm, each on a fabric of its own, on the
// default fabric and on a fat tree of 144 hosts, the four at once (the
// flows wait on round trips more than on the CPU); each flow must print
// its pass line, and ibsm must keep the multicast groups OpenSM keeps.
// On the default fabric osmtest runs on the SM's neighbour, its queries
// crossing the switch; on the fat tree, on the SM's own host, as a user
// runs it beside the SM: the SA's answers loop back in the HCA, RMPP
// requests (GetMulti) and their RMPP responses on one port.
func TestOsmtest(t *testing.T) {
	fabrictest.UMAD2Sim(t)
	fabrictest.ShimLibrary(t)
	testenv.RequireProgram(t, "osmtest", "opensm")
	fattree, err := topologies.FatTree(12, 6, 12)
	require.NoError(t, err)
	for _, size := range []struct {
		name, suffix string
		topo         *topologies.Topology
		flows        []osmtestFlow
		onSMHost     bool
	}{
		{"default", "osmt", topologies.Default(), append(slices.Clip(osmtestFlows), osmtestStressAll...), false},
		{"fattree144", "osmtft", fattree, append(slices.DeleteFunc(slices.Clone(osmtestFlows), func(fl osmtestFlow) bool {
			return fl.name == osmtestValidate.name
		}), osmtestStressPath...), true},
	} {
		t.Run(size.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			groups := map[string][]string{} // the multicast groups left after the flows, by SM
			for _, sm := range []string{"opensm", "ibsm"} {
				t.Run(sm, func(t *testing.T) {
					t.Parallel()
					g := testOsmtest(t, size.suffix+sm[:2], size.topo, sm, size.flows, size.onSMHost)
					mu.Lock()
					groups[sm] = g
					mu.Unlock()
				})
			}
			// The multicast flows leave the groups they made (osmtest's
			// groups go with their last member): ibsm keeps the groups
			// OpenSM keeps. The SMs' subtests have ended by the cleanup.
			t.Cleanup(func() {
				if len(groups) == 2 { // both ran (-run may pick one)
					assert.Equal(t, groups["opensm"], groups["ibsm"], "multicast groups after the flows")
				}
			})
		})
	}
}

// testOsmtest brings topo up with sm, runs the flows on the SM's host or
// its neighbour on its switch, and returns the multicast groups left.
func testOsmtest(t *testing.T, suffix string, topo *topologies.Topology, sm string, flows []osmtestFlow, onSMHost bool) []string {
	f := fabrictest.Up(t, suffix, topo, harness.UpOptions{})
	hosts := f.Hosts()
	smNode, client := hosts[0], hosts[1]
	if onSMHost {
		client = smNode
	}
	if sm == "opensm" {
		osm := f.StartOpenSMShim(smNode)
		osm.WaitLog(t, 2*madrouteWait, 0, "SUBNET UP")
	} else {
		startIBSM(t, f, smNode)
	}
	dir := t.TempDir()
	inv := dir + "/osmtest.dat"
	for _, fl := range flows {
		start := time.Now()
		// env --chdir: osmtest -f q writes qos.txt where it runs.
		host := client
		if fl.onSMHost {
			host = smNode
		}
		out, errOut, err := f.Shim(host, append([]string{"env", "--chdir=" + dir, "osmtest", "-i", inv}, fl.args...)...)
		pass := `OSMTEST: TEST "` + fl.name + `" PASS`
		took := time.Since(start).Round(time.Millisecond)
		if !assert.True(t, strings.Contains(out, pass), "osmtest %v (%v): %v\n%s\n%s", fl.args, took, err,
			fabrictest.Tail(out, 40), fabrictest.Tail(errOut, 10)) {
			if fl.args[1] == "c" {
				break // the rest validate against the inventory
			}
			continue
		}
		t.Logf("osmtest %v: %s in %v", fl.args, pass, took)
	}
	return mcGroups(f.For(t), client)
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
