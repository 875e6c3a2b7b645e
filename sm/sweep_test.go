package sm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// bench is a fabric of agents with an SM port on one of its nodes.
type bench struct {
	topo *topologies.Topology
	f    *memfabric.Fabric
	port *memport.Port
}

func newBench(t *testing.T, topo *topologies.Topology, node int, port uint8, opts ...memfabric.Option) *bench {
	t.Helper()
	f, err := memfabric.NewFabric(topo, opts...)
	require.NoError(t, err)
	t.Cleanup(f.Close)
	p, err := memport.New(f, node, port)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return &bench{topo: topo, f: f, port: p}
}

func (b *bench) newSM(t *testing.T, cfg sm.Config) *sm.SM {
	t.Helper()
	s, err := sm.New(b.port, cfg)
	require.NoError(t, err)
	return s
}

func (b *bench) sweep(t *testing.T, s *sm.SM) *sm.Result {
	t.Helper()
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	return res
}

// runSM runs s (Run, watching the subnet and serving control calls)
// until the test ends, and returns the context it runs in.
func runSM(t *testing.T, s *sm.SM) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, nil) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ctx
}

// recorder collects what an SM hands a callback (the managers' events,
// the congestion logs) on its goroutine, for the test's to read.
type recorder[E any] struct {
	mu  sync.Mutex
	all []E
}

func (r *recorder[E]) add(e E) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, e)
}

