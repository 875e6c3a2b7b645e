package sm_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

func thesisFabric(t *testing.T) *sm.Fabric {
	t.Helper()
	f, err := sm.NewFabric(topologies.Thesis8(), 0, 1, 0) // the SM on CA 4, behind switch 1
	require.NoError(t, err)
	return f
}

func route(t *testing.T, f *sm.Fabric, name string, o sm.RoutingOptions) *sm.Routes {
	t.Helper()
	e, err := sm.NewEngine(name, o)
	require.NoError(t, err)
	r, err := e.Route(f)
	require.NoError(t, err)
	return r
}

// perStep returns r.PerStep by node name.
func perStep(f *sm.Fabric, r *sm.Routes) map[string]int {
	m := map[string]int{}
	for i, e := range f.EndPorts() {
		m[f.Topo.Node(e.Node).Name] = r.PerStep[i]
	}
	return m
}

// TestThesisConformance checks the entry counts of the thesis's chapter 6
// on its example network, with the up*/down* DAG rooted at switch 1.
func TestThesisConformance(t *testing.T) {
	f := thesisFabric(t)

	// FERa: 8 switches × 15 destinations, no overwrite (thesis Table 18).
	fera := route(t, f, "updn-fera", sm.RoutingOptions{})
	assert.Equal(t, 120, fera.Computed)
	assert.Equal(t, 120, fera.Entries())
	assert.Zero(t, fera.DefaultPorts)
	for name, n := range perStep(f, fera) {
		assert.Equal(t, 8, n, name)
	}

	// PIRa: 7 default ports and 50 entries (Table 19), and the entries of
	// each step in the thesis's LID order 1..15, the thesis node numbers.
	pira := route(t, f, "updn-pira", sm.RoutingOptions{Parent: sm.ParentLast})
	assert.Equal(t, 7, pira.DefaultPorts)
	assert.Equal(t, 50, pira.Computed)
	want := []int{1, 2, 2, 1, 3, 5, 3, 3, 3, 7, 4, 4, 3, 3, 6}
	got := perStep(f, pira)
	for lid, n := range want {
		name := fmt.Sprintf("sw%d", lid+1)
		if _, ok := got[name]; !ok {
			name = fmt.Sprintf("ca%d", lid+1)
		}
		assert.Equal(t, n, got[name], "step %d (%s)", lid+1, name)
	}
	// Filled with the default ports, the tables hold an entry for every
	// destination on every switch, as FERa's do.
	assert.Equal(t, 120, pira.Entries())
	sw1, _ := f.Topo.Lookup("sw1")
	assert.EqualValues(t, mad.LFTNoPort, pira.Default[sw1], "the root has no default port")

	for _, r := range []*sm.Routes{fera, pira} {
		rep := sm.Verify(f, r)
		require.NoError(t, rep.Err(), r.Engine)
		assert.Equal(t, 15*14, rep.Pairs)
	}
}

// TestPIRaParents: the parent is the thesis's random choice. On the
// example network two switches have two upper neighbours (6: 2 and 3; 10:
// 5 and 6), and the four choices give 48, 50, 51 or 53 entries; the
// thesis's Table 19 (50) took 3 and 6, the last explored of each.
func TestPIRaParents(t *testing.T) {
	f := thesisFabric(t)
	seen := map[int]bool{}
	for seed := range uint64(32) {
		r := route(t, f, "updn-pira", sm.RoutingOptions{Parent: sm.ParentRandom, Seed: seed})
		require.NoError(t, sm.Verify(f, r).Err())
		assert.Equal(t, 7, r.DefaultPorts)
		seen[r.Computed] = true
		again := route(t, f, "updn-pira", sm.RoutingOptions{Parent: sm.ParentRandom, Seed: seed})
		assert.Equal(t, r.LFT, again.LFT, "seed %d is reproducible", seed)
	}
	assert.Equal(t, map[int]bool{48: true, 50: true, 51: true, 53: true}, seen)
	assert.Equal(t, 51, route(t, f, "updn-pira", sm.RoutingOptions{Parent: sm.ParentFirst}).Computed)
}

