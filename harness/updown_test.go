package harness_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"

	"ibfab/fabricnet"
	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/nodeproc"
	"ibfab/topologies"
)

// upFabric brings fabric name up with args and registers its teardown,
// which must leave no namespace and no run directory.
func upFabric(t *testing.T, name string, args ...string) string {
	t.Helper()
	fabrictest.BuildBinaries(t)
	t.Cleanup(func() {
		assert.NoError(t, harness.Down(name))
		left, _ := fabricnet.Namespaces(name)
		assert.Empty(t, left, "namespaces left behind")
		assert.NoDirExists(t, filepath.Join(harness.RunDir, name))
		// Every link and process went with the namespaces: no veth of the
		// fabric is left in the host's namespace either.
		links, err := netlink.LinkList()
		assert.NoError(t, err)
		for _, l := range links {
			assert.NotContains(t, l.Attrs().Name, name, "interface left behind")
		}
	})
	code, out, errOut := run(append([]string{"up", "--name", name}, args...)...)
	require.Equal(t, harness.ExitOK, code, errOut)
	return out
}

func TestUpDownDefault(t *testing.T) {
	testenv.RequireRoot(t)
	name := fmt.Sprintf("t%d_up", os.Getpid())
	out := upFabric(t, name)
	assert.Contains(t, out, "8 switches, 7 HCAs, 16 links trained")
	ns, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Len(t, ns, 15)
	assert.Contains(t, ns, fabricnet.Namespace(name, "sw10"))

	// The recorded topology is the one that came up.
	got, err := topologies.ParseFile(filepath.Join(harness.RunDir, name, "topology.net"))
	require.NoError(t, err)
	assert.True(t, topologies.Default().Equal(got))
	// Each node reads only its neighbourhood: itself, its peers, its links.
	for i, n := range got.Nodes() {
		want, err := got.Neighbourhood(i)
		require.NoError(t, err)
		part, err := topologies.ParseFile(nodeproc.NeighbourhoodPath(name, n.Name))
		require.NoError(t, err, n.Name)
		assert.Equal(t, want.NumNodes(), part.NumNodes(), n.Name)
		assert.Equal(t, want.NumLinks(), part.NumLinks(), n.Name)
	}

	// A second up of the same fabric is refused and changes nothing.
	code, _, errOut := run("up", "--name", name)
	assert.Equal(t, harness.ExitFailure, code)
	assert.Contains(t, errOut, "ibfab down --name "+name)
	ns2, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Equal(t, ns, ns2)

	code, out, errOut = run("down", "--name", name)
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Contains(t, out, "down")
	ns, err = fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Empty(t, ns)
	// Down of a fabric that is not up succeeds.
	code, _, errOut = run("down", "--name", name)
	assert.Equal(t, harness.ExitOK, code, errOut)
}

func TestUpFromFileFatTree(t *testing.T) {
	testenv.RequireRoot(t)
	ft, err := topologies.FatTree(8, 4, 13)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "ft.net")
	require.NoError(t, topologies.WriteFile(file, ft))
	name := fmt.Sprintf("t%d_ft", os.Getpid())
	out := upFabric(t, name, "-f", file)
	assert.Contains(t, out, "12 switches, 104 HCAs")
	// up returned once every link trained; status agrees.
	s, err := harness.Status(context.Background(), name)
	require.NoError(t, err)
	init := 0
	for _, n := range s.Nodes {
		assert.True(t, n.Alive, n.Name)
		for _, p := range n.Ports {
			if p.Peer != "" {
				assert.Equal(t, "Init", p.State, "%s[%d]", n.Name, p.Port)
				init++
			}
		}
	}
	assert.Equal(t, 2*ft.NumLinks(), init)
	ns, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Len(t, ns, ft.NumNodes())
}

// TestDownAfterCrash: the fabric runs but its state is lost, as when the
// harness died before recording it; down must still stop every process
// and remove every namespace.
func TestDownAfterCrash(t *testing.T) {
	testenv.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	name := fmt.Sprintf("t%d_crash", os.Getpid())
	t.Cleanup(func() { _ = harness.Down(name) })
	_, err := harness.Up(name, topologies.Thesis8(), harness.UpOptions{})
	require.NoError(t, err)
	ns, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	pids, err := fabricnet.Processes(ns)
	require.NoError(t, err)
	require.Len(t, pids, 15, "one process per node")
	require.NoError(t, os.RemoveAll(filepath.Join(harness.RunDir, name)))

	code, _, errOut := run("down", "--name", name)
	require.Equal(t, harness.ExitOK, code, errOut)
	left, err := fabricnet.Namespaces(name)
	require.NoError(t, err)
	assert.Empty(t, left)
	for _, pid := range pids {
		_, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", pid))
		assert.Error(t, err, "process %d left behind", pid)
	}
}

func TestUpDownUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"bad name", []string{"up", "--name", "a-b"}, harness.ExitUsage},
		{"extra argument", []string{"up", "x"}, harness.ExitUsage},
		{"missing file", []string{"up", "-f", "/nonexistent/topo", "--name", "tx"}, harness.ExitFailure},
		{"down bad name", []string{"down", "--name", "A"}, harness.ExitUsage},
		{"zero time scale", []string{"up", "--time-scale", "0"}, harness.ExitUsage},
		{"time scale not a number", []string{"up", "--time-scale", "fast"}, harness.ExitUsage},
		{"unknown rate", []string{"up", "--rate", "4xZDR"}, harness.ExitUsage},
		{"zero hosts", []string{"up", "--hosts", "0"}, harness.ExitUsage},
		{"hosts of the management plane", []string{"up", "--hosts", "2", "--plane", "mgmt"}, harness.ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(tt.args...)
			assert.Equal(t, tt.code, code, errOut)
			assert.NotEmpty(t, errOut)
		})
	}
}

// TestUpBadHosts: hosts or a placement that cannot be had are refused
// before anything is created (as any user).
func TestUpBadHosts(t *testing.T) {
	topo := topologies.Default()
	for _, c := range []struct {
		name string
		o    harness.UpOptions
		want string
	}{
		{"negative", harness.UpOptions{Hosts: -1}, "want 1 or more"},
		{"more than the switches", harness.UpOptions{Hosts: 9}, "9 hosts for 8 switches"},
		{"placement on one host", harness.UpOptions{Placement: make([]int, topo.NumNodes())}, "goes with 2 or more hosts"},
		{"short placement", harness.UpOptions{Hosts: 2, Placement: []int{0, 1}}, "a placement of 2 nodes"},
		{"management plane", harness.UpOptions{Hosts: 2, Plane: harness.PlaneMgmt}, "no links to spread"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := harness.Up("tbadhosts", topo, c.o)
			require.ErrorContains(t, err, c.want)
			assert.NoDirExists(t, filepath.Join(harness.RunDir, "tbadhosts"))
		})
	}
}

// TestUpBadCPUs: a CPU the harness may not run on is refused before
// anything is created (as any user).
func TestUpBadCPUs(t *testing.T) {
	for _, cpus := range [][]int{{-1}, {1 << 20}} {
		_, err := harness.Up("tbadcpu", topologies.Default(), harness.UpOptions{CPUs: cpus})
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("CPU %d: not one this process may run on", cpus[0]))
	}
	assert.NoDirExists(t, filepath.Join(harness.RunDir, "tbadcpu"))
}

// TestUpTimeScale: with this machine's limit recorded (5 Gb/s), up names
// the time scale a 4x NDR link needs (400/5 × 2.5 = 200, rounded up to
// 256), warns when --time-scale is below it, and --time-scale auto runs
// the fabric at it.
func TestUpTimeScale(t *testing.T) {
	testenv.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	t.Setenv("IBFAB_LIMIT_FILE", filepath.Join(t.TempDir(), "limit.json"))
	require.NoError(t, harness.SaveMachineLimit(5e9, 2048, "test"))
	topo := filepath.Join(t.TempDir(), "ndr.net")
	require.NoError(t, os.WriteFile(topo, []byte(backToBackNDR), 0o644))

	name := fmt.Sprintf("t%d_ts", os.Getpid())
	code, out, errOut := run("up", "--name", name, "-f", topo, "--time-scale", "2")
	t.Cleanup(func() { harness.Down(name) })
	require.Equal(t, harness.ExitOK, code, errOut)
	assert.Contains(t, out, "4xNDR (400 Gb/s) needs 256 on this machine")
	assert.Contains(t, errOut, "warning: time scale 2 is below the 256 that 4xNDR needs")
	require.NoError(t, harness.Down(name))

	out = upFabric(t, name, "-f", topo, "--time-scale", "auto")
	assert.Contains(t, out, "time scale 256")
	st, err := harness.Status(context.Background(), name)
	require.NoError(t, err)
	assert.Equal(t, 256.0, st.TimeScale)
}

// backToBackNDR is two HCAs cabled at 4x NDR.
const backToBackNDR = `
Hca 1 "ca1"
[1] "ca2"[1]		# lid 0 lmc 0 "ca2" lid 0 4xNDR

Hca 1 "ca2"
[1] "ca1"[1]		# lid 0 lmc 0 "ca1" lid 0 4xNDR
`
