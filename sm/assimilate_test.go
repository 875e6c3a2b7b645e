package sm_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/port"
	"ibfab/sm"
	"ibfab/sm/routing"
	"ibfab/sm/routing/routingtest"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// upAndQuiet brings the bench's subnet up with cfg and lets the traps of
// the bring-up (switches report their links coming up as soon as they
// know the SM) come in and be repressed.
func upAndQuiet(t *testing.T, b *bench, cfg sm.Config) *sm.SM {
	t.Helper()
	s := b.newSM(t, cfg)
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	quiet(t, s)
	return s
}

// quiet serves until no trap is left repeating, then lets a sweep see
// that nothing changed.
func quiet(t *testing.T, s *sm.SM) {
	t.Helper()
	ctx := context.Background()
	for range 3 {
		require.NoError(t, s.Serve(ctx, sm.DefaultSweepInterval))
	}
	a, err := s.Assimilate(ctx, sm.TriggerSweep)
	require.ErrorIs(t, err, sm.ErrNoChange)
	require.Nil(t, a)
}

func assimilate(t *testing.T, s *sm.SM, trigger sm.Trigger) *sm.Result {
	t.Helper()
	res, err := s.Assimilate(context.Background(), trigger)
	require.NoError(t, err)
	require.NotNil(t, res, "a change was found")
	require.True(t, res.SubnetUp, "%s: %v", res.Reason, res.Changes)
	return res
}

func smps(t *testing.T, res *sm.Result, name string) uint64 {
	t.Helper()
	p, ok := res.Phase(name)
	require.True(t, ok, "phase %s", name)
	return p.SMPs
}

// thesisPlus is the thesis network with Fig. 68's piece cabled and
// powered off: the SM finds the 15 devices of Thesis8.
func thesisPlus(t *testing.T) *bench {
	t.Helper()
	topo, err := topologies.Thesis8().Extend(topologies.Thesis8AddPiece())
	require.NoError(t, err)
	b := newBench(t, topo, 0, 1)
	require.NoError(t, b.port.PowerOff("sw16", "ca17", "ca18"))
	return b
}

// TestAssimilateActivationThesis is the thesis's Fig. 68 and Table 14: a
// switch with two CAs appears on ports 3 of switches 8 and 9. A sweep
// detects it and partial discovery explores it in 35 SMPs; the new devices
// get LIDs 16, 17 and 18; every other LID stays.
func TestAssimilateActivationThesis(t *testing.T) {
	b := thesisPlus(t)
	s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectSweep})
	lids := agentLIDs(b.f)
	require.NoError(t, b.port.PowerOn("sw16", "ca17", "ca18"))
	res := assimilate(t, s, sm.TriggerSweep)

	// 8 SwitchInfo, then on switches 8 and 9 a clear and 4 PortInfo each.
	assert.EqualValues(t, 8+2*5, smps(t, res, sm.PhaseDetection))
	// 2 NodeInfo to the new switch; its SwitchInfo, PortInfo 0..4 and LID;
	// 4 NodeInfo out of its ports; 2 CAs × (PortInfo, LID).
	assert.EqualValues(t, 2+7+4+2*2, smps(t, res, sm.PhaseDiscovery))
	assert.EqualValues(t, 35, smps(t, res, sm.PhaseDetection)+smps(t, res, sm.PhaseDiscovery))
	assert.Equal(t, 3, res.NodesAdded)
	assert.Equal(t, 4, res.LinksAdded)
	assert.Zero(t, res.NodesRemoved)
	assert.Equal(t, 9, res.Switches)
	assert.Equal(t, 9, res.HCAs)
	assert.Zero(t, res.Retries)

	got := agentLIDs(b.f)
	for name, lid := range lids {
		if name != "sw16" && name != "ca17" && name != "ca18" {
			assert.Equal(t, lid, got[name], name)
		}
	}
	assert.EqualValues(t, 16, got["sw16"])
	assert.ElementsMatch(t, []uint16{17, 18}, []uint16{got["ca17"], got["ca18"]})
	checkUp(t, b.f)
}

// TestAssimilateDeactivationThesis is Fig. 69 and Table 15: switch 3 of
// chapter 5's numbering (sw2 here) fails. Routes from the SM to switches
// 5, 6 and 10 crossed it; partial discovery finds them again through
// switch 3 (of Fig. 76) with a LID-routed prefix and a directed suffix,
// and deletes sw2 and ca7: 26 SMPs.
func TestAssimilateDeactivationThesis(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectSweep})
	require.NoError(t, b.port.PowerOff("sw2"))
	res := assimilate(t, s, sm.TriggerSweep)

	// 8 SwitchInfo (4 unanswered, given up), clear + 4 PortInfo on sw1.
	assert.EqualValues(t, 8+5, smps(t, res, sm.PhaseDetection))
	// Probes of sw6 (PortStateChange: clear + 4), sw10, sw5 (clear + 4).
	assert.EqualValues(t, 6+1+6, smps(t, res, sm.PhaseDiscovery))
	assert.EqualValues(t, 26, smps(t, res, sm.PhaseDetection)+smps(t, res, sm.PhaseDiscovery))
	assert.Zero(t, res.Retries)
	assert.Zero(t, res.Timeouts)
	assert.Equal(t, 2, res.NodesRemoved)
	assert.Equal(t, 4, res.LinksRemoved)
	assert.Equal(t, 7, res.Switches)
	assert.Equal(t, 6, res.HCAs)
	checkUp(t, b.f)
}

