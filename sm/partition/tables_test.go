package partition_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/partition"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// The test fabric: two switches (port 0 GUIDs 0xs1, 0xs2), four CA ports
// 0xa1..0xa4 (0xa1 the SM's), each cabled to an enforcing switch port.
const (
	sw1, sw2           = 0x51, 0x52
	ca1, ca2, ca3, ca4 = 0xa1, 0xa2, 0xa3, 0xa4
)

// fresh is a table after reset: the default P_Key in index 0.
func fresh(capacity int) []mad.PKey {
	t := make([]mad.PKey, (capacity+31)/32*32)
	t[0] = mad.DefaultPKey
	return t
}

func testFabric() partition.Fabric {
	f := partition.Fabric{SM: ca1}
	for _, g := range []uint64{sw1, sw2} {
		f.Ports = append(f.Ports, partition.Port{GUID: g, Type: topologies.Switch, Cap: 64, Table: fresh(64)})
	}
	for _, g := range []uint64{ca1, ca2, ca3, ca4} {
		f.Ports = append(f.Ports, partition.Port{GUID: g, Type: topologies.CA, Cap: 64, Table: fresh(64),
			Peer: &partition.SwitchPort{Cap: 64, Table: fresh(64)}})
	}
	return f
}

// keys is a table's entries up to its last key.
func keys(t []mad.PKey) []mad.PKey {
	n := len(t)
	for n > 0 && t[n-1] == 0 {
		n--
	}
	return t[:n]
}

func compute(t *testing.T, text string, f partition.Fabric, e partition.Enforce, mem *partition.Memory) *partition.Plan {
	t.Helper()
	var c *partition.Config
	if text != "" {
		c = parse(t, text)
	}
	p, err := partition.Compute(c, f, e, mem)
	require.NoError(t, err)
	return p
}

// byGUID returns the plan of port g.
func byGUID(f partition.Fabric, p *partition.Plan, g uint64) partition.PortPlan {
	for i, port := range f.Ports {
		if port.GUID == g {
			return p.Ports[i]
		}
	}
	panic(fmt.Sprintf("no port %#x", g))
}

