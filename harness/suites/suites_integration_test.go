package suites_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/harness/suites"
	"ibfab/internal/fabricnet"
	"ibfab/internal/fabrictest"
)

// TestSuites runs every shipped suite against ibsm: each must pass its
// checks, and its report directory must hold the JSON, the plots, ibsm's
// lines and a capture with frames in it. Nothing of the fabric is left.
func TestSuites(t *testing.T) {
	fabrictest.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	for i, s := range suites.Builtin() {
		t.Run(s.Name, func(t *testing.T) {
			dir := t.TempDir()
			name := fabrictest.Name(fmt.Sprintf("suite%d", i))
			rep, err := suites.Run(context.Background(), s, suites.Options{Out: dir, Fabric: name, Log: testLog{t}})
			require.NoError(t, err)
			for _, c := range rep.Checks {
				t.Logf("%-5v %s: %s", c.OK, c.Name, c.Detail)
			}
			require.True(t, rep.Passed, "a check failed; report in %s", dir)
			require.NotEmpty(t, rep.Bins)
			require.Positive(t, rep.Fault.Sent)
			for _, f := range []string{"report.json", "traffic.svg", "traffic.png", "index.md", "ibsm.jsonl"} {
				st, err := os.Stat(filepath.Join(dir, f))
				require.NoError(t, err)
				require.Positive(t, st.Size(), f)
			}
			require.NotNil(t, rep.Capture)
			require.Empty(t, rep.Capture.Error)
			f, err := os.Open(filepath.Join(dir, rep.Capture.File))
			require.NoError(t, err)
			defer f.Close()
			r, err := capture.NewReader(f)
			require.NoError(t, err)
			n := 0
			for {
				if _, err := r.Next(); err != nil {
					break
				}
				n++
			}
			require.Equal(t, rep.Capture.Frames, n)
			require.Positive(t, n, "frames of %s", rep.Capture.Port)
			left, err := fabricnet.Namespaces(name)
			require.NoError(t, err)
			require.Empty(t, left)
		})
	}
}

// TestThesisSmall is `ibfab run thesis` cut down to one small network and
// one load: both mechanisms assimilate a switch's deactivation and
// activation under traffic, and the table compares them.
func TestThesisSmall(t *testing.T) {
	fabrictest.RequireRoot(t)
	fabrictest.BuildBinaries(t)
	dir := t.TempDir()
	rep, err := suites.RunThesis(context.Background(), suites.ThesisOptions{
		Sizes: []int{4}, Loads: []float64{25}, Changes: 1, Seed: 1, Out: dir, Log: testLog{t}})
	require.NoError(t, err)
	require.Empty(t, rep.Errors)
	require.Positive(t, rep.Saturation[4])
	require.Len(t, rep.Results, 4, "two mechanisms × deactivation and activation")
	for _, r := range rep.Results {
		require.Positive(t, r.MsToValid, "%+v", r)
		require.Positive(t, r.SMPs, "%+v", r)
		require.Positive(t, r.Sent, "%+v", r)
	}
	require.Len(t, rep.Rows, 1)
	require.Positive(t, rep.Rows[0].TimeRatioAct)
	require.Contains(t, suites.ThesisTable(rep), "| 4 | 25 % |")
	for _, f := range []string{"thesis.json", "index.md", "thesis.svg", "thesis.png"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
	}
}

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Logf("%s", b)
	return len(b), nil
}
