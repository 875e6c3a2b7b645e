package sm_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/memfabric"
	"ibfab/sm"
	"ibfab/sm/partition"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// partBench is two switches with two hosts each (ca1-1, the SM's, and
// ca1-2 on one; ca2-1 and ca2-2 on the other), the switches' external
// ports enforcing partitions with 64-entry tables, as the soft switch's.
func partBench(t *testing.T) *bench {
	t.Helper()
	topo := mustGen(t)(topologies.Irregular(2, 4, 2, 1))
	i, ok := topo.Lookup("ca1-1")
	require.True(t, ok)
	return newBench(t, topo, i, 1, func(n *topologies.Node, c *agent.Config) {
		if n.Type == topologies.Switch {
			c.PartitionEnforcementCap = agent.DefaultPartitionEnforcementCap
		}
	})
}

// hostGUID is the port GUID of a host's port 1.
func (b *bench) hostGUID(t *testing.T, name string) uint64 {
	t.Helper()
	i, ok := b.topo.Lookup(name)
	require.True(t, ok, name)
	return b.topo.Node(i).Ports[1].GUID
}

// facing returns the switch node and port a host's port 1 is cabled to.
func (b *bench) facing(t *testing.T, host string) (*memfabric.Node, uint8) {
	t.Helper()
	i, ok := b.topo.Lookup(host)
	require.True(t, ok, host)
	p, ok := b.topo.Peer(topologies.PortRef{Node: i, Port: 1})
	require.True(t, ok, host)
	return b.f.Node(p.Node), uint8(p.Port)
}

// partFile is the interop test's file: Default all full, pfull 0x10
// (ca1-2, ca2-1 full), plim 0x20 (ca1-2, ca2-1 limited, ca2-2 full).
func partFile(t *testing.T, b *bench) *partition.Config {
	t.Helper()
	text := fmt.Sprintf("Default=0x7fff, ipoib : ALL=full ;\n"+
		"pfull=0x0010 : 0x%016x=full, 0x%016x=full ;\n"+
		"plim=0x0020 : 0x%016x=limited, 0x%016x=limited, 0x%016x=full ;\n",
		b.hostGUID(t, "ca1-2"), b.hostGUID(t, "ca2-1"), b.hostGUID(t, "ca1-2"), b.hostGUID(t, "ca2-1"), b.hostGUID(t, "ca2-2"))
	c, err := partition.Parse(strings.NewReader(text), "partitions.conf")
	require.NoError(t, err)
	return c
}

// keysOf returns a table up to its last key.
func keysOf(table []mad.PKey) []mad.PKey {
	n := len(table)
	for n > 0 && table[n-1] == 0 {
		n--
	}
	return table[:n]
}

// partWant is each host's table under partFile.
var partWant = map[string][]mad.PKey{
	"ca1-1": {0xffff},
	"ca1-2": {0xffff, 0x8010, 0x0020},
	"ca2-1": {0xffff, 0x8010, 0x0020},
	"ca2-2": {0xffff, 0x8020},
}