// TestTables: each end port's keys and where they go, on a fresh fabric,
// as OpenSM places them; the switch ports cabled to CAs get their CA's
// keys packed.
func TestTables(t *testing.T) {
	type want map[uint64][]mad.PKey
	for _, tc := range []struct {
		name, text string
		want       want
	}{
		{"no file: all full in Default", "", want{sw1: {0xffff}, ca1: {0xffff}, ca3: {0xffff}}},
		{"empty file: as none", "# nothing yet\n", want{sw1: {0xffff}, ca2: {0xffff}}},
		{"a file without Default: limited but the SM", "p=0x10 : 0xa2=full ;",
			want{sw1: {0x7fff}, ca1: {0xffff}, ca2: {0x7fff, 0x8010}, ca3: {0x7fff}}},
		{"the interop file", "Default=0x7fff, ipoib : ALL=full ;\n" +
			"pfull=0x0010 : 0xa2=full, 0xa3=full ;\n" +
			"plim=0x0020 : 0xa2=limited, 0xa3=limited, 0xa4=full ;\n",
			want{sw1: {0xffff}, ca1: {0xffff}, ca2: {0xffff, 0x8010, 0x0020}, ca3: {0xffff, 0x8010, 0x0020}, ca4: {0xffff, 0x8020}}},
		{"OpenSM's walk order: swapped bytes", "a=0x0010 : ALL_CAS=full ; b=0x0100 : ALL_CAS=full ; c=0x0011 : ALL_CAS ;",
			want{ca2: {0x7fff, 0x8100, 0x8010, 0x0011}, ca1: {0xffff, 0x8100, 0x8010, 0x0011}, sw2: {0x7fff}}},
		{"switches only", "s=0x30 : ALL_SWITCHES=full ;", want{sw1: {0x7fff, 0x8030}, ca2: {0x7fff}}},
		{"both is full", "b=0x40 : 0xa3=both ;", want{ca3: {0x7fff, 0x8040}}},
		{"named again: the last holds", "n=0x41 : ALL_CAS=full, 0xa2=limited ; n=0x41 : 0xa3=limited ;",
			want{ca2: {0x7fff, 0x0041}, ca3: {0x7fff, 0x0041}, ca4: {0x7fff, 0x8041}}},
		{"defmember", "d=0x42, defmember=full : 0xa2, 0xa3=limited ;", want{ca2: {0x7fff, 0x8042}, ca3: {0x7fff, 0x0042}}},
		{"membership bit ignored in the P_Key", "m=0x8043 : 0xa2=full ;", want{ca2: {0x7fff, 0x8043}}},
		{"Default by name", "Default : ALL=full ;", want{ca2: {0xffff}, sw2: {0xffff}}},
		{"generated P_Keys, and by name", "g1 : 0xa2=full ; g2 : 0xa3=full ; g1 : 0xa4 ; x=0x0001 : 0xa4=full ;",
			want{ca2: {0x7fff, 0x8001}, ca3: {0x7fff, 0x8002}, ca4: {0x7fff, 0x8001}}},
		{"SELF", "s=0x44 : SELF=full ;", want{ca1: {0xffff, 0x8044}, ca2: {0x7fff}}},
		{"indx0", "i=0x45, indx0 : ALL_CAS=full ;", want{ca2: {0x8045, 0x7fff}, ca1: {0x8045, 0xffff}, sw1: {0x7fff}}},
		{"absent GUIDs skipped", "p=0x46 : 0xdead=full, 0xa2 ; q=0x47 : 0xbeef ;", want{ca2: {0x7fff, 0x0046}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := testFabric()
			p := compute(t, tc.text, f, partition.EnforceBoth, nil)
			assert.Empty(t, p.Warnings)
			for g, w := range tc.want {
				pp := byGUID(f, p, g)
				assert.Equal(t, w, keys(pp.Table), "port %#x table", g)
				require.Len(t, pp.Table, 64)
				if g == sw1 || g == sw2 {
					assert.False(t, pp.PeerManaged)
					assert.Nil(t, pp.Peer)
					continue
				}
				assert.Equal(t, w, keys(pp.Peer), "port %#x's switch port", g)
				assert.True(t, pp.PeerManaged)
				assert.Equal(t, partition.EnforceBoth, pp.PeerEnforce)
			}
		})
	}
}

// TestPartitionsInEffect: the partitions Compute reports, with their
// members; one left with none does not exist.
func TestPartitionsInEffect(t *testing.T) {
	f := testFabric()
	p := compute(t, "p=0x46 : 0xdead=full, 0xa2 ; q=0x47 : 0xbeef ; 0x48 : ALL_SWITCHES ;", f, partition.EnforceBoth, nil)
	assert.Equal(t, []partition.Partition{
		{Name: "p", PKey: 0x46, Line: 1, Full: []uint64{}, Limited: []uint64{ca2}},
		{Name: "0048", PKey: 0x48, Line: 1, Full: []uint64{}, Limited: []uint64{sw1, sw2}},
		{Name: "Default", PKey: 0x7fff, Full: []uint64{ca1}, Limited: []uint64{sw1, sw2, ca2, ca3, ca4}},
	}, p.Partitions)
	assert.Equal(t, []uint64{0xbeef, 0xdead}, p.Absent)
}

// TestTablesKeepIndexes: a key the port holds stays at its index; the
// Default key goes to index 0 and no other stays there; the rest go past
// the highest index placed.
func TestTablesKeepIndexes(t *testing.T) {
	const file = "a=0x10 : 0xa2=full ; b=0x20 : 0xa2=full ;"
	for _, tc := range []struct {
		name      string
		cur, want []mad.PKey
	}{
		{"kept at 2, new after it", []mad.PKey{0xffff, 0, 0x8020}, []mad.PKey{0x7fff, 0, 0x8020, 0x8010}},
		{"membership changes in place", []mad.PKey{0xffff, 0x0020, 0x0010}, []mad.PKey{0x7fff, 0x8020, 0x8010}},
		{"Default moved to 0, 0 freed", []mad.PKey{0x8010, 0xffff}, []mad.PKey{0x7fff, 0x8010, 0x8020}},
		{"stale keys dropped", []mad.PKey{0xffff, 0x8099, 0x8020, 0x1234}, []mad.PKey{0x7fff, 0, 0x8020, 0x8010}},
		{"empty table", nil, []mad.PKey{0x7fff, 0x8010, 0x8020}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := testFabric()
			f.Ports[3].Table = append(make([]mad.PKey, 0, 64), tc.cur...)
			p := compute(t, file, f, partition.EnforceBoth, nil)
			pp := p.Ports[3]
			assert.Equal(t, tc.want, keys(pp.Table))
			var packed []mad.PKey
			for _, k := range tc.want {
				if k != 0 {
					packed = append(packed, k)
				}
			}
			assert.Equal(t, packed, keys(pp.Peer), "the switch port's keys packed")
		})
	}
}

