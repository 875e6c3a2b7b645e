package main

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/madport/umad"
	"ibfab/madport/umad/umadtest"
	"ibfab/memfabric"
	"ibfab/topologies"
)

// withUMAD makes the umad scheme open ports on k for the test.
func withUMAD(t *testing.T, k umad.Files) {
	t.Helper()
	old := umadFiles
	umadFiles = k
	t.Cleanup(func() { umadFiles = old })
}

// TestUMADOnce brings the thesis's network up through the umad port: the
// SM's SMPs go through a fake ib_umad (headers, agents, the kernel's TIDs,
// timeouts, issm) to a fabric of agents. Discovery takes the thesis's 97
// SMPs, as on every other port.
func TestUMADOnce(t *testing.T) {
	f, err := memfabric.NewFabric(topologies.Default())
	require.NoError(t, err)
	defer f.Close()
	wire, err := memport.New(f, 0, 1)
	require.NoError(t, err)
	defer wire.Close()
	k := umadtest.New(umadtest.PortConfig{CA: "mlx5_0", Port: 1, Wire: wire})
	defer k.Close()
	withUMAD(t, k)

	// A timeout long enough that no answer of the synchronous fabric can
	// miss it, however loaded the machine.
	code, out, errs := ibsm(t, "--port", "umad:mlx5_0:1", "--once", "--timeout", "20s")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "sweep 1: subnet up: 8 switches, 7 CAs, 16 links, SM Master at LID 1\n")
	assert.Regexp(t, `discovery +[0-9.]+ ms +97 SMPs`, out)
	ks := k.Stats()
	assert.Zero(t, ks.Timeouts+ks.DroppedResp+ks.RefusedWrites, "%+v", ks)
	assert.Equal(t, 16*time.Second, umadTimeout, "the kernel gets 4/5 of --timeout")
	assert.False(t, k.IsSM(0), "ibsm let the issm device go")
}

// TestUMADTimeouts loses one SMP in ten on the wire: the kernel hands
// each back after its share of --timeout, and the SM resends it with the
// same TID, which the kernel accepts because it no longer waits for it
// (unless the kernel's timer ran late by more than the SM's margin: then
// the write is refused, and the SM's next deadline resends it).
func TestUMADTimeouts(t *testing.T) {
	f, err := memfabric.NewFabric(topologies.Default())
	require.NoError(t, err)
	defer f.Close()
	wire, err := memport.New(f, 0, 1)
	require.NoError(t, err)
	defer wire.Close()
	// Random losses: a fixed rhythm (every tenth) can meet a resend
	// pattern of the SM's and lose the same SMP every time.
	r := rand.New(rand.NewPCG(1, 2))
	wire.SetFilter(func(madport.MAD) bool { return r.IntN(10) != 0 })
	k := umadtest.New(umadtest.PortConfig{CA: "mlx5_0", Port: 1, Wire: wire})
	defer k.Close()
	withUMAD(t, k)

	code, out, errs := ibsm(t, "--port", "umad:mlx5_0:1", "--once", "--timeout", "50ms", "--retries", "5")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "subnet up")
	ks := k.Stats()
	assert.NotZero(t, ks.Timeouts, "%+v", ks)
	t.Logf("fake kernel: %+v", ks)
}

func TestUMADErrors(t *testing.T) {
	withUMAD(t, umadtest.New())
	code, _, errs := ibsm(t, "--port", "umad:mlx5_0:1", "--once")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errs, "/sys/class/infiniband_mad is absent: no RDMA device, or the ib_umad module is not loaded")

	code, _, errs = ibsm(t, "--port", "umad:mlx5_0", "--once")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errs, "want CA:PORT")
}