// TestAssimilateFullThesis counts the same two changes with full
// discovery. The thesis gives 123 SMPs for the activation; see the report
// in the test for where ours differ.
func TestAssimilateFullThesis(t *testing.T) {
	t.Run("activation", func(t *testing.T) {
		b := thesisPlus(t)
		s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectSweep, Discovery: sm.DiscoveryFull})
		require.NoError(t, b.port.PowerOn("sw16", "ca17", "ca18"))
		res := assimilate(t, s, sm.TriggerSweep)
		det, disc := smps(t, res, sm.PhaseDetection), smps(t, res, sm.PhaseDiscovery)
		// Detection: 8 SwitchInfo; sw8's clear and its 4 PortInfo (the
		// first change: what is outstanding, sw9's scan, is given up).
		// Discovery: the 18 devices from scratch, 114 SMPs by the thesis's
		// rule, less the LID Sets of the 15 ports configured already.
		t.Logf("full discovery: detection %d + discovery %d = %d SMPs", det, disc, det+disc)
		assert.EqualValues(t, 114-15, disc)
		assert.LessOrEqual(t, det, uint64(8+2*5))
		checkUp(t, b.f)
	})
	t.Run("deactivation", func(t *testing.T) {
		b := newBench(t, topologies.Thesis8(), 0, 1)
		s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectSweep, Discovery: sm.DiscoveryFull})
		require.NoError(t, b.port.PowerOff("sw2"))
		res := assimilate(t, s, sm.TriggerSweep)
		// 13 devices, no LID Set: the SM's CA (NodeInfo, PortInfo), 7
		// switches (SwitchInfo, PortInfo 0..4), 5 CAs (PortInfo), and
		// NodeInfo out of the 18 live switch ports and the SM's port.
		assert.EqualValues(t, 2+7*6+5+19, smps(t, res, sm.PhaseDiscovery))
		checkUp(t, b.f)
	})
}

// TestAssimilateTraps detects the same changes by trap: no sweep, the
// trapping switches scanned.
func TestAssimilateTraps(t *testing.T) {
	t.Run("activation", func(t *testing.T) {
		b := thesisPlus(t)
		s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectTrap})
		require.NoError(t, b.port.PowerOn("sw16", "ca17", "ca18"))
		require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
		res := assimilate(t, s, sm.TriggerTrap)
		// Switches 8 and 9: clear + 4 PortInfo each; then as by sweep.
		assert.EqualValues(t, 2*5, smps(t, res, sm.PhaseDetection))
		assert.EqualValues(t, 17, smps(t, res, sm.PhaseDiscovery))
		checkUp(t, b.f)
	})
	t.Run("deactivation", func(t *testing.T) {
		b := newBench(t, topologies.Thesis8(), 0, 1)
		s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectTrap})
		require.NoError(t, b.port.PowerOff("sw2"))
		require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
		res := assimilate(t, s, sm.TriggerTrap)
		// Only sw1's trap gets through (sw5's and sw6's routes to the SM
		// crossed sw2): its scan, then the probes.
		assert.EqualValues(t, 5, smps(t, res, sm.PhaseDetection))
		assert.EqualValues(t, 13, smps(t, res, sm.PhaseDiscovery))
		checkUp(t, b.f)
	})
}

// TestCutDepsThesis: protecting the two cut nodes of the thesis network
// (Fig. 92b: 6 and 10, each with two up-going ports) costs 4 SLtoVL SMPs,
// one per forbidden turn, and only once.
func TestCutDepsThesis(t *testing.T) {
	f := routingtest.ThesisFabric(t)
	rt := routingtest.Route(t, f, "updn-fera", routing.Options{})
	var turns []string
	for _, c := range sm.CutNodes(f, rt) {
		turns = append(turns, f.Topo.Node(c[0]).Name+":"+string(rune('0'+c[1]))+">"+string(rune('0'+c[2])))
	}
	assert.ElementsMatch(t, []string{"sw6:1>2", "sw6:2>1", "sw10:1>2", "sw10:2>1"}, turns)

	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectSweep, Distribution: sm.DistCutDeps})
	require.NoError(t, b.port.SetLink("ca13", 1, false)) // the graph keeps its cut nodes
	res := assimilate(t, s, sm.TriggerSweep)
	assert.Equal(t, 4, res.SL2VLSets)
	assert.Len(t, s.Blocked(), 4)
	sw6, _ := b.topo.Lookup("sw6")
	assert.EqualValues(t, 15, b.f.Node(sw6).Agent.VLFor(1, 2, 0), "SL 0 from port 1 to 2 of sw6 on VL15")
	assert.EqualValues(t, 15, b.f.Node(sw6).Agent.VLFor(2, 1, 7))
	assert.NotEqualValues(t, 15, b.f.Node(sw6).Agent.VLFor(1, 3, 0))

	require.NoError(t, b.port.SetLink("ca13", 1, true))
	res = assimilate(t, s, sm.TriggerSweep)
	assert.Zero(t, res.SL2VLSets, "blocked already")
	checkUp(t, b.f)

	// A change that takes a cut node's up-going link keeps its blocks:
	// no data crosses the port, and undoing them would hold the tables
	// up. The link back, the graph forbids those turns again.
	require.NoError(t, b.port.SetLink("sw2", 3, false)) // sw6 port 1: sw6 is no cut node
	res = assimilate(t, s, sm.TriggerSweep)
	assert.Zero(t, res.SL2VLSets, "sw6's blocks on its port with no link stay")
	assert.Len(t, s.Blocked(), 4)
	checkUp(t, b.f)
	require.NoError(t, b.port.SetLink("sw2", 3, true))
	res = assimilate(t, s, sm.TriggerSweep)
	assert.Zero(t, res.SL2VLSets, "blocked already")
	checkUp(t, b.f)

	// A change that moves a cut node undoes the blocks it makes legal.
	require.NoError(t, b.port.SetLink("sw1", 2, false)) // the cycle 1-2-6-3 opens: sw6 is no cut node
	res = assimilate(t, s, sm.TriggerSweep)
	assert.Equal(t, 2, res.SL2VLSets, "sw6's two blocks undone")
	assert.Len(t, s.Blocked(), 2)
	assert.NotEqualValues(t, 15, b.f.Node(sw6).Agent.VLFor(1, 2, 0))
	assert.NotEqualValues(t, 15, b.f.Node(sw6).Agent.VLFor(2, 1, 7))
	checkUp(t, b.f)
}

