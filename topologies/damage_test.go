package topologies_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

// ring4 is four switches in a ring, sw1-sw2-sw3-sw4-sw1, with hosts h1 on
// sw1 and h2, h3 on sw3.
func ring4(t *testing.T) *topologies.Topology {
	t.Helper()
	topo, err := topologies.Parse(strings.NewReader(`
Switch 4 "sw1"
[1] "sw2"[1]
[2] "sw4"[2]
[3] "h1"[1]

Switch 4 "sw2"
[1] "sw1"[1]
[2] "sw3"[1]

Switch 4 "sw3"
[1] "sw2"[2]
[2] "sw4"[1]
[3] "h2"[1]
[4] "h3"[1]

Switch 4 "sw4"
[1] "sw3"[2]
[2] "sw1"[2]

Ca 1 "h1"
[1] "sw1"[3]

Ca 1 "h2"
[1] "sw3"[3]

Ca 1 "h3"
[1] "sw3"[4]
`), "ring4")
	require.NoError(t, err)
	return topo
}

func TestDamage(t *testing.T) {
	topo := ring4(t)
	ref := func(node string, port int) topologies.PortRef {
		i, ok := topo.Lookup(node)
		require.True(t, ok, node)
		return topologies.PortRef{Node: i, Port: port}
	}
	cut12 := topologies.Link{A: ref("sw1", 1), B: ref("sw2", 1)}
	cut14 := topologies.Link{A: ref("sw1", 2), B: ref("sw4", 2)}

	assert.Equal(t, []string{"h1", "h2", "h3"}, topo.Reachable("h1", nil))
	assert.Nil(t, topo.Reachable("nobody", nil))
	assert.Equal(t, []string{"h1", "h2", "h3"}, topo.Reachable("h1", &topologies.Damage{Cut: []topologies.Link{cut12}}), "a ring survives one cut")
	assert.Equal(t, []string{"h1"}, topo.Reachable("h1", &topologies.Damage{Cut: []topologies.Link{cut12, cut14}}), "two cuts isolate sw1")
	assert.Equal(t, []string{"h1"}, topo.Reachable("h1", &topologies.Damage{Dead: map[string]bool{"sw3": true}}))
	assert.True(t, (&topologies.Damage{Cut: []topologies.Link{cut12}}).IsCut(ref("sw2", 1)))
	assert.False(t, (*topologies.Damage)(nil).IsCut(ref("sw2", 1)))

	sw1, _ := topo.Lookup("sw1")
	assert.Equal(t, sw1, topo.SwitchOf("h1"))
	assert.Equal(t, -1, topo.SwitchOf("nobody"))
	assert.Equal(t, 2, topo.SwitchLinks(sw1))
	assert.Equal(t, []string{"h2", "h3"}, topo.HostsOf("sw3"))

	l, ok := topo.CycleLink("h1")
	require.True(t, ok)
	assert.NotEqual(t, sw1, l.A.Node, "not at the SM's switch")
	assert.NotEqual(t, sw1, l.B.Node, "not at the SM's switch")

	v, ok := topo.Victim("h1", nil)
	require.True(t, ok)
	assert.Equal(t, "sw3", v, "the only switch with hosts away from sw1")
	_, ok = topo.Victim("h1", &topologies.Damage{Cut: []topologies.Link{{A: ref("sw2", 2), B: ref("sw3", 1)}}})
	assert.False(t, ok, "sw3 is at a cut cable")
}
