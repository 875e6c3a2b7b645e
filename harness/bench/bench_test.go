package bench

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/cli"
	"ibfab/topologies"
)

func TestProbePairs(t *testing.T) {
	hosts := func(n int) []string {
		var hs []string
		for i := range n {
			hs = append(hs, fmt.Sprintf("ca%d", i))
		}
		return hs
	}
	tests := []struct {
		hosts, pairs int
	}{
		{0, 0}, {1, 0}, {2, 2}, {8, 56}, {9, 20}, {32, 56}, {432, 56},
	}
	for _, tt := range tests {
		ps := probePairs(hosts(tt.hosts))
		assert.Len(t, ps, tt.pairs, "%d hosts", tt.hosts)
		seen := map[pair]bool{}
		for _, p := range ps {
			assert.NotEqual(t, p.src, p.dst)
			assert.False(t, seen[p], "%v twice", p)
			seen[p] = true
		}
	}
}

func ptr(x float64) *float64 { return &x }

// TestAssimilationVerdict: the goal is met only when every fault of every
// network was measured on both sides and ibsm's goal configuration was
// within the ratio, within 20 ms of its own account, and its runs within
// twice each other.
func TestAssimilationVerdict(t *testing.T) {
	faultWith := func(ibsm, osm, beyond, spread *float64) FaultResult {
		return FaultResult{Fault: "link", OpenSM: SMSide{MsDataPlane: osm},
			IBSM: []IBSMSide{{Discovery: goalConfig.discovery, Provisional: goalConfig.provisional,
				SMSide: SMSide{MsDataPlane: ibsm, DataPlaneSpread: spread}, MsBeyondAccount: beyond}}}
	}
	fault := func(ibsm, osm *float64) FaultResult { return faultWith(ibsm, osm, ptr(0), ptr(1)) }
	net := func(faults ...FaultResult) AssimilationFabric {
		return AssimilationFabric{Network: "irregular8", Faults: faults}
	}
	tests := []struct {
		name    string
		fabrics []AssimilationFabric
		met     bool
	}{
		{"no networks", nil, false},
		{"network failed", []AssimilationFabric{{Network: "irregular8", Error: "up: no"}}, false},
		{"OpenSM run failed", []AssimilationFabric{net(fault(ptr(10), nil))}, false},
		{"ibsm run failed", []AssimilationFabric{net(fault(nil, ptr(100)))}, false},
		{"zero baseline", []AssimilationFabric{net(fault(ptr(0), ptr(0)))}, false},
		{"one fault not met", []AssimilationFabric{net(fault(ptr(10), ptr(100)), fault(ptr(50), ptr(100)))}, false},
		{"goal configuration missing", []AssimilationFabric{net(FaultResult{Fault: "link", OpenSM: SMSide{MsDataPlane: ptr(100)}})}, false},
		{"all met", []AssimilationFabric{net(fault(ptr(10), ptr(100)), fault(ptr(20), ptr(100)))}, true},
		{"dark past its own account", []AssimilationFabric{net(faultWith(ptr(10), ptr(100), ptr(30), ptr(1)))}, false},
		{"no account", []AssimilationFabric{net(faultWith(ptr(10), ptr(100), nil, ptr(1)))}, false},
		{"runs spread", []AssimilationFabric{net(faultWith(ptr(10), ptr(100), ptr(5), ptr(3)))}, false},
		{"0 counts as the threshold, within", []AssimilationFabric{net(fault(ptr(0), ptr(25)))}, true},
		{"0 counts as the threshold, beyond", []AssimilationFabric{net(fault(ptr(0), ptr(24)))}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := assimilationVerdict(tt.fabrics, 5)
			assert.Equal(t, tt.met, v.Met, "%v", v.Reasons)
			assert.Equal(t, tt.met, len(v.Reasons) == 0, "%v", v.Reasons)
		})
	}
}

func TestHotSpotCase(t *testing.T) {
	tests := []struct {
		name string
		rep  HotSpotReport
		met  bool
	}{
		{"failed", HotSpotReport{Error: "up: no"}, false},
		{"nothing sent", HotSpotReport{RateVsPaced: 1}, false},
		{"slow", HotSpotReport{Sent: 10, RateVsPaced: 0.5}, false},
		{"drops", HotSpotReport{Sent: 10, RateVsPaced: 1, Drops: map[string]uint64{"sw1[1] vl15_overflow": 1}}, false},
		{"met", HotSpotReport{Sent: 10, RateVsPaced: 0.99, Drops: map[string]uint64{}}, true},
	}
	for _, tt := range tests {
		c := hotSpotCase(&tt.rep)
		assert.Equal(t, tt.met, c.Measured && c.Met, tt.name)
	}
}

