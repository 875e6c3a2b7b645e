package harness_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
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

func tail(s string, n int) string { return fabrictest.Tail(s, n) }

// TestIbsmOnce: our SM, attached the same way, brings the default fabric up
// with the thesis's 97 discovery SMPs, and UD traffic then flows between
// every pair of hosts.
func TestIbsmOnce(t *testing.T) {
	f := fabrictest.Up(t, "ibsm", topologies.Default(), harness.UpOptions{})
	out, err := f.Exec("ca4", nil, fabrictest.Bin(t, "ibsm"), "--port", "sim", "--once", "--json")
	require.NoError(t, err, "ibsm: %s", out)
	var sweep struct {
		SubnetUp bool `json:"subnet_up"`
		Phases   []struct {
			Name string `json:"name"`
			SMPs int    `json:"smps"`
		} `json:"phases"`
	}
	line := strings.TrimSpace(string(out))
	require.NoError(t, json.Unmarshal([]byte(line[strings.LastIndexByte(line, '\n')+1:]), &sweep), "%s", out)
	require.True(t, sweep.SubnetUp)
	require.Equal(t, "discovery", sweep.Phases[0].Name)
	require.Equal(t, 97, sweep.Phases[0].SMPs, "discovery SMPs with the SM on a CA (thesis)")
	checkPorts(t, f, "Active")
	checkAllPairs(t, f, f.Hosts())
}
