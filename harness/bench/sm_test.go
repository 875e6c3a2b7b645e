package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness/bench/smbench"
	"ibfab/internal/cli"
)

// TestSMOut: the report goes to --out, and a --out that cannot be written
// is a failure, not a silent exit 0. With no fabric measured the goal is
// not met, and the report says why. Without fabrics the bench needs
// neither root nor ibsm.
func TestSMOut(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	tests := []struct {
		name string
		out  string
		want int
	}{
		{"written", filepath.Join(dir, "sub", "bench.json"), cli.ExitOK},
		{"directory is a file", filepath.Join(blocker, "bench.json"), cli.ExitFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := ibfab([]string{"bench", "sm", "--fabrics", "", "--route-nets", "", "--out", tt.out}, &stdout, &stderr)
			require.Equal(t, tt.want, got, "stderr: %s", stderr.String())
			if tt.want != cli.ExitOK {
				assert.Contains(t, stderr.String(), "not a directory")
				return
			}
			b, err := os.ReadFile(tt.out)
			require.NoError(t, err)
			assert.Equal(t, stdout.String(), string(b), "stdout and --out carry the same document")
			var rep smbench.BenchReport
			require.NoError(t, json.Unmarshal(b, &rep))
			assert.Equal(t, "bench", rep.Event)
			assert.False(t, rep.GoalMet, "nothing measured, goal met")
			assert.Equal(t, []string{"nothing measured"}, rep.Reasons)
		})
	}
}

// TestSMUsage: a bad flag of bench sm is a usage error (exit status 2)
// that says what is wrong, with nothing on stdout; -h is help.
func TestSMUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--vl-tables", "spread"}, "spread"},
		{[]string{"--qos=maybe"}, "qos"},
		{[]string{"--runs", "0"}, "--runs"},
		{[]string{"--routing", "lash"}, "lash"},
		{[]string{"extra"}, "extra"},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := ibfab(append([]string{"bench", "sm"}, tc.args...), &stdout, &stderr)
			assert.Equal(t, cli.ExitUsage, code)
			assert.Contains(t, stderr.String(), tc.want)
			assert.Contains(t, stderr.String(), "usage: ibfab bench sm")
			assert.Empty(t, stdout.String())
		})
	}
	var out bytes.Buffer
	require.NoError(t, run(&cli.Env{Stdout: &out, Stderr: &out}, []string{"sm", "-h"}))
	assert.Contains(t, out.String(), "usage: ibfab bench sm")
	assert.Contains(t, out.String(), "-fabrics")
}

// ibfab runs the bench subcommand's command line as ibfab does (the
// ibfab command, harness/ibfabcli, imports this package).
func ibfab(args []string, stdout, stderr io.Writer) int {
	return cli.Main("ibfab", []cli.Command{Command}, args, stdout, stderr)
}
