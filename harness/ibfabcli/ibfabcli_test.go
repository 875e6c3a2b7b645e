package ibfabcli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness/ibfabcli"
	"ibfab/internal/cli"
	"ibfab/topologies"
)

// run runs ibfab in-process and returns its exit status and output.
func run(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := ibfabcli.Main(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func must(t *testing.T) func(*topologies.Topology, error) *topologies.Topology {
	return func(tp *topologies.Topology, err error) *topologies.Topology {
		t.Helper()
		require.NoError(t, err)
		return tp
	}
}

// TestTopoGenerate runs each generator kind and parses what it prints; it
// must be the library generator's topology.
func TestTopoGenerate(t *testing.T) {
	m := must(t)
	tests := []struct {
		name string
		args []string
		want *topologies.Topology
	}{
		{"fattree", []string{"topo", "fattree", "--leaves", "3", "--spines", "2", "--hosts", "4"}, m(topologies.FatTree(3, 2, 4))},
		{"fattree single dash", []string{"topo", "fattree", "-leaves=3", "-spines=2", "-hosts=4"}, m(topologies.FatTree(3, 2, 4))},
		{"irregular", []string{"topo", "irregular", "--switches", "16", "--ports", "4", "--hosts", "1", "--seed", "9"}, m(topologies.Irregular(16, 4, 1, 9))},
		{"irregular defaults", []string{"topo", "irregular", "--switches", "8"}, m(topologies.Irregular(8, 4, 1, 1))},
		{"ktree", []string{"topo", "ktree", "--k", "2", "--n", "3"}, m(topologies.KAryNTree(2, 3))},
		{"rlft", []string{"topo", "rlft", "--k", "2", "--stages", "3"}, m(topologies.RLFT(2, 3))},
		{"rlft k=3", []string{"topo", "rlft", "-k=3", "-stages=3"}, m(topologies.RLFT(3, 3))},
		{"torus", []string{"topo", "torus", "--dims", "4,4"}, m(topologies.Torus(4, 4))},
		{"torus 3d", []string{"topo", "torus", "--dims", "3, 3, 2"}, m(topologies.Torus(3, 3, 2))},
		{"mesh", []string{"topo", "mesh", "--dims", "3,3"}, m(topologies.Mesh(3, 3))},
		{"thesis8", []string{"topo", "thesis8"}, topologies.Thesis8()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(tt.args...)
			require.Equal(t, cli.ExitOK, code, "ibfab %v: stderr %q", tt.args, errOut)
			assert.Empty(t, errOut)
			got, err := topologies.Parse(strings.NewReader(out), "stdout")
			require.NoError(t, err)
			assert.True(t, tt.want.Equal(got), "ibfab %v printed another topology", tt.args)
		})
	}
}

func TestTopoOutputFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t8.net")
	code, out, errOut := run("topo", "thesis8", "-o", path)
	require.Equal(t, cli.ExitOK, code, errOut)
	assert.Empty(t, out, "nothing on stdout with -o")
	got, err := topologies.ParseFile(path)
	require.NoError(t, err)
	assert.True(t, topologies.Thesis8().Equal(got))

	code, _, errOut = run("topo", "thesis8", "-o", filepath.Join(t.TempDir(), "missing", "dir", "x.net"))
	assert.Equal(t, cli.ExitFailure, code)
	assert.Contains(t, errOut, "ibfab topo thesis8: ")
}

func TestTopoCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "t8.net")
	require.NoError(t, topologies.WriteFile(good, topologies.Thesis8()))
	bad := filepath.Join(dir, "bad.net")
	require.NoError(t, os.WriteFile(bad, []byte("# a comment\nSwitch 4 \"a\"\n[1] \"b\"[1]\n"), 0o644))
	split := filepath.Join(dir, "split.net")
	require.NoError(t, os.WriteFile(split, []byte("Switch 2 \"a\"\n\nSwitch 2 \"b\"\n"), 0o644))

	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  string
		stderrs []string
	}{
		// Thesis8: 9 switch links and 7 CA links; the longest CA-to-CA path
		// is ca13-sw8-sw3-sw1-sw2-sw5-ca11, between switches sw8-...-sw5.
		{"good", []string{"topo", "check", good}, cli.ExitOK,
			good + ": 8 switches, 7 CAs, 0 routers, 16 links, diameter 6 links (4 between switches)\n", nil},
		{"dangling link", []string{"topo", "check", bad}, cli.ExitFailure, "",
			[]string{"ibfab topo check: " + bad + ":3: dangling link", `"b"`}},
		{"disconnected", []string{"topo", "check", split}, cli.ExitFailure, "",
			[]string{"ibfab topo check: " + split + ": the fabric is not connected"}},
		{"missing file", []string{"topo", "check", filepath.Join(dir, "nope.net")}, cli.ExitFailure, "",
			[]string{"ibfab topo check: ", "nope.net"}},
		{"no file", []string{"topo", "check"}, cli.ExitUsage, "",
			[]string{"ibfab topo check: missing FILE", "usage: ibfab topo check FILE"}},
		{"two files", []string{"topo", "check", good, good}, cli.ExitUsage, "",
			[]string{"unexpected argument"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(tt.args...)
			assert.Equal(t, tt.code, code, "ibfab %v exit status; stderr %q", tt.args, errOut)
			assert.Equal(t, tt.stdout, out)
			for _, s := range tt.stderrs {
				assert.Contains(t, errOut, s)
			}
			if tt.stderrs == nil {
				assert.Empty(t, errOut)
			}
		})
	}
}

