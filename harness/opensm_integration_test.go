package harness_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/fabrictest"
	"ibfab/topologies"
)

// TestOpenSMOnce attaches Debian's unmodified OpenSM to an HCA of the
// default fabric through libumad2sim and the HCA's ibsim-protocol attach
// point: it reaches SUBNET UP, and every cabled port is then Active.
func TestOpenSMOnce(t *testing.T) {
	lib := fabrictest.UMAD2Sim(t)
	f := fabrictest.Up(t, "osm", topologies.Default(), harness.UpOptions{})
	log := filepath.Join(t.TempDir(), "opensm.log")
	out, err := f.Exec("ca4", []string{"LD_PRELOAD=" + lib}, "opensm", "--once", "-f", log)
	require.NoError(t, err, "opensm: %s", out)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Contains(t, string(b), "SUBNET UP", "opensm log:\n%s", tail(string(b), 30))
	checkPorts(t, f, "Active")
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
