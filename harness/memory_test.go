package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

// TestCheckMemory refuses a fabric larger than 80 % of the memory
// available, with the estimate, and points a process fabric at the
// management plane when that fits.
func TestCheckMemory(t *testing.T) {
	big, err := topologies.KAryNTree(16, 3) // 4,096 hosts and 768 switches
	require.NoError(t, err)
	old := memAvailable
	t.Cleanup(func() { memAvailable = old })
	for _, tc := range []struct {
		name  string
		topo  *topologies.Topology
		plane Plane
		avail uint64
		err   string
	}{
		{name: "default fits", topo: topologies.Default(), avail: 1 << 30},
		{name: "processes do not fit", topo: big, avail: 8 << 30,
			err: "a fabric of 4864 nodes and 12288 links needs about 19.8 GiB on the process plane, more than 80% of the 8.0 GiB this machine has available; the management plane (--plane mgmt) would need about 140 MiB"},
		{name: "management plane fits", topo: big, plane: PlaneMgmt, avail: 8 << 30},
		{name: "management plane does not", topo: big, plane: PlaneMgmt, avail: 64 << 20,
			err: "needs about 140 MiB on the mgmt plane, more than 80% of the 64 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memAvailable = func() (uint64, error) { return tc.avail, nil }
			err := checkMemory(tc.topo, tc.plane)
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.err)
		})
	}
}
