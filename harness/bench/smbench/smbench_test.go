package smbench

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport/ibsimtest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/sm"
	"ibfab/sm/routing"
	"ibfab/topologies"
)

// switchFirst is a network whose first node, where ibsim attaches the SM,
// is a switch; sw1 has the lowest GUID.
const switchFirst = `switchguid=0x2fab00000000900
Switch	4 "sw9"
[1]	"sw1"[1]
[2]	"ca1"[1](2fab00000000301)
[3]	"sw5"[1]

switchguid=0x2fab00000000100
Switch	4 "sw1"
[1]	"sw9"[1]
[2]	"ca2"[1](2fab00000000401)
[3]	"sw5"[2]

switchguid=0x2fab00000000500
Switch	4 "sw5"
[1]	"sw9"[3]
[2]	"sw1"[3]
[3]	"ca3"[1](2fab00000000601)

caguid=0x2fab00000000300
Ca	1 "ca1"
[1](2fab00000000301)	"sw9"[2]

caguid=0x2fab00000000400
Ca	1 "ca2"
[1](2fab00000000401)	"sw1"[2]

caguid=0x2fab00000000600
Ca	1 "ca3"
[1](2fab00000000601)	"sw5"[3]
`

// secondPort is one whose first node is a CA cabled through its port 2
// only: the SM's port 1 leads nowhere and sm roots up*/down* at the switch
// with the lowest GUID, sw1.
const secondPort = `caguid=0x2fab00000000300
Ca	2 "ca1"
[2](2fab00000000302)	"sw9"[2]

switchguid=0x2fab00000000900
Switch	4 "sw9"
[1]	"sw1"[1]
[2]	"ca1"[2](2fab00000000302)

switchguid=0x2fab00000000100
Switch	4 "sw1"
[1]	"sw9"[1]
`

// TestBenchRoot: the switch OpenSM's updn is rooted at in the bench is
// the one ibsm's up*/down* engines root their routes at: routing with that
// switch named as the root (RoutingOptions.RootGUID) gives the very tables
// sm's own choice gives, where some other root gives others.
func TestBenchRoot(t *testing.T) {
	parse := func(s string) func() (*topologies.Topology, error) {
		return func() (*topologies.Topology, error) { return topologies.Parse(strings.NewReader(s), "net") }
	}
	for _, tc := range []struct {
		name string
		topo func() (*topologies.Topology, error)
		want string // the root's name
	}{
		{"thesis8", func() (*topologies.Topology, error) { return benchNet("thesis8") }, "sw1"},
		{"irregular8", func() (*topologies.Topology, error) { return benchNet("irregular8") }, "sw1"},
		{"irregular16", func() (*topologies.Topology, error) { return benchNet("irregular16") }, "sw1"},
		{"irregular256", func() (*topologies.Topology, error) { return benchNet("irregular256") }, "sw1"},
		{"irregular16-seed7", func() (*topologies.Topology, error) { return topologies.Irregular(16, 4, 1, 7) }, "sw1"},
		{"fattree-4x2x3", func() (*topologies.Topology, error) { return topologies.FatTree(4, 2, 3) }, "leaf1"},
		{"fattree432", func() (*topologies.Topology, error) { return benchNet("fattree432") }, "leaf1"},
		{"switch-first", parse(switchFirst), "sw9"},
		{"ca-port-2", parse(secondPort), "sw1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := tc.topo()
			require.NoError(t, err)
			root, err := benchRoot(topo)
			require.NoError(t, err)
			require.Equal(t, tc.want, topo.Node(root).Name)

			smPort := 1
			if topo.Node(0).Type == topologies.Switch {
				smPort = 0
			}
			f, err := routing.NewFabric(topo, 0, smPort, 0)
			require.NoError(t, err)
			differs := false // some other root gives other tables
			for _, engine := range []string{"updn-pira", "updn-fera"} {
				lft := func(o routing.Options) [][]uint8 {
					e, err := routing.NewEngine(engine, o)
					require.NoError(t, err)
					r, err := e.Route(f)
					require.NoError(t, err)
					return r.LFT
				}
				own := lft(routing.Options{})
				assert.Equal(t, own, lft(routing.Options{RootGUID: topo.Node(root).GUID}), "%s rooted at %s", engine, topo.Node(root).Name)
				for i, n := range topo.Nodes() {
					if !differs && n.Type == topologies.Switch && i != root {
						differs = !slices.EqualFunc(own, lft(routing.Options{RootGUID: n.GUID}), slices.Equal)
					}
				}
			}
			assert.True(t, differs, "the root changes the tables")
		})
	}
}