// TestPreBlock: with PreBlock the sweep blocks the thesis network's four
// cut-node turns once the subnet is up, in its protection phase, and the
// change that keeps them then blocks nothing more.
func TestPreBlock(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := b.newSM(t, sm.Config{Routing: "updn-fera", Detect: sm.DetectSweep, PreBlock: true})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.EqualValues(t, 4, smps(t, res, sm.PhaseProtection))
	assert.Equal(t, 4, res.SL2VLSets)
	assert.Len(t, s.Blocked(), 4)
	sw10, _ := b.topo.Lookup("sw10")
	assert.EqualValues(t, 15, b.f.Node(sw10).Agent.VLFor(1, 2, 0), "SL 0 from port 1 to 2 of sw10 on VL15")
	checkUp(t, b.f)
	quiet(t, s)

	require.NoError(t, b.port.SetLink("ca13", 1, false))
	res = assimilate(t, s, sm.TriggerSweep)
	assert.Zero(t, res.SL2VLSets, "blocked at the sweep")
	checkUp(t, b.f)

	// Without PreBlock, or with another strategy, the sweep has no
	// protection phase.
	for _, cfg := range []sm.Config{{Routing: "updn-fera"}, {Routing: "updn-fera", PreBlock: true, Distribution: sm.DistCutPorts}} {
		b := newBench(t, topologies.Thesis8(), 0, 1)
		res := b.sweep(t, b.newSM(t, cfg))
		_, ok := res.Phase(sm.PhaseProtection)
		assert.False(t, ok, "%+v", cfg)
		assert.Zero(t, res.SL2VLSets)
	}
}

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
	cfg := sm.Config{Routing: "updn-fera", Distribution: dist, Discovery: disc, Provisional: prov,
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
		}}
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
			s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Distribution: dist, Detect: sm.DetectSweep,
				OnTables: func(st *sm.TableState) { union = check.Add(st) }})
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
	s := b.newSM(t, sm.Config{LIDActivation: true, Distribution: sm.DistFullDeactivation, Detect: sm.DetectSweep})
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
			s := b.newSM(t, sm.Config{Detect: detect, SweepFactor: 10})
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
	s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectSweep, Retries: 1})
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

// TestAssimilateLinkUpBetweenScans: a link comes up while a sweep's
// assimilation scans its two ends, after one end was read Down and before
// the other is read. The other end finds the link and reaches the first
// end over it: that is the link coming up, not a second device with the
// first end's GUID, and both ends must end up Active.
func TestAssimilateLinkUpBetweenScans(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectSweep})
	sw2, _ := b.topo.Lookup("sw2")
	require.NoError(t, b.f.SetLink(sw2, 3, false)) // to sw6 port 1
	assimilate(t, s, sm.TriggerSweep)

	// A flap that ends Down sets PortStateChange at both ends.
	require.NoError(t, b.f.SetLink(sw2, 3, true))
	require.NoError(t, b.f.SetLink(sw2, 3, false))
	// The link comes back right after sw2's port 3 was read.
	readSw2, flipped := false, false
	b.port.SetFilter(func(m madport.MAD) bool {
		if readSw2 && !flipped {
			flipped = true
			require.NoError(t, b.f.SetLink(sw2, 3, true))
		}
		d := m.Data
		if !readSw2 && d[3] == byte(mad.MethodGet) && binary.BigEndian.Uint16(d[16:]) == uint16(mad.AttrPortInfo) &&
			binary.BigEndian.Uint32(d[20:]) == 3 {
			readSw2 = true
		}
		return true
	})
	res := assimilate(t, s, sm.TriggerSweep)
	require.True(t, flipped)
	assert.Contains(t, strings.Join(res.Changes, "; "), "port 1 up")
	checkUp(t, b.f)
}

// TestAssimilateHotAddLinkRetrains: a switch is hot-added and one of its
// links retrains just while the SM reads that port (as a cable plugged in
// right after another does). The SM has reached the new switch over that
// link already, so the Down it reads is stale: it must read the port
// again rather than activate the rest and leave it out.
func TestAssimilateHotAddLinkRetrains(t *testing.T) {
	b := thesisPlus(t)
	s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectTrap})
	sw16, _ := b.topo.Lookup("sw16")
	require.NoError(t, b.port.PowerOn("sw16", "ca17", "ca18"))
	require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
	require.True(t, s.Pending(), "the new links' traps came in")

	// sw16 answers NodeInfo twice (found through sw8, met through sw9),
	// SwitchInfo and PortInfo 0..3 before PortInfo 4.
	node := b.f.Node(sw16)
	down, up := false, false
	b.port.SetFilter(func(m madport.MAD) bool {
		d := m.Data
		switch {
		case down && !up:
			up = true
			require.NoError(t, b.f.SetLink(sw16, 4, true))
		case !down && node.Agent.Stats().Received == 7 && d[3] == byte(mad.MethodGet) &&
			binary.BigEndian.Uint16(d[16:]) == uint16(mad.AttrPortInfo) && binary.BigEndian.Uint32(d[20:]) == 4:
			down = true
			require.NoError(t, b.f.SetLink(sw16, 4, false))
		}
		return true
	})
	res := assimilate(t, s, sm.TriggerTrap)
	require.True(t, up, "port 4 of sw16 was read while retraining")
	assert.Empty(t, res.Problems)
	assert.Equal(t, 3, res.NodesAdded)
	checkUp(t, b.f)
}