// TestTablesStable: a second run on the tables the first wrote changes
// nothing.
func TestTablesStable(t *testing.T) {
	const file = "Default=0x7fff : ALL=full, 0xa4=limited ; a=0x0100 : ALL_CAS=full ; b=0x0010 : 0xa2, 0xa3=full ; c=0x33, indx0 : 0xa4 ;"
	f := testFabric()
	p1 := compute(t, file, f, partition.EnforceBoth, nil)
	for i := range f.Ports {
		f.Ports[i].Table = p1.Ports[i].Table
		if f.Ports[i].Peer != nil {
			f.Ports[i].Peer.Table = p1.Ports[i].Peer
		}
	}
	p2 := compute(t, file, f, partition.EnforceBoth, p1.Memory)
	for i := range f.Ports {
		assert.Equal(t, p1.Ports[i].Table, p2.Ports[i].Table, "port %#x", f.Ports[i].GUID)
		assert.Equal(t, p1.Ports[i].Peer, p2.Ports[i].Peer, "port %#x's switch port", f.Ports[i].GUID)
	}
	assert.Equal(t, []mad.PKey{0x0033, 0x8100, 0x7fff}, keys(p1.Ports[5].Table), "indx0 in index 0")
}

// TestTablesMemory: a partition that leaves and comes back takes the
// index it had, as OpenSM remembers while it runs; without the memory it
// goes past the highest.
func TestTablesMemory(t *testing.T) {
	const both, one = "a=0x10 : 0xa2=full ; b=0x20 : 0xa2=full ;", "b=0x20 : 0xa2=full ;"
	f := testFabric()
	p1 := compute(t, both, f, partition.EnforceBoth, nil)
	require.Equal(t, []mad.PKey{0x7fff, 0x8010, 0x8020}, keys(p1.Ports[3].Table))
	f.Ports[3].Table = p1.Ports[3].Table
	p2 := compute(t, one, f, partition.EnforceBoth, p1.Memory)
	require.Equal(t, []mad.PKey{0x7fff, 0, 0x8020}, keys(p2.Ports[3].Table))
	f.Ports[3].Table = p2.Ports[3].Table
	p3 := compute(t, both, f, partition.EnforceBoth, p2.Memory)
	assert.Equal(t, []mad.PKey{0x7fff, 0x8010, 0x8020}, keys(p3.Ports[3].Table), "back at index 1")
	p4 := compute(t, both, f, partition.EnforceBoth, nil)
	assert.Equal(t, []mad.PKey{0x7fff, 0, 0x8020, 0x8010}, keys(p4.Ports[3].Table), "forgotten")
	m := p2.Memory
	m.Forget(ca2)
	p5 := compute(t, both, f, partition.EnforceBoth, m)
	assert.Equal(t, keys(p4.Ports[3].Table), keys(p5.Ports[3].Table), "Forget")
	assert.Equal(t, []mad.PKey{0x7fff, 0x8010, 0x8020}, keys(p1.Ports[3].Table), "Compute left its input memory alone")
}

