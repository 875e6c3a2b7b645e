package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness/bench/smbench"
	"ibfab/harness/ibfabcli"
	"ibfab/internal/cli"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/sm"
	"ibfab/topologies"
)

// TestSMBench runs ibfab bench sm on the thesis's network and small
// routing networks: the report has both SMs' runs, with their defaults and with
// QoS, and the engines' ratios. The times are not checked (the machine is
// shared); the SMP counts, which do not depend on it, are.
func TestSMBench(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "ibsim", "ibsim-utils")
	testenv.RequireProgram(t, "opensm", "opensm")
	fabrictest.BuildBinaries(t) // ibsm, found in $IBFAB_BIN
	out := filepath.Join(t.TempDir(), "bench.json")
	var stdoutb, stderr bytes.Buffer
	code := ibfabcli.Main([]string{"bench", "sm", "--fabrics", "thesis8", "--runs", "2", "--route-nets", "irregular16,irregular32",
		"--route-iters", "2", "--out", out}, &stdoutb, &stderr)
	require.Equal(t, cli.ExitOK, code, stderr.String())
	stdout := stdoutb.String()
	var rep smbench.BenchReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.JSONEq(t, stdout, string(b), "--out holds the same report")

	require.Len(t, rep.SubnetUp, 1)
	c := rep.SubnetUp[0]
	assert.Equal(t, "thesis8", c.Fabric)
	for _, st := range []smbench.SMStats{c.IBSM, c.OpenSM} {
		assert.Empty(t, st.Error)
		require.Len(t, st.Runs, 2)
		for _, r := range st.Runs {
			assert.Positive(t, r.MsToUp)
			assert.GreaterOrEqual(t, r.MsProcess, r.MsToUp)
			assert.Positive(t, r.MsSweep)
			assert.Positive(t, r.SMPsWire)
			assert.Positive(t, r.CPUMs)
		}
	}
	assert.Equal(t, "keep", c.IBSM.VLTables, "as OpenSM with QoS off")
	for _, r := range c.IBSM.Runs {
		assert.Less(t, r.SMPsWire, r.SMPsSelf, "SMPs to ibsm's own node stay off the wire")
		var sum uint64
		for _, p := range r.Phases {
			sum += p.SMPs
		}
		assert.Len(t, r.Phases, 4)
		assert.Equal(t, r.SMPsSelf, sum, "the phases account for every SMP")
		assert.Positive(t, r.WindowMin)
		assert.LessOrEqual(t, r.WindowMin, sm.DefaultWindow)
	}
	assert.Equal(t, "updn", c.OpenSM.Routing)
	assert.Equal(t, fmt.Sprintf("%#016x", topologies.GeneratedGUID(1)), c.OpenSM.RootGUID, "rooted at sw1, the SM's switch, as ibsm's up*/down*")
	for _, k := range []string{"ms_to_up", "ms_process", "ms_sweep", "smps_wire"} {
		assert.Positive(t, c.Ratio[k], k)
	}
	assert.Equal(t, rep.GoalMet, rep.Reasons == nil, "goal_met %v, reasons %v", rep.GoalMet, rep.Reasons)
	assert.Zero(t, c.IBSM.SMPsByAttr["Set SLtoVLMappingTable"], "keep leaves SLtoVL alone")
	assert.Zero(t, c.IBSM.SMPsByAttr["Set VLArbitrationTable"], "keep leaves VL arbitration alone")

	// QoS on both sides: ibsm writes SLtoVL and both arbitration tables
	// on top of what it writes with its defaults, and OpenSM, with -Q and
	// the same tables, writes more than without.
	require.Len(t, rep.SubnetUpQoS, 1)
	q := rep.SubnetUpQoS[0]
	assert.Equal(t, "thesis8", q.Fabric)
	for _, st := range []smbench.SMStats{q.IBSM, q.OpenSM} {
		assert.Empty(t, st.Error)
		assert.True(t, st.QoS)
		require.Len(t, st.Runs, 2)
		for _, r := range st.Runs {
			assert.Positive(t, r.MsToUp)
			assert.Positive(t, r.SMPsWire)
		}
		require.NotNil(t, st.SMPsOverDefaults)
	}
	assert.Equal(t, "set", q.IBSM.VLTables, "QoS owns the tables")
	assert.Contains(t, q.OpenSM.Conf, "qos_sl2vl 0,1,2,3,4,5,6,7,0,0,0,0,0,0,0,0")
	assert.Contains(t, q.OpenSM.Conf, "qos_vlarb_low 0:64")
	// thesis8 on ibsim: 8 switches whose active ports and port 0 make
	// 108 (input, output) pairs, 7 CA ports, 32 ports with a low and a
	// high arbitration block each.
	assert.EqualValues(t, 108+7, q.IBSM.SMPsByAttr["Set SLtoVLMappingTable"])
	assert.EqualValues(t, 2*32, q.IBSM.SMPsByAttr["Set VLArbitrationTable"])
	// Three of them go to ibsm's own CA port, off the wire.
	assert.InDelta(t, q.IBSM.SMPsByAttr["Set SLtoVLMappingTable"]+q.IBSM.SMPsByAttr["Set VLArbitrationTable"]-3,
		*q.IBSM.SMPsOverDefaults, 0, "what QoS adds on the wire is its table Sets")
	assert.Positive(t, *q.OpenSM.SMPsOverDefaults, "opensm -Q wrote the tables")
	for _, k := range []string{"ms_to_up", "ms_process", "ms_sweep", "smps_wire"} {
		assert.Positive(t, q.Ratio[k], k)
	}
	require.NotNil(t, rep.QoSGoalMet)
	assert.Equal(t, *rep.QoSGoalMet, rep.QoSReasons == nil, "qos_goal_met %v, reasons %v", *rep.QoSGoalMet, rep.QoSReasons)

	require.Len(t, rep.Routing, 2)
	for _, rc := range rep.Routing {
		require.Len(t, rc.Engines, len(smbench.Engines))
		for _, e := range rc.Engines {
			assert.Empty(t, e.Error)
			assert.Positive(t, e.Entries, e.Name)
			assert.Positive(t, e.LFTEntries, e.Name)
		}
		assert.Contains(t, rc.Ratio, "updn-pira/updn-fera")
		assert.Contains(t, rc.Ratio, "minhop/updn-fera")
	}
}