// list returns a copy of what came in so far.
func (r *recorder[E]) list() []E {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

// mustGen returns a function that takes a generator's results and fails
// t on its error: mustGen(t)(topologies.FatTree(4, 2, 3)).
func mustGen(t *testing.T) func(*topologies.Topology, error) *topologies.Topology {
	return func(topo *topologies.Topology, err error) *topologies.Topology {
		t.Helper()
		require.NoError(t, err)
		return topo
	}
}

// checkUp checks the fabric the way the data plane sees it: every cabled
// port Active, and from every node a packet to every LID of every other
// end port follows the switches' LFTs (agent.OutPort), hop by hop, to the
// port that owns the LID. Only the nodes node 0 reaches over live links
// count: those powered off, or cut off from the SM, are left out.
func checkUp(t *testing.T, f *memfabric.Fabric) {
	t.Helper()
	topo := f.Topology()
	live := liveNodes(f)
	type owner struct{ node, port int }
	owners := map[uint16]owner{}
	for i, n := range f.Nodes() {
		if !live[i] {
			continue
		}
		for p := 0; p <= topo.Node(i).NumPorts; p++ {
			if p == 0 && topo.Node(i).Type != topologies.Switch {
				continue
			}
			if p > 0 {
				if peer, cabled := topo.Peer(topologies.PortRef{Node: i, Port: p}); cabled && live[peer.Node] &&
					n.Ports.Link(uint8(p)).Phys == mad.PhysStateLinkUp {
					if st := n.Ports.Link(uint8(p)).State; st != mad.PortStateActive {
						t.Errorf("%s port %d is %v", n.Name, p, st)
					}
				}
			}
			if topo.Node(i).Type == topologies.Switch && p > 0 {
				continue
			}
			c := n.Agent.PortConfig(uint8(p))
			if c.LID == 0 {
				if _, cabled := topo.LinkAt(topologies.PortRef{Node: i, Port: p}); cabled || p == 0 {
					t.Errorf("%s port %d has no LID", n.Name, p)
				}
				continue
			}
			for k := range 1 << c.LMC {
				lid := c.LID + uint16(k)
				if o, dup := owners[lid]; dup {
					t.Errorf("LID %d on %s port %d and %s port %d", lid, n.Name, p, f.Node(o.node).Name, o.port)
				}
				owners[lid] = owner{i, p}
			}
		}
	}
	bad := 0
	for lid, dst := range owners {
		for src := range f.Nodes() {
			if src == dst.node || !live[src] {
				continue
			}
			if why := walk(f, src, lid, dst.node, dst.port); why != "" && bad < 10 {
				bad++
				t.Errorf("%s to LID %d (%s port %d): %s", f.Node(src).Name, lid, f.Node(dst.node).Name, dst.port, why)
			}
		}
	}
}

// liveNodes returns the nodes node 0 reaches over links whose ends are
// both physically up.
func liveNodes(f *memfabric.Fabric) map[int]bool {
	topo := f.Topology()
	live := map[int]bool{0: true}
	queue := []int{0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for p := 1; p <= topo.Node(u).NumPorts; p++ {
			peer, ok := topo.Peer(topologies.PortRef{Node: u, Port: p})
			if !ok || live[peer.Node] || f.Node(u).Ports.Link(uint8(p)).Phys != mad.PhysStateLinkUp ||
				f.Node(peer.Node).Ports.Link(uint8(peer.Port)).Phys != mad.PhysStateLinkUp {
				continue
			}
			live[peer.Node] = true
			queue = append(queue, peer.Node)
		}
	}
	return live
}

// walk follows a packet for lid from node src; "" when it arrives.
func walk(f *memfabric.Fabric, src int, lid uint16, dstNode, dstPort int) string {
	topo := f.Topology()
	at, in := src, 0
	if topo.Node(src).Type != topologies.Switch {
		peer, ok := topo.Peer(topologies.PortRef{Node: src, Port: firstCabled(topo, src)})
		if !ok {
			return "CA not cabled"
		}
		at, in = peer.Node, peer.Port
	}
	for hops := 0; hops < topo.NumNodes(); hops++ {
		if topo.Node(at).Type != topologies.Switch {
			if at == dstNode && in == dstPort {
				return ""
			}
			return fmt.Sprintf("ends at %s port %d", topo.Node(at).Name, in)
		}
		out, ok := f.Node(at).Agent.OutPort(lid)
		switch {
		case !ok:
			return fmt.Sprintf("%s has no entry", topo.Node(at).Name)
		case out == 0:
			if at == dstNode && dstPort == 0 {
				return ""
			}
			return fmt.Sprintf("%s takes it in", topo.Node(at).Name)
		case int(out) == in:
			return fmt.Sprintf("%s sends it back", topo.Node(at).Name)
		}
		peer, ok := topo.Peer(topologies.PortRef{Node: at, Port: int(out)})
		if !ok {
			return fmt.Sprintf("%s port %d not cabled", topo.Node(at).Name, out)
		}
		at, in = peer.Node, peer.Port
	}
	return "loop"
}

func firstCabled(topo *topologies.Topology, n int) int {
	for p := 1; p <= topo.Node(n).NumPorts; p++ {
		if _, ok := topo.LinkAt(topologies.PortRef{Node: n, Port: p}); ok {
			return p
		}
	}
	return 1
}

// TestSweepThesis8 is the thesis's example network with the SM on CA 4:
// full discovery takes exactly 97 SMPs (thesis 5.3), and the sweep brings
// every port Active with tables that route every LID.
func TestSweepThesis8(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := b.newSM(t, sm.Config{})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	disc, ok := res.Phase(sm.PhaseDiscovery)
	require.True(t, ok)
	assert.EqualValues(t, 97, disc.SMPs, "discovery SMPs")
	assert.Equal(t, b.port.Stats().Sent, res.SMPsTotal, "SMPs the port carried")
	var byAttr uint64
	for _, n := range res.SMPsByAttr {
		byAttr += n
	}
	assert.Equal(t, res.SMPsTotal, byAttr, "smps_by_attr accounts for every SMP: %v", res.SMPsByAttr)
	assert.Positive(t, res.SMPsByAttr["Get NodeInfo"])
	assert.Positive(t, res.SMPsByAttr["Set LinearForwardingTable"])
	assert.Equal(t, sm.DefaultWindow, res.WindowMin, "no timeout, the window stays open")
	assert.Equal(t, 8, res.Switches)
	assert.Equal(t, 7, res.HCAs)
	assert.Equal(t, 50, res.EntriesComputed)
	assert.Equal(t, 7, res.DefaultPorts)
	assert.Equal(t, mad.SMStateMaster, s.State())
	checkUp(t, b.f)

	// The SM's CA gets LID 1, the first switch LID 2 (thesis Table 12).
	sw1, _ := b.topo.Lookup("sw1")
	assert.EqualValues(t, 1, b.f.Node(0).Agent.PortConfig(1).LID)
	assert.EqualValues(t, 2, b.f.Node(sw1).Agent.PortConfig(0).LID)
	for _, n := range b.f.Nodes() {
		p := uint8(0)
		if n.Agent.Type() != mad.NodeTypeSwitch {
			p = 1
		}
		assert.EqualValues(t, 1, n.Agent.PortConfig(p).MasterSMLID, "%s SM LID", n.Name)
	}
	// FERa on the discovered subnet: the thesis's 120 entries.
	bf := newBench(t, topologies.Thesis8(), 0, 1)
	fres := bf.sweep(t, bf.newSM(t, sm.Config{RoutingConfig: sm.RoutingConfig{Routing: "updn-fera"}}))
	require.True(t, fres.SubnetUp, fres.Reason)
	assert.Equal(t, 120, fres.EntriesComputed)
	checkUp(t, bf.f)

	// NodeDescriptions were read into the subnet.
	for _, n := range s.Subnet().Topo.Nodes() {
		i, ok := b.topo.LookupGUID(n.GUID)
		require.True(t, ok)
		assert.Equal(t, b.topo.Node(i).Description, n.Description)
	}
}

func TestSweepJSON(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	res := b.sweep(t, b.newSM(t, sm.Config{}))
	js, err := json.Marshal(res)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(js, &m))
	for _, k := range []string{"event", "subnet_up", "switches", "hcas", "routing", "entries_computed", "phases", "smps_total", "ms_total", "window_min"} {
		assert.Contains(t, m, k)
	}
	assert.Equal(t, "sweep", m["event"])
	assert.Equal(t, "updn-pira", m["routing"])
	// The fixed fields come first, in the order.
	assert.True(t, strings.HasPrefix(string(js), `{"event":"sweep","subnet_up":true,"switches":8,"hcas":7,"routing":"updn-pira","entries_computed":50,"phases":[{"name":"discovery",`), "%s", js)
	var names []string
	for _, p := range m["phases"].([]any) {
		ph := p.(map[string]any)
		names = append(names, ph["name"].(string))
		assert.Contains(t, ph, "ms")
		assert.Contains(t, ph, "smps")
	}
	assert.Equal(t, []string{"discovery", "routing", "distribution", "activation"}, names)
}