// TestAssimilateTrapAfterScan: a link of a switch goes down while an
// assimilation runs, after the switch's scan read that port. The
// switch's trap comes in during the same assimilation, and its other end
// cannot tell (its trap would cross the dead link): the scanned switch
// must be looked at again, not taken as seen.
func TestAssimilateTrapAfterScan(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectTrap})
	sw2, _ := b.topo.Lookup("sw2")
	lid := agentLIDs(b.f)["sw2"]
	require.NoError(t, b.f.SetLink(sw2, 3, false)) // to sw6 port 1
	require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
	require.True(t, s.Pending())

	cut := false
	b.port.SetFilter(func(m madport.MAD) bool {
		d := m.Data
		if !cut && m.LID == lid && mad.MAD(d).MgmtClass() == mad.ClassSubnLID && d[3] == byte(mad.MethodGet) &&
			binary.BigEndian.Uint16(d[16:]) == uint16(mad.AttrPortInfo) && binary.BigEndian.Uint32(d[20:]) == 4 {
			cut = true // port 2 was read: cut it before port 4 is
			require.NoError(t, b.f.SetLink(sw2, 2, false))
		}
		return true
	})
	res := assimilate(t, s, sm.TriggerTrap)
	require.True(t, cut, "sw2 was scanned LID-routed")
	changes := strings.Join(res.Changes, "; ")
	assert.Contains(t, changes, fmt.Sprintf("switch %#x port 3 down", b.topo.Node(sw2).GUID))
	assert.Contains(t, changes, fmt.Sprintf("switch %#x port 2 down", b.topo.Node(sw2).GUID))
	checkUp(t, b.f)
}

// lateTraps is a bench port that loses the traps of the switches late
// names (by LID): on a loaded fabric their traps come in after the
// assimilation of the first one has begun.
type lateTraps struct {
	*memport.Port
	late map[uint16]bool
}

func (p *lateTraps) Recv(ctx context.Context) (madport.MAD, error) {
	for {
		m, err := p.Port.Recv(ctx)
		if err != nil || mad.MAD(m.Data).Method() != mad.MethodTrap || !p.late[m.LID] {
			return m, err
		}
	}
}

// lateTrapsSM brings Thesis8 up under an SM whose port holds back the
// traps of the switches its late set names.
func lateTrapsSM(t *testing.T) (*bench, *lateTraps, *sm.SM) {
	t.Helper()
	b := newBench(t, topologies.Thesis8(), 0, 1)
	port := &lateTraps{Port: b.port, late: map[uint16]bool{}}
	s, err := sm.New(port, sm.Config{Routing: "updn-fera", Detect: sm.DetectTrap})
	require.NoError(t, err)
	require.True(t, b.sweep(t, s).SubnetUp)
	quiet(t, s)
	return b, port, s
}

// killLate powers dead off with only first's trap in time for the
// assimilation (the traps of dead's other switch neighbours come later)
// and returns the assimilation, nil when first's trap did not reach the
// SM either (its route crossed dead). The late traps then come in, and
// the SM finds nothing more to change.
func killLate(t *testing.T, dead, first string) *sm.Result {
	b, port, s := lateTrapsSM(t)
	lids := agentLIDs(b.f)
	x, _ := b.topo.Lookup(dead)
	for q := 1; q <= b.topo.Node(x).NumPorts; q++ {
		if peer, ok := b.topo.Peer(topologies.PortRef{Node: x, Port: q}); ok {
			if n := b.topo.Node(peer.Node); n.Type == topologies.Switch && n.Name != first {
				port.late[lids[n.Name]] = true
			}
		}
	}
	require.NoError(t, b.port.PowerOff(dead))
	require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
	if !s.Pending() {
		return nil
	}
	res := assimilate(t, s, sm.TriggerTrap)
	checkUp(t, b.f)
	clear(port.late)
	quiet(t, s)
	checkUp(t, b.f)
	return res
}

// TestAssimilateKilledSwitchLateTraps: a switch dies and the trap of
// one neighbour comes in before the others'. Its scan finds the dead
// switch MISSING; the other neighbours, not scanned yet, still hold their
// links to it in the database. Probing it through one of them would wait
// out every retry (and then blame the LID-routed prefix and give
// prefixes up for good): the SM reads that neighbour's port as its quick
// probe and scan go through it, finds it Down, gives up what went to the
// dead switch, and takes the link out as a scan would.
func TestAssimilateKilledSwitchLateTraps(t *testing.T) {
	// sw6 is cabled to sw2, sw3 and sw10. sw2's scan finds it gone; its
	// ports 2 on sw3 and 2 on sw10 are read (Down), each with the probe
	// and the scan of sw6 behind it (one burst: the SMPs to sw6 are lost
	// at the port that is Down, and given up when the read comes back).
	// With the first read go the blocks of sw10's two cut-node turns (the
	// graph with sw6 alive has them).
	res := killLate(t, "sw6", "sw2")
	require.NotNil(t, res)
	assert.EqualValues(t, 5, smps(t, res, sm.PhaseDetection), "sw2: clear + 4 PortInfo")
	assert.EqualValues(t, 2*(1+1+5)+2, smps(t, res, sm.PhaseDiscovery),
		"PortInfo 4 of sw3, PortInfo 2 of sw10, the probe and scan of sw6 with each, sw10's two blocks")
	assert.Zero(t, res.Timeouts)
	assert.Zero(t, res.Retries)
	assert.Equal(t, 2, res.NodesRemoved, "sw6 and ca12")
	assert.Equal(t, 4, res.LinksRemoved)
	assert.NotContains(t, strings.Join(res.Warnings, "\n"), "LID-routed prefix")

	// Every switch killed, each switch neighbour's trap first in turn.
	topo := topologies.Thesis8()
	seen := 0
	for i, dead := range topo.Nodes() {
		if dead.Type != topologies.Switch {
			continue
		}
		for q := 1; q <= dead.NumPorts; q++ {
			peer, ok := topo.Peer(topologies.PortRef{Node: i, Port: q})
			if !ok || topo.Node(peer.Node).Type != topologies.Switch {
				continue
			}
			first := topo.Node(peer.Node).Name
			t.Run(dead.Name+"/"+first, func(t *testing.T) {
				res := killLate(t, dead.Name, first)
				if res == nil {
					return // first's trap crossed the dead switch
				}
				seen++
				assert.Zero(t, res.Timeouts, "%v", res.Changes)
				assert.Zero(t, res.Retries)
				assert.GreaterOrEqual(t, res.NodesRemoved, 1)
			})
		}
	}
	assert.GreaterOrEqual(t, seen, 10, "cases whose first trap reached the SM")
}

