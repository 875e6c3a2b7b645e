package harness_test

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

// TestRestart: a restarted switch comes back with the flags it had and
// trains its links again; its neighbours watch the new process, so a
// later kill is loss of signal to them again. A node that was killed
// restarts too.
func TestRestart(t *testing.T) {
	// On CPU 0 (UpOptions.CPUs): a restarted node keeps the placement.
	f := fabrictest.Up(t, "rst", fabrictest.Star(t), harness.UpOptions{NodeArgsFor: map[string][]string{"sw1": {"--keepalive", "1500ms"}}, CPUs: []int{0}})
	sm := f.NewSM("ca1")
	require.NoError(t, sm.Configure())
	old := f.Node("sw1").PID

	code, out, errOut := run("restart", f.Name, "sw1")
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Contains(t, out, "restarted sw1")
	st := f.Node("sw1")
	assert.NotEqual(t, old, st.PID)
	for _, p := range []struct {
		node string
		port int
	}{{"sw1", 1}, {"sw1", 2}, {"ca1", 1}, {"ca2", 1}} {
		waitPort(t, f, p.node, p.port, "Init")
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.PID), "cmdline"))
	require.NoError(t, err)
	assert.Contains(t, string(cmdline), "--keepalive\x001500ms", "restarted with its flags")
	for _, pid := range []int{st.PID, f.Node("ca1").PID} {
		status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^Cpus_allowed_list:\s+0$`, string(status), "pid %d on CPU 0", pid)
	}
	for _, n := range f.Status().Nodes {
		assert.True(t, n.Alive, n.Name)
	}

	// The SM can reach it and make it Active again.
	require.NoError(t, sm.Configure())
	waitPort(t, f, "ca2", 1, "Active")

	// Killed, its neighbours' ports go Down at once (they watch the new
	// process); restarted from dead, it comes back with the same flags.
	require.NoError(t, harness.Kill(f.Name, "sw1"))
	waitPort(t, f, "ca1", 1, "Down")
	waitPort(t, f, "ca2", 1, "Down")
	pid, note, err := harness.Restart(f.Name, "sw1", 0)
	require.NoError(t, err)
	assert.Empty(t, note, "flags known from the first restart")
	waitPort(t, f, "ca1", 1, "Init")
	cmdline, err = os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	require.NoError(t, err)
	assert.Contains(t, string(cmdline), "--keepalive\x001500ms")
	_, err = sm.NodeGUID(f.Index("sw1"))
	require.NoError(t, err)

	// An HCA restarts too, and its switch port trains with it.
	_, _, err = harness.Restart(f.Name, "ca2", 0)
	require.NoError(t, err)
	waitPort(t, f, "sw1", 2, "Init")
}
