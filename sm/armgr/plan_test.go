package armgr

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/routing"
	"ibfab/sm/routing/ftree"
	"ibfab/sm/routing/routingtest"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestPlan: the manager's plan is the fat tree's up ports
// (FatTreeUpPorts): on every switch group 1 is all its up ports, every
// CA LID adapts over the group whose ports are its alternatives (group 0
// when it has none: below the switch) and switch LIDs over none; where a
// link is missing, a destination reached minimally through some up
// ports alone gets a further group of just those.
func TestPlan(t *testing.T) {
	tp, err := topologies.RLFT(2, 3)
	require.NoError(t, err)
	leaf, _ := tp.Lookup("s1-3")
	top, _ := tp.Lookup("s3-1")
	for _, tc := range []struct {
		name string
		cut  *topologies.PortRef
		// groups is how many groups, "none" not counted, the switches
		// named have; the others have 1, or 0 at the top.
		groups map[string]int
	}{
		{name: "complete"},
		// s1-3 keeps port 4 alone, its group 1; the other leaves
		// reach it through port 4 only.
		{name: "leaf up link", cut: &topologies.PortRef{Node: leaf, Port: 3},
			groups: map[string]int{"s1-0": 2, "s1-1": 2, "s1-2": 2, "s1-4": 2, "s1-5": 2, "s1-6": 2, "s1-7": 2}},
		// s3-1 no longer reaches pod 1 (s2-3): the other pods'
		// switches up to s3-1 reach pod 1 through their other up port.
		{name: "top down link", cut: &topologies.PortRef{Node: top, Port: 2},
			groups: map[string]int{"s2-1": 2, "s2-5": 2, "s2-7": 2}},
		{name: "top cut from pod 0", cut: &topologies.PortRef{Node: top, Port: 1},
			groups: map[string]int{"s2-3": 2, "s2-5": 2, "s2-7": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo := tp
			if tc.cut != nil {
				topo = routingtest.Without(t, tp, *tc.cut)
			}
			f, err := routing.NewFabric(topo, 0, 1, 1)
			require.NoError(t, err)
			up, err := ftree.FatTreeUpPorts(f)
			require.NoError(t, err)
			p, err := newPlan(f)
			require.NoError(t, err)
			groups, lids := p.groups, p.lids
			mask := func(ports []int) mad.PortMask {
				var m mad.PortMask
				for _, p := range ports {
					m.Add(uint8(p))
				}
				return m
			}
			for _, s := range f.Switches() {
				name := topo.Node(s).Name
				require.NotEmpty(t, groups[s], name)
				assert.True(t, groups[s][0].IsZero(), "%s: group 0 is empty", name)
				want, ok := tc.groups[name]
				if !ok && up.Stage(s) < 3 {
					want = 1
				}
				assert.Len(t, groups[s], want+1, "%s: %v", name, groups[s])
				if len(up.Up(s)) > 0 {
					assert.Equal(t, mask(up.Up(s)), groups[s][1], "%s: group 1 is all its up ports", name)
				}
				require.Len(t, lids[s], int(f.MaxLID())+1, name)
				for _, e := range f.EndPorts() {
					for k := range e.NumLIDs() {
						lid := e.LID + uint16(k)
						g := lids[s][lid]
						alts := up.Alternatives(s, lid)
						if alts == nil {
							assert.Zero(t, g, "%s: LID %d has no alternatives", name, lid)
							continue
						}
						require.Less(t, int(g), len(groups[s]), name)
						assert.NotZero(t, g, "%s: LID %d", name, lid)
						assert.Equal(t, mask(alts), groups[s][g], "%s: LID %d's group is its alternatives", name, lid)
					}
				}
			}
		})
	}
	f, err := routing.NewFabric(routingtest.Grid(t, false, 2, 2), 0, 1, 0)
	require.NoError(t, err)
	_, err = newPlan(f)
	assert.ErrorIs(t, err, routing.ErrRouting, "not a fat tree")
	assert.ErrorContains(t, err, "not a fat tree")
}