// TestSweepTopologies brings up generated fabrics with every engine that
// suits them, the SM on the first CA.
func TestSweepTopologies(t *testing.T) {
	ft, err := topologies.FatTree(6, 3, 4)
	ft2, err2 := topologies.FatTree(4, 4, 2)
	irr, err3 := topologies.Irregular(16, 4, 1, 7)
	irr2, err4 := topologies.Irregular(24, 6, 2, 11)
	kt, err5 := topologies.KAryNTree(2, 3)
	tor, err6 := topologies.Torus(3, 3)
	require.NoError(t, errorsJoin(err, err2, err3, err4, err5, err6))
	tests := []struct {
		name    string
		topo    *topologies.Topology
		engines []string
	}{
		{"thesis8", topologies.Thesis8(), []string{"updn-fera", "updn-pira"}},
		{"fattree 6x3x4", ft, []string{"updn-fera", "updn-pira", "minhop", "ftree"}},
		{"fattree 4x4x2", ft2, []string{"updn-pira", "ftree"}},
		{"irregular 16", irr, []string{"updn-fera", "updn-pira"}},
		{"irregular 24x6", irr2, []string{"updn-fera", "updn-pira"}},
		{"2-ary 3-tree", kt, []string{"updn-fera", "updn-pira", "minhop", "ftree"}},
		{"torus 3x3", tor, []string{"updn-fera", "updn-pira"}},
	}
	for _, tt := range tests {
		for _, eng := range tt.engines {
			t.Run(tt.name+"/"+eng, func(t *testing.T) {
				b := newBench(t, tt.topo, 0, 1)
				res := b.sweep(t, b.newSM(t, sm.Config{RoutingConfig: sm.RoutingConfig{Routing: eng}}))
				require.True(t, res.SubnetUp, res.Reason)
				assert.Equal(t, tt.topo.Count(topologies.Switch), res.Switches)
				assert.Equal(t, tt.topo.Count(topologies.CA), res.HCAs)
				assert.Equal(t, tt.topo.NumLinks(), res.Links)
				assert.True(t, res.DeadlockFree)
				checkUp(t, b.f)
			})
		}
	}
}

func errorsJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// TestDiscoveredTopology checks that discovery finds exactly the cabling:
// the same nodes (by GUID) and links (by GUID and port), at the same
// rates.
func TestDiscoveredTopology(t *testing.T) {
	irr, err := topologies.Irregular(12, 5, 2, 3)
	require.NoError(t, err)
	for _, topo := range []*topologies.Topology{topologies.Thesis8(), irr} {
		b := newBench(t, topo, 0, 1)
		s := b.newSM(t, sm.Config{})
		res := b.sweep(t, s)
		require.True(t, res.SubnetUp, res.Reason)
		got := s.Subnet().Topo
		assert.Equal(t, linkSet(topo), linkSet(got))
		assert.Equal(t, topo.NumNodes(), got.NumNodes())
		assert.Equal(t, topo.Node(0).GUID, got.Node(0).GUID, "the SM's node comes first")
	}
}

func linkSet(t *topologies.Topology) map[string]bool {
	m := map[string]bool{}
	for _, l := range t.Links() {
		a := fmt.Sprintf("%#x[%d]", t.Node(l.A.Node).GUID, l.A.Port)
		b := fmt.Sprintf("%#x[%d]", t.Node(l.B.Node).GUID, l.B.Port)
		if b < a {
			a, b = b, a
		}
		m[fmt.Sprintf("%s-%s %v%v", a, b, l.Width, l.Speed)] = true
	}
	return m
}

// TestSweepSMOnSwitch runs the SM on a switch's port 0.
func TestSweepSMOnSwitch(t *testing.T) {
	topo := topologies.Thesis8()
	sw3, _ := topo.Lookup("sw3")
	b := newBench(t, topo, sw3, 0)
	s := b.newSM(t, sm.Config{RoutingConfig: sm.RoutingConfig{Routing: "updn-fera"}})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	disc, _ := res.Phase(sm.PhaseDiscovery)
	// The switch's own NodeInfo, then as on a CA but for the SM's CA:
	// 8 × 7 switch SMPs, 7 × 2 CA SMPs, 25 NodeInfos out of switch ports.
	assert.EqualValues(t, 1+56+14+25, disc.SMPs)
	assert.EqualValues(t, 1, b.f.Node(sw3).Agent.PortConfig(0).LID)
	checkUp(t, b.f)
}

// TestSweepLossy drops SMPs: the sweep still comes up, with retries, and
// the discovery pattern is unchanged apart from them.
func TestSweepLossy(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	n := 0
	b.port.SetFilter(func(m madport.MAD) bool {
		n++
		return n%7 != 3 // lose one SMP in seven
	})
	res := b.sweep(t, b.newSM(t, sm.Config{}))
	require.True(t, res.SubnetUp, res.Reason)
	disc, _ := res.Phase(sm.PhaseDiscovery)
	assert.Positive(t, disc.Retries)
	assert.EqualValues(t, 97, disc.SMPs-disc.Retries)
	assert.Zero(t, res.Timeouts)
	assert.Less(t, res.WindowMin, sm.DefaultWindow, "timeouts narrow the window")
	assert.Positive(t, res.WindowMin)
	checkUp(t, b.f)
}