// checkPartitions asserts that every host holds want's table, its switch
// port the same (with enforcement e), the switches' port 0 the Default
// key, and that no inter-switch port enforces.
func checkPartitions(t *testing.T, b *bench, want map[string][]mad.PKey, e partition.Enforce, switchTables bool) {
	t.Helper()
	for host, keys := range want {
		n, ok := b.f.Lookup(host)
		require.True(t, ok)
		assert.Equal(t, keys, keysOf(n.Agent.PKeys(1)), "%s's table", host)
		sw, p := b.facing(t, host)
		if switchTables {
			assert.Equal(t, keys, keysOf(sw.Agent.PKeys(p)), "%s port %d (to %s)", sw.Name, p, host)
		}
		pc := sw.Agent.PortConfig(p)
		assert.Equal(t, [2]bool{e.Inbound(), e.Outbound()},
			[2]bool{pc.PartitionEnforcementInbound, pc.PartitionEnforcementOutbound}, "%s port %d enforcement", sw.Name, p)
	}
	for _, n := range b.f.Nodes() {
		if n.Agent.Type() != mad.NodeTypeSwitch {
			continue
		}
		assert.Equal(t, []mad.PKey{0xffff}, keysOf(n.Agent.PKeys(0)), "%s port 0", n.Name)
		for p := 1; p <= b.topo.Node(n.Index).NumPorts; p++ {
			peer, ok := b.topo.Peer(topologies.PortRef{Node: n.Index, Port: p})
			if ok && b.topo.Node(peer.Node).Type == topologies.Switch {
				pc := n.Agent.PortConfig(uint8(p))
				assert.False(t, pc.PartitionEnforcementInbound || pc.PartitionEnforcementOutbound, "%s port %d to a switch", n.Name, p)
			}
		}
	}
}

// TestPartitionManager: a sweep reads every table once and sets only the
// blocks that differ: the tables and enforcement land; the next sweep
// sends nothing; events say what changed.
func TestPartitionManager(t *testing.T) {
	b := partBench(t)
	var events recorder[sm.PartitionEvent]
	s := b.newSM(t, sm.Config{Partitions: &sm.PartitionConfig{File: partFile(t, b), OnEvent: events.add}})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Empty(t, res.Warnings)
	// 6 end ports (4 hosts, 2 switches) and 4 switch ports of 2 blocks
	// each read; block 0 of three hosts and their switch ports set;
	// the four switch ports enforce.
	assert.Equal(t, sm.PartitionResult{Partitions: 3, Ports: 6, SwitchPorts: 4, BlocksRead: 20, BlocksSet: 6, Enforcement: 4},
		*res.Partitions)
	assert.Equal(t, map[string]uint64{"Get P_KeyTable": 20, "Set P_KeyTable": 6}, filterAttrs(res.SMPsByAttr, "P_Key"))
	checkPartitions(t, b, partWant, partition.EnforceBoth, true)
	phases := []string{}
	for _, p := range res.Phases {
		phases = append(phases, p.Name)
	}
	assert.Equal(t, []string{sm.PhaseDiscovery, sm.PhaseRouting, sm.PhaseDistribution, sm.PhasePartition, sm.PhaseActivation}, phases,
		"tables before activation")

	evs := events.list()
	require.Len(t, evs, 7, "3 hosts' tables, 4 switch ports")
	byPort := map[string]sm.PartitionEvent{}
	for _, e := range evs {
		assert.Equal(t, "partition", e.Event)
		byPort[e.Port] = e
	}
	ca12 := byPort[fmt.Sprintf("%s[1]", descOf(b, "ca1-2"))]
	assert.Equal(t, sm.PartitionEvent{Event: "partition", Port: ca12.Port, GUID: fmt.Sprintf("0x%016x", b.hostGUID(t, "ca1-2")),
		Type: "ca", Blocks: []int{0}, Table: []string{"0xffff", "0x8010", "0x0020"}}, ca12)
	sw, p := b.facing(t, "ca1-1")
	own := byPort[fmt.Sprintf("%s[%d]", descOf(b, sw.Name), p)]
	assert.Equal(t, "switch-port", own.Type)
	require.NotNil(t, own.Enforce)
	assert.Equal(t, partition.EnforceBoth, *own.Enforce)
	assert.Empty(t, own.Blocks, "the SM's switch port holds the default key already")

	again := b.sweep(t, s)
	require.True(t, again.SubnetUp, again.Reason)
	assert.Equal(t, sm.PartitionResult{Partitions: 3, Ports: 6, SwitchPorts: 4}, *again.Partitions, "nothing read, nothing differs")
	assert.Empty(t, filterAttrs(again.SMPsByAttr, "P_Key"))
	assert.Len(t, events.list(), 7, "no event")
	checkPartitions(t, b, partWant, partition.EnforceBoth, true)
}

