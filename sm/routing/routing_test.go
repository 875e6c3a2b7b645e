package routing_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/sm/routing"
	_ "ibfab/sm/routing/ftree"
	_ "ibfab/sm/routing/minhop"
	"ibfab/sm/routing/routingtest"
	_ "ibfab/sm/routing/updn"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

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
			f, err := routing.NewFabric(g.topo, 0, 1, lmc)
			require.NoError(t, err)
			for _, name := range routing.Engines() {
				e, err := routing.NewEngine(name, routing.Options{})
				require.NoError(t, err)
				r, err := e.Route(f)
				if (name == "ftree" || name == "dmodk") && !strings.HasPrefix(g.name, "fattree") && !strings.Contains(g.name, "tree") {
					if err != nil {
						assert.ErrorIs(t, err, routing.ErrRouting)
						continue
					}
				}
				require.NoError(t, err, "%s %s", g.name, name)
				rep := routing.Verify(f, r)
				assert.True(t, rep.Connected(), "%s lmc %d %s: %v", g.name, lmc, name, rep.Err())
				if name != "minhop" {
					assert.True(t, rep.DeadlockFree(), "%s lmc %d %s: %v", g.name, lmc, name, rep.Err())
				}
			}
		}
	}
}

// ring returns four 3-port switches in a ring (port 1 to the next, port 2
// to the previous), each with a CA on port 3, and its fabric.
func ring(t *testing.T) *routing.Fabric {
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
	f, err := routing.NewFabric(topo, 0, 1, 0)
	require.NoError(t, err)
	return f
}

// clockwise routes every LID around the ring in one direction: connected,
// and the four links form a dependency cycle.
func clockwise(f *routing.Fabric) *routing.Routes {
	r := &routing.Routes{Engine: "hand-made", MaxLID: f.MaxLID(), LFT: make([][]uint8, f.Topo.NumNodes())}
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
	rep := routing.Verify(f, clockwise(f))
	assert.True(t, rep.Connected(), "%v", rep.Failures)
	assert.Equal(t, 16, rep.Channels, "8 links, both ways")
	require.ErrorIs(t, rep.Err(), routing.ErrCreditLoop)
	assert.Len(t, rep.Cycle, 5, "four links and back to the first: %v", rep.Cycle)
	assert.False(t, rep.DeadlockFree())

	// Up*/down* on the same ring breaks the cycle.
	for _, name := range []string{"updn-fera", "updn-pira"} {
		assert.NoError(t, routing.Verify(f, routingtest.Route(t, f, name, routing.Options{})).Err(), name)
	}
}

func TestVerifyDisconnected(t *testing.T) {
	f := routingtest.ThesisFabric(t)
	sw5, _ := f.Topo.Lookup("sw5")
	sw2, _ := f.Topo.Lookup("sw2")
	ca15, _ := f.Topo.Lookup("ca15")
	ca11, _ := f.Topo.Lookup("ca11")
	sw6, _ := f.Topo.Lookup("sw6")
	sw10, _ := f.Topo.Lookup("sw10")
	lid15, lid11 := f.LID[ca15][1], f.LID[ca11][1]
	tests := []struct {
		name   string
		break_ func(r *routing.Routes)
		why    string
	}{
		{"missing entry", func(r *routing.Routes) { r.LFT[sw5][lid15] = mad.LFTNoPort }, "has no entry"},
		{"U-turn", func(r *routing.Routes) { r.LFT[sw5][lid11] = 2 }, "sends it back"},
		{"dead port", func(r *routing.Routes) { r.LFT[sw5][lid15] = 4 }, "not cabled"},
		{"port out of range", func(r *routing.Routes) { r.LFT[sw5][lid15] = 9 }, "names port 9"},
		{"wrong CA", func(r *routing.Routes) { r.LFT[sw5][lid15] = 3 }, "not the destination"},
		{"taken in", func(r *routing.Routes) { r.LFT[sw5][lid15] = 0 }, "delivers it to itself"},
		{"loop", func(r *routing.Routes) {
			// sw5 → sw2 → sw6 → sw10 → sw5 → …
			r.LFT[sw5][lid15], r.LFT[sw2][lid15], r.LFT[sw6][lid15], r.LFT[sw10][lid15] = 2, 3, 3, 1
		}, "forwarding loop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := routingtest.Route(t, f, "updn-fera", routing.Options{}).Clone()
			tt.break_(r)
			rep := routing.Verify(f, r)
			assert.False(t, rep.Connected())
			require.ErrorIs(t, rep.Err(), routing.ErrDisconnected)
			assert.Contains(t, rep.Err().Error(), tt.why)
		})
	}
}

// TestVerifyDownUp makes a route through a valley: sw2 sends switch 3's
// LID down to sw6, which sends it up to sw3.
func TestVerifyDownUp(t *testing.T) {
	f := routingtest.ThesisFabric(t)
	r := routingtest.Route(t, f, "updn-fera", routing.Options{}).Clone()
	sw2, _ := f.Topo.Lookup("sw2")
	sw3, _ := f.Topo.Lookup("sw3")
	sw6, _ := f.Topo.Lookup("sw6")
	lid := f.LID[sw3][0]
	r.LFT[sw2][lid], r.LFT[sw6][lid] = 3, 2
	rep := routing.Verify(f, r)
	require.True(t, rep.Connected(), "%v", rep.Failures)
	assert.Positive(t, rep.DownUp)
	assert.False(t, rep.DeadlockFree())
	err := rep.Err()
	assert.True(t, errors.Is(err, routing.ErrDownUp) || errors.Is(err, routing.ErrCreditLoop), "%v", err)
}

func TestEngineErrors(t *testing.T) {
	_, err := routing.NewEngine("dor", routing.Options{})
	assert.ErrorIs(t, err, routing.ErrUnknownEngine)
	_, err = routing.NewEngine("updn-pira", routing.Options{Parent: routing.ParentRandom + 1})
	assert.ErrorIs(t, err, sm.ErrConfig)
	_, err = routing.NewEngine("updn-fera", routing.Options{FERaTies: routing.TieRandom + 1})
	assert.ErrorIs(t, err, sm.ErrConfig)
	f := routingtest.ThesisFabric(t)
	e, _ := routing.NewEngine("updn-fera", routing.Options{RootGUID: f.Topo.Node(0).GUID}) // a CA
	_, err = e.Route(f)
	assert.ErrorIs(t, err, routing.ErrRouting)
	assert.Equal(t, []string{"dmodk", "ftree", "minhop", "updn-fera", "updn-pira"}, routing.Engines())
	torus, _ := topologies.Torus(3, 3)
	tf, err := routing.NewFabric(torus, 0, 1, 0)
	require.NoError(t, err)
	e, _ = routing.NewEngine("ftree", routing.Options{})
	_, err = e.Route(tf)
	assert.ErrorIs(t, err, routing.ErrRouting)
	assert.Contains(t, err.Error(), "not a fat tree")
}