// TestSweepUnreachable loses every SMP to one switch: discovery gives up
// on it after the retries, and the subnet is not brought up.
func TestSweepUnreachable(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	b.port.SetFilter(func(m madport.MAD) bool {
		d := mad.DRSMP(m.Data)
		// Everything addressed to sw6 (path 0,1,1,3) once it is known.
		return mad.MAD(m.Data).AttrID() == mad.AttrNodeInfo || string(d.Path()) != string([]uint8{0, 1, 1, 3})
	})
	res := b.sweep(t, b.newSM(t, sm.Config{TxnConfig: sm.TxnConfig{Retries: 2}}))
	assert.False(t, res.SubnetUp)
	assert.Contains(t, res.Reason, "no SwitchInfo")
	disc, _ := res.Phase(sm.PhaseDiscovery)
	assert.Positive(t, disc.Timeouts)
	assert.EqualValues(t, 2*disc.Timeouts, disc.Retries)
}

// TestDuplicateGUID gives two devices one GUID.
func TestDuplicateGUID(t *testing.T) {
	topo := topologies.Thesis8()
	for _, pair := range [][2]string{{"sw8", "sw9"}, {"ca13", "ca14"}, {"sw10", "ca15"}} {
		t.Run(pair[0]+"="+pair[1], func(t *testing.T) {
			a, _ := topo.Lookup(pair[0])
			guid := topo.Node(a).GUID
			b := newBench(t, topo, 0, 1, func(n *topologies.Node, c *agent.Config) {
				if n.Name == pair[1] {
					c.NodeGUID = guid
					c.PortGUIDs = nil
				}
			})
			res := b.sweep(t, b.newSM(t, sm.Config{}))
			assert.False(t, res.SubnetUp)
			assert.Contains(t, res.Reason, fmt.Sprintf("duplicate GUID %#x", guid))
		})
	}
}

// TestLoopCable cables a switch to itself and adds a parallel link:
// discovery records both, routing ignores the loop.
func TestLoopCable(t *testing.T) {
	topo := topologies.Thesis8()
	sw8, _ := topo.Lookup("sw8")
	sw9, _ := topo.Lookup("sw9")
	require.NoError(t, topo.Connect(topologies.PortRef{Node: sw8, Port: 3}, topologies.PortRef{Node: sw8, Port: 4}, 0, 0))
	require.NoError(t, topo.Connect(topologies.PortRef{Node: sw9, Port: 3}, topologies.PortRef{Node: sw9, Port: 4}, 0, 0))
	b := newBench(t, topo, 0, 1)
	s := b.newSM(t, sm.Config{})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, linkSet(topo), linkSet(s.Subnet().Topo))
	checkUp(t, b.f)
}

// TestHopLimit puts switches further than a directed route reaches.
func TestHopLimit(t *testing.T) {
	line := mustGen(t)(topologies.Mesh(66))
	ca, ok := firstCA(line)
	require.True(t, ok)
	b := newBench(t, line, ca, 1)
	res := b.sweep(t, b.newSM(t, sm.Config{}))
	assert.False(t, res.SubnetUp)
	assert.Contains(t, res.Reason, "directed-route limit")
}

func firstCA(t *topologies.Topology) (int, bool) {
	for i, n := range t.Nodes() {
		if n.Type == topologies.CA {
			return i, true
		}
	}
	return 0, false
}

