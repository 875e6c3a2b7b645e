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
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestAssimilateLinkUpBetweenScans: a link comes up while a sweep's
// assimilation scans its two ends, after one end was read Down and before
// the other is read. The other end finds the link and reaches the first
// end over it: that is the link coming up, not a second device with the
// first end's GUID, and both ends must end up Active.
func TestAssimilateLinkUpBetweenScans(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := upAndQuiet(t, b, sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep},
	})
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
	s := upAndQuiet(t, b, sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectTrap},
	})
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
	s := upAndQuiet(t, b, sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectTrap},
	})
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
	s, err := sm.New(port, sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectTrap},
	})
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
				s := upAndQuiet(t, b, sm.Config{
					RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
					AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectTrap},
				})
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
			s, err := sm.New(hop, sm.Config{
				RoutingConfig: sm.RoutingConfig{Routing: "updn-fera"},
				TxnConfig:     sm.TxnConfig{Burst: tc.burst},
			})
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
