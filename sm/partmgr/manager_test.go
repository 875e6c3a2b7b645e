package partmgr_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm/partition"
	"ibfab/sm/partmgr"
	"ibfab/sm/routing"
	"ibfab/sm/txn"
	"ibfab/sm/txn/txntest"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// fakeSubnet is a switch (node 0, GUID 0x5) with two CAs (nodes 1 and
// 2) on its ports 1 and 2 and a second switch (node 3) on its port 3:
// every P_Key table one block, every PortInfo what its Sets wrote, by
// path and modifier.
type fakeSubnet struct {
	txntest.Queue
	blocks map[string][]byte
	pis    map[[2]int]mad.PortInfoFields
	// failSet fails the Sets of the block at that path and modifier;
	// stubborn ports answer a PortInfo Set with what they held.
	failSet  string
	stubborn map[[2]int]bool
}

func blockKey(r *txn.Request) string { return fmt.Sprintf("%v/%#x", r.Path, r.Mod) }

func newFakeSubnet() *fakeSubnet {
	f := &fakeSubnet{blocks: map[string][]byte{}, pis: map[[2]int]mad.PortInfoFields{}, stubborn: map[[2]int]bool{}}
	for _, p := range [][2]int{{0, 1}, {0, 2}, {0, 3}, {3, 1}} {
		f.pis[p] = mad.PortInfoFields{PortState: mad.PortStateActive}
	}
	// The switches' link enforces: the manager clears it.
	for _, p := range [][2]int{{0, 3}, {3, 1}} {
		pi := f.pis[p]
		pi.PartitionEnforcementInbound, pi.PartitionEnforcementOutbound = true, true
		f.pis[p] = pi
	}
	f.Answer = f.answer
	return f
}

// nodeOfPath is the node a directed route of the view reaches.
var nodeOfPath = map[string]int{"[0]": 0, "[0 1]": 1, "[0 2]": 2, "[0 3]": 3}

func (f *fakeSubnet) answer(set bool, r *txn.Request) *txn.Response {
	switch r.Attr {
	case mad.AttrPKeyTable:
		k := blockKey(r)
		if set {
			if k == f.failSet {
				return &txn.Response{Err: errors.New("fake: timeout")}
			}
			f.blocks[k] = append([]byte(nil), r.Data...)
		}
		if b, ok := f.blocks[k]; ok {
			return &txn.Response{Data: b}
		}
		return &txn.Response{Data: make([]byte, mad.PKeysPerBlock*2)}
	case mad.AttrPortInfo:
		p := [2]int{nodeOfPath[fmt.Sprint(r.Path)], int(r.Mod)}
		if set && !f.stubborn[p] {
			f.pis[p] = mad.PortInfo(r.Data).Fields()
		}
		return &txn.Response{Data: mad.AppendPortInfo(nil, new(f.pis[p]))}
	}
	return &txn.Response{Err: errors.New("fake: no such attribute")}
}

// The fake is also the SM's PortInfo: what the ports hold.
func (f *fakeSubnet) PortInfo(node, port int) (mad.PortInfoFields, bool) {
	pi, ok := f.pis[[2]int{node, port}]
	return pi, ok
}

func (f *fakeSubnet) ForSet(node, port int) mad.PortInfoFields { return f.pis[[2]int{node, port}] }

func (f *fakeSubnet) Took(node, port int, pi mad.PortInfoFields) { f.pis[[2]int{node, port}] = pi }

func port(node int, guid uint64, p int, path ...uint8) partmgr.Port {
	return partmgr.Port{Key: partmgr.Key{Node: guid, Port: p}, Node: node, Name: fmt.Sprintf("n%d[%d]", node, p),
		Cap: mad.PKeysPerBlock, Path: path}
}

// view is fakeSubnet's ports as the SM hands them to the manager.
func (f *fakeSubnet) view() *partmgr.View {
	ca := func(node int, guid, portGUID uint64) partmgr.End {
		self := port(node, guid, 1, 0, uint8(node))
		self.Type, self.GUID = "ca", portGUID
		peer := port(0, 0x5, node, 0)
		peer.Type, peer.GUID, peer.Mod = "switch-port", 0x5, uint32(node)<<16
		return partmgr.End{Self: self, NodeType: topologies.CA, Peer: &peer}
	}
	sw := port(0, 0x5, 0, 0)
	sw.Type, sw.GUID = "switch", 0x5
	link := func(node int, guid uint64, p int, path ...uint8) partmgr.Port {
		l := port(node, guid, p, path...)
		l.Cap, l.Type, l.GUID = 0, "switch-port", guid
		return l
	}
	return &partmgr.View{SM: 0x100, PortInfos: f,
		Ends:        []partmgr.End{ca(1, 0xa, 0x100), ca(2, 0xb, 0x200), {Self: sw, NodeType: topologies.Switch}},
		SwitchLinks: []partmgr.Port{link(0, 0x5, 3, 0), link(3, 0x6, 1, 0, 3)}}
}

