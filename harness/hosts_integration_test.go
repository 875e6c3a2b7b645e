package harness_test

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

// splitPort splits "NODE[PORT]".
func splitPort(t *testing.T, s string) (string, int) {
	t.Helper()
	node, rest, ok := strings.Cut(s, "[")
	require.True(t, ok, s)
	p, err := strconv.Atoi(strings.TrimSuffix(rest, "]"))
	require.NoError(t, err, s)
	return node, p
}

// TestUpOverHosts: the default fabric over 2 hosts (UpOptions.Hosts, placed
// by clab.Place): status names each node's host, the links between hosts
// are VXLAN devices at both ends, and the harness's link, kill and restart
// work on one of them as on a veth: set down, both ends go Down, each at
// its own device (a VXLAN device keeps the far end's carrier, so SetLink
// setting both ends down is what the far end sees); up, both train again;
// its far node killed, the near end is Down by loss of signal (peerwatch),
// not the liveness timeout; restarted, it trains. Down removes the host
// namespaces and the underlay with the rest (fabrictest.Up's cleanup).
func TestUpOverHosts(t *testing.T) {
	f := fabrictest.Up(t, "hosts", topologies.Default(), harness.UpOptions{Hosts: 2})
	on := map[int]int{}
	for _, n := range f.Status().Nodes {
		on[n.Host]++
	}
	assert.Equal(t, f.Topo.NumNodes(), on[1]+on[2], "nodes by host: %v", on)
	assert.Positive(t, on[1])
	assert.Positive(t, on[2])
	left, err := fabricnet.Namespaces(f.Name)
	require.NoError(t, err)
	assert.Contains(t, left, fabricnet.HostNamespace(f.Name, 0))
	assert.Contains(t, left, fabricnet.HostNamespace(f.Name, 1))

	cut, err := harness.CrossHostLinks(f.Name)
	require.NoError(t, err)
	require.NotEmpty(t, cut)
	for _, c := range cut {
		t.Logf("between hosts: %v", c)
		assert.Equal(t, "vxlan", c.DevA, "%v", c)
		assert.Equal(t, "vxlan", c.DevB, "%v", c)
	}
	_, err = harness.Add(f.Name, topologies.Thesis8AddPiece(), harness.AddOptions{})
	require.ErrorContains(t, err, "spread over 2 hosts")

	// status names each node's host.
	code, out, errOut := run("status", "--name", f.Name)
	require.Equal(t, harness.ExitOK, code, errOut)
	lines := strings.Split(out, "\n")
	assert.True(t, strings.HasPrefix(lines[0], "HOST "), "status header: %q", lines[0])
	for _, n := range f.Status().Nodes {
		assert.True(t, slices.ContainsFunc(lines, func(l string) bool {
			col := strings.Fields(l)
			return len(col) > 1 && col[0] == strconv.Itoa(n.Host) && col[1] == n.Name
		}), "%s on host %d in status:\n%s", n.Name, n.Host, out)
	}

	c := cut[0]
	a, pa := splitPort(t, c.A)
	b, pb := splitPort(t, c.B)

	code, out, errOut = run("link", f.Name, c.A, "down")
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Equal(t, c.A+" down\n", out)
	began := time.Now()
	waitPort(t, f, a, pa, "Down")
	waitPort(t, f, b, pb, "Down")
	t.Logf("%s and %s Down %v after link down", c.A, c.B, time.Since(began).Round(time.Millisecond))
	require.NoError(t, harness.SetLink(f.Name, b, pb, true))
	waitPort(t, f, a, pa, "Init")
	waitPort(t, f, b, pb, "Init")

	require.NoError(t, harness.Kill(f.Name, b))
	began = time.Now()
	fabrictest.Within(t, f.PeerLossBound(), c.A+" Down after "+b+" died", func() bool {
		_, st := portState(f, a, pa)
		return st == "Down"
	})
	t.Logf("%s Down %v after %s was killed", c.A, time.Since(began).Round(time.Millisecond), b)
	code, _, errOut = run("restart", f.Name, b)
	require.Equal(t, harness.ExitOK, code, errOut)
	waitPort(t, f, a, pa, "Init")
	waitPort(t, f, b, pb, "Init")
}

// TestUpOverHostsFails: a bring-up over hosts that fails after the
// plumbing (every node process refuses its flags) leaves nothing: no node
// or host namespace, no underlay, no run directory.
func TestUpOverHostsFails(t *testing.T) {
	testenv.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	name := fabrictest.Name("hostsfail")
	_, err := harness.Up(name, topologies.Default(), harness.UpOptions{Hosts: 2, NodeArgs: []string{"--no-such-flag"}, Timeout: 20 * time.Second})
	require.Error(t, err)
	left, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Empty(t, left)
	assert.NoDirExists(t, filepath.Join(harness.RunDir, name))
}
