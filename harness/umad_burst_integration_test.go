package harness_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

// TestUMADBurst runs a C client that writes 20,000 directed-route SMPs
// before it reads any answer, through the umad shim (the HCA's
// kernel-semantics endpoint) and through libumad2sim (the attach point),
// on ca1 of a dumbbell: to its own SMA (hop count 0) and to the switch
// behind its port (hop count 1). The kernel would queue the sends past
// its send queue and hold the answers on the file's receive list; every
// answer arrives, in order, and neither endpoint drops a MAD.
func TestUMADBurst(t *testing.T) {
	testenv.RequireProgram(t, "gcc", "gcc")
	fabrictest.UMAD2Sim(t)
	fabrictest.ShimLibrary(t)
	bin := filepath.Join(t.TempDir(), "burst")
	src, err := filepath.Abs("../umadshim/testdata/burst.c")
	require.NoError(t, err)
	out, err := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", bin, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	topo := topologies.Dumbbell()
	f := fabrictest.Up(t, "burst", topo, harness.UpOptions{})
	host := f.Hosts()[0]
	const n = "20000"
	for _, tt := range []struct {
		name string
		run  func(node string, argv ...string) (string, string, error)
	}{
		{"shim", f.Shim},
		{"sim", f.UMAD},
	} {
		for _, hops := range []string{"0", "1"} {
			t.Run(tt.name+"/hops"+hops, func(t *testing.T) {
				stdout, stderr, err := tt.run(host, bin, n, hops)
				require.NoError(t, err, "burst:\n%s%s", stdout, stderr)
				assert.Equal(t, "sent "+n+" answered "+n+" timeouts 0 order 1", strings.TrimSpace(stdout), stderr)
			})
		}
	}
	st := f.Node(host)
	require.NotNil(t, st.UMAD, "the endpoint's counters")
	assert.Zero(t, st.UMAD.Dropped, "dropped by the endpoint")
	assert.Zero(t, st.UMAD.SendFailed, "sends the endpoint failed")
	require.NotNil(t, st.Sim, "the attach point's counters")
	assert.Zero(t, st.Sim.DropTotal, "dropped by the attach point: %v", st.Sim.Drops)
	t.Logf("endpoint %+v; attach point in %d out %d", *st.UMAD, st.Sim.MADsIn, st.Sim.MADsOut)
}
