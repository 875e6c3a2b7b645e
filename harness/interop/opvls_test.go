package interop_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
)

// TestOperationalVLsAsOpenSM: ibsm programs every cabled port's
// OperationalVLs as OpenSM does, to what both ends of the link support
// (VLCap: VL0-7 on the soft fabric), and --op-vls bounds it as OpenSM's
// max_op_vls does. OpenSM with its defaults leaves the ports on VL0-7;
// ibsm with its own defaults must too (when it programmed VL0-3 by
// default, an OpenSM beside it took every port through Init to change
// them back, whose SMPs time out: a single OpenSM sweep after ibsm
// --op-vls 3 fails so); ibsm --op-vls 3 then takes every port to VL0-3.
func TestOperationalVLsAsOpenSM(t *testing.T) {
	f := fabrictest.Up(t, "opvl", portstateParse(t, qosNet), harness.UpOptions{})
	lid := map[string]string{}
	check := func(after, want string) {
		t.Helper()
		// The LIDs are the last SM's.
		for _, n := range f.Status().Nodes {
			lid[n.Name] = strconv.Itoa(int(n.Ports[0].LID))
		}
		for _, p := range [][2]string{{"sw1", "1"}, {"sw1", "2"}, {"sw1", "3"}, {"ca1", "1"}, {"ca2", "1"}, {"ca3", "1"}} {
			out := f.For(t).MustUMAD("ca1", "smpquery", "portinfo", lid[p[0]], p[1])
			assert.Equal(t, "VL0-7", linkrateField(out, "VLCap"), "%s[%s] VLCap", p[0], p[1])
			assert.Equal(t, want, linkrateField(out, "OperVLs"), "%s[%s] after %s", p[0], p[1], after)
		}
	}
	ibsm := func(args ...string) {
		t.Helper()
		out := f.For(t).MustUMAD("ca1", append([]string{fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once"}, args...)...)
		require.Contains(t, out, "subnet up", "ibsm:\n%s", out)
	}

	log := filepath.Join(t.TempDir(), "opensm.log")
	f.For(t).MustUMAD("ca1", "opensm", "--once", "-f", log)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Contains(t, string(b), "SUBNET UP", "opensm log:\n%s", fabrictest.Tail(string(b), 30))
	check("opensm", "VL0-7")

	ibsm()
	check("ibsm", "VL0-7")

	ibsm("--op-vls", "3")
	check("ibsm --op-vls 3", "VL0-3")
}
