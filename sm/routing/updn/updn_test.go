package updn_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/routing"
	"ibfab/sm/routing/routingtest"
	_ "ibfab/sm/routing/updn"
	"ibfab/wire/mad"
)

// perStep returns r.PerStep by node name.
func perStep(f *routing.Fabric, r *routing.Routes) map[string]int {
	m := map[string]int{}
	for i, e := range f.EndPorts() {
		m[f.Topo.Node(e.Node).Name] = r.PerStep[i]
	}
	return m
}

// TestThesisConformance checks the entry counts of the thesis's chapter 6
// on its example network, with the up*/down* DAG rooted at switch 1.
func TestThesisConformance(t *testing.T) {
	f := routingtest.ThesisFabric(t)

	// FERa: 8 switches × 15 destinations, no overwrite (thesis Table 18).
	fera := routingtest.Route(t, f, "updn-fera", routing.Options{})
	assert.Equal(t, 120, fera.Computed)
	assert.Equal(t, 120, fera.Entries())
	assert.Zero(t, fera.DefaultPorts)
	for name, n := range perStep(f, fera) {
		assert.Equal(t, 8, n, name)
	}

	// PIRa: 7 default ports and 50 entries (Table 19), and the entries of
	// each step in the thesis's LID order 1..15, the thesis node numbers.
	pira := routingtest.Route(t, f, "updn-pira", routing.Options{Parent: routing.ParentLast})
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

	for _, r := range []*routing.Routes{fera, pira} {
		rep := routing.Verify(f, r)
		require.NoError(t, rep.Err(), r.Engine)
		assert.Equal(t, 15*14, rep.Pairs)
	}
}

// TestPIRaParents: the parent is the thesis's random choice. On the
// example network two switches have two upper neighbours (6: 2 and 3; 10:
// 5 and 6), and the four choices give 48, 50, 51 or 53 entries; the
// thesis's Table 19 (50) took 3 and 6, the last explored of each.
func TestPIRaParents(t *testing.T) {
	f := routingtest.ThesisFabric(t)
	seen := map[int]bool{}
	for seed := range uint64(32) {
		r := routingtest.Route(t, f, "updn-pira", routing.Options{Parent: routing.ParentRandom, Seed: seed})
		require.NoError(t, routing.Verify(f, r).Err())
		assert.Equal(t, 7, r.DefaultPorts)
		seen[r.Computed] = true
		again := routingtest.Route(t, f, "updn-pira", routing.Options{Parent: routing.ParentRandom, Seed: seed})
		assert.Equal(t, r.LFT, again.LFT, "seed %d is reproducible", seed)
	}
	assert.Equal(t, map[int]bool{48: true, 50: true, 51: true, 53: true}, seen)
	assert.Equal(t, 51, routingtest.Route(t, f, "updn-pira", routing.Options{Parent: routing.ParentFirst}).Computed)
}

// TestRootGUID roots up*/down* at another switch.
func TestRootGUID(t *testing.T) {
	f := routingtest.ThesisFabric(t)
	sw10, _ := f.Topo.Lookup("sw10")
	for _, name := range []string{"updn-fera", "updn-pira"} {
		r := routingtest.Route(t, f, name, routing.Options{RootGUID: f.Topo.Node(sw10).GUID})
		require.NoError(t, routing.Verify(f, r).Err())
		if name == "updn-pira" {
			assert.EqualValues(t, mad.LFTNoPort, r.Default[sw10])
		}
	}
}