// TestEnginesVerify runs every engine on generated fabrics: the route set
// must connect every pair, and the engines that promise it must be
// deadlock-free.
func TestEnginesVerify(t *testing.T) {
	type gen struct {
		name string
		topo *topologies.Topology
	}
	var gens []gen
	add := func(name string, topo *topologies.Topology, err error) {
		require.NoError(t, err, name)
		gens = append(gens, gen{name, topo})
	}
	for seed := range uint64(12) {
		topo, err := topologies.Irregular(8+int(seed)*4, 4+int(seed%3), 1+int(seed%2), seed)
		add(fmt.Sprintf("irregular seed %d", seed), topo, err)
	}
	topo, err := topologies.FatTree(8, 4, 3)
	add("fattree 8x4x3", topo, err)
	topo, err = topologies.KAryNTree(3, 3)
	add("3-ary 3-tree", topo, err)
	topo, err = topologies.Torus(4, 4)
	add("torus 4x4", topo, err)
	topo, err = topologies.Mesh(3, 5)
	add("mesh 3x5", topo, err)
	for _, g := range gens {
		for _, lmc := range []uint8{0, 1} {
			f, err := sm.NewFabric(g.topo, 0, 1, lmc)
			require.NoError(t, err)
			for _, name := range sm.Engines() {
				e, err := sm.NewEngine(name, sm.RoutingOptions{})
				require.NoError(t, err)
				r, err := e.Route(f)
				if (name == "ftree" || name == "dmodk") && !strings.HasPrefix(g.name, "fattree") && !strings.Contains(g.name, "tree") {
					if err != nil {
						assert.ErrorIs(t, err, sm.ErrRouting)
						continue
					}
				}
				require.NoError(t, err, "%s %s", g.name, name)
				rep := sm.Verify(f, r)
				assert.True(t, rep.Connected(), "%s lmc %d %s: %v", g.name, lmc, name, rep.Err())
				if name != "minhop" {
					assert.True(t, rep.DeadlockFree(), "%s lmc %d %s: %v", g.name, lmc, name, rep.Err())
				}
			}
		}
	}
}

// TestMinhopCreditLoop: on a torus minimum-hop routes close cycles of
// channel dependencies, and the verifier says where.
func TestMinhopCreditLoop(t *testing.T) {
	topo, err := topologies.Torus(4, 4)
	require.NoError(t, err)
	f, err := sm.NewFabric(topo, 0, 1, 0)
	require.NoError(t, err)
	rep := sm.Verify(f, route(t, f, "minhop", sm.RoutingOptions{}))
	assert.True(t, rep.Connected())
	require.ErrorIs(t, rep.Err(), sm.ErrCreditLoop)
	assert.GreaterOrEqual(t, len(rep.Cycle), 3)
	assert.Equal(t, rep.Cycle[0], rep.Cycle[len(rep.Cycle)-1], "a cycle ends where it starts")
}

// ring returns four 3-port switches in a ring (port 1 to the next, port 2
// to the previous), each with a CA on port 3, and its fabric.
func ring(t *testing.T) *sm.Fabric {
	t.Helper()
	topo := topologies.New()
	var sw, ca [4]int
	for i := range 4 {
		var err error
		ca[i], err = topo.AddNode(topologies.Node{Type: topologies.CA, Name: fmt.Sprintf("ca%d", i), NumPorts: 1, GUID: uint64(0x100 + i*0x10)})
		require.NoError(t, err)
	}
	for i := range 4 {
		var err error
		sw[i], err = topo.AddNode(topologies.Node{Type: topologies.Switch, Name: fmt.Sprintf("sw%d", i), NumPorts: 3, GUID: uint64(0x200 + i)})
		require.NoError(t, err)
	}
	for i := range 4 {
		require.NoError(t, topo.Connect(topologies.PortRef{Node: sw[i], Port: 1}, topologies.PortRef{Node: sw[(i+1)%4], Port: 2}, 0, 0))
		require.NoError(t, topo.Connect(topologies.PortRef{Node: sw[i], Port: 3}, topologies.PortRef{Node: ca[i], Port: 1}, 0, 0))
	}
	f, err := sm.NewFabric(topo, 0, 1, 0)
	require.NoError(t, err)
	return f
}

