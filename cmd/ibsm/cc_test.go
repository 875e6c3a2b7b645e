package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/topologies"
)

func writeConf(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// TestCCFlags: --cc programs congestion control and reports it in the
// sweep; a bad file or a stray --cc-log-interval is a usage error.
func TestCCFlags(t *testing.T) {
	good := writeConf(t, "cc.conf", "congestion_control TRUE\ncc_key 0x10\ncc_sw_cong_setting_control_map 0x4\ncc_sw_cong_setting_threshold 8\ncc_cct 0:0,0:5\n")
	code, out, errs := ibsm(t, "--port", "fake", "--once", "--json", "--cc", good, "--cc-log-interval", "1s")
	require.Equal(t, exitOK, code, errs)
	var res sm.Result
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &res))
	require.NotNil(t, res.CC)
	assert.Equal(t, 15, res.CC.Nodes, "8 switches and 7 CA ports")
	assert.Equal(t, 15, res.CC.KeySets)
	assert.Zero(t, res.CC.KeyFailures)
	code, out, errs = ibsm(t, "--port", "fake", "--once", "--cc", good)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "  cc: 15 nodes (15 read), ")

	off := writeConf(t, "off.conf", "congestion_control FALSE\n")
	code, _, errs = ibsm(t, "--port", "fake", "--once", "--cc", off)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, errs, "congestion_control is not TRUE")

	bad := writeConf(t, "bad.conf", "congestion_control TRUE\n\ncc_sw_cong_setting_threshold 99\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--cc", bad}, "bad.conf:3: cc_sw_cong_setting_threshold: 99 does not fit in 4 bits"},
		{[]string{"--cc", "/no/such/cc.conf"}, "no such file"},
		{[]string{"--cc-log-interval", "5s"}, "--cc-log-interval reads congestion logs: say --cc"},
		{[]string{"--cc", good, "--cc-log-interval", "-1s"}, "--cc-log-interval -1s"},
	} {
		code, _, errs := ibsm(t, append([]string{"--port", "fake", "--once"}, tt.args...)...)
		assert.Equal(t, exitUsage, code, errs)
		assert.Contains(t, errs, tt.want)
	}
}

// TestLMCMultipath: --lmc reports the multipath routing in the sweep.
func TestLMCMultipath(t *testing.T) {
	torus, err := topologies.Torus(4, 4)
	require.NoError(t, err)
	file := writeTopo(t, torus)
	code, out, errs := ibsm(t, "--port", "fake:"+file, "--once", "--lmc", "2")
	require.Equal(t, exitOK, code, errs)
	assert.Regexp(t, `multipath: 4 LIDs per port in 4 layers, [0-9]+ of 48 alias routes fell back`, out)
	code, out, errs = ibsm(t, "--port", "fake:"+file, "--once", "--json", "--lmc", "1")
	require.Equal(t, exitOK, code, errs)
	var res sm.Result
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &res))
	require.NotNil(t, res.Multipath)
	assert.Equal(t, 2, res.Multipath.Layers)
	assert.True(t, res.DeadlockFree)
}