// TestOpenSMArgs: OpenSM's updn gets a root GUID file naming ibsm's root
// switch; the other engines pick no root.
func TestOpenSMArgs(t *testing.T) {
	for _, tc := range []struct {
		engine string
		root   uint64
		args   []string // "FILE" stands for the root file
		file   string   // its content
		err    string
	}{
		{engine: "updn", root: 0x02fab00000000100, args: []string{"-R", "updn", "-a", "FILE"}, file: "0x02fab00000000100\n"},
		{engine: "updn", root: 0x1, args: []string{"-R", "updn", "-a", "FILE"}, file: "0x0000000000000001\n"},
		{engine: "updn", root: 0, err: "root switch"},
		{engine: "minhop", root: 0x02fab00000000100, args: []string{"-R", "minhop"}},
		{engine: "ftree", root: 0x02fab00000000100, args: []string{"-R", "ftree"}},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			dir := t.TempDir()
			args, err := opensmArgs(dir, tc.engine, tc.root)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			file := filepath.Join(dir, "root_guids")
			want := make([]string, len(tc.args))
			for i, a := range tc.args {
				want[i] = strings.ReplaceAll(a, "FILE", file)
			}
			assert.Equal(t, want, args)
			b, err := os.ReadFile(file)
			if tc.file == "" {
				assert.ErrorIs(t, err, os.ErrNotExist, "no root file for %s", tc.engine)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.file, string(b))
		})
	}
}

// Lines of OpenSM 3.3.23's logs, as it wrote them on ibsim.
const (
	logUpdnNoRoot = `Nov 26 14:30:53 228908 [12CD86C0] 0x02 -> updn_lid_matrices: disabling UPDN algorithm, no root nodes were found
Nov 26 14:30:53 228915 [12CD86C0] 0x01 -> ucast_mgr_route: updn: cannot build lid matrices
Nov 26 14:30:53 229049 [12CD86C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured on all switches
Nov 26 14:30:53 260000 [12CD86C0] 0x02 -> SUBNET UP
`
	logUpdn = `Nov 26 14:32:47 652899 [F2BAB6C0] 0x02 -> osm_ucast_mgr_process: updn tables configured on all switches
Nov 26 14:32:47 700000 [F2BAB6C0] 0x02 -> SUBNET UP
`
	logFtreeFailed = `Nov 26 14:31:53 749622 [794CC6C0] 0x01 -> fabric_mark_leaf_switches: ERR AB26: CN port 0x2fab00000000401 is connected to switch 0x2fab00000000100 with rank 1, while FatTree leaf rank is 3
Nov 26 14:31:53 749641 [794CC6C0] 0x01 -> ucast_mgr_route: ftree: cannot build lid matrices
Nov 26 14:31:53 749710 [794CC6C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured on all switches
`
	logMinhop = `Nov 26 14:31:53 601227 [354D96C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured on all switches
`
)

