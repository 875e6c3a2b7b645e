package runner

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

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
	o := ThesisOptions{Seed: 1, TimeScale: 1, Log: tlog{t}, fabric: fabrictest.Name("sat")}
	rs, c, err := thesisFabric(context.Background(), o, topo, 32, Mechanisms[0], calibration{})
	require.NoError(t, err)
	require.Empty(t, rs, "no loads: the saturation only")
	require.Positive(t, c.sat)
	require.Positive(t, c.cpu.Switches)
	require.Less(t, c.cpu.Hosts, c.cpu.Switches, "the hosts took the CPU the switches need (%s)", c.cpu)
}

type tlog struct{ t *testing.T }

func (l tlog) Write(b []byte) (int, error) {
	l.t.Logf("%s", b)
	return len(b), nil
}
