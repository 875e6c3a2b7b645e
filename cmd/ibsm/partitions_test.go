package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
)

// TestPartitionFlags: --partitions sets the tables and reports each port
// changed as a partition event and the sweep's partition line; the file's
// warnings go to stderr; a bad file, a missing one or a bad mode is a
// usage error.
func TestPartitionFlags(t *testing.T) {
	good := writeConf(t, "partitions.conf",
		"Default=0x7fff : ALL=full ;\np=0x10, fancy : ALL_CAS=full ;\nq=0x20 : SELF=full, ALL_SWITCHES ;\n")
	code, out, errs := ibsm(t, "--port", "fake", "--once", "--json", "--partitions", good)
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, errs, "ibsm: warning: "+good+`:2: unknown partition flag "fancy"`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 7+8+1, "7 CA ports and 8 switches changed, then the sweep")
	var ev sm.PartitionEvent
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &ev))
	assert.Equal(t, "partition", ev.Event)
	assert.Equal(t, []int{0}, ev.Blocks)
	var res sm.Result
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &res))
	require.NotNil(t, res.Partitions)
	assert.Equal(t, sm.PartitionResult{Partitions: 3, Ports: 15, BlocksRead: 30, BlocksSet: 15}, *res.Partitions,
		"the fake fabric's switches do not enforce")

	code, out, errs = ibsm(t, "--port", "fake", "--once", "--partitions", good, "--part-enforce", "off")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "partition ca ")
	assert.Contains(t, out, ": blocks [0] set, table 0xffff 0x8010")
	assert.Contains(t, out, "  partitions: 3 in effect on 15 ports and 0 switch ports, 30 blocks read, 15 set, 0 enforcement Sets, 0 failures\n")

	code, out, errs = ibsm(t, "--port", "fake", "--once", "--part-enforce", "in")
	require.Equal(t, exitOK, code, errs)
	assert.Contains(t, out, "  partitions: 1 in effect on 15 ports", "alone: OpenSM without a file")
	assert.NotContains(t, out, "partition ca ", "every port holds 0xffff already")

	bad := writeConf(t, "bad.conf", "Default=0x7fff : ALL=full ;\np=0x10 : 0xzz ;\n")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--partitions", bad}, "bad.conf:2: bad port GUID \"0xzz\""},
		{[]string{"--partitions", "/no/such/partitions.conf"}, "no such file"},
		{[]string{"--part-enforce", "sideways"}, "both, in, out, off"},
	} {
		code, _, errs := ibsm(t, append([]string{"--port", "fake", "--once"}, tt.args...)...)
		assert.Equal(t, exitUsage, code, errs)
		assert.Contains(t, errs, tt.want)
	}
}
