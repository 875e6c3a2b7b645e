//go:build mcaststorm

package interop_test

// This file is built only with -tags mcaststorm: Debian does not package
// ibsim's tests/mcast_storm, so make test (which fails on any skip) cannot
// run it. Build mcast_storm from ibsim's sources (it links libibumad and
// libibmad), then, as root:
//
//	MCAST_STORM=/path/to/mcast_storm go test -tags mcaststorm -run TestMcastStormIBSM ./harness/interop

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
)

// TestMcastStormIBSM runs ibsim's tests/mcast_storm (rereg, joins, leave:
// MCMemberRecord joins, leaves and queries through libumad2sim) against
// ibsm's SA, from another HCA and from ibsm's own. Debian does not
// package mcast_storm: build it from ibsim's sources (it links libibumad
// and libibmad) and name it in $MCAST_STORM (see the top of this file).
// OpenSM's SA gives the same output on the same fabric (every answer
// without a status: mcast_storm prints a "status = " line for any other).
func TestMcastStormIBSM(t *testing.T) {
	bin := os.Getenv("MCAST_STORM")
	if bin == "" {
		t.Fatal("MCAST_STORM does not name ibsim's tests/mcast_storm")
	}
	fabrictest.UMAD2Sim(t)
	f := fabrictest.Up(t, "storm", madrouteTopo(t), harness.UpOptions{})
	startIBSM(t, f, "ca0")
	// With a GUID file mcast_storm joins and leaves for every CA port,
	// its own and the others' (no ProxyJoin), as OpenSM lets it.
	guids := filepath.Join(t.TempDir(), "guids")
	var list string
	for _, n := range []string{"ca0", "ca1", "ca2"} {
		list += fmt.Sprintf("0x%016x\n", f.Topo.Node(f.Index(n)).GUID+1)
	}
	require.NoError(t, os.WriteFile(guids, []byte(list), 0o644))
	for _, args := range [][]string{{"ca1"}, {"ca0"}, {"ca1", "-g", guids}} {
		at := args[0]
		stdout, stderr, err := f.UMAD(at, append(append([]string{bin}, args[1:]...), "rereg", "joins", "leave")...)
		t.Logf("at %s:\n%s%s", at, stdout, stderr)
		require.NoError(t, err, "mcast_storm at %s", at)
		for _, want := range []string{"'rereg' is done", "'joins' is done", "'leave' is done"} {
			assert.Contains(t, stderr, want, "mcast_storm at %s", at)
		}
		assert.NotContains(t, stderr, "ERR:", "mcast_storm at %s", at)
		assert.NotContains(t, stderr, "status = ", "mcast_storm at %s: an answer with a status", at)
	}
}
