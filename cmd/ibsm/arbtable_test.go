package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/arbtable"
	"ibfab/sm/arbtable/arbbench"
)

func TestArbBenchFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"unknown flag", []string{"--nope"}, exitUsage},
		{"quick and ops", []string{"--quick", "--ops", "10"}, exitUsage},
		{"model 5", []string{"--models", "1,5"}, exitUsage},
		{"model word", []string{"--models", "one"}, exitUsage},
		{"no models", []string{"--models", ""}, exitUsage},
		{"size 48", []string{"--size", "48"}, exitUsage},
		{"size 2", []string{"--size", "2"}, exitUsage},
		{"ops 0", []string{"--ops", "0"}, exitUsage},
		{"threshold 0", []string{"--threshold", "0s"}, exitUsage},
		{"stray argument", []string{"--quick", "extra"}, exitUsage},
		{"help", []string{"--help"}, exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			got := run(context.Background(), append([]string{"arbtable-bench"}, tt.args...), &out, &errb)
			assert.Equal(t, tt.want, got, "stderr: %s", errb.String())
			if tt.want == exitUsage {
				assert.Contains(t, errb.String(), "usage: ibsm arbtable-bench")
			}
		})
	}
}

func TestArbBenchParse(t *testing.T) {
	c, out, err := parseArbBench([]string{"--quick", "--models", "2, 4", "--size", "16", "--seed", "7", "--out", "d"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, arbbench.QuickOps, c.Ops)
	assert.Equal(t, []arbtable.Model{arbtable.Model2, arbtable.Model4}, c.Models)
	assert.Equal(t, 16, c.Size)
	assert.Equal(t, uint64(7), c.Seed)
	assert.Equal(t, "d", out)

	c, _, err = parseArbBench(nil, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, arbbench.DefaultOps, c.Ops)
	assert.Equal(t, arbtable.Models, c.Models)
	assert.Equal(t, 64, c.Size)
}

func TestArbBenchRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"arbtable-bench", "--ops", "3000", "--models", "1,2", "--out", dir}, &out, &errb)
	require.Equal(t, exitOK, code, errb.String())
	assert.Contains(t, out.String(), "mean time per operation M2/M1")
	for _, f := range []string{"arbtable.json", "report.md", "hist-M1-insertion.png"} {
		_, err := os.Stat(filepath.Join(dir, f))
		assert.NoError(t, err, f)
	}
}