// sweep runs one sweep and returns its result and warnings.
func sweep(t *testing.T, m *partmgr.Manager, f *fakeSubnet) (partmgr.Result, []string) {
	t.Helper()
	var warns []string
	r, err := m.Sweep(context.Background(), f.view(), func(format string, args ...any) {
		warns = append(warns, fmt.Sprintf(format, args...))
	})
	require.NoError(t, err)
	require.NotNil(t, r)
	return *r, warns
}

func newManager(t *testing.T, f *fakeSubnet, c partmgr.Config) *partmgr.Manager {
	t.Helper()
	m, err := partmgr.New(&c, f)
	require.NoError(t, err)
	return m
}

// TestSweep: a first sweep reads every table once and writes the Default
// partition into each, with the CAs' switch ports enforcing and the
// switches' link not; the second sends nothing.
func TestSweep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		enforce partition.Enforce
		first   partmgr.Result
		peer    mad.PortInfoFields // the CAs' switch ports' enforcement after
	}{
		{"both", partition.EnforceBoth, partmgr.Result{Partitions: 1, Ports: 3, SwitchPorts: 2, BlocksRead: 5,
			BlocksSet: 5, Enforcement: 4}, mad.PortInfoFields{PartitionEnforcementInbound: true, PartitionEnforcementOutbound: true}},
		{"in", partition.EnforceIn, partmgr.Result{Partitions: 1, Ports: 3, SwitchPorts: 2, BlocksRead: 5,
			BlocksSet: 5, Enforcement: 4}, mad.PortInfoFields{PartitionEnforcementInbound: true}},
		// With enforcement off the switch ports' tables are not read.
		{"off", partition.EnforceOff, partmgr.Result{Partitions: 1, Ports: 3, SwitchPorts: 2, BlocksRead: 3,
			BlocksSet: 3, Enforcement: 2}, mad.PortInfoFields{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSubnet()
			var events []partmgr.Event
			m := newManager(t, f, partmgr.Config{Enforce: tc.enforce, OnEvent: func(e partmgr.Event) { events = append(events, e) }})
			r, warns := sweep(t, m, f)
			assert.Empty(t, warns)
			assert.Equal(t, tc.first, r)
			for _, p := range [][2]int{{0, 1}, {0, 2}} {
				assert.Equal(t, [2]bool{tc.peer.PartitionEnforcementInbound, tc.peer.PartitionEnforcementOutbound},
					[2]bool{f.pis[p].PartitionEnforcementInbound, f.pis[p].PartitionEnforcementOutbound}, "%v", p)
			}
			for _, p := range [][2]int{{0, 3}, {3, 1}} {
				assert.False(t, f.pis[p].PartitionEnforcementInbound || f.pis[p].PartitionEnforcementOutbound, "%v", p)
			}
			require.NotEmpty(t, events)
			first := events[0]
			assert.Equal(t, partmgr.Event{Event: "partition", Port: "n1[1]", GUID: "0x0000000000000100", Type: "ca",
				Blocks: []int{0}, Table: []string{"0xffff"}}, first, "the SM's port: a full member of Default")
			assert.Len(t, m.Tables(), int(tc.first.BlocksRead))

			again, warns := sweep(t, m, f)
			assert.Empty(t, warns)
			assert.Equal(t, partmgr.Result{Partitions: 1, Ports: 3, SwitchPorts: 2}, again, "nothing read, nothing differs")
		})
	}
}

// TestSweepFailures: a block whose Set failed is read again at the next
// sweep; a port that does not take its enforcement is a failure.
func TestSweepFailures(t *testing.T) {
	f := newFakeSubnet()
	f.failSet = "[0 2]/0x0"
	f.stubborn[[2]int{0, 3}] = true
	m := newManager(t, f, partmgr.Config{})
	r, warns := sweep(t, m, f)
	assert.Equal(t, 2, r.Failures)
	require.Len(t, warns, 2)
	assert.Contains(t, warns[0], "setting block 0 of n2[1]'s P_Key table")
	assert.Contains(t, warns[1], "n0[3] did not take partition enforcement off")

	f.failSet = ""
	r, _ = sweep(t, m, f)
	assert.Equal(t, 1, r.BlocksRead, "the table the failed Set left unknown")
	assert.Equal(t, 1, r.BlocksSet)
}

// TestForget: a node forgotten (it left, or was reset) has its tables
// read again; ForgetAll forgets them all.
func TestForget(t *testing.T) {
	f := newFakeSubnet()
	m := newManager(t, f, partmgr.Config{})
	sweep(t, m, f)
	m.Forget(0xa)
	r, _ := sweep(t, m, f)
	assert.Equal(t, 1, r.BlocksRead, "CA 0xa's port")
	m.ForgetAll()
	r, _ = sweep(t, m, f)
	assert.Equal(t, 5, r.BlocksRead)
	assert.Zero(t, r.BlocksSet, "the tables hold the keys already")
}

func TestNewRefuses(t *testing.T) {
	_, err := partmgr.New(&partmgr.Config{Enforce: partition.Enforce(7)}, newFakeSubnet())
	assert.ErrorIs(t, err, routing.ErrConfig, "sm.ErrConfig")
}
