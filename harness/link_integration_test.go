package harness_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/wire/mad"
)

// portState returns node's port's physical and logical state.
func portState(f *fabrictest.Fabric, node string, port int) (string, string) {
	p := f.Node(node).Ports[port-1]
	return p.Phys, p.State
}

// waitPort waits until node's port has the logical state (and is LinkUp
// unless the state is Down).
func waitPort(t *testing.T, f *fabrictest.Fabric, node string, port int, state string) {
	t.Helper()
	var phys, st string
	defer func() {
		if t.Failed() {
			t.Logf("%s[%d] last seen %s/%s", node, port, phys, st)
		}
	}()
	fabrictest.Wait(t, 10*time.Second, node+" port "+state, func() bool {
		phys, st = portState(f, node, port)
		return st == state && (state == "Down" || phys == "LinkUp")
	})
}

// TestLinkDownUpFlap: a link set down takes both its ports Down; set up,
// they train again and wait in Init for the SM; a flap does both.
func TestLinkDownUpFlap(t *testing.T) {
	f := fabrictest.Up(t, "link", fabrictest.Star(t), harness.UpOptions{})
	sm := f.NewSM("ca2")
	require.NoError(t, sm.Configure())
	waitPort(t, f, "ca1", 1, "Active")

	code, out, errOut := run("link", f.Name, "ca1[1]", "down")
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Equal(t, "ca1[1] down\n", out)
	waitPort(t, f, "ca1", 1, "Down")
	waitPort(t, f, "sw1", 1, "Down")
	_, st := portState(f, "sw1", 2)
	assert.Equal(t, "Active", st, "the other link stays up")

	require.NoError(t, harness.SetLink(f.Name, "ca1", 1, true))
	waitPort(t, f, "ca1", 1, "Init")
	waitPort(t, f, "sw1", 1, "Init")

	// The SM brings it back; then a flap, seen from the switch's side.
	for _, state := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		for _, p := range []struct {
			node string
			port uint8
		}{{"sw1", 1}, {"ca1", 1}} {
			require.NoError(t, sm.SetPortInfo(f.Index(p.node), p.port, func(pi *mad.PortInfoFields) { pi.PortState = state }))
		}
	}
	waitPort(t, f, "ca1", 1, "Active")
	var changes []bool
	err := harness.FlapLink(t.Context(), f.Name, "sw1", 1, 300*time.Millisecond, 2, func(i int, up bool) {
		changes = append(changes, up)
		if !up {
			waitPort(t, f, "ca1", 1, "Down")
		}
	})
	require.NoError(t, err)
	assert.Equal(t, []bool{false, true, false, true}, changes)
	waitPort(t, f, "ca1", 1, "Init")
	waitPort(t, f, "sw1", 1, "Init")

	code, out, errOut = run("link", f.Name, "sw1[2]", "flap", "--period", "200ms", "--count", "1")
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Equal(t, "sw1[2] down (1/1)\nsw1[2] up (1/1)\n", out)
	waitPort(t, f, "ca2", 1, "Init")

	assert.Error(t, harness.SetLink(f.Name, "sw1", 3, false), "uncabled port")
}
