package sm_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/sm"
	"ibfab/sm/routing"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// change is a change to a running fabric, and what the SM should see.
type change struct {
	name  string
	topo  func(t *testing.T) *bench
	apply func(t *testing.T, b *bench)
}

var changes = []change{
	{"link cut", func(t *testing.T) *bench { return newBench(t, topologies.Thesis8(), 0, 1) },
		func(t *testing.T, b *bench) { require.NoError(t, b.port.SetLink("sw2", 3, false)) }},
	{"switch killed", func(t *testing.T) *bench { return newBench(t, topologies.Thesis8(), 0, 1) },
		func(t *testing.T, b *bench) { require.NoError(t, b.port.PowerOff("sw2")) }},
	{"cut node killed", func(t *testing.T) *bench { return newBench(t, topologies.Thesis8(), 0, 1) },
		func(t *testing.T, b *bench) { require.NoError(t, b.port.PowerOff("sw6")) }},
	{"switch restarted", func(t *testing.T) *bench { return newBench(t, topologies.Thesis8(), 0, 1) },
		func(t *testing.T, b *bench) {
			require.NoError(t, b.port.PowerOff("sw2"))
			require.NoError(t, b.port.PowerOn("sw2"))
		}},
	{"CA restarted", func(t *testing.T) *bench { return newBench(t, topologies.Thesis8(), 0, 1) },
		func(t *testing.T, b *bench) {
			require.NoError(t, b.port.PowerOff("ca12"))
			require.NoError(t, b.port.PowerOn("ca12"))
		}},
	{"switch added", thesisPlus,
		func(t *testing.T, b *bench) { require.NoError(t, b.port.PowerOn("sw16", "ca17", "ca18")) }},
	{"piece cabled", func(t *testing.T) *bench { return newBench(t, topologies.Thesis8(), 0, 1) },
		func(t *testing.T, b *bench) {
			_, err := b.port.AddPiece(topologies.Thesis8AddPiece())
			require.NoError(t, err)
		}},
}

// TestAssimilateStrategies runs every change under every strategy, with
// partial and full discovery, with and without provisional routes, by
// sweep and by trap: the subnet comes back with every surviving port
// connected, and every forwarding state the distribution goes through
// (taken together, as packets of one state may still be in flight in the
// next) is deadlock-free for the protected strategies.
func TestAssimilateStrategies(t *testing.T) {
	for _, ch := range changes {
		for _, dist := range sm.Distributions() {
			for _, disc := range []sm.Discovery{sm.DiscoveryPartial, sm.DiscoveryFull} {
				for _, prov := range []bool{false, true} {
					for _, trig := range []sm.Trigger{sm.TriggerSweep, sm.TriggerTrap} {
						name := ch.name + "/" + dist.String() + "/" + disc.String() + "/" + trig.String()
						if prov {
							name += "/provisional"
						}
						t.Run(name, func(t *testing.T) {
							testStrategy(t, ch, dist, disc, trig, prov)
						})
					}
				}
			}
		}
	}
}

func testStrategy(t *testing.T, ch change, dist sm.Distribution, disc sm.Discovery, trig sm.Trigger, prov bool) {
	b := ch.topo(t)
	var check sm.TransitionCheck
	var stages []string
	bad := 0
	cfg := sm.Config{
		RoutingConfig: sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{
			Distribution: dist,
			Discovery:    disc,
			Provisional:  prov,
			OnTables: func(st *sm.TableState) {
				stages = append(stages, st.Stage)
				rep := check.Add(st)
				if dist != sm.DistNone && !rep.DeadlockFree() && bad < 3 {
					bad++
					t.Errorf("%s: %d down-up turns, cycle %v", st.Stage, rep.DownUp, rep.Cycle)
				}
				// Once the provisional tables are in and every port active,
				// every state is connected: the definitive stream makes no
				// U-turn.
				if (st.Stage == "definitive" || st.Stage == "final" || st.Stage == "active" || st.Stage == "provisional-active") &&
					!sm.VerifyState(st).Connected() && bad < 3 {
					bad++
					t.Errorf("%s: %v", st.Stage, sm.VerifyState(st).Err())
				}
			},
		},
	}
	if trig == sm.TriggerTrap {
		cfg.Detect = sm.DetectTrap
	} else {
		cfg.Detect = sm.DetectSweep
	}
	s := upAndQuiet(t, b, cfg)
	check = sm.TransitionCheck{}
	ch.apply(t, b)
	if trig == sm.TriggerTrap {
		require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
	}
	res := assimilate(t, s, trig)
	assert.Equal(t, dist, res.Distribution)
	assert.NotNil(t, res.MsToConnectivity)
	require.NotEmpty(t, stages)
	if prov {
		assert.Equal(t, "final", stages[len(stages)-1])
		assert.Contains(t, stages, "provisional-protected")
		assert.Equal(t, "updn-pira", res.ProvisionalRouting)
	} else {
		assert.Equal(t, "active", stages[len(stages)-1])
	}
	checkUp(t, b.f)
	// Everything the change set off (the SM's own deactivations
	// included) is seen as no change.
	quiet(t, s)
	checkUp(t, b.f)
}