// TestMedian: none is nil, not 0, so a missing side is never a baseline.
func TestMedian(t *testing.T) {
	assert.Nil(t, median(nil))
	assert.Equal(t, 2.0, *median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, *median([]float64{4, 1, 2, 3}))
	assert.Nil(t, ratioOf(ptr(1), nil))
	assert.Nil(t, ratioOf(ptr(1), ptr(0)))
	assert.Equal(t, 0.5, *ratioOf(ptr(1), ptr(2)))
	assert.Nil(t, spread(nil, 50))
	assert.Equal(t, 4.0, *spread([]float64{0, 200, 100}, 50), "a 0 counts as the floor")
}

// TestBadArguments: every bad command line is a usage error, before any
// fabric is brought up (as non-root too).
func TestBadArguments(t *testing.T) {
	tests := [][]string{
		{},
		{"nosuch"},
		{"assimilation", "--sizes", "8,x"},
		{"assimilation", "--sizes", "0"},
		{"assimilation", "--probe-interval", "10us"},
		{"assimilation", "--runs", "0"},
		{"assimilation", "--configs", "some"},
		{"assimilation", "--fattree", "100"},
		{"assimilation", "--sizes", "none"},
		{"fabric", "--scales", "-1"},
		{"fabric", "--idle-seconds", "0"},
		{"opensm", "--nets", "thesis9"},
		{"opensm", "--runs", "-2"},
		{"hotspot", "--seconds", "1"},
		{"hotspot", "extra"},
		{"hotspot", "--name", "a/b"},
	}
	for _, args := range tests {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(&cli.Env{Stdout: &out, Stderr: &errOut}, args)
			var ue *cli.UsageError
			require.ErrorAs(t, err, &ue)
			assert.Empty(t, out.String())
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"assimilation", "-h"}, {"fabric", "-h"}, {"opensm", "-h"}, {"hotspot", "-h"}} {
		var out bytes.Buffer
		require.NoError(t, run(&cli.Env{Stdout: &out, Stderr: &out}, args), "%v", args)
		assert.Contains(t, out.String(), "usage: ibfab bench", "%v", args)
	}
}

// TestFaultPairs: on a network with more hosts than are probed, the hosts
// beside the fault are among them, so that a probed route crosses it: the
// hosts at both ends of a cut link, those of a dead switch's neighbours.
func TestFaultPairs(t *testing.T) {
	topo, err := topologies.Irregular(32, 4, 1, 1) // as the benchmark's irregular32
	require.NoError(t, err)
	sm := topo.Node(0).Name
	hosts := topo.Reachable(sm, nil)
	require.Greater(t, len(hosts), probeAllPairs)
	probed := func(ps []pair) map[string]bool {
		m := map[string]bool{}
		for _, p := range ps {
			m[p.src] = true
		}
		return m
	}
	l, ok := topo.CycleLink(sm)
	require.True(t, ok)
	cut := &topologies.Damage{Cut: []topologies.Link{l}}
	ps := faultPairs(topo, topo.Reachable(sm, cut), cut)
	assert.Len(t, ps, probeAllPairs*(probeAllPairs-1))
	got := probed(ps)
	for _, end := range []int{l.A.Node, l.B.Node} {
		for _, h := range topo.HostsOf(topo.Node(end).Name) {
			assert.True(t, got[h], "%s beside the cut link", h)
		}
	}
	victim, ok := topo.Victim(sm, nil)
	require.True(t, ok)
	dead := &topologies.Damage{Dead: map[string]bool{victim: true}}
	got = probed(faultPairs(topo, topo.Reachable(sm, dead), dead))
	vi, _ := topo.Lookup(victim)
	beside := 0
	for _, n := range topo.Neighbors(vi) {
		for _, h := range topo.HostsOf(topo.Node(n).Name) {
			if got[h] {
				beside++
			}
		}
	}
	assert.Equal(t, min(probeAllPairs/2, len(faultHosts(topo, topo.Reachable(sm, dead), dead))), beside, "hosts of %s's neighbours", victim)
	for _, h := range topo.HostsOf(victim) {
		assert.False(t, got[h], "%s, the dead switch's host, probed", h)
	}
	// Without a fault the sample is the even one.
	assert.Equal(t, probePairs(hosts), faultPairs(topo, hosts, nil))
}