// TestCheckOpenSMRouting: a run whose OpenSM did not route with the
// engine asked for is an error, updn without a root said so by name.
func TestCheckOpenSMRouting(t *testing.T) {
	for _, tc := range []struct {
		name, log, engine, err string
	}{
		{"updn", logUpdn, "updn", ""},
		{"updn-no-root", logUpdnNoRoot, "updn", "no root nodes were found"},
		{"updn-minhop", logMinhop, "updn", "configured minhop tables, not updn"},
		{"updn-silent", "Nov 26 14:32:47 700000 [F2BAB6C0] 0x02 -> SUBNET UP\n", "updn", "does not say"},
		{"ftree-failed", logFtreeFailed, "ftree", "configured minhop tables, not ftree"},
		{"minhop", logMinhop, "minhop", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkOpenSMRouting(tc.log, tc.engine, 0x02fab00000000100)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// TestRunOpenSMRoot runs OpenSM's updn on ibsim (root): rooted at ibsm's
// root switch it routes with updn on an irregular network with a host at
// every switch; rooted at a GUID that is no switch it finds no root, falls
// back to minhop, and the run fails saying so.
func TestRunOpenSMRoot(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireProgram(t, "ibsim", "ibsim-utils")
	testenv.RequireProgram(t, "opensm", "opensm")
	topo, err := benchNet("irregular16")
	require.NoError(t, err)
	root, err := benchRoot(topo)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		root uint64
		err  string
	}{
		{"sm-switch", topo.Node(root).GUID, ""},
		{"not-a-switch", topo.Node(0).GUID, "no root nodes were found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := ibsimtest.StartT(t, topo)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r, err := runOpenSM(ctx, sim, t.TempDir(), "updn", tc.root, nil)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Positive(t, r.MsToUp)
		})
	}
}

// TestSubnetUpGoal: a fabric meets the goal only when both SMs were
// measured and both ratios are within it.
func TestSubnetUpGoal(t *testing.T) {
	run := []SMRun{{}}
	tests := []struct {
		name string
		c    SubnetUpCase
		met  bool
	}{
		{"met", SubnetUpCase{IBSM: SMStats{Runs: run, MsToUp: 10, SMPsWire: 90}, OpenSM: SMStats{Runs: run, MsToUp: 40, SMPsWire: 100}}, true},
		{"too slow", SubnetUpCase{IBSM: SMStats{Runs: run, MsToUp: 30, SMPsWire: 90}, OpenSM: SMStats{Runs: run, MsToUp: 40, SMPsWire: 100}}, false},
		{"zero baseline", SubnetUpCase{IBSM: SMStats{Runs: run, MsToUp: 10, SMPsWire: 90}, OpenSM: SMStats{Runs: run, MsToUp: 0, SMPsWire: 100}}, false},
		{"OpenSM failed", SubnetUpCase{IBSM: SMStats{Runs: run, MsToUp: 10}, OpenSM: SMStats{Error: "no SUBNET UP"}}, false},
		{"no runs", SubnetUpCase{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := subnetUpGoal(&tt.c)
			assert.Equal(t, tt.met, g.Measured && g.Met)
			assert.Equal(t, tt.met, tt.c.GoalMet)
			assert.Equal(t, tt.met, len(tt.c.Reasons) == 0, "%v", tt.c.Reasons)
		})
	}
}

// TestFlags: the bench compares defaults with defaults unless told
// otherwise (ibsm's --vl-tables default, QoS compared too); the flags'
// errors (package bench makes them usage errors) say what is wrong.
func TestFlags(t *testing.T) {
	parse := func(args ...string) (*Options, error) {
		fs := flag.NewFlagSet("sm", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		check := Flags(fs)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return check()
	}
	o, err := parse()
	require.NoError(t, err)
	assert.Equal(t, sm.DefaultVLTables, o.VLTables)
	assert.True(t, o.QoS)
	assert.Equal(t, []string{"fattree432", "irregular256"}, o.Fabrics)
	assert.Equal(t, []string{"irregular128", "irregular256"}, o.RouteNets)

	o, err = parse("--vl-tables", "set", "--qos=false", "--fabrics", "")
	require.NoError(t, err)
	assert.Equal(t, sm.VLTablesSet, o.VLTables)
	assert.False(t, o.QoS)
	assert.Empty(t, o.Fabrics)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--vl-tables", "spread"}, "spread"},
		{[]string{"--qos=maybe"}, "qos"},
		{[]string{"--runs", "0"}, "--runs"},
		{[]string{"--route-iters", "0"}, "--route-iters"},
		{[]string{"--routing", "lash"}, "lash"},
	} {
		_, err := parse(tc.args...)
		require.Error(t, err, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.want, "%v", tc.args)
	}
}

// TestOverDefaults: a QoS case's smps_wire_over_defaults is its median
// less the defaults case's, for each side measured in both.
func TestOverDefaults(t *testing.T) {
	run := []SMRun{{}}
	q := &SubnetUpCase{IBSM: SMStats{Runs: run, SMPsWire: 371}, OpenSM: SMStats{Runs: run, SMPsWire: 487}}
	def := &SubnetUpCase{IBSM: SMStats{Runs: run, SMPsWire: 195}, OpenSM: SMStats{Error: "no SUBNET UP"}}
	overDefaults(q, def)
	require.NotNil(t, q.IBSM.SMPsOverDefaults)
	assert.InDelta(t, 176, *q.IBSM.SMPsOverDefaults, 0)
	assert.Nil(t, q.OpenSM.SMPsOverDefaults, "OpenSM's defaults run failed")
	overDefaults(q, nil) // the defaults case failed as a whole: nothing to subtract
}

// TestMedianByAttr: each kind's median over the runs, a run without the
// kind counting 0.
func TestMedianByAttr(t *testing.T) {
	assert.Nil(t, medianByAttr([]SMRun{{}, {}}))
	got := medianByAttr([]SMRun{
		{SMPsByAttr: map[string]uint64{"Get NodeInfo": 10, "Set PortInfo": 4}},
		{SMPsByAttr: map[string]uint64{"Get NodeInfo": 12}},
		{SMPsByAttr: map[string]uint64{"Get NodeInfo": 11, "Set PortInfo": 6}},
	})
	assert.Equal(t, map[string]float64{"Get NodeInfo": 11, "Set PortInfo": 4}, got)
}

// TestCPUOf reads a process's CPU time from /proc: this one's grows as it
// spins; a process that is not there has none.
func TestCPUOf(t *testing.T) {
	before := cpuOf(os.Getpid())
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for cpuOf(os.Getpid()) <= before && time.Now().Before(deadline) {
		for i := range 1_000_000 {
			x += i
		}
	}
	assert.Greater(t, cpuOf(os.Getpid()), before, "%d", x)
	assert.Zero(t, cpuOf(1<<30))
}
