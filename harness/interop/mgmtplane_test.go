package interop_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/bpf"
	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestPlanesAgree brings the default fabric up twice, as a process per
// node and as the management plane in one process, lets OpenSM bring
// each up through the umad shim, and runs the same unmodified clients on
// both from the same HCA (OpenSM and the diagnostics through the umad shim): ibnetdiscover, saquery NR (whole tables over
// RMPP), smpquery nodeinfo and portinfo of a switch port and an HCA port,
// and ibsm --once through the ibsim protocol (libumad2sim's). Every
// answer is the same on both planes, byte for byte but for
// ibnetdiscover's date and the order it lists nodes in.
func TestPlanesAgree(t *testing.T) {
	type run struct {
		name, node string
		args       []string
	}
	runs := []run{
		{"ibnetdiscover", "ca7", []string{"ibnetdiscover"}},
		{"saquery NR", "ca7", []string{"saquery", "NR"}},
		{"smpquery nodeinfo", "ca7", []string{"smpquery", "-D", "nodeinfo", "0,1,2"}},
		{"smpquery portinfo switch", "ca7", []string{"smpquery", "-D", "portinfo", "0,1", "2"}},
		{"smpquery portinfo hca", "ca7", []string{"smpquery", "-D", "portinfo", "0,1,1,3"}},
	}
	got := map[harness.Plane]map[string]string{}
	for _, plane := range []harness.Plane{harness.PlaneProcess, harness.PlaneMgmt} {
		f := fabrictest.Up(t, "pl"+plane.String()[:1], topologies.Default(), harness.UpOptions{Plane: plane})
		osm := f.StartOpenSMShim("ca4")
		osm.WaitLog(t, portstateWait, 0, "SUBNET UP")
		log := osm.LogText(t, 0)
		assert.NotContains(t, log, " ERR ", "%v: OpenSM's log:\n%s", plane, fabrictest.Tail(log, 30))
		got[plane] = map[string]string{}
		for _, r := range runs {
			got[plane][r.name] = normalise(f.MustShim(r.node, r.args...))
		}
		nr := got[plane]["saquery NR"]
		assert.Equal(t, 15, strings.Count(nr, "NodeRecord dump"), "%v: saquery NR:\n%s", plane, nr)
		require.NoError(t, osm.D.Stop())
		out := f.For(t).MustUMAD("ca11", fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once")
		assert.Contains(t, out, "subnet up: 8 switches, 7 CAs, 16 links", "%v: ibsm:\n%s", plane, out)
	}
	for _, r := range runs {
		assert.Equal(t, got[harness.PlaneProcess][r.name], got[harness.PlaneMgmt][r.name], "%s on the two planes", r.name)
	}
}

// planeOnly is the comment of ibnetdiscover with its date.
var planeOnly = regexp.MustCompile(`(?m)^#.*generated.*$`)

// normalise drops ibnetdiscover's date and sorts the blocks of an
// output (separated by blank lines): ibnetdiscover lists nodes in the
// order their answers came, which on a process fabric is a race.
func normalise(s string) string {
	blocks := strings.Split(planeOnly.ReplaceAllString(s, "#"), "\n\n")
	slices.Sort(blocks)
	return strings.Join(blocks, "\n\n")
}

// TestMgmtPlaneKTree is the management plane at a few hundred nodes (an
// 8-ary 3-tree: 512 hosts, 192 switches): OpenSM (ftree) through the shim
// reaches SUBNET UP and its SA returns every node over RMPP; a fault on
// the SM's port counts what it drops; a killed leaf switch's links go
// Down at both ends; ibsm then sweeps it through libumad2sim.
func TestMgmtPlaneKTree(t *testing.T) {
	topo, err := topologies.KAryNTree(8, 3)
	require.NoError(t, err)
	f := fabrictest.Up(t, "mgkt", topo, harness.UpOptions{Plane: harness.PlaneMgmt})
	var cas []string
	for _, n := range topo.Nodes() {
		if n.Type == topologies.CA {
			cas = append(cas, n.Name)
		}
	}
	sm, far := cas[0], cas[len(cas)-1] // far: under another leaf
	osm := f.StartOpenSMShim(sm, "-R", "ftree")
	osm.WaitLog(t, portstateWait, 0, "SUBNET UP")
	log := osm.LogText(t, 0)
	assert.NotContains(t, log, " ERR ", "OpenSM's log:\n%s", fabrictest.Tail(log, 30))
	nr := f.MustShim(far, "saquery", "NR")
	assert.Equal(t, topo.NumNodes(), strings.Count(nr, "NodeRecord dump"))

	// Every PortInfo Get that leaves the SM's port is dropped: smpquery
	// of a switch times out, and the fault counts it.
	faults, err := harness.AddFault(f.Name, sm, 1, false, bpf.Rule{Action: bpf.Drop, Rate: bpf.RateOne,
		Match: bpf.Match{Fields: bpf.FieldAttr, Attr: mad.AttrPortInfo}})
	require.NoError(t, err)
	require.Len(t, faults, 1)
	_, _, err = f.Shim(sm, "smpquery", "-D", "portinfo", "0,1", "1")
	assert.Error(t, err, "the Get was dropped")
	list, err := harness.ListFaults(f.Name)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Positive(t, list[0].Counters.Acted)
	n, err := harness.ClearFaults(f.Name, sm, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	f.MustShim(sm, "smpquery", "-D", "portinfo", "0,1", "1")

	require.NoError(t, osm.D.Stop())
	peer, ok := topo.Peer(topologies.PortRef{Node: mustLookup(t, topo, sm), Port: 1})
	require.True(t, ok)
	leaf := topo.Node(peer.Node).Name
	require.NoError(t, harness.Kill(f.Name, leaf))
	for _, n := range f.Status().Nodes {
		if n.Name == sm {
			assert.Equal(t, "Down", n.Ports[0].State, "%s's link to the killed %s", sm, leaf)
		}
	}
	out := f.For(t).MustUMAD(far, fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once")
	assert.Contains(t, out, "subnet up", "ibsm:\n%s", out)
}

func mustLookup(t *testing.T, topo *topologies.Topology, name string) int {
	t.Helper()
	i, ok := topo.Lookup(name)
	require.True(t, ok, name)
	return i
}
