package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

func ibsm(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeTopo(t *testing.T, topo *topologies.Topology) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fabric.topo")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, topologies.Write(f, topo))
	require.NoError(t, f.Close())
	return path
}

func TestOnceText(t *testing.T) {
	code, out, errs := ibsm(t, "--port", "fake", "--once")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "sweep 1: subnet up: 8 switches, 7 CAs, 16 links, SM Master at LID 1\n")
	assert.Contains(t, out, "routing updn-pira: 50 entries computed and 7 default ports")
	assert.Regexp(t, `discovery +[0-9.]+ ms +97 SMPs`, out)
	for _, p := range []string{"routing", "distribution", "activation", "total"} {
		assert.Regexp(t, "  "+p+` +[0-9.]+ ms +[0-9]+ SMPs`, out)
	}
}

func TestOnceJSON(t *testing.T) {
	ft, err := topologies.FatTree(4, 2, 3)
	require.NoError(t, err)
	file := writeTopo(t, ft)
	lids := filepath.Join(t.TempDir(), "guid2lid")
	code, out, errs := ibsm(t, "--port", "fake:"+file, "--once", "--json", "--routing", "ftree", "--lid-file", lids)
	require.Equal(t, exitOK, code, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 1)
	var res struct {
		Event    string `json:"event"`
		Up       bool   `json:"subnet_up"`
		Switches int    `json:"switches"`
		HCAs     int    `json:"hcas"`
		Routing  string `json:"routing"`
		Entries  int    `json:"entries_computed"`
		Phases   []struct {
			Name string  `json:"name"`
			Ms   float64 `json:"ms"`
			SMPs int     `json:"smps"`
		} `json:"phases"`
		SMPs int     `json:"smps_total"`
		Ms   float64 `json:"ms_total"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &res))
	assert.Equal(t, "sweep", res.Event)
	assert.True(t, res.Up)
	assert.Equal(t, 6, res.Switches)
	assert.Equal(t, 12, res.HCAs)
	assert.Equal(t, "ftree", res.Routing)
	require.Len(t, res.Phases, 4)
	sum := 0
	for _, p := range res.Phases {
		sum += p.SMPs
	}
	assert.Equal(t, res.SMPs, sum)
	b, err := os.ReadFile(lids)
	require.NoError(t, err)
	assert.Equal(t, 1+18, strings.Count(string(b), "\n"), "a comment and one line per port GUID")
}

func TestRoutesDump(t *testing.T) {
	code, out, errs := ibsm(t, "routes", "--dump", "--port", "fake", "--routing", "updn-fera")
	require.Equal(t, exitOK, code, errs)
	assert.Equal(t, 8, strings.Count(out, "Unicast lids [0x0-0xf] of switch Lid "))
	assert.Equal(t, 8, strings.Count(out, "15 valid lids dumped \n"))
	assert.NotContains(t, out, "sweep 1", "the dump alone")
}

func TestNotUp(t *testing.T) {
	torus, err := topologies.Torus(3, 3)
	require.NoError(t, err)
	file := writeTopo(t, torus)
	code, _, errs := ibsm(t, "--port", "fake:"+file, "--once", "--routing", "minhop")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errs, "ibsm: subnet not up: sm: route set has a cycle in its channel dependency graph")
	code, _, errs = ibsm(t, "--port", "fake:"+file, "--once", "--routing", "minhop", "--allow-credit-loops")
	assert.Equal(t, exitOK, code, errs)
	code, _, errs = ibsm(t, "--port", "fake:"+file, "--once", "--routing", "ftree")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errs, "not a fat tree")
}

func TestBadArguments(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "--port is required"},
		{[]string{"--port", "fake", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"--port", "fake", "--dump"}, exitUsage, "--dump belongs to 'ibsm routes'"},
		{[]string{"routes", "--port", "fake"}, exitUsage, "routes: say --dump"},
		{[]string{"--port", "fake", "--lmc", "9"}, exitUsage, "--lmc is 0-7"},
		{[]string{"--port", "fake", "--bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"--port", "nope:x", "--once"}, exitFailure, `unknown scheme "nope"`},
		{[]string{"--port", "fake:/no/such/file", "--once"}, exitFailure, "no such file"},
		{[]string{"--port", "fake", "--once", "--routing", "dor"}, exitFailure, `unknown routing engine "dor"`},
		{[]string{"--port", "fake", "--pira-parent", "eldest"}, exitUsage, `PIRa parent policy "eldest" unknown: want one of last, first, random`},
		{[]string{"--port", "fake", "--fera-ties", "coin"}, exitUsage, `FERa tie-break "coin" unknown: want one of keep-old, random`},
		{[]string{"--port", "fake", "--vl-tables", "spread"}, exitUsage, `VL tables "spread" unknown: want one of set, keep`},
		{[]string{"-h"}, exitOK, "usage: ibsm --port SPEC"},
		{[]string{"--port", "fake", "--polling-retries", "-1"}, exitUsage, "--polling-retries is 0 or more"},
		{[]string{"--port", "fake", "--polling-interval", "0s"}, exitUsage, "--polling-interval more than 0"},
		{[]string{"--port", "fake", "--sm-key", "key"}, exitUsage, `invalid value "key" for flag -sm-key`},
		{[]string{"--port", "fake", "--priority", "16"}, exitUsage, "--priority 0-15"},
		{[]string{"--port", "fake", "--m-key", "1", "--m-key-protect", "4"}, exitUsage, "--m-key-protect is 0-3, not 4"},
		{[]string{"--port", "fake", "--m-key-protect", "2"}, exitUsage, "need an --m-key other than 0"},
		{[]string{"--port", "fake", "--m-key-lease", "5"}, exitUsage, "need an --m-key other than 0"},
		{[]string{"--port", "fake", "--m-key-per-port"}, exitUsage, "need an --m-key other than 0"},
		{[]string{"--port", "fake", "--m-key", "0xg"}, exitUsage, `invalid value "0xg" for flag -m-key`},
		{[]string{"--port", "fake", "--m-key", "1", "--m-key-lease", "1.5s"}, exitUsage, "1.5s is not a whole number of seconds"},
		{[]string{"--port", "fake", "--m-key", "1", "--m-key-lease", "65536"}, exitUsage, "65536 seconds is more than 65535"},
		{[]string{"--port", "fake", "--m-key", "1", "--m-key-lease", "19h"}, exitUsage, "19h0m0s is more than 65535 seconds"},
		{[]string{"--port", "fake", "--m-key", "1", "--m-key-lease", "soon"}, exitUsage, "want a duration (5s) or a number of seconds"},
		{[]string{"--port", "fake", "--m-key", "1", "--m-key-lease", "-5s"}, exitUsage, "-5s is not a whole number of seconds"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errs := ibsm(t, tt.args...)
			assert.Equal(t, tt.code, code, errs)
			assert.Contains(t, errs, tt.want)
		})
	}
}

// cancelAfter cancels a context once n lines have been written.
type cancelAfter struct {
	mu     sync.Mutex
	b      bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *cancelAfter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Count(w.b.String(), "\n") >= w.n {
		w.cancel()
	}
	return len(p), nil
}

// TestWatch runs ibsm without --once until its first sweep is printed.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelAfter{n: 2, cancel: cancel}
	var errs bytes.Buffer
	code := run(ctx, []string{"--port", "fake", "--json"}, out, &errs)
	assert.Equal(t, exitOK, code, errs.String())
	lines := strings.Split(out.b.String(), "\n")
	assert.Equal(t, `{"event":"sm","action":"election","state":"Master","previous":"Discovering"}`, lines[0])
	assert.Contains(t, lines[1], `"subnet_up":true`)
}