// sw10DiesUnseen powers sw10 off on the thesis network while sw6, whose
// trap is late, has not noticed: its port 3 (to sw10's port 2) keeps the
// state it had, which it returns with sw6's index.
func sw10DiesUnseen(t *testing.T) (*bench, *lateTraps, *sm.SM, int, agent.LinkState) {
	b, port, s := lateTrapsSM(t)
	sw6, _ := b.topo.Lookup("sw6")
	port.late[agentLIDs(b.f)["sw6"]] = true
	stale := b.f.Node(sw6).Ports.Link(3)
	require.NoError(t, b.port.PowerOff("sw10"))
	b.f.Node(sw6).Ports.SetLink(3, stale)
	return b, port, s, sw6, stale
}

// TestAssimilateDeadProbeKeepsPrefixes: a switch dies and a neighbour
// whose trap is late has not noticed yet (its port still reads Active),
// so the probe through it goes out and waits, LID-prefixed, then purely
// directed. The dead switch, not the prefix, is at fault: the SM keeps
// using prefixes.
func TestAssimilateDeadProbeKeepsPrefixes(t *testing.T) {
	b, port, s, sw6, stale := sw10DiesUnseen(t)
	require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
	res := assimilate(t, s, sm.TriggerTrap)
	assert.EqualValues(t, 3, res.Timeouts, "the quick probe of sw10, then the full one, prefixed then directed, for sw6's port still reads Active")
	assert.Equal(t, 2, res.NodesRemoved, "sw10 and ca15")
	assert.NotContains(t, strings.Join(res.Warnings, "\n"), "LID-routed prefix")
	checkUp(t, b.f)

	stale.State, stale.Phys = mad.PortStateDown, mad.PhysStatePolling
	b.f.Node(sw6).Ports.SetLink(3, stale)
	clear(port.late)
	quiet(t, s)

	// sw2 dies: sw1's trap alone reaches the SM; sw5 and sw6 are probed
	// with LID-routed prefixes.
	prefixed := 0
	b.port.SetFilter(func(m madport.MAD) bool {
		if mad.MAD(m.Data).MgmtClass() == mad.ClassSubnDirected && mad.DRSMP(m.Data).DrSLID() != mad.PermissiveLID {
			prefixed++
		}
		return true
	})
	require.NoError(t, b.port.PowerOff("sw2"))
	require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
	res = assimilate(t, s, sm.TriggerTrap)
	assert.Zero(t, res.Timeouts)
	assert.Positive(t, prefixed)
	checkUp(t, b.f)
}

// TestAssimilateQuickProbe: a dead switch's neighbour whose port still
// reads Active when the SM first looks (it has not noticed yet) costs one
// quick probe, whose timeout has the port read again; by then it is Down,
// and the SM gives the switch up without a probe in full.
func TestAssimilateQuickProbe(t *testing.T) {
	b, _, s, sw6, stale := sw10DiesUnseen(t)
	down := stale
	down.State, down.Phys = mad.PortStateDown, mad.PhysStatePolling
	// sw6 notices when the SM's first SwitchInfo to sw10 leaves.
	sw6LID := agentLIDs(b.f)["sw6"]
	probes := 0
	b.port.SetFilter(func(m madport.MAD) bool {
		h := mad.MAD(m.Data)
		if h.MgmtClass() == mad.ClassSubnDirected && h.AttrID() == mad.AttrSwitchInfo && h.Method() == mad.MethodGet {
			// Along a LID-routed prefix to sw6, then out of its port 3.
			if path := mad.DRSMP(m.Data).Path(); m.LID == sw6LID && slices.Equal(path, []uint8{0, 3}) {
				if probes++; probes == 1 {
					b.f.Node(sw6).Ports.SetLink(3, down)
				}
			}
		}
		return true
	})
	require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
	res := assimilate(t, s, sm.TriggerTrap)
	assert.EqualValues(t, 1, res.Timeouts, "the quick probe of sw10")
	assert.Equal(t, 1, probes, "SwitchInfo Gets to sw10")
	assert.Equal(t, 2, res.NodesRemoved, "sw10 and ca15")
	checkUp(t, b.f)
}

// TestAssimilateKilledSwitchNoWait: when a switch dies, a neighbour whose
// LID route from the SM crossed it traps too; its scan, sent along that
// route, is given up as soon as the dead switch is known gone (the
// neighbour is in its destinationDevices), and the neighbour is scanned
// again once a probe finds it another way. No SMP waits out its timeout.
// Irregular networks of 16 and 32 switches, every switch but the SM's
// killed in turn.
func TestAssimilateKilledSwitchNoWait(t *testing.T) {
	for _, n := range []int{16, 32} {
		topo, err := topologies.Irregular(n, 4, 1, 1)
		require.NoError(t, err)
		smNode, ok := topo.Lookup("ca1-1")
		require.True(t, ok)
		for i, sw := range topo.Nodes() {
			if sw.Type != topologies.Switch || sw.Name == "sw1" { // sw1 is the SM's
				continue
			}
			t.Run(fmt.Sprintf("%d/%s", n, sw.Name), func(t *testing.T) {
				b := newBench(t, topo, smNode, 1)
				s := upAndQuiet(t, b, sm.Config{Routing: "updn-fera", Detect: sm.DetectTrap})
				require.NoError(t, b.port.PowerOff(topo.Node(i).Name))
				require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
				res := assimilate(t, s, sm.TriggerTrap)
				assert.Zero(t, res.Timeouts, "timeouts")
				assert.Zero(t, res.Retries, "retries")
				checkUp(t, b.f)
			})
		}
	}
}

