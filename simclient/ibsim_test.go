package simclient_test

// The client against Debian's real ibsim, run in a throwaway network
// namespace (its sockets are abstract, so per namespace) on the default
// topology.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/fabricnet"
	"ibfab/internal/testsupport/ibsimtest"
	"ibfab/madport"
	"ibfab/simclient"
	"ibfab/simproto"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// waitLimit bounds waits on external processes so that a broken setup
// fails instead of hanging; nothing asserts on how long things take.
const waitLimit = time.Minute

// startIbsim runs ibsim on topo in a new namespace and returns the
// namespace's name once ibsim is ready. Cleanup stops ibsim.
func startIbsim(t *testing.T, topo *topologies.Topology) string {
	t.Helper()
	return ibsimtest.StartT(t, topo).NS
}

// dial attaches a client inside ns: its sockets are created there. ibsim
// says it is ready before it binds its sockets: a client waits for them.
func dial(t *testing.T, ns string, cfg simclient.Config) (*simclient.Client, error) {
	t.Helper()
	var c *simclient.Client
	err := fabricnet.Do(ns, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		var err error
		c, err = simclient.Dial(ctx, cfg)
		return err
	})
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// drPath returns the directed route (InitialPath, entry 0 unused) from
// node 0 to a node exactly hops away, and that node.
func drPath(t *testing.T, topo *topologies.Topology, hops int) ([]uint8, *topologies.Node) {
	t.Helper()
	type step struct {
		node int
		path []uint8
	}
	seen := map[int]bool{0: true}
	frontier := []step{{0, []uint8{0}}}
	for d := 0; d < hops; d++ {
		var next []step
		for _, s := range frontier {
			n := topo.Node(s.node)
			if d > 0 && n.Type != topologies.Switch {
				continue // only switches forward
			}
			for p := 1; p <= n.NumPorts; p++ {
				peer, ok := topo.Peer(topologies.PortRef{Node: s.node, Port: p})
				if !ok || seen[peer.Node] {
					continue
				}
				seen[peer.Node] = true
				next = append(next, step{peer.Node, append(append([]uint8(nil), s.path...), uint8(p))})
			}
		}
		frontier = next
	}
	require.NotEmpty(t, frontier, "no node %d hops from node 0", hops)
	return frontier[0].path, topo.Node(frontier[0].node)
}

// call sends one MAD and returns the first MAD back with its TID.
func call(t *testing.T, c madport.Port, m madport.MAD) madport.MAD {
	t.Helper()
	require.NoError(t, c.Send(m))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	tid := mad.MAD(m.Data).TransactionID()
	for {
		got, err := c.Recv(ctx)
		require.NoError(t, err)
		if mad.MAD(got.Data).TransactionID() == tid {
			return got
		}
		t.Logf("ignoring MAD %v %v TID %#x", mad.MAD(got.Data).Method(), mad.MAD(got.Data).AttrID(), mad.MAD(got.Data).TransactionID())
	}
}

func drGet(t *testing.T, tid uint64, attr mad.AttrID, mod uint32, path []uint8) madport.MAD {
	t.Helper()
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: tid, AttrID: attr, AttrModifier: mod, Path: path})
	require.NoError(t, err)
	return madport.MAD{LID: mad.PermissiveLID, Data: b}
}

// CheckPort runs the checks both ibsim and the attach point must pass:
// Info names node 0, a directed-route NodeInfo Get hops away answers with
// the GUID of the node there, SetIsSM shows in PortInfo.
func CheckPort(t *testing.T, c *simclient.Client, topo *topologies.Topology, hops int) {
	home := topo.Node(0)
	info, err := c.Info()
	require.NoError(t, err)
	assert.Equal(t, home.GUID, info.NodeGUID, "node GUID")
	assert.Equal(t, uint8(1), info.PortNum, "port")
	assert.Equal(t, home.GUID+1, info.PortGUID, "port GUID")

	path, far := drPath(t, topo, hops)
	// High TID bits the server owns on the way: they must come back.
	const tidHigh = 0xabcd_0000_0000_0000
	resp := call(t, c, drGet(t, tidHigh|0x1234, mad.AttrNodeInfo, 0, path))
	require.Zero(t, resp.Status, "transport status")
	smp := mad.DRSMP(resp.Data)
	require.True(t, smp.MAD().IsResponse(), "method %v", smp.MAD().Method())
	assert.Equal(t, uint64(tidHigh|0x1234), smp.MAD().TransactionID(), "TID")
	assert.Zero(t, smp.Status(), "MAD status")
	assert.Equal(t, uint8(hops), smp.HopCount())
	ni, err := mad.DecodeNodeInfo(smp.Data())
	require.NoError(t, err)
	assert.Equal(t, far.GUID, ni.NodeGUID, "NodeInfo %d hops out (path %v) should be %s's", hops, path, far.Name)

	portCaps := func() uint32 {
		resp := call(t, c, drGet(t, 0x77, mad.AttrPortInfo, 1, []uint8{0}))
		require.Zero(t, resp.Status)
		pi, err := mad.DecodePortInfo(mad.DRSMP(resp.Data).Data())
		require.NoError(t, err)
		return pi.CapabilityMask
	}
	require.NoError(t, c.SetIsSM(true))
	assert.NotZero(t, portCaps()&mad.PortCapIsSM, "IsSM after SetIsSM(true)")
	require.NoError(t, c.SetIsSM(false))
	assert.Zero(t, portCaps()&mad.PortCapIsSM, "IsSM after SetIsSM(false)")
}

func TestIbsim(t *testing.T) {
	topo := topologies.Default()
	ns := startIbsim(t, topo)
	c, err := dial(t, ns, simclient.Config{Wait: true})
	require.NoError(t, err)
	assert.Equal(t, topo.Node(0).Name, c.NodeID())
	for hops := 2; hops <= 3; hops++ {
		t.Run(fmt.Sprintf("%d hops", hops), func(t *testing.T) { CheckPort(t, c, topo, hops) })
	}

	t.Run("second SM refused", func(t *testing.T) {
		sm, err := dial(t, ns, simclient.Config{IsSM: true})
		require.NoError(t, err)
		_, err = dial(t, ns, simclient.Config{IsSM: true})
		assert.ErrorIs(t, err, simclient.ErrRefused)
		require.NoError(t, sm.Close())
		_, err = sm.Recv(context.Background())
		assert.ErrorIs(t, err, madport.ErrClosed)
		assert.ErrorIs(t, sm.Send(drGet(t, 1, mad.AttrNodeInfo, 0, nil)), madport.ErrClosed)
	})

	t.Run("no server", func(t *testing.T) {
		_, err := dial(t, ns, simclient.Config{Name: "ibf-t-nothing"})
		assert.Error(t, err)
	})

	t.Run("unroutable", func(t *testing.T) {
		// ibsim hands back what it cannot route, with ETIMEDOUT.
		resp := call(t, c, drGet(t, 0x99, mad.AttrNodeInfo, 0, []uint8{0, 1, 4, 4, 4}))
		assert.Equal(t, simproto.StatusTimeout, resp.Status)
		assert.False(t, mad.MAD(resp.Data).IsResponse())
	})
	st := c.Stats()
	assert.Zero(t, st.BadMessages+st.StaleCtl, "%+v", st)
	t.Logf("client stats %+v", st)
}
