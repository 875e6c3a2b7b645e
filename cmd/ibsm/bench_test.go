package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchAlias: ibsm bench execs ibfab bench sm, found next to ibsm or
// on PATH, measuring the ibsm that was run unless told otherwise; without
// an ibfab to run it says where the bench went and exits 2.
func TestBenchAlias(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "ibsm")
	beside := filepath.Join(dir, "ibfab")
	require.NoError(t, os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o755))
	bin, argv, err := benchArgv(self, []string{"--runs", "1"})
	require.NoError(t, err)
	assert.Equal(t, beside, bin)
	assert.Equal(t, []string{"ibfab", "bench", "sm", "--ibsm", self, "--runs", "1"}, argv)

	onPath := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(onPath, "ibfab"), []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", onPath)
	bin, _, err = benchArgv(filepath.Join(t.TempDir(), "ibsm"), nil)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(onPath, "ibfab"), bin)

	t.Setenv("PATH", t.TempDir())
	_, _, err = benchArgv(filepath.Join(t.TempDir(), "ibsm"), nil)
	require.Error(t, err)

	var ran []string
	defer func(e func(string, []string, []string) error) { execve = e }(execve)
	execve = func(bin string, argv, env []string) error {
		ran = argv
		return errors.New("exec refused")
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--fabrics", "thesis8"}, &stdout, &stderr)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr.String(), "ibsm bench: moved to 'ibfab bench sm'")
	assert.Empty(t, stdout.String())
	if ran != nil { // an ibfab was found (none is on this PATH, but next to the test binary one may be)
		assert.Equal(t, []string{"ibfab", "bench", "sm"}, ran[:3])
	}
}
