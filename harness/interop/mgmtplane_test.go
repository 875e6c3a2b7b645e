package interop_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/topologies"
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