// TestSweepLMC gives CA ports 4 LIDs each; every LID routes.
func TestSweepLMC(t *testing.T) {
	for _, eng := range []string{"updn-pira", "updn-fera", "minhop"} {
		t.Run(eng, func(t *testing.T) {
			ft := mustGen(t)(topologies.FatTree(4, 2, 3))
			b := newBench(t, ft, 0, 1)
			s := b.newSM(t, sm.Config{LIDConfig: sm.LIDConfig{LMC: 2}, RoutingConfig: sm.RoutingConfig{Routing: eng}})
			res := b.sweep(t, s)
			require.True(t, res.SubnetUp, res.Reason)
			for _, n := range b.f.Nodes() {
				if n.Agent.Type() == mad.NodeTypeCA {
					c := n.Agent.PortConfig(1)
					assert.EqualValues(t, 2, c.LMC, n.Name)
					assert.Zero(t, c.LID%4, "%s LID %d not aligned", n.Name, c.LID)
				} else {
					assert.EqualValues(t, 0, n.Agent.PortConfig(0).LMC, n.Name)
				}
			}
			checkUp(t, b.f)
		})
	}
}

// TestSecondSweep sweeps twice: the same LIDs, and only what changed is
// written again, which on an unchanged subnet is nothing but reads.
func TestSecondSweep(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := b.newSM(t, sm.Config{})
	first := b.sweep(t, s)
	require.True(t, first.SubnetUp, first.Reason)
	lids := agentLIDs(b.f)
	second := b.sweep(t, s)
	require.True(t, second.SubnetUp, second.Reason)
	assert.Equal(t, lids, agentLIDs(b.f))
	disc, _ := second.Phase(sm.PhaseDiscovery)
	assert.EqualValues(t, 97-15, disc.SMPs, "no LID Sets")
	dist, _ := second.Phase(sm.PhaseDistribution)
	assert.EqualValues(t, 15, dist.SMPs, "only the NodeDescription reads")
	act, _ := second.Phase(sm.PhaseActivation)
	assert.Zero(t, act.SMPs)
	checkUp(t, b.f)
}

func agentLIDs(f *memfabric.Fabric) map[string]uint16 {
	m := map[string]uint16{}
	for _, n := range f.Nodes() {
		p := uint8(0)
		if n.Agent.Type() != mad.NodeTypeSwitch {
			p = 1
		}
		m[n.Name] = n.Agent.PortConfig(p).LID
	}
	return m
}

// TestLinkDownResweep takes a link of a cycle down after bring-up: the
// switches' traps reach the SM, which represses them; a light sweep sees
// the change, and the new full sweep keeps every LID and routes around the
// dead link, sending only the LFT blocks that changed.
func TestLinkDownResweep(t *testing.T) {
	ctx := context.Background()
	b := newBench(t, topologies.Thesis8(), 0, 1)
	s := b.newSM(t, sm.Config{RoutingConfig: sm.RoutingConfig{Routing: "updn-fera"}})
	first := b.sweep(t, s)
	require.True(t, first.SubnetUp, first.Reason)
	lids := agentLIDs(b.f)

	// Every switch still repeats the trap of its links coming up, from
	// before the SM was there; the SM represses them and, with nothing
	// changed since its sweep, the light sweep says so.
	for range 3 {
		require.NoError(t, s.Serve(ctx, sm.DefaultSweepInterval))
		changed, err := s.Check(ctx)
		require.NoError(t, err)
		require.False(t, changed)
	}
	assert.EqualValues(t, 8, s.Stats().Represses, "one per switch")
	assert.Zero(t, b.f.Clock().Pending(), "no trap repeats left")

	sw2, _ := b.topo.Lookup("sw2")
	sw6, _ := b.topo.Lookup("sw6")
	require.NoError(t, b.f.SetLink(sw2, 3, false))
	require.NoError(t, s.Serve(ctx, sm.DefaultSweepInterval))
	require.True(t, s.Pending(), "a trap came in")
	changed, err := s.Check(ctx)
	require.NoError(t, err)
	require.True(t, changed)

	second := b.sweep(t, s)
	require.True(t, second.SubnetUp, second.Reason)
	assert.Equal(t, lids, agentLIDs(b.f))
	assert.Equal(t, first.Links-1, second.Links)
	dist, _ := second.Phase(sm.PhaseDistribution)
	assert.Less(t, dist.SMPs, uint64(15+2+8), "NodeDescriptions, 2 SwitchInfos, fewer LFT blocks than switches")
	assert.Equal(t, mad.PortStateDown, b.f.Node(sw2).Ports.Link(3).State)
	assert.Equal(t, mad.PortStateDown, b.f.Node(sw6).Ports.Link(1).State)

	// The trap sw6 sent while its route to the SM was the dead link
	// reaches the SM now, and is repressed; then all is quiet.
	for range 3 {
		require.NoError(t, s.Serve(ctx, sm.DefaultSweepInterval))
		changed, err := s.Check(ctx)
		require.NoError(t, err)
		require.False(t, changed)
	}
	assert.Zero(t, b.f.Clock().Pending(), "no trap repeats left")
	assert.False(t, s.Pending())
}

