package smfabric_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/sm"
	"ibfab/topologies"
)

// strategy is one SM configuration the changes run under.
type strategy struct {
	name string
	cfg  sm.Config
}

// strategies are the protected distributions with partial discovery, and
// provisional routes once.
var strategies = []strategy{
	{"cut-deps", sm.Config{AssimilationConfig: sm.AssimilationConfig{Distribution: sm.DistCutDeps}}},
	{"cut-ports", sm.Config{AssimilationConfig: sm.AssimilationConfig{Distribution: sm.DistCutPorts}}},
	{"full-deactivation", sm.Config{AssimilationConfig: sm.AssimilationConfig{Distribution: sm.DistFullDeactivation}}},
	{"provisional", sm.Config{
		AssimilationConfig: sm.AssimilationConfig{Distribution: sm.DistCutDeps, Provisional: true},
	}},
}

// config completes s's configuration: FERa's routes (the thesis's),
// detection by traps (every change here makes a neighbour send Trap 128),
// partial discovery, a long SMP timeout and OpenSM's four SMPs in flight:
// the test is about what the SM does, not how fast. On a busy machine a
// switch process may take more than the default 200 ms to answer (a
// periodic sweep then reads the silence as a switch gone), and 16 SMPs in
// flight overflow the 8 packets of VL15 buffer at a port whose switch
// process waits for the CPU.
func (s strategy) config() sm.Config {
	c := s.cfg
	c.Timeout = time.Second
	c.Window = 4
	c.Routing = "updn-fera"
	c.Discovery = sm.DiscoveryPartial
	c.Detect = sm.DetectTrap
	return c
}

// TestAssimilateThesis8 runs the changes on the default fabric (the
// thesis's network, the SM at ca4) under every strategy.
func TestAssimilateThesis8(t *testing.T) {
	for _, s := range strategies {
		t.Run(s.name, func(t *testing.T) {
			testChanges(t, "as8"+s.name[:2], topologies.Default(), "ca4", s, topologies.Thesis8AddPiece())
		})
	}
}

// TestAssimilateIrregular16 runs the changes on an irregular network of 16
// switches with one host each under cut-deps only: 32 processes with
// traffic keep both cores of a CI machine busy for minutes per strategy,
// and the other strategies differ from cut-deps in what the thesis8 cases
// already cover.
func TestAssimilateIrregular16(t *testing.T) {
	topo, err := topologies.Irregular(16, 4, 1, 1)
	require.NoError(t, err)
	s := strategies[0]
	testChanges(t, "as16"+s.name[:2], topo, topo.Node(0).Name, s, nil)
}

