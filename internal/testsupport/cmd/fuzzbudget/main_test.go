package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  string
		want result
	}{
		{"passed", `fuzz: elapsed: 0s, gathering baseline coverage: 0/3 completed
fuzz: elapsed: 0s, gathering baseline coverage: 3/3 completed, now fuzzing with 2 workers
fuzz: elapsed: 3s, execs: 60123 (20040/sec), new interesting: 2 (total: 5)
fuzz: elapsed: 4s, execs: 80000 (18130/sec), new interesting: 4 (total: 7)
PASS
ok  	ibfab/umadep	4.115s
`, result{execs: 80000, newInteresting: 4, corpus: 7, elapsed: 4 * time.Second}},
		{"crashed", `fuzz: elapsed: 1m3s, execs: 1234 (99/sec), new interesting: 1 (total: 2)
--- FAIL: FuzzX (63.00s)
    --- FAIL: FuzzX (0.00s)
        x_test.go:9: boom

    Failing input written to testdata/fuzz/FuzzX/582528ddfad69eb5
    To re-run:
    go test -run=FuzzX/582528ddfad69eb5
FAIL
`, result{execs: 1234, newInteresting: 1, corpus: 2, elapsed: 63 * time.Second, failed: true, crasher: "testdata/fuzz/FuzzX/582528ddfad69eb5"}},
		{"seed failed", `failure while testing seed corpus entry: FuzzX/seed#0
--- FAIL: FuzzX (0.00s)
FAIL
`, result{failed: true}},
		{"nothing", "", result{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, parse(strings.NewReader(tc.out)))
		})
	}
}

func TestUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run(nil, &out, &errOut))
	assert.Contains(t, errOut.String(), "give -budget, -min-execs or both")
	assert.Equal(t, 2, run([]string{"-budget", "soon"}, &out, &errOut))
}

// TestPlantedCrash fuzzes a module of two targets, one with a bug that
// mutation finds at once: the report counts its crash and the input Go
// wrote, and the other target's execs.
func TestPlantedCrash(t *testing.T) {
	dir := fuzzModule(t, `package fz

import "testing"

func FuzzLong(f *testing.F) {
	f.Add([]byte("a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 3 {
			panic("planted")
		}
	})
}

func FuzzFine(f *testing.F) {
	f.Add([]byte("a"))
	f.Fuzz(func(t *testing.T, b []byte) { _ = len(b) })
}
`)
	rep, err := fuzzAll(options{minExecs: 2000, pkgs: []string{"./..."}, dir: dir, log: testWriter{t}})
	require.NoError(t, err)
	require.Len(t, rep.Targets, 2)
	byName := map[string]Target{}
	for _, tg := range rep.Targets {
		byName[tg.Name] = tg
	}
	assert.True(t, byName["FuzzLong"].Crashed, "%+v", byName["FuzzLong"])
	assert.FileExists(t, filepath.Join(dir, byName["FuzzLong"].Crasher))
	assert.False(t, byName["FuzzFine"].Crashed)
	assert.GreaterOrEqual(t, byName["FuzzFine"].Execs, int64(2000))
	assert.Equal(t, 1, rep.Crashes)
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"total_execs"`)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestResume stops after one target's run and goes on from the report:
// the target keeps its execs and runs only for what it lacks; a FuzzX
// inside a string is no target.
func TestResume(t *testing.T) {
	dir := fuzzModule(t, "package fz\n\nimport \"testing\"\n\nconst ghost = `\nfunc FuzzGhost(f *testing.F) {}\n`\n\n"+
		"func FuzzFine(f *testing.F) {\n\tf.Add([]byte(\"a\"))\n\tf.Fuzz(func(t *testing.T, b []byte) { _ = len(b) })\n}\n")
	out := filepath.Join(dir, "report.json")
	o := options{minExecs: 500, pkgs: []string{"./..."}, dir: dir, out: out, log: testWriter{t}}
	first, err := fuzzAll(o)
	require.NoError(t, err)
	require.Len(t, first.Targets, 1, "FuzzGhost is in a string")
	had := first.Targets[0].Execs
	require.GreaterOrEqual(t, had, int64(500))

	o.minExecs, o.resume = had+1000, true
	second, err := fuzzAll(o)
	require.NoError(t, err)
	require.Len(t, second.Targets, 1)
	assert.GreaterOrEqual(t, second.Targets[0].Execs, had+1000)
	assert.Equal(t, first.Started, second.Started)
	assert.Greater(t, second.Seconds, first.Seconds)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var onDisk Report
	require.NoError(t, json.Unmarshal(b, &onDisk))
	assert.Equal(t, second.TotalExecs, onDisk.TotalExecs)
}

// fuzzModule writes a module "fz" whose test file is src into a new
// directory and returns it; it skips under -short or without a go command.
func fuzzModule(t *testing.T, src string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and fuzzes a module: -short")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module fz\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fz_test.go"), []byte(src), 0o644))
	return dir
}