// TestTablesFull: a key past the table's end goes to its first free
// entry, or is left out with a warning.
func TestTablesFull(t *testing.T) {
	f := testFabric()
	f.Ports[3].Cap, f.Ports[3].Table = 3, []mad.PKey{0xffff, 0, 0x8030}
	p := compute(t, "a=0x10 : 0xa2=full ; b=0x20 : 0xa2=full ; c=0x30 : 0xa2=full ;", f, partition.EnforceBoth, nil)
	assert.Equal(t, []mad.PKey{0x7fff, 0x8010, 0x8030}, keys(p.Ports[3].Table))
	assert.Len(t, p.Ports[3].Table, 32, "one block")
	require.Len(t, p.Warnings, 1)
	assert.Contains(t, p.Warnings[0], "P_Key table full (3 entries), 0x8020 left out")

	f = testFabric()
	f.Ports[3].Cap, f.Ports[3].Table = 4, []mad.PKey{0xffff, 0, 0, 0x8030}
	p = compute(t, "a=0x10 : 0xa2=full ; c=0x30 : 0xa2=full ; b=0x20 : 0xa2=full ;", f, partition.EnforceBoth, nil)
	assert.Equal(t, []mad.PKey{0x7fff, 0x8010, 0x8020, 0x8030}, keys(p.Ports[3].Table), "0x8020 past the end, then in entry 2")
	assert.Empty(t, p.Warnings)
}

// TestPeers: what the switch port cabled to a CA gets: the CA's keys
// packed, the blocks past them kept; nothing with enforcement off or a
// switch that does not enforce; no enforcement where they do not fit.
func TestPeers(t *testing.T) {
	const file = "a=0x10 : 0xa2=full, 0xa3 ;"
	t.Run("blocks past the keys kept", func(t *testing.T) {
		f := testFabric()
		old := fresh(64)
		old[1], old[40] = 0x1111, 0x2222
		f.Ports[3].Peer.Table = old
		pp := compute(t, file, f, partition.EnforceIn, nil).Ports[3]
		assert.Equal(t, []mad.PKey{0x7fff, 0x8010}, pp.Peer[:2])
		assert.Equal(t, make([]mad.PKey, 30), pp.Peer[2:32], "block 0 written whole")
		assert.Equal(t, old[32:], pp.Peer[32:], "block 1 as it was")
		assert.Equal(t, partition.EnforceIn, pp.PeerEnforce)
	})
	t.Run("enforcement off", func(t *testing.T) {
		f := testFabric()
		pp := compute(t, file, f, partition.EnforceOff, nil).Ports[3]
		assert.Nil(t, pp.Peer)
		assert.True(t, pp.PeerManaged)
		assert.Equal(t, partition.EnforceOff, pp.PeerEnforce)
		assert.Equal(t, []mad.PKey{0x7fff, 0x8010}, keys(pp.Table), "the CA's own table all the same")
	})
	t.Run("a switch that does not enforce", func(t *testing.T) {
		f := testFabric()
		f.Ports[3].Peer.Cap = 0
		pp := compute(t, file, f, partition.EnforceBoth, nil).Ports[3]
		assert.Nil(t, pp.Peer)
		assert.False(t, pp.PeerManaged)
	})
	t.Run("no room: no enforcement", func(t *testing.T) {
		var b strings.Builder
		for i := range 31 {
			fmt.Fprintf(&b, "p%d=%#x : 0xa2=full ;\n", i, 0x100+i)
		}
		f := testFabric()
		f.Ports[3].Peer = &partition.SwitchPort{Cap: 32, Table: fresh(32)}
		p := compute(t, b.String(), f, partition.EnforceBoth, nil)
		pp := p.Ports[3]
		assert.Len(t, keys(pp.Table), 32)
		assert.Len(t, keys(pp.Peer), 32, "filled")
		assert.Equal(t, partition.EnforceOff, pp.PeerEnforce, "OpenSM's bound: a table filled is one too many")
		require.Len(t, p.Warnings, 1)
		assert.Contains(t, p.Warnings[0], "no enforcement there")
	})
	t.Run("unknown table: nothing computed", func(t *testing.T) {
		f := testFabric()
		f.Ports[3].Table = nil
		pp := compute(t, file, f, partition.EnforceBoth, nil).Ports[3]
		assert.Nil(t, pp.Table)
		assert.Nil(t, pp.Peer)
		assert.Equal(t, []mad.PKey{0x8010, 0x7fff}, pp.Keys, "a member all the same")
	})
}