// stalledHop is a bench port behind a first hop that is slow to forward
// (a soft switch whose process waits for the CPU): it holds what the SM
// sends until an answer comes back through it, and its VL15 buffer takes
// vl15 SMPs; beyond that, what the SM sends is dropped, as the soft
// switch drops it (vl15_overflow). On means the hop stalls.
type stalledHop struct {
	*memport.Port
	on      bool
	vl15    int
	held    int
	dropped int
}

func (p *stalledHop) Send(m madport.MAD) error {
	if p.on {
		if p.held >= p.vl15 {
			p.dropped++
			return nil
		}
		p.held++
	}
	return p.Port.Send(m)
}

func (p *stalledHop) Recv(ctx context.Context) (madport.MAD, error) {
	m, err := p.Port.Recv(ctx)
	if err == nil {
		p.held = 0
	}
	return m, err
}

// TestAssimilateKilledSwitchBurst: sw7 of the 8-switch irregular network
// dies and its three switch neighbours trap together; the SM scans them
// (a SwitchInfo Set and four PortInfo Gets each). Sent all at once, the
// fifteen SMPs overflow a VL15 buffer of 8 SMPs at the SM's first hop
// when that switch is slow to forward, and the SMPs it drops are resent
// only after a full timeout, which then is most of the assimilation's
// time. The SM sends at most Config.Burst SMPs before an answer
// comes back: with 4, nothing is lost. The default burst, the window,
// fits the soft switch's buffer of 32 whole.
func TestAssimilateKilledSwitchBurst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		vl15  int
		burst int
	}{
		{"buffer 8, burst 4", 8, 4},
		{"soft switch buffer, default burst", port.DefaultVL15Packets, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := topologies.Irregular(8, 4, 1, 1)
			require.NoError(t, err)
			smNode, ok := topo.Lookup("ca1-1")
			require.True(t, ok)
			b := newBench(t, topo, smNode, 1)
			hop := &stalledHop{Port: b.port, vl15: tc.vl15}
			s, err := sm.New(hop, sm.Config{Routing: "updn-fera", Burst: tc.burst})
			require.NoError(t, err)
			require.True(t, b.sweep(t, s).SubnetUp)
			quiet(t, s)

			hop.on = true
			require.NoError(t, b.port.PowerOff("sw7"))
			require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
			res := assimilate(t, s, sm.TriggerTrap)
			assert.EqualValues(t, 15, smps(t, res, sm.PhaseDetection), "sw3, sw4 and sw8 scanned: clear + 4 PortInfo each")
			assert.Zero(t, hop.dropped, "SMPs dropped at the first hop")
			assert.Zero(t, res.Retries, "retries")
			assert.Zero(t, res.Timeouts, "timeouts")
			assert.Equal(t, 2, res.NodesRemoved, "sw7 and ca7-1")
			checkUp(t, b.f)
		})
	}
}

// logPort is a bench port that logs, in order, the method and attribute
// of what the SM sends and of what comes back to it.
type logPort struct {
	*memport.Port
	log  []string
	lids []uint16 // each entry's MAD LID: for a send, where it went first
}

func logEntry(dir string, m madport.MAD) string {
	h := mad.MAD(m.Data)
	return fmt.Sprintf("%s %v %v", dir, h.Method(), h.AttrID())
}

func (p *logPort) Send(m madport.MAD) error {
	p.log, p.lids = append(p.log, logEntry("send", m)), append(p.lids, m.LID)
	return p.Port.Send(m)
}

func (p *logPort) Recv(ctx context.Context) (madport.MAD, error) {
	m, err := p.Port.Recv(ctx)
	if err == nil {
		p.log, p.lids = append(p.log, logEntry("recv", m)), append(p.lids, m.LID)
	}
	return m, err
}