// TestGraphFile draws a topology file in each format.
func TestGraphFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ft.net")
	require.NoError(t, topologies.WriteFile(path, must(t)(topologies.FatTree(2, 1, 2))))
	code, out, errOut := run("graph", "-f", path, "--format", "json")
	require.Equal(t, cli.ExitOK, code, errOut)
	var g struct {
		Nodes []struct{ Name, Type string }
		Links []struct{ Rate string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &g))
	assert.Len(t, g.Nodes, 7)
	assert.Len(t, g.Links, 6)
	code, out, errOut = run("graph", "-f", path)
	require.Equal(t, cli.ExitOK, code, errOut)
	assert.Equal(t, 6, strings.Count(out, " -- "), "DOT, the default")
	code, _, errOut = run("graph", "-f", filepath.Join(t.TempDir(), "none.net"))
	assert.Equal(t, cli.ExitFailure, code)
	assert.Contains(t, errOut, "ibfab graph: ")
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no command", nil, "ibfab: missing command"},
		{"unknown command", []string{"frobnicate"}, `ibfab: unknown command "frobnicate"`},
		{"no kind", []string{"topo"}, "ibfab topo: missing topology kind"},
		{"unknown kind", []string{"topo", "hypercube"}, `ibfab topo: unknown topology kind "hypercube"`},
		{"missing flag", []string{"topo", "fattree", "--leaves", "2", "--hosts", "2"}, "ibfab topo fattree: missing --spines"},
		{"negative", []string{"topo", "fattree", "--leaves", "-2", "--spines", "2", "--hosts", "2"}, "fat tree with -2 leaves"},
		{"zero", []string{"topo", "ktree", "--k", "2", "--n", "0"}, "n=0 levels"},
		{"too many ports", []string{"topo", "fattree", "--leaves", "4", "--spines", "200", "--hosts", "100"}, "needs 300 ports; a switch has at most 254"},
		{"too many spine ports", []string{"topo", "fattree", "--leaves", "255", "--spines", "1", "--hosts", "1"}, "needs 255-port spines"},
		{"ktree too wide", []string{"topo", "ktree", "--k", "200", "--n", "2"}, "needs 400-port switches"},
		{"rlft no stages", []string{"topo", "rlft", "--k", "2"}, "ibfab topo rlft: missing --stages"},
		{"rlft no k", []string{"topo", "rlft", "--stages", "3"}, "ibfab topo rlft: missing --k"},
		{"rlft k=1", []string{"topo", "rlft", "--k", "1", "--stages", "3"}, "RLFT with k=1 needs 2-port switches; want k from 2 to 127"},
		{"rlft zero stages", []string{"topo", "rlft", "--k", "2", "--stages", "0"}, "RLFT with 0 stages, want at least 1"},
		{"rlft too big", []string{"topo", "rlft", "--k", "16", "--stages", "5"}, "RLFT(16, 5) exceeds"},
		{"irregular ports", []string{"topo", "irregular", "--switches", "4", "--ports", "300"}, "300-port switches"},
		{"irregular seed", []string{"topo", "irregular", "--switches", "4", "--seed", "-1"}, `invalid value "-1" for flag -seed`},
		{"not a number", []string{"topo", "ktree", "--k", "two", "--n", "2"}, `invalid value "two" for flag -k`},
		{"unknown flag", []string{"topo", "mesh", "--dims", "2,2", "--wrap"}, "flag provided but not defined: -wrap"},
		{"bad dims", []string{"topo", "torus", "--dims", "4,,4"}, `--dims "4,,4"`},
		{"four dims", []string{"topo", "mesh", "--dims", "2,2,2,2"}, "mesh with 4 dimensions"},
		{"zero dim", []string{"topo", "torus", "--dims", "4,0"}, "torus dimension of size 0"},
		{"stray argument", []string{"topo", "thesis8", "extra"}, `unexpected argument "extra"`},
		{"graph two sources", []string{"graph", "--name", "x", "-f", "t.net"}, "--name and -f exclude each other"},
		{"graph format", []string{"graph", "-f", "t.net", "--format", "png"}, `format "png" unknown: want one of dot, json, svg`},
		{"graph bad name", []string{"graph", "--name", "No/Such"}, "ibfab graph: "},
		{"sysfs no dir", []string{"sysfs", "--name", "x"}, "ibfab sysfs: missing --dir DIR"},
		{"sysfs interval", []string{"sysfs", "--dir", "d", "--interval", "0s"}, "--interval 0s: want a positive duration"},
		{"sysfs bad name", []string{"sysfs", "--dir", "d", "--name", "a/b"}, "ibfab sysfs: "},
		{"metrics stray", []string{"metrics", "extra"}, `unexpected argument "extra"`},
		{"metrics bad name", []string{"metrics", "--name", "a/b"}, "ibfab metrics: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(tt.args...)
			assert.Equal(t, cli.ExitUsage, code, "ibfab %v exit status; stderr %q", tt.args, errOut)
			assert.Empty(t, out, "nothing on stdout")
			assert.Contains(t, errOut, tt.stderr)
			assert.Contains(t, errOut, "usage: ibfab ")
		})
	}
}

func TestHelp(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"ibfab", []string{"-h"}, []string{"usage: ibfab <command>", "topo "}},
		{"help", []string{"help"}, []string{"usage: ibfab <command>"}},
		{"topo", []string{"topo", "-h"}, []string{"ibfab topo fattree --leaves L", "ibfab topo check FILE"}},
		{"fattree", []string{"topo", "fattree", "-h"}, []string{"usage: ibfab topo fattree", "-leaves", "-spines", "-hosts", "-o FILE"}},
		{"check", []string{"topo", "check", "--help"}, []string{"usage: ibfab topo check FILE", "Validate"}},
		{"metrics", []string{"metrics", "-h"}, []string{"usage: ibfab metrics [--name N] [--listen ADDR]", "node_infiniband_", "-listen"}},
		{"sysfs", []string{"sysfs", "-h"}, []string{"usage: ibfab sysfs [--name N] --dir DIR", "-interval", "-once"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(tt.args...)
			assert.Equal(t, cli.ExitOK, code)
			assert.Empty(t, errOut)
			for _, s := range tt.want {
				assert.Contains(t, out, s)
			}
		})
	}
	var names []string
	for _, c := range ibfabcli.Commands() {
		names = append(names, c.Name)
	}
	assert.Contains(t, names, "topo")
}
