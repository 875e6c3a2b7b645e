package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/topologies"
)

func TestSamplerCountsRestartedCounters(t *testing.T) {
	s := newSampler("x", time.Now())
	var smp Sample
	k := counterKey{"ca1[1]", "rx", ""}
	require.EqualValues(t, 10, s.add(k, 10, &smp))
	require.EqualValues(t, 15, s.add(k, 15, &smp))
	require.Empty(t, smp.Resets)
	// The node restarted: its counter starts from zero again.
	require.EqualValues(t, 18, s.add(k, 3, &smp))
	require.Equal(t, []string{"ca1[1] rx 15→3"}, smp.Resets)
}

func TestBins(t *testing.T) {
	ss := []Sample{
		{T: 0, Tx: 0, Rx: 0, Drops: map[string]uint64{}},
		{T: 0.5, Tx: 100, Rx: 90, Drops: map[string]uint64{"unroutable": 2}},
		{T: 1, Tx: 150, Rx: 150, Drops: map[string]uint64{"unroutable": 2}},
	}
	require.Equal(t, []Bin{
		{T0: 0, T1: 0.5, Sent: 100, Received: 90, Dropped: map[string]uint64{"unroutable": 2}},
		{T0: 0.5, T1: 1, Sent: 50, Received: 60},
	}, bins(ss, 0.5))
	// The bin edges fall between the samples: counts are interpolated.
	require.Equal(t, []Bin{
		{T0: 0, T1: 0.4, Sent: 80, Received: 72, Dropped: map[string]uint64{"unroutable": 2}},
		{T0: 0.4, T1: 0.8, Sent: 50, Received: 54},
		{T0: 0.8, T1: 1, Sent: 20, Received: 24},
	}, bins(ss, 0.4))
	w := window(ss[0], ss[2])
	require.Equal(t, int64(0), w.Lost)
	require.Equal(t, map[string]uint64{"unroutable": 2}, w.Drops)
	require.Equal(t, map[string]uint64{"crc_error": 1}, DataDrops(map[string]uint64{"crc_error": 1, vl15Cause: 4}))
}

// TestExpectedAndSurvivors: the steps' end state on the default fabric.
func TestExpectedAndSurvivors(t *testing.T) {
	hosts := []string{"ca4", "ca7", "ca11", "ca12", "ca13", "ca14", "ca15"}
	for _, c := range []struct {
		name      string
		steps     []Step
		dead      []string
		down      []string
		survivors int
	}{
		{"link down", []Step{{Action: Action{Kind: LinkDown, Node: "sw2", Port: 3}}}, nil, []string{"sw2[3]", "sw6[1]"}, 7},
		{"link down and up", []Step{{Action: Action{Kind: LinkDown, Node: "sw2", Port: 3}}, {At: time.Second, Action: Action{Kind: LinkUp, Node: "sw6", Port: 1}}}, nil, nil, 7},
		{"switch killed", []Step{{Action: Action{Kind: KillNode, Node: "sw6"}}}, []string{"sw6"}, nil, 6},
		{"leaf cut off", []Step{{Action: Action{Kind: LinkDown, Node: "sw3", Port: 2}}}, nil, []string{"sw3[2]", "sw8[1]"}, 6},
		{"killed and restarted", []Step{{Action: Action{Kind: KillNode, Node: "sw6"}}, {At: time.Second, Action: Action{Kind: Restart, Node: "sw6"}}}, nil, nil, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &SuiteRun{s: &Suite{SMNode: "ca4", Steps: c.steps}, topo: topologies.Default()}
			dead, down := r.expected()
			require.ElementsMatch(t, c.dead, Keys(dead))
			require.ElementsMatch(t, c.down, Keys(down))
			require.Len(t, r.survivors(hosts, dead, down), c.survivors)
		})
	}
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	ms := 12.5
	rep := &Report{Suite: "x", Summary: "a test", Passed: false,
		Checks: []Check{{Name: "a", OK: true, Detail: "fine"}, {Name: "b", OK: false, Detail: "a|b"}},
		Events: []Event{{T: 1, What: "link-down sw1[1]", Mark: "step"}, {T: 2, What: "restored", Mark: "restored"}},
		Bins:   []Bin{{T0: 0, T1: 1, Sent: 10, Received: 10}, {T0: 1, T1: 2, Sent: 10, Received: 3}, {T0: 2, T1: 3, Sent: 10, Received: 12}},
		SM:     []SMResult{{}},
	}
	rep.SM[0].Event, rep.SM[0].MsToConnectivity = "assimilation", &ms
	rep.SMKind = SMIbsm
	rep.Phases = phaseReport(rep)
	require.NoError(t, writeReport(dir, rep))
	for _, f := range []string{"report.json", "traffic.svg", "traffic.png", "phases.svg", "phases.png", "index.md"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err)
		require.NotZero(t, st.Size(), f)
	}
	svg, _ := os.ReadFile(filepath.Join(dir, "traffic.svg"))
	require.Contains(t, string(svg), "<svg")
	md, _ := os.ReadFile(filepath.Join(dir, "index.md"))
	require.Contains(t, string(md), "# Suite x: FAILED")
	require.Contains(t, string(md), "| b | **FAIL** | a/b |")
	require.Contains(t, string(md), "| assimilation |  | false |  | 0.0 | 0 | 12.5 |")
	require.Contains(t, string(md), "![time and SMPs per phase](phases.svg)")
	require.Contains(t, string(md), "[ibsm.jsonl](ibsm.jsonl)")

	// OpenSM: a skipped check, SMPs per sweep only, its log linked.
	dir = t.TempDir()
	rep = &Report{Suite: "y", SMKind: SMOpenSM, SMNode: "ca4", Passed: true, SM: []SMResult{{}}}
	rep.skip("verifier holds", "not ibsm")
	rep.SM[0].Event, rep.SM[0].SubnetUp, rep.SM[0].SMPsTotal = "sweep", true, 480
	rep.SM[0].Phases = []sm.Phase{{Name: "discovery", Ms: 60}, {Name: "lid-assignment", Ms: 12}}
	rep.Phases = phaseReport(rep)
	require.NoError(t, writeReport(dir, rep))
	md, _ = os.ReadFile(filepath.Join(dir, "index.md"))
	require.Contains(t, string(md), "opensm on ca4 (Debian's OpenSM")
	require.Contains(t, string(md), "| verifier holds | skipped | not ibsm |")
	require.Contains(t, string(md), "| sweep |  | true | discovery 60.0, lid-assignment 12.0 | 0.0 | 480 |  |")
	require.Contains(t, string(md), "per phase not available")
	require.Contains(t, string(md), "[opensm/opensm.log](opensm/opensm.log)")
	_, err := os.Stat(filepath.Join(dir, "phases.png"))
	require.NoError(t, err)
}