// clockwise routes every LID around the ring in one direction: connected,
// and the four links form a dependency cycle.
func clockwise(f *sm.Fabric) *sm.Routes {
	r := &sm.Routes{Engine: "hand-made", MaxLID: f.MaxLID(), LFT: make([][]uint8, f.Topo.NumNodes())}
	for _, s := range f.Switches() {
		r.LFT[s] = make([]uint8, int(r.MaxLID)+1)
		for lid := range r.LFT[s] {
			r.LFT[s][lid] = 1
			i, ok := f.Owner(uint16(lid))
			switch {
			case !ok:
				r.LFT[s][lid] = mad.LFTNoPort
			case f.EndPorts()[i].Node == s:
				r.LFT[s][lid] = 0
			case f.EndPorts()[i].Switch == s:
				r.LFT[s][lid] = 3
			}
		}
	}
	return r
}

func TestVerifyDeadlock(t *testing.T) {
	f := ring(t)
	rep := sm.Verify(f, clockwise(f))
	assert.True(t, rep.Connected(), "%v", rep.Failures)
	assert.Equal(t, 16, rep.Channels, "8 links, both ways")
	require.ErrorIs(t, rep.Err(), sm.ErrCreditLoop)
	assert.Len(t, rep.Cycle, 5, "four links and back to the first: %v", rep.Cycle)
	assert.False(t, rep.DeadlockFree())

	// Up*/down* on the same ring breaks the cycle.
	for _, name := range []string{"updn-fera", "updn-pira"} {
		assert.NoError(t, sm.Verify(f, route(t, f, name, sm.RoutingOptions{})).Err(), name)
	}
}

func TestVerifyDisconnected(t *testing.T) {
	f := thesisFabric(t)
	sw5, _ := f.Topo.Lookup("sw5")
	sw2, _ := f.Topo.Lookup("sw2")
	ca15, _ := f.Topo.Lookup("ca15")
	ca11, _ := f.Topo.Lookup("ca11")
	sw6, _ := f.Topo.Lookup("sw6")
	sw10, _ := f.Topo.Lookup("sw10")
	lid15, lid11 := f.LID[ca15][1], f.LID[ca11][1]
	tests := []struct {
		name   string
		break_ func(r *sm.Routes)
		why    string
	}{
		{"missing entry", func(r *sm.Routes) { r.LFT[sw5][lid15] = mad.LFTNoPort }, "has no entry"},
		{"U-turn", func(r *sm.Routes) { r.LFT[sw5][lid11] = 2 }, "sends it back"},
		{"dead port", func(r *sm.Routes) { r.LFT[sw5][lid15] = 4 }, "not cabled"},
		{"port out of range", func(r *sm.Routes) { r.LFT[sw5][lid15] = 9 }, "names port 9"},
		{"wrong CA", func(r *sm.Routes) { r.LFT[sw5][lid15] = 3 }, "not the destination"},
		{"taken in", func(r *sm.Routes) { r.LFT[sw5][lid15] = 0 }, "delivers it to itself"},
		{"loop", func(r *sm.Routes) {
			// sw5 → sw2 → sw6 → sw10 → sw5 → …
			r.LFT[sw5][lid15], r.LFT[sw2][lid15], r.LFT[sw6][lid15], r.LFT[sw10][lid15] = 2, 3, 3, 1
		}, "forwarding loop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := route(t, f, "updn-fera", sm.RoutingOptions{}).Clone()
			tt.break_(r)
			rep := sm.Verify(f, r)
			assert.False(t, rep.Connected())
			require.ErrorIs(t, rep.Err(), sm.ErrDisconnected)
			assert.Contains(t, rep.Err().Error(), tt.why)
		})
	}
}