// TestAssimilateLinkCutFarEnd: a link between two switches is cut; the
// trap of the near end comes in (the far end's went the way of the cut
// link), its scan finds the link gone, and the far end may be dead.
//
// On the 8-switch irregular network (sw3[2]-sw7[1]) sw7's other
// neighbours are not scanned, so the SM reads the port of one of them
// that faces sw7, and with the read, through that port, probes sw7 and
// scans it (its PortStateChange is set: it lost a link): all of it
// leaves before the read's answer comes back, one round trip where a
// read, then a probe, then a scan took three. On the 16-switch one
// (sw2[1]-sw12[2]) sw12 is reached through a switch probed first (its
// route to the SM crossed sw12), whose port to sw12 that probe vouches
// for: the probe and the scan go together, without a read.
//
// With them go the blocks of the turns the new graph forbids: the
// distribution has nothing to protect before the tables go, and the
// blocks the new graph makes legal are undone with the tables.
func TestAssimilateLinkCutFarEnd(t *testing.T) {
	for _, tc := range []struct {
		switches  int
		near      string
		port      uint8
		discovery uint64 // SMPs
		read      bool   // the port to the far end read with the probe
		sl2vl     int
	}{
		// The read, the probe, sw7's clear + 4 PortInfo, its two blocks;
		// sw8's two blocks undone.
		{8, "sw3", 2, 1 + 1 + 5 + 2, true, 4},
		// The probe of the switch behind sw12, sw12's probe, clear + 4
		// PortInfo, the two blocks of a new cut node; six undone.
		{16, "sw2", 1, 1 + 1 + 5 + 2, false, 8},
	} {
		t.Run(fmt.Sprintf("irregular%d", tc.switches), func(t *testing.T) {
			topo, err := topologies.Irregular(tc.switches, 4, 1, 1)
			require.NoError(t, err)
			b := newBench(t, topo, mustLookup(t, topo, "ca1-1"), 1)
			port := &logPort{Port: b.port}
			var s *sm.SM
			var distBefore uint64
			protectedAfter := -1
			s, err = sm.New(port, sm.Config{Routing: "updn-fera", Detect: sm.DetectTrap, PreBlock: true,
				OnTables: func(st *sm.TableState) {
					if st.Stage == "protected" && protectedAfter < 0 {
						protectedAfter = int(s.Stats().Phases[sm.PhaseDistribution].SMPs - distBefore)
					}
				}})
			require.NoError(t, err)
			require.True(t, b.sweep(t, s).SubnetUp)
			quiet(t, s)
			if tc.switches == 8 {
				sw7, sw8 := topo.Node(mustLookup(t, topo, "sw7")).GUID, topo.Node(mustLookup(t, topo, "sw8")).GUID
				require.Equal(t, [][3]uint64{{sw7, 1, 3}, {sw7, 3, 1}, {sw8, 1, 2}, {sw8, 2, 1}}, s.Blocked(), "the pre-blocked turns")
				defer func() {
					assert.Equal(t, [][3]uint64{{sw7, 1, 3}, {sw7, 2, 3}, {sw7, 3, 1}, {sw7, 3, 2}}, s.Blocked(),
						"sw7's new blocks; its old ones, on the port with no link, stay")
				}()
			}

			require.NoError(t, b.port.SetLink(tc.near, tc.port, false))
			require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
			port.log, port.lids, distBefore, protectedAfter = nil, nil, s.Stats().Phases[sm.PhaseDistribution].SMPs, -1
			res := assimilate(t, s, sm.TriggerTrap)
			assert.EqualValues(t, 5, smps(t, res, sm.PhaseDetection), "the near end: clear + 4 PortInfo")
			assert.EqualValues(t, tc.discovery, smps(t, res, sm.PhaseDiscovery))
			assert.Zero(t, protectedAfter, "distribution SMPs before the protection was in")
			assert.Equal(t, tc.sl2vl, res.SL2VLSets)
			assert.Zero(t, res.Timeouts)
			assert.Equal(t, 1, res.LinksRemoved)
			assert.Zero(t, res.NodesRemoved)
			checkUp(t, b.f)

			last := func(entry string, before int) int {
				for i := before - 1; i >= 0; i-- {
					if port.log[i] == entry {
						return i
					}
				}
				return -1
			}
			set := last("send Set SwitchInfo", len(port.log))
			from := last("send Get SwitchInfo", set) // the far end's probe
			if tc.read {
				from = last("send Get PortInfo", from)
			}
			require.True(t, from >= 0 && set > from, "%q", port.log)
			for i := from; i < set; i++ {
				assert.NotContains(t, port.log[i], "recv", "an answer came back between the probe (%d) and the scan (%d): %q", from, set, port.log)
			}
			// sw7's blocks, sent with its probe, go the probe's way:
			// LID-routed to the switch it goes through, not directed from
			// the SM.
			for i, e := range port.log {
				if tc.switches == 8 && e == "send Set SLtoVLMappingTable" && i > set {
					assert.NotEqual(t, uint16(mad.PermissiveLID), port.lids[i], "block %d went directed all the way", i)
					break
				}
			}
		})
	}
}

// squareNet: the SM's switch sw1 above sw2 and sw3, both above sw4, a CA
// on each switch. sw4 has sw3 on port 1 and sw2 on port 2: FERa's flood
// toward the SM reaches sw4 through sw2 first, and its flood toward sw4
// reaches sw1 through sw3 first, so the SM's route to sw4 crosses
// sw3-sw4 and sw4's route to the SM does not.
const squareNet = `
Switch 4 "sw1"
[1] "sw2"[1]
[2] "sw3"[1]
[4] "ca1"[1]

Switch 4 "sw2"
[1] "sw1"[1]
[2] "sw4"[2]
[3] "ca2"[1]

Switch 4 "sw3"
[1] "sw1"[2]
[2] "sw4"[1]
[3] "ca3"[1]

Switch 4 "sw4"
[1] "sw3"[2]
[2] "sw2"[2]
[3] "ca4"[1]

Ca 1 "ca1"
[1] "sw1"[4]

Ca 1 "ca2"
[1] "sw2"[3]

Ca 1 "ca3"
[1] "sw3"[3]

Ca 1 "ca4"
[1] "sw4"[3]
`

