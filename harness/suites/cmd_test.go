package suites

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/cli"
)

// runMain runs ibfab's command line with the run command alone, as the
// ibfab binary (harness/ibfabcli, above this package) runs it.
func runMain(args []string, stdout, stderr *bytes.Buffer) int {
	return cli.Main("ibfab", []cli.Command{Command}, args, stdout, stderr)
}

// TestRunExperiments: `ibfab run` reads its experiments from the table:
// its usage line and its unknown-suite error name them in the table's
// order, and `run NAME -h` gives each one's own usage line.
func TestRunExperiments(t *testing.T) {
	assert.Equal(t, "thesis, qos, cc, afc, sm-failover, soak", experimentNames(", "))
	assert.Equal(t, "run SUITE|all|thesis|qos|cc|afc|sm-failover|soak [--out DIR] [--json] [--sm ibsm|opensm] [--mechanism basic|improved] [--name N] [--hosts N]", runSynopsis)
	var out, errb bytes.Buffer
	require.Equal(t, harness.ExitUsage, runMain([]string{"run", "nosuch"}, &out, &errb))
	assert.Contains(t, out.String()+errb.String(), ", all, thesis, qos, cc, afc, sm-failover, soak")
	for _, e := range experiments {
		require.True(t, strings.HasPrefix(e.Synopsis, "run "+e.Name+" "), e.Synopsis)
		var out, errb bytes.Buffer
		require.Equal(t, harness.ExitOK, runMain([]string{"run", e.Name, "-h"}, &out, &errb), e.Name)
		assert.Contains(t, out.String()+errb.String(), e.Synopsis, e.Name)
		out.Reset()
		errb.Reset()
		require.Equal(t, harness.ExitUsage, runMain([]string{"run", e.Name, "extra"}, &out, &errb), e.Name)
	}
}

func TestRunUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"run"}, harness.ExitUsage, "want one suite name"},
		{[]string{"run", "nosuch"}, harness.ExitUsage, `no suite "nosuch"`},
		{[]string{"run", "link-failure", "--mechanism", "fast"}, harness.ExitUsage, "want basic or improved"},
		{[]string{"run", "all", "--name", "x"}, harness.ExitUsage, "--name goes with one suite"},
		{[]string{"run", "link-failure", "--sm", "other"}, harness.ExitUsage, "want one of ibsm, opensm"},
		{[]string{"run", "link-failure", "--sm", "opensm", "--mechanism", "basic"}, harness.ExitUsage, "--mechanism is ibsm's"},
		{[]string{"run", "thesis", "--sizes", "8,x"}, harness.ExitUsage, "--sizes"},
		{[]string{"run", "thesis", "--loads", "0"}, harness.ExitUsage, "--loads"},
		{[]string{"run", "thesis", "extra"}, harness.ExitUsage, "unexpected argument"},
		{[]string{"run", "link-failure", "--hosts", "0"}, harness.ExitUsage, "--hosts 0: want 1 or more"},
		{[]string{"run", "link-failure", "--hosts", "9"}, harness.ExitUsage, "9 hosts for 8 switches"},
		{[]string{"run", "switch-hot-add", "--hosts", "2"}, harness.ExitUsage, "adds nodes"},
		{[]string{"run", "all", "--hosts", "2"}, harness.ExitUsage, "switch-hot-add adds nodes"},
		{[]string{"run", "-h"}, harness.ExitOK, "flap-storm"},
		{[]string{"run", "thesis", "-h"}, harness.ExitOK, "--time-scale"},
	} {
		var out, errb bytes.Buffer
		code := runMain(c.args, &out, &errb)
		require.Equal(t, c.code, code, "%v: %s%s", c.args, out.String(), errb.String())
		require.Contains(t, out.String()+errb.String(), c.msg, "%v", c.args)
	}
	var out bytes.Buffer
	runMain([]string{"-h"}, &out, &out)
	require.True(t, strings.Contains(out.String(), "run "), "ibfab -h lists run")
}