// descOf is a node's name as the SM's events give it: its description.
func descOf(b *bench, name string) string {
	n, _ := b.f.Lookup(name)
	return b.topo.Node(n.Index).Description
}

// TestPartitionManagerChangedBlocks: an SM that meets tables another
// wrote reads them and sets only the block that differs: one partition
// of many moves a key in block 1.
func TestPartitionManagerChangedBlocks(t *testing.T) {
	b := partBench(t)
	// 0x1ff comes last in OpenSM's order (0xff01 swapped), after
	// 0x100…0x126: index 40, block 1.
	file := func(last string) *partition.Config {
		var text strings.Builder
		text.WriteString("Default=0x7fff : ALL=full ;\n")
		for i := range 39 {
			fmt.Fprintf(&text, "p%d=%#x : 0x%016x=full ;\n", i, 0x100+i, b.hostGUID(t, "ca2-2"))
		}
		fmt.Fprintf(&text, "last=0x1ff : 0x%016x=%s ;\n", b.hostGUID(t, "ca2-2"), last)
		c, err := partition.Parse(strings.NewReader(text.String()), "p.conf")
		require.NoError(t, err)
		return c
	}
	first := b.newSM(t, sm.Config{Partitions: &sm.PartitionConfig{File: file("full")}})
	res := b.sweep(t, first)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, 4, res.Partitions.BlocksSet, "ca2-2's blocks 0 and 1, its switch port's")
	n, _ := b.f.Lookup("ca2-2")
	held := keysOf(n.Agent.PKeys(1))
	require.Len(t, held, 41)
	require.NoError(t, first.Close())

	second := b.newSM(t, sm.Config{Partitions: &sm.PartitionConfig{File: file("limited")}})
	res = b.sweep(t, second)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, 20, res.Partitions.BlocksRead)
	assert.Equal(t, 2, res.Partitions.BlocksSet, "block 1 of ca2-2's table and of its switch port's")
	assert.Zero(t, res.Partitions.Enforcement)
	now := keysOf(n.Agent.PKeys(1))
	i := len(held) - 1
	assert.Equal(t, mad.PKey(0x81ff), held[i])
	assert.Equal(t, mad.PKey(0x01ff), now[i], "in place, in block 1")
	assert.Equal(t, held[:i], now[:i])
	sw, p := b.facing(t, "ca2-2")
	assert.Equal(t, now, keysOf(sw.Agent.PKeys(p)))
}

// TestPartitionManagerEnforceOff: with enforcement off the switch ports'
// bits are cleared and their tables left as they are; the hosts' tables
// are set all the same.
func TestPartitionManagerEnforceOff(t *testing.T) {
	b := partBench(t)
	on := b.newSM(t, sm.Config{Partitions: &sm.PartitionConfig{File: partFile(t, b), Enforce: partition.EnforceIn}})
	require.True(t, b.sweep(t, on).SubnetUp)
	checkPartitions(t, b, partWant, partition.EnforceIn, true)
	require.NoError(t, on.Close())

	off := b.newSM(t, sm.Config{Partitions: &sm.PartitionConfig{Enforce: partition.EnforceOff}})
	res := b.sweep(t, off)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, sm.PartitionResult{Partitions: 1, Ports: 6, SwitchPorts: 4, BlocksRead: 12, BlocksSet: 3, Enforcement: 4},
		*res.Partitions, "no file: only Default; the switch ports not even read")
	all := map[string][]mad.PKey{"ca1-1": {0xffff}, "ca1-2": {0xffff}, "ca2-1": {0xffff}, "ca2-2": {0xffff}}
	checkPartitions(t, b, all, partition.EnforceOff, false)
	for host, keys := range partWant {
		sw, p := b.facing(t, host)
		assert.Equal(t, keys, keysOf(sw.Agent.PKeys(p)), "%s port %d keeps its table", sw.Name, p)
	}
}

