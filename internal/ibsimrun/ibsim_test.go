package ibsimrun_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/ibsimrun"
	"ibfab/internal/testsupport/testenv"
	"ibfab/topologies"
)

func TestParseRoute(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		to      uint16
		ok      bool
		hops    int
		tooLong bool
		last    string
		port    int
	}{
		{"reached", "From node \"ca4\" port 1 lid 1\n[1] -> \"sw1\"[3]\n[2] -> \"sw3\"[1]\n[3] -> \"ca13\"[1]\nTo node \"ca13\" port 1 lid 13\n", 13, true, 3, false, "ca13", 1},
		{"to a switch", "From node \"ca4\" port 1 lid 1\n[1] -> \"sw1\"[3]\nTo node \"sw1\" port 3 lid 2\n", 2, true, 1, false, "sw1", 3},
		{"same port", "From node \"ca4\" port 1 lid 1\nTo node \"ca4\" port 1 lid 1\n", 1, true, 0, false, "ca4", 1},
		{"another lid reached", "From node \"ca4\" port 1 lid 1\nTo node \"ca5\" port 1 lid 14\n", 1, false, 0, false, "ca4", 1},
		{"bad port state", "From node \"ca4\" port 1 lid 1\nBad port state found: node \"ca4\" port 1 state 2\n", 13, false, 0, false, "ca4", 1},
		{"bad table", "From node \"ca4\" port 1 lid 1\n[1] -> \"sw1\"[3]\nBad forwarding table entry found at: node \"sw1\" lid entry 13 is 255 (top 15)\n", 13, false, 1, false, "sw1", 3},
		{"too long", "From node \"sw21\" port 0 lid 336\n[2] -> \"sw227\"[1]\n[12] -> \"ca39-1\"[2]\nno route found after 16 hops\n", 13, false, 2, true, "ca39-1", 2},
		{"unconfigured", "to/from lid unconfigured. Usage: route from-lid to-lid\n", 13, false, 0, false, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ibsimrun.ParseRoute(tt.out, tt.to)
			assert.Equal(t, tt.ok, r.OK)
			assert.Equal(t, tt.hops, r.Hops)
			assert.Equal(t, tt.tooLong, r.TooLong)
			assert.Equal(t, tt.last, r.Last)
			assert.Equal(t, tt.port, r.LastPort)
			assert.Equal(t, tt.out, r.Text)
		})
	}
}

func TestCheckLimits(t *testing.T) {
	ok, err := topologies.FatTree(32, 16, 62) // 2032 nodes
	require.NoError(t, err)
	assert.NoError(t, ibsimrun.CheckLimits(ok))
	big, err := topologies.FatTree(32, 16, 64) // 2096 nodes
	require.NoError(t, err)
	assert.ErrorIs(t, ibsimrun.CheckLimits(big), ibsimrun.ErrTooBig)
}

// TestSim starts ibsim on the default network, talks to its console and
// through libumad2sim, and checks that Close leaves neither the process
// nor the namespace behind.
func TestSim(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "ibsim", "ibsim-utils")
	topo := topologies.Default()
	s, err := ibsimrun.Start(topo, t.TempDir())
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			s.Close()
		}
	})
	assert.True(t, strings.HasPrefix(s.NS, ibsimrun.Prefix), s.NS)
	assert.Contains(t, s.Output(), "Network simulator ready")

	// No SM has run: the ports are not Active, and Route says so.
	r, err := s.Route(1, 2)
	require.NoError(t, err)
	assert.False(t, r.OK, r.Text)
	out, err := s.Console("Attached")
	require.NoError(t, err)
	assert.NotContains(t, out, "sim>")

	// A diag through libumad2sim sees the fabric.
	disc, err := s.Diag(context.Background(), "ibnetdiscover")
	require.NoError(t, err)
	got, err := topologies.Parse(strings.NewReader(string(disc)), "ibnetdiscover")
	require.NoError(t, err)
	assert.Equal(t, topo.NumNodes(), got.NumNodes())

	pid, ns := s.PID(), s.NS
	require.NoError(t, s.Close())
	closed = true
	assert.True(t, errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), "ibsim (pid %d) still there", pid)
	_, err = os.Stat(filepath.Join("/var/run/netns", ns))
	assert.True(t, os.IsNotExist(err), "namespace %s still there", ns)
	_, err = s.Console("Attached")
	assert.Error(t, err, "console after Close")
}