// TestDualPortCA adds a CA with two ports, on two switches: each port has
// its own LID and route, and both come up.
func TestDualPortCA(t *testing.T) {
	topo := topologies.Thesis8()
	ca, err := topo.AddNode(topologies.Node{Type: topologies.CA, Name: "dual", NumPorts: 2, GUID: topologies.GeneratedGUID(99)})
	require.NoError(t, err)
	sw8, _ := topo.Lookup("sw8")
	sw9, _ := topo.Lookup("sw9")
	require.NoError(t, topo.Connect(topologies.PortRef{Node: sw8, Port: 3}, topologies.PortRef{Node: ca, Port: 1}, 0, 0))
	require.NoError(t, topo.Connect(topologies.PortRef{Node: sw9, Port: 3}, topologies.PortRef{Node: ca, Port: 2}, 0, 0))
	for _, eng := range []string{"updn-pira", "updn-fera", "minhop"} {
		t.Run(eng, func(t *testing.T) {
			b := newBench(t, topo, 0, 1)
			s := b.newSM(t, sm.Config{RoutingConfig: sm.RoutingConfig{Routing: eng, AllowCreditLoops: eng == "minhop"}})
			res := b.sweep(t, s)
			require.True(t, res.SubnetUp, res.Reason)
			assert.Equal(t, 8, res.HCAs)
			a := b.f.Node(ca).Agent
			l1, l2 := a.PortConfig(1).LID, a.PortConfig(2).LID
			assert.NotZero(t, l1)
			assert.NotZero(t, l2)
			assert.NotEqual(t, l1, l2)
			checkUp(t, b.f)
			// Only what changed, again: nothing.
			again := b.sweep(t, s)
			require.True(t, again.SubnetUp, again.Reason)
			assert.Zero(t, again.LFTBlocks)
		})
	}
}

// TestTakeOver: an SM comes up on a subnet another SM configured and left.
// It keeps every LID (it has no LID file: it takes them from the ports)
// and makes every port point at itself, all without moving a port's state.
func TestTakeOver(t *testing.T) {
	topo := topologies.Thesis8()
	b := newBench(t, topo, 0, 1)
	first := b.newSM(t, sm.Config{})
	require.True(t, b.sweep(t, first).SubnetUp)
	require.NoError(t, first.Close())
	lids := agentLIDs(b.f)

	ca15, _ := topo.Lookup("ca15")
	p, err := memport.New(b.f, ca15, 1)
	require.NoError(t, err)
	s, err := sm.New(p, sm.Config{})
	require.NoError(t, err)
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, lids, agentLIDs(b.f))
	assert.Equal(t, lids["ca15"], res.SMLID)
	disc, _ := res.Phase(sm.PhaseDiscovery)
	assert.EqualValues(t, 97-15, disc.SMPs, "no Set while discovering a configured subnet")
	for _, n := range b.f.Nodes() {
		p := uint8(0)
		if n.Agent.Type() != mad.NodeTypeSwitch {
			p = 1
		}
		assert.Equal(t, lids["ca15"], n.Agent.PortConfig(p).MasterSMLID, n.Name)
	}
	act, _ := res.Phase(sm.PhaseActivation)
	assert.EqualValues(t, 7, act.SMPs, "the CA ports' SM LID")
	checkUp(t, b.f)
}