// TestDistributionDeadlock is the deadlock of thesis 7.1.1 on a case
// built for it: on a seeded irregular network, cutting one link moves the
// cut node of a cycle. Sent unprotected, the new tables meet the old ones
// in states whose dependencies, taken together, close a cycle of channels
// (and take turns the new graph forbids); under every protected strategy
// no state does. (The soft fabric turns the cycle into stuck credits.)
func TestDistributionDeadlock(t *testing.T) {
	topo := mustGen(t)(topologies.Irregular(8, 4, 1, 1))
	sw7, ok := topo.Lookup("sw7")
	require.True(t, ok)
	cut := 0
	for p := 1; p <= topo.Node(sw7).NumPorts && cut == 0; p++ {
		if peer, ok := topo.Peer(topologies.PortRef{Node: sw7, Port: p}); ok && topo.Node(peer.Node).Type == topologies.Switch {
			cut = p
		}
	}
	require.NotZero(t, cut)
	for _, dist := range sm.Distributions() {
		t.Run(dist.String(), func(t *testing.T) {
			b := newBench(t, topo, 0, 1)
			var check sm.TransitionCheck
			var union *routing.Report
			s := upAndQuiet(t, b, sm.Config{
				RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
				AssimilationConfig: sm.AssimilationConfig{Distribution: dist, Detect: sm.DetectSweep, OnTables: func(st *sm.TableState) { union = check.Add(st) }},
			})
			check = sm.TransitionCheck{}
			require.NoError(t, b.port.SetLink("sw7", uint8(cut), false))
			assimilate(t, s, sm.TriggerSweep)
			require.NotNil(t, union)
			if dist == sm.DistNone {
				assert.NotEmpty(t, union.Cycle, "a cycle of channel dependencies")
				assert.Positive(t, union.DownUp)
				t.Logf("cycle: %v", union.Cycle)
			} else {
				assert.True(t, union.DeadlockFree(), "%d down-up turns, cycle %v", union.DownUp, union.Cycle)
			}
			checkUp(t, b.f)
		})
	}
}

// TestLIDActivation sends the activation SMPs LID-routed, the tables
// being in place by then.
func TestLIDActivation(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := b.newSM(t, sm.Config{
		AssimilationConfig: sm.AssimilationConfig{LIDActivation: true, Distribution: sm.DistFullDeactivation, Detect: sm.DetectSweep},
	})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	checkUp(t, b.f)
	quiet(t, s)
	lidRouted, directed := 0, 0
	b.port.SetFilter(func(m madport.MAD) bool {
		h := mad.MAD(m.Data)
		if h.AttrID() == mad.AttrPortInfo && h.Method() == mad.MethodSet {
			if h.MgmtClass() == mad.ClassSubnLID {
				lidRouted++
			} else {
				directed++
			}
		}
		return true
	})
	require.NoError(t, b.port.PowerOff("sw9"))
	res = assimilate(t, s, sm.TriggerSweep)
	// Full deactivation: the ports set Down directed, brought back
	// (Armed, Active) LID-routed; activation also settles, directed, what
	// the deactivation made the switches report.
	assert.Equal(t, res.PortsDeactivated, directed)
	assert.GreaterOrEqual(t, int(smps(t, res, sm.PhaseActivation)), lidRouted)
	assert.Positive(t, lidRouted)
	checkUp(t, b.f)
}

// TestRunAssimilates runs the SM: a switch dies and comes back; each
// change is one assimilation, by trap and by sweep.
func TestRunAssimilates(t *testing.T) {
	for _, detect := range []sm.Detect{sm.DetectTrap, sm.DetectSweep, sm.DetectBoth} {
		t.Run(detect.String(), func(t *testing.T) {
			b := newBench(t, topologies.Thesis8(), 0, 1)
			s := b.newSM(t, sm.Config{AssimilationConfig: sm.AssimilationConfig{Detect: detect, SweepFactor: 10}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var got []*sm.Result
			err := s.Run(ctx, func(res *sm.Result) {
				got = append(got, res)
				switch len(got) {
				case 1:
					require.NoError(t, b.port.PowerOff("sw10"))
				case 2:
					checkUp(t, b.f)
					require.NoError(t, b.port.PowerOn("sw10"))
				case 3:
					cancel()
				}
			})
			require.ErrorIs(t, err, context.Canceled)
			require.Len(t, got, 3)
			assert.Equal(t, "sweep", got[0].Event)
			for _, a := range got[1:] {
				assert.Equal(t, "assimilation", a.Event)
				assert.True(t, a.SubnetUp, a.Reason)
				if detect != sm.DetectBoth {
					assert.Equal(t, detect.String(), a.Trigger.String(), "the only trigger detection has")
				}
			}
			assert.Equal(t, 2, got[1].NodesRemoved, "sw10 and ca15")
			assert.Equal(t, 2, got[2].NodesAdded)
			checkUp(t, b.f)
		})
	}
}

// TestPrefixFallback: on a fabric whose switches drop directed-route SMPs
// on their LID-routed prefix, partial discovery gives prefixes up after
// the first goes unanswered and the same SMP purely directed is answered,
// and routes purely directed.
func TestPrefixFallback(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := upAndQuiet(t, b, sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep},
		TxnConfig:          sm.TxnConfig{Retries: 1},
	})
	b.port.SetFilter(func(m madport.MAD) bool {
		return mad.MAD(m.Data).MgmtClass() != mad.ClassSubnDirected || mad.DRSMP(m.Data).DrSLID() == mad.PermissiveLID
	})
	require.NoError(t, b.port.PowerOff("sw2"))
	res := assimilate(t, s, sm.TriggerSweep)
	assert.Equal(t, 2, res.NodesRemoved)
	assert.Equal(t, 2, int(b.port.Stats().Filtered), "the first probe and its one retry")
	assert.Contains(t, strings.Join(res.Warnings, "\n"), "LID-routed prefix")
	checkUp(t, b.f)
}
