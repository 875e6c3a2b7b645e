package sm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

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
			s, err = sm.New(port, sm.Config{
				RoutingConfig: sm.RoutingConfig{Routing: "updn-fera"},
				AssimilationConfig: sm.AssimilationConfig{
					Detect:   sm.DetectTrap,
					PreBlock: true,
					OnTables: func(st *sm.TableState) {
						if st.Stage == "protected" && protectedAfter < 0 {
							protectedAfter = int(s.Stats().Phases[sm.PhaseDistribution].SMPs - distBefore)
						}
					},
				},
			})
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
			s, err = sm.New(port, sm.Config{
				RoutingConfig: sm.RoutingConfig{Routing: tc.routing},
				AssimilationConfig: sm.AssimilationConfig{
					Detect:      sm.DetectBoth,
					PreBlock:    true,
					Provisional: true,
					OnTables: func(st *sm.TableState) {
						if strings.HasSuffix(st.Stage, "protected") && protectedAfter < 0 {
							protectedAfter = int(s.Stats().Phases[sm.PhaseDistribution].SMPs - distBefore)
						}
					},
				},
			})
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
			s := b.newSM(t, sm.Config{
				RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
				AssimilationConfig: sm.AssimilationConfig{Distribution: dist, Detect: sm.DetectTrap},
			})
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