// TestVerifyDownUp makes a route through a valley: sw2 sends switch 3's
// LID down to sw6, which sends it up to sw3.
func TestVerifyDownUp(t *testing.T) {
	f := thesisFabric(t)
	r := route(t, f, "updn-fera", sm.RoutingOptions{}).Clone()
	sw2, _ := f.Topo.Lookup("sw2")
	sw3, _ := f.Topo.Lookup("sw3")
	sw6, _ := f.Topo.Lookup("sw6")
	lid := f.LID[sw3][0]
	r.LFT[sw2][lid], r.LFT[sw6][lid] = 3, 2
	rep := sm.Verify(f, r)
	require.True(t, rep.Connected(), "%v", rep.Failures)
	assert.Positive(t, rep.DownUp)
	assert.False(t, rep.DeadlockFree())
	err := rep.Err()
	assert.True(t, errors.Is(err, sm.ErrDownUp) || errors.Is(err, sm.ErrCreditLoop), "%v", err)
}

func TestEngineErrors(t *testing.T) {
	_, err := sm.NewEngine("dor", sm.RoutingOptions{})
	assert.ErrorIs(t, err, sm.ErrUnknownEngine)
	_, err = sm.NewEngine("updn-pira", sm.RoutingOptions{Parent: sm.ParentRandom + 1})
	assert.ErrorIs(t, err, sm.ErrConfig)
	_, err = sm.NewEngine("updn-fera", sm.RoutingOptions{FERaTies: sm.TieRandom + 1})
	assert.ErrorIs(t, err, sm.ErrConfig)
	f := thesisFabric(t)
	e, _ := sm.NewEngine("updn-fera", sm.RoutingOptions{RootGUID: f.Topo.Node(0).GUID}) // a CA
	_, err = e.Route(f)
	assert.ErrorIs(t, err, sm.ErrRouting)
	assert.Equal(t, []string{"dmodk", "ftree", "minhop", "updn-fera", "updn-pira"}, sm.Engines())
	torus, _ := topologies.Torus(3, 3)
	tf, err := sm.NewFabric(torus, 0, 1, 0)
	require.NoError(t, err)
	e, _ = sm.NewEngine("ftree", sm.RoutingOptions{})
	_, err = e.Route(tf)
	assert.ErrorIs(t, err, sm.ErrRouting)
	assert.Contains(t, err.Error(), "not a fat tree")
}

// TestRootGUID roots up*/down* at another switch.
func TestRootGUID(t *testing.T) {
	f := thesisFabric(t)
	sw10, _ := f.Topo.Lookup("sw10")
	for _, name := range []string{"updn-fera", "updn-pira"} {
		r := route(t, f, name, sm.RoutingOptions{RootGUID: f.Topo.Node(sw10).GUID})
		require.NoError(t, sm.Verify(f, r).Err())
		if name == "updn-pira" {
			assert.EqualValues(t, mad.LFTNoPort, r.Default[sw10])
		}
	}
}

func TestDumpRoutes(t *testing.T) {
	f := thesisFabric(t)
	r := route(t, f, "updn-fera", sm.RoutingOptions{})
	var b bytes.Buffer
	require.NoError(t, sm.DumpRoutes(&b, f, r))
	out := b.String()
	sw1, _ := f.Topo.Lookup("sw1")
	head := fmt.Sprintf("Unicast lids [0x0-0xf] of switch Lid %d guid 0x%016x (sw1):\n  Lid  Out   Destination\n       Port     Info \n",
		f.LID[sw1][0], f.Topo.Node(sw1).GUID)
	assert.Contains(t, out, head)
	assert.Contains(t, out, fmt.Sprintf("0x0001 003 : (Channel Adapter portguid 0x%016x: 'ca4')\n", f.Topo.Node(0).Ports[1].GUID))
	assert.Contains(t, out, fmt.Sprintf("0x%04x 000 : (Switch portguid 0x%016x: 'sw1')\n", f.LID[sw1][0], f.Topo.Node(sw1).GUID))
	assert.Equal(t, 8, strings.Count(out, "15 valid lids dumped \n"))

	// With LMC the other LIDs of a port are its paths, as ibroute says.
	lf, err := sm.NewFabric(topologies.Thesis8(), 0, 1, 1)
	require.NoError(t, err)
	b.Reset()
	require.NoError(t, sm.DumpRoutes(&b, lf, route(t, lf, "updn-pira", sm.RoutingOptions{})))
	assert.Contains(t, b.String(), fmt.Sprintf(": (path #2 out of 2: portguid 0x%016x)\n", lf.Topo.Node(0).Ports[1].GUID))
}