// TestIbsmHCAArgs: the SM's HCA times SMPs out when ibsm does, whichever
// way its --timeout is spelt, and at ibsm's default without one.
func TestIbsmHCAArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "200ms"},
		{DefaultSMArgs, "1s"},
		{BasicSMArgs, "1s"},
		{[]string{"--timeout=2s", "--retries", "3"}, "2s"},
		{[]string{"-timeout", "500ms"}, "500ms"},
		{[]string{"--retries", "3", "--timeout"}, "200ms"}, // no value: ibsm refuses it anyway
		{[]string{"--sweep-interval", "timeout"}, "200ms"},
	} {
		require.Equal(t, []string{"--sim-timeout", tc.want}, IbsmHCAArgs(tc.args), "%q", tc.args)
	}
}

// TestPlaceOnHosts: on 2 or 3 hosts every link a shipped suite fails runs
// between hosts; bad suite links and hot-adds are refused with what is
// wrong.
func TestPlaceOnHosts(t *testing.T) {
	for _, s := range Builtin() {
		for _, hosts := range []int{1, 2, 3} {
			topo, err := s.Topology()
			require.NoError(t, err)
			host, err := s.PlaceOnHosts(topo, hosts)
			if s.Name == "switch-hot-add" && hosts > 1 {
				require.ErrorContains(t, err, "adds nodes")
				continue
			}
			require.NoError(t, err, "%s on %d", s.Name, hosts)
			if hosts == 1 {
				assert.Nil(t, host)
				continue
			}
			for _, st := range s.Steps {
				if st.Kind != LinkDown && st.Kind != LinkUp && st.Kind != LinkFlap {
					continue
				}
				i, _ := topo.Lookup(st.Node)
				peer, ok := topo.Peer(topologies.PortRef{Node: i, Port: st.Port})
				require.True(t, ok)
				assert.NotEqual(t, host[i], host[peer.Node], "%s on %d: %v on one host", s.Name, hosts, st.Action)
			}
		}
	}
	link, _ := Lookup("link-failure")
	topo, err := link.Topology()
	require.NoError(t, err)
	for _, c := range []struct {
		name  string
		hosts int
		act   Action
		want  string
	}{
		{"negative hosts", -1, Action{Kind: LinkDown, Node: "sw2", Port: 3}, "want 1 or more"},
		{"unknown node", 2, Action{Kind: LinkDown, Node: "sw99", Port: 3}, `no node "sw99"`},
		{"uncabled port", 2, Action{Kind: LinkFlap, Node: "sw8", Port: 3}, "not cabled"},
		{"every port", 2, Action{Kind: LinkDown, Node: "sw2"}, "name the port"},
		{"a CA's link", 2, Action{Kind: LinkDown, Node: "ca4", Port: 1}, "a CA stays with"},
		{"more hosts than switches", 9, Action{Kind: LinkDown, Node: "sw2", Port: 3}, "9 hosts for 8 switches"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := link
			s.Steps = []Step{{Action: c.act}}
			_, err := s.PlaceOnHosts(topo, c.hosts)
			require.ErrorContains(t, err, c.want)
		})
	}
}