// TestPartitionManagerAssimilation: a host that comes back reset gets its
// table again in the assimilation that brings it in.
func TestPartitionManagerAssimilation(t *testing.T) {
	b := partBench(t)
	s := upAndQuiet(t, b, sm.Config{
		Partitions:         &sm.PartitionConfig{File: partFile(t, b)},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep},
	})
	checkPartitions(t, b, partWant, partition.EnforceBoth, true)

	require.NoError(t, b.port.PowerOff("ca2-2"))
	res := assimilate(t, s, sm.TriggerSweep)
	assert.Equal(t, 1, res.NodesRemoved)
	require.NoError(t, b.port.PowerOn("ca2-2"))
	n, _ := b.f.Lookup("ca2-2")
	require.Equal(t, []mad.PKey{0xffff}, keysOf(n.Agent.PKeys(1)), "reset")
	res = assimilate(t, s, sm.TriggerSweep)
	assert.Equal(t, 1, res.NodesAdded)
	require.NotNil(t, res.Partitions)
	assert.Equal(t, 2, res.Partitions.BlocksRead, "the new host's table")
	assert.Equal(t, 1, res.Partitions.BlocksSet, "its block 0; its switch port holds its keys already")
	checkPartitions(t, b, partWant, partition.EnforceBoth, true)
	_, ok := res.Phase(sm.PhasePartition)
	assert.True(t, ok)
}

// TestPartitionManagerConfig: a mode that is none is refused.
func TestPartitionManagerConfig(t *testing.T) {
	b := partBench(t)
	_, err := sm.New(b.port, sm.Config{Partitions: &sm.PartitionConfig{Enforce: partition.Enforce(7)}})
	assert.ErrorIs(t, err, sm.ErrConfig)
}

// TestPartitionManagerSwitchLinks: a switch port cabled to a switch that
// enforces (set behind the SM's back) has its enforcement cleared.
func TestPartitionManagerSwitchLinks(t *testing.T) {
	b := partBench(t)
	sw1, ok := b.f.Lookup("sw1")
	require.True(t, ok)
	var link uint8
	for p := 1; p <= b.topo.Node(sw1.Index).NumPorts; p++ {
		peer, ok := b.topo.Peer(topologies.PortRef{Node: sw1.Index, Port: p})
		if ok && b.topo.Node(peer.Node).Type == topologies.Switch {
			link = uint8(p)
		}
	}
	require.NotZero(t, link)
	// The switch's own driver sets the bits: a Set from its port 0,
	// hop count 0.
	data, err := sw1.Agent.LocalGet(0, mad.AttrPortInfo, uint32(link))
	require.NoError(t, err)
	pi := mad.PortInfo(data).Fields()
	pi.PortState, pi.PortPhysicalState, pi.LinkDownDefaultState = mad.PortStateNoChange, mad.PhysStateNoChange, mad.PhysStateNoChange
	pi.LinkWidthEnabled, pi.LinkSpeedEnabled = mad.LinkWidthNoChange, mad.LinkSpeedNoChange
	pi.PartitionEnforcementInbound, pi.PartitionEnforcementOutbound = true, true
	m, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, AttrID: mad.AttrPortInfo,
		AttrModifier: uint32(link), Data: mad.AppendPortInfo(nil, &pi)})
	require.NoError(t, err)
	out := sw1.Agent.Send(agent.Request{Port: 0, MAD: m})
	require.Len(t, out, 1)
	require.Equal(t, mad.StatusOK, mad.DRSMP(out[0].MAD).Status())
	require.True(t, sw1.Agent.PortConfig(link).PartitionEnforcementInbound)

	s := b.newSM(t, sm.Config{Partitions: &sm.PartitionConfig{File: partFile(t, b)}})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, 4+1, res.Partitions.Enforcement, "four switch ports to hosts, one to a switch")
	checkPartitions(t, b, partWant, partition.EnforceBoth, true)
}