// testChanges brings topo up under an SM at smNode and, with UD traffic
// running between the hosts, cuts a link between two switches, kills a
// switch with hosts, starts that switch again and, given a piece, hot-adds
// it (ibfab add: a switch with hosts cabled to running switches). After
// each, the SM
// assimilates the change (partial discovery, the strategy's
// distribution, no full sweep), every state its distribution goes through
// passes the verifier, and every ordered pair of hosts still connected to
// the SM exchanges UD traffic.
func testChanges(t *testing.T, suffix string, topo *topologies.Topology, smNode string, s strategy, piece *topologies.Piece) {
	cfg := s.config()
	// The SM's HCA holds its SMPs as long as the SM's own timeout: its
	// default, OpenSM's 200 ms, would cut the SM's second short.
	f := fabrictest.Up(t, suffix, topo, harness.UpOptions{
		NodeArgsFor: map[string][]string{smNode: {"--sim-timeout", cfg.Timeout.String()}}})
	r := startSM(t, f, smNode, cfg)
	d := &topologies.Damage{Dead: map[string]bool{}}
	t.Cleanup(func() {
		if t.Failed() {
			_, why := f.Status().Settled(f.Topo, d)
			t.Logf("SM results:%s\nunsettled: %s\ntraps:%s", describe(r.since(0)), why, diagnose(f, r))
		}
	})
	waitSettled(t, f, d)
	f.CheckAllPairs(f.Hosts())

	l, ok := topo.CycleLink(smNode)
	require.True(t, ok, "no switch link on a cycle away from the SM's switch")
	victim, ok := topo.Victim(smNode, &topologies.Damage{Cut: []topologies.Link{l}})
	require.True(t, ok, "no switch with hosts away from the SM's")
	steps := []struct {
		name  string
		apply func()
	}{
		{"link " + fabrictest.PortName(topo, l.A) + "-" + fabrictest.PortName(topo, l.B) + " cut", func() {
			require.NoError(t, harness.SetLink(f.Name, topo.Node(l.A.Node).Name, l.A.Port, false))
			d.Cut = append(d.Cut, l)
		}},
		{victim + " killed", func() {
			require.NoError(t, harness.Kill(f.Name, victim))
			d.Dead[victim] = true
		}},
		{victim + " restarted", func() {
			_, _, err := harness.Restart(f.Name, victim, 0)
			require.NoError(t, err)
			delete(d.Dead, victim)
		}},
	}
	if piece != nil {
		steps = append(steps, struct {
			name  string
			apply func()
		}{piece.Attachments[0].Node + " hot-added", func() { f.Add(piece, harness.AddOptions{}) }})
	}
	for _, st := range steps {
		n0 := r.count()
		states0, _ := r.checked()
		before := f.Hosts() // a hot-add brings hosts that run no traffic
		startTraffic(f, before)
		t0 := time.Now()
		st.apply()
		survivors := f.Topo.Reachable(smNode, d)
		fabrictest.Wait(t, 60*time.Second, st.name+": assimilated, ports settled", func() bool {
			rs := r.since(n0)
			if len(rs) == 0 || !rs[len(rs)-1].SubnetUp {
				return false
			}
			ok, _ := f.Status().Settled(f.Topo, d)
			return ok
		})
		settle := time.Since(t0)
		f.StopTraffic(before)
		f.CheckAllPairs(survivors)

		rs := r.since(n0)
		states, bad := r.checked()
		assert.Empty(t, bad, "%s: states the verifier rejects", st.name)
		assert.Greater(t, states, states0, "%s: no table state reported", st.name)
		assimilations := 0
		for _, res := range rs {
			if !assert.Equal(t, "assimilation", res.Event, "%s: a full sweep, not an assimilation:%s", st.name, describe(rs)) {
				continue
			}
			assimilations++
			assert.Contains(t, []sm.Trigger{sm.TriggerTrap, sm.TriggerSweep}, res.Trigger)
			assert.Equal(t, sm.DiscoveryPartial, res.Discovery)
			assert.Equal(t, cfg.Distribution, res.Distribution)
			assert.Equal(t, cfg.Provisional, res.Provisional)
			assert.NotZero(t, res.SMPsTotal)
			assert.NotNil(t, res.MsToConnectivity)
			assert.Empty(t, res.Problems)
		}
		require.NotZero(t, assimilations, "%s:%s", st.name, describe(rs))
		t.Logf("%s: %d hosts connected, settled in %v, %d table states checked;%s",
			st.name, len(survivors), settle.Round(time.Millisecond), states-states0, describe(rs))
	}
	assert.Equal(t, len(f.Hosts()), len(f.Topo.Reachable(smNode, d)), "every host is back after the restart")
}

// waitSettled waits until the fabric's ports are as d makes them.
func waitSettled(t testing.TB, f *fabrictest.Fabric, d *topologies.Damage) {
	t.Helper()
	var why string
	defer func() {
		if t.Failed() {
			t.Logf("last unsettled port: %s", why)
		}
	}()
	fabrictest.Wait(t, 60*time.Second, "ports settled", func() bool {
		var ok bool
		ok, why = f.Status().Settled(f.Topo, d)
		return ok
	})
}
