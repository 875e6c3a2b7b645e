package ibfabcli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/cli"
)

// TestExportContainerlab: the default fabric on two hosts, then the
// placement it wrote given back with --place gives the same files.
func TestExportContainerlab(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := run("export", "containerlab", "--hosts", "a=192.0.2.1,b=192.0.2.2", "-o", dir, "--name", "clabt")
	require.Equal(t, cli.ExitOK, code, errOut)
	assert.Contains(t, out, "a (192.0.2.1): ")
	assert.Contains(t, out, " links between hosts (vxlan-stitch, VNIs from 1000, UDP port 4789)")
	for _, f := range []string{"a.clab.yml", "b.clab.yml", "topology.net", "placement.txt"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	a, err := os.ReadFile(filepath.Join(dir, "a.clab.yml"))
	require.NoError(t, err)
	assert.Contains(t, string(a), "name: clabt\n")
	assert.Contains(t, string(a), "remote: 192.0.2.2")
	assert.Contains(t, string(a), "--liveness 1s --keepalive 250ms")

	again := t.TempDir()
	code, _, errOut = run("export", "containerlab", "--hosts", "a=192.0.2.1,b=192.0.2.2", "-o", again, "--name", "clabt",
		"--place", filepath.Join(dir, "placement.txt"))
	require.Equal(t, cli.ExitOK, code, errOut)
	a2, err := os.ReadFile(filepath.Join(again, "a.clab.yml"))
	require.NoError(t, err)
	assert.Equal(t, string(a), string(a2))
}

func TestExportErrors(t *testing.T) {
	dir := t.TempDir()
	badPlace := filepath.Join(dir, "place.txt")
	require.NoError(t, os.WriteFile(badPlace, []byte("sw1 a\nnosuch b\n"), 0o644))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no format", []string{"export"}, cli.ExitUsage, "want a format: containerlab"},
		{"other format", []string{"export", "gns3"}, cli.ExitUsage, "want a format: containerlab"},
		{"no hosts", []string{"export", "containerlab", "-o", dir}, cli.ExitUsage, "missing --hosts"},
		{"no dir", []string{"export", "containerlab", "--hosts", "192.0.2.1"}, cli.ExitUsage, "missing -o DIR"},
		{"bad host", []string{"export", "containerlab", "--hosts", "192.0.2.1,x", "-o", dir}, cli.ExitUsage, `--hosts: host 2: "x" is not an IP address`},
		{"place and split", []string{"export", "containerlab", "--hosts", "192.0.2.1", "-o", dir, "--place", badPlace, "--split", "3"}, cli.ExitUsage, "exclude each other"},
		{"link type", []string{"export", "containerlab", "--hosts", "192.0.2.1", "-o", dir, "--link-type", "gre"}, cli.ExitUsage, `"gre" unknown`},
		{"bad place", []string{"export", "containerlab", "--hosts", "a=192.0.2.1,b=192.0.2.2", "-o", dir, "--place", badPlace}, cli.ExitFailure, `place.txt: clab: placement: line 2: no node "nosuch"`},
		{"split too small", []string{"export", "containerlab", "--hosts", "192.0.2.1,192.0.2.2", "-o", dir, "--split", "3"}, cli.ExitFailure, "hold fewer than the fabric's 15"},
		{"underlay too small", []string{"export", "containerlab", "--hosts", "192.0.2.1,192.0.2.2", "-o", dir, "--underlay-mtu", "1500"}, cli.ExitFailure, "give a smaller MTU (--mtu 1024 fits 1500)"},
		{"no file", []string{"export", "containerlab", "--hosts", "192.0.2.1", "-o", dir, "-f", filepath.Join(dir, "none.net")}, cli.ExitFailure, "none.net"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(tt.args...)
			assert.Equal(t, tt.code, code, "stderr %q", errOut)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.want)
			if tt.code == cli.ExitUsage {
				assert.True(t, strings.Contains(errOut, "usage: ibfab export"), errOut)
			}
		})
	}
}