// TestAssimilateTrapRoute: a link between two switches is cut and both
// ends trap: the far end's route to the SM does not cross the link,
// though the SM's route to it may. The far end is scanned with the near
// end, back along the route its trap came: no probe, no timeout.
//
//   - square, traps in before the assimilation: sw4, whose route from
//     the SM crossed the link, is scanned through sw2;
//   - square, traps coming in during a sweep's assimilation: each is
//     taken as it comes, so both scans leave before any scan's answer;
//   - square, sw4 powered off once its trap is in: the link its trap
//     came over is found gone (sw2's trap, taken as it comes), so sw4 is
//     not taken as alive any more and its scan is not waited for;
//   - irregular8 routed by PIRa, whose default routes are not FERa's
//     shortest ones (sw7 reaches the SM through sw4, the SM reaches sw7
//     through sw3): once the near end's scan finds the link gone, with
//     the far end known alive, the turns the new graph forbids are
//     blocked at once, before the far end's scan is back, and the
//     distribution has nothing to protect before the tables.
func TestAssimilateTrapRoute(t *testing.T) {
	square, err := topologies.Parse(strings.NewReader(squareNet), "square.net")
	require.NoError(t, err)
	irr8, err := topologies.Irregular(8, 4, 1, 1)
	require.NoError(t, err)
	for _, tc := range []struct {
		name      string
		topo      *topologies.Topology
		sm        string
		routing   string
		cut       string
		port      uint8
		trigger   sm.Trigger
		detection uint64 // SMPs
		discovery uint64
		sl2vl     int
		dies      string // powered off once the traps are in
		removed   int    // nodes
	}{
		{"square", square, "ca1", "updn-fera", "sw4", 1, sm.TriggerTrap, 5 + 5, 0, 0, "", 0},
		{"square-sweep", square, "ca1", "updn-fera", "sw4", 1, sm.TriggerSweep, 4 + 5 + 5, 0, 0, "", 0},
		// sw3's, sw4's (given up) and sw2's scans; sw4 and ca4 go.
		{"square-dies", square, "ca1", "updn-fera", "sw4", 1, sm.TriggerTrap, 5 + 5 + 5, 0, 0, "sw4", 2},
		// The two blocks at sw7 with the scans; two at sw8 undone with
		// the tables.
		{"irregular8-pira", irr8, "ca1-1", "updn-pira", "sw3", 2, sm.TriggerTrap, 5 + 5, 2, 4, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, tc.topo, mustLookup(t, tc.topo, tc.sm), 1)
			port := &logPort{Port: b.port}
			var s *sm.SM
			var distBefore uint64
			protectedAfter := -1
			s, err = sm.New(port, sm.Config{Routing: tc.routing, Detect: sm.DetectBoth, PreBlock: true, Provisional: true,
				OnTables: func(st *sm.TableState) {
					if strings.HasSuffix(st.Stage, "protected") && protectedAfter < 0 {
						protectedAfter = int(s.Stats().Phases[sm.PhaseDistribution].SMPs - distBefore)
					}
				}})
			require.NoError(t, err)
			require.True(t, b.sweep(t, s).SubnetUp)
			quiet(t, s)
			if tc.name == "square" {
				sn, rt := s.Subnet(), s.Routes()
				idx := func(name string) int {
					i, ok := sn.Topo.LookupGUID(tc.topo.Node(mustLookup(t, tc.topo, name)).GUID)
					require.True(t, ok)
					return i
				}
				sw1, sw4 := idx("sw1"), idx("sw4")
				require.EqualValues(t, 2, rt.LFT[sw1][sn.LID[sw4][0]], "the SM's route to sw4 goes through sw3")
				require.EqualValues(t, 2, rt.LFT[sw4][sn.SMLID], "sw4's route to the SM goes through sw2")
			}

			require.NoError(t, b.port.SetLink(tc.cut, tc.port, false))
			if tc.trigger == sm.TriggerTrap {
				require.NoError(t, s.Serve(context.Background(), sm.DefaultSweepInterval))
			}
			if tc.dies != "" {
				require.NoError(t, b.f.PowerOff(mustLookup(t, tc.topo, tc.dies)))
			}
			port.log, port.lids, distBefore, protectedAfter = nil, nil, s.Stats().Phases[sm.PhaseDistribution].SMPs, -1
			res := assimilate(t, s, tc.trigger)
			assert.Equal(t, tc.detection, smps(t, res, sm.PhaseDetection), "both ends scanned")
			assert.Equal(t, tc.discovery, smps(t, res, sm.PhaseDiscovery), "no probe")
			assert.Equal(t, tc.sl2vl, res.SL2VLSets)
			assert.Zero(t, protectedAfter, "distribution SMPs before the protection was in")
			assert.Zero(t, res.Timeouts)
			assert.Equal(t, tc.removed, res.NodesRemoved)
			if tc.dies == "" {
				assert.Equal(t, 1, res.LinksRemoved)
			}
			checkUp(t, b.f)

			// The first answer to a scan came back after the second
			// scan went, and the blocks (if any) went before the last.
			firstAnswer, lastAnswer, lastScan, firstBlock := -1, -1, -1, -1
			for i, e := range port.log {
				switch e {
				case "recv GetResp PortInfo":
					if firstAnswer < 0 {
						firstAnswer = i
					}
					lastAnswer = i
				case "send Set SwitchInfo":
					lastScan = i
				case "send Set SLtoVLMappingTable":
					if firstBlock < 0 {
						firstBlock = i
					}
				}
			}
			if tc.dies == "" {
				assert.Less(t, lastScan, firstAnswer, "%q", port.log)
			}
			if tc.sl2vl > 0 {
				assert.Less(t, firstBlock, lastAnswer, "%q", port.log)
			}
		})
	}
}

func mustLookup(t *testing.T, topo *topologies.Topology, name string) int {
	t.Helper()
	i, ok := topo.Lookup(name)
	require.True(t, ok, name)
	return i
}

// TestDeactivationSettlesOwnTraps: the strategies that set ports Down
// make both ends of each such link retrain, and the switches there set
// PortStateChange and trap. The assimilation takes that back itself:
// afterwards no switch has PortStateChange set or a trap outstanding,
// and the traps start no scan.
func TestDeactivationSettlesOwnTraps(t *testing.T) {
	for _, dist := range []sm.Distribution{sm.DistFullDeactivation, sm.DistCutPorts} {
		t.Run(dist.String(), func(t *testing.T) {
			b := newBench(t, topologies.Thesis8(), 0, 1)
			s := b.newSM(t, sm.Config{Routing: "updn-fera", Distribution: dist, Detect: sm.DetectTrap})
			require.True(t, b.sweep(t, s).SubnetUp)
			quiet(t, s)
			require.NoError(t, b.port.SetLink("sw2", 3, false))
			res := assimilate(t, s, sm.TriggerSweep)
			require.Positive(t, res.PortsDeactivated)
			assert.Positive(t, res.OwnTraps)
			checkUp(t, b.f)
			for i, n := range b.f.Nodes() {
				if b.topo.Node(i).Type != topologies.Switch {
					continue
				}
				assert.False(t, n.Agent.PortStateChange(), "%s PortStateChange", n.Name)
				assert.False(t, n.Agent.TrapOutstanding(), "%s trap outstanding", n.Name)
			}
			before := s.Stats().Phases[sm.PhaseDetection].SMPs
			a, err := s.Assimilate(context.Background(), sm.TriggerTrap)
			require.ErrorIs(t, err, sm.ErrNoChange)
			assert.Nil(t, a)
			assert.Equal(t, before, s.Stats().Phases[sm.PhaseDetection].SMPs, "a scan for the deactivation's traps")
		})
	}
}
