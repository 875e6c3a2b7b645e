package harness_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/nodeproc"
	"ibfab/softswitch"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// twoSwitches is sw1 and sw2 joined by their ports 3, each with two HCAs
// on ports 1 and 2: ca1, ca2 on sw1, ca3, ca4 on sw2.
func twoSwitches(t testing.TB) *topologies.Topology {
	t.Helper()
	topo := topologies.New()
	for _, n := range []topologies.Node{
		{Type: topologies.Switch, Name: "sw1", NumPorts: 4, GUID: 0x1000},
		{Type: topologies.Switch, Name: "sw2", NumPorts: 4, GUID: 0x1100},
		{Type: topologies.CA, Name: "ca1", NumPorts: 1, GUID: 0x2000},
		{Type: topologies.CA, Name: "ca2", NumPorts: 1, GUID: 0x2100},
		{Type: topologies.CA, Name: "ca3", NumPorts: 1, GUID: 0x2200},
		{Type: topologies.CA, Name: "ca4", NumPorts: 1, GUID: 0x2300},
	} {
		_, err := topo.AddNode(n)
		require.NoError(t, err)
	}
	for _, l := range [][2]topologies.PortRef{
		{{Node: 2, Port: 1}, {Node: 0, Port: 1}},
		{{Node: 3, Port: 1}, {Node: 0, Port: 2}},
		{{Node: 4, Port: 1}, {Node: 1, Port: 1}},
		{{Node: 5, Port: 1}, {Node: 1, Port: 2}},
		{{Node: 0, Port: 3}, {Node: 1, Port: 3}},
	} {
		require.NoError(t, topo.Connect(l[0], l[1], 0, 0))
	}
	return topo
}

// credits returns the per-VL status of port n of a node's status.
func credits(t *testing.T, s nodeproc.Status, n int) []nodeproc.VLCredits {
	t.Helper()
	for _, p := range s.Ports {
		if p.Port == n {
			return p.Credits
		}
	}
	t.Fatalf("%s has no port %d", s.Name, n)
	return nil
}

// TestSwitchConfig: --vl-blocks and --switch-arch take effect in the
// switch processes, status shows per VL the buffers and the downstream
// view, the switch-config op changes buffers and architecture at run
// time (the neighbour's view follows), and watch counts a destination's
// packets per input port and VL.
func TestSwitchConfig(t *testing.T) {
	f := fabrictest.Up(t, "swcfg", twoSwitches(t), harness.UpOptions{
		NodeArgs:    []string{"--vl-blocks", "512,512,0"},
		NodeArgsFor: map[string][]string{"sw2": {"--switch-arch", "iq"}},
	})
	sm := f.NewSM("ca1")
	require.NoError(t, sm.Configure())
	ctx := context.Background()

	sw1, sw2 := f.Node("sw1"), f.Node("sw2")
	require.NotNil(t, sw1.SwitchConfig)
	require.NotNil(t, sw2.SwitchConfig)
	assert.Equal(t, softswitch.ArchVOQ, sw1.SwitchConfig.Arch)
	assert.Equal(t, softswitch.ArchIQ, sw2.SwitchConfig.Arch)
	assert.Equal(t, []int{512, 512, 0}, sw1.SwitchConfig.VLBlocks)
	assert.Equal(t, mad.AROff, sw1.SwitchConfig.ARMode)
	c := credits(t, sw1, 3)
	require.GreaterOrEqual(t, len(c), 4)
	for vl, want := range []int{512, 512, 0, sw1.SwitchConfig.RxBlocks} {
		assert.Equal(t, want, c[vl].RxCapacity, "sw1 port 3 VL%d buffer", vl)
		assert.Equal(t, want, c[vl].DownCapacity, "sw1 port 3 VL%d: sw2's buffer, from its credits", vl)
	}

	st, err := harness.SwitchConfig(ctx, f.Name, "sw1", nodeproc.SwitchConfigArgs{Arch: ptr(softswitch.ArchIQ), VLBlocks: []int{256, 256, 256}})
	require.NoError(t, err)
	assert.Equal(t, softswitch.ArchIQ, st.Arch)
	assert.Equal(t, []int{256, 256, 256}, st.VLBlocks)
	_, err = harness.SwitchConfig(ctx, f.Name, "sw1", nodeproc.SwitchConfigArgs{Arch: ptr(softswitch.Arch(7))})
	require.ErrorContains(t, err, "switch architecture Arch(7)")
	fabrictest.Wait(t, 5*time.Second, "sw2's view of sw1's new buffers", func() bool {
		s, err := harness.NodeState(ctx, f.Name, "sw2")
		require.NoError(t, err)
		c := credits(t, s, 3)
		return c[0].DownCapacity == 256 && c[2].DownCapacity == 256
	})
	assert.Equal(t, 256, credits(t, f.Node("sw1"), 3)[2].RxCapacity)

	ca3, ca4 := sm.LID[f.Index("ca3")], sm.LID[f.Index("ca4")]
	lids, err := harness.Watch(ctx, f.Name, "sw2", []uint16{ca3})
	require.NoError(t, err)
	assert.Equal(t, []uint16{ca3}, lids)
	f.MustCall("ca1", "traffic-start", nodeproc.TrafficArgs{Port: 1, Load: 5, Payload: 256, Dests: []uint16{ca3, ca4}, Seed: 1}, nil)
	fabrictest.Wait(t, 10*time.Second, "watched packets at sw2", func() bool {
		s, err := harness.NodeState(ctx, f.Name, "sw2")
		require.NoError(t, err)
		return credits(t, s, 3)[0].Watched >= 10
	})
	f.MustCall("ca1", "traffic-stop", map[string]int{"port": 1}, nil)
	c = credits(t, f.Node("sw2"), 3)
	assert.Greater(t, c[0].RcvPkts, c[0].Watched, "ca4's packets are received, not watched")
	assert.Zero(t, credits(t, f.Node("sw2"), 1)[0].Watched, "nothing for ca3 came in from ca3")

	code, out, errOut := run("status", "--name", f.Name, "--vls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "RX_USED/SIZE")
	assert.Regexp(t, `sw2\s+iq\s+off\s+512,512,0\s+`, out)
}

func ptr[T any](v T) *T { return &v }
