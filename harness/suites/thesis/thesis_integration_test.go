package thesis

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

// TestThesisSaturation32 measures the saturation of `ibfab run thesis`'s
// 32-switch network (and nothing else). Every host offers saturationLoad,
// far more than the fabric carries; the hosts must leave the CPU to the
// switches, which move every packet over several hops, or the rate
// measured is their starvation: the hosts' processes use less CPU than
// the switches', no port goes down, and packets arrive. When a generator
// woke for every arrival its port's full queue could not take, the hosts
// used 4–7 times the switches' CPU, links timed out, and this network
// measured 1–30 packets/s per host where it carries over 100.
func TestThesisSaturation32(t *testing.T) {
	testenv.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	topo, err := topologies.Irregular(32, 4, 1, 1)
	require.NoError(t, err)
	o := ThesisOptions{Seed: 1, TimeScale: 1, Log: testsupport.LogWriter(t), fabric: fabrictest.Name("sat")}
	rs, c, err := thesisFabric(context.Background(), o, topo, 32, Mechanisms[0], calibration{})
	require.NoError(t, err)
	require.Empty(t, rs, "no loads: the saturation only")
	require.Positive(t, c.sat)
	require.Positive(t, c.cpu.Switches)
	require.Less(t, c.cpu.Hosts, c.cpu.Switches, "the hosts took the CPU the switches need (%s)", c.cpu)
}

// TestThesisSmall is `ibfab run thesis` cut down to one small network and
// one load: both mechanisms assimilate a switch's deactivation and
// activation under traffic, and the table compares them.
func TestThesisSmall(t *testing.T) {
	testenv.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	dir := t.TempDir()
	rep, err := RunThesis(context.Background(), ThesisOptions{
		Sizes: []int{4}, Loads: []float64{25}, Changes: 1, Seed: 1, Out: dir, Log: testsupport.LogWriter(t)})
	require.NoError(t, err)
	require.Empty(t, rep.Errors)
	require.Positive(t, rep.Saturation[4])
	require.Len(t, rep.Results, 4, "two mechanisms × deactivation and activation")
	for _, r := range rep.Results {
		require.Positive(t, r.MsToValid, "%+v", r)
		require.Positive(t, r.SMPs, "%+v", r)
		require.Positive(t, r.Sent, "%+v", r)
	}
	require.Len(t, rep.Rows, 1)
	require.Positive(t, rep.Rows[0].TimeRatioAct)
	require.Contains(t, ThesisTable(rep), "| 4 | 25 % |")
	for _, f := range []string{"thesis.json", "index.md", "thesis.svg", "thesis.png"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
	}
}
