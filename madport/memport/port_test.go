package memport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport"
	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

func newPort(t *testing.T, node int, port uint8) (*memfabric.Fabric, *memport.Port) {
	t.Helper()
	f, err := memfabric.NewFabric(topologies.Thesis8())
	require.NoError(t, err)
	t.Cleanup(f.Close)
	p, err := memport.New(f, node, port)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return f, p
}

func nodeInfo(t *testing.T, path ...uint8) madport.MAD {
	t.Helper()
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 42, AttrID: mad.AttrNodeInfo,
		Path: append([]uint8{0}, path...)})
	require.NoError(t, err)
	return madport.MAD{LID: mad.PermissiveLID, Data: b}
}

// TestSendRecv sends directed-route NodeInfo Gets from CA 4 and gets the
// answers of the nodes along the paths.
func TestSendRecv(t *testing.T) {
	_, p := newPort(t, 0, 1)
	tests := []struct {
		path []uint8
		guid uint64
		port uint8
	}{
		{nil, topologies.GeneratedGUID(4), 1},
		{[]uint8{1}, topologies.GeneratedGUID(1), 3},
		{[]uint8{1, 1, 2}, topologies.GeneratedGUID(5), 2},
	}
	for _, tt := range tests {
		require.NoError(t, p.Send(nodeInfo(t, tt.path...)))
		m, err := p.Recv(context.Background())
		require.NoError(t, err)
		d := mad.DRSMP(m.Data)
		require.NoError(t, d.Validate())
		assert.Equal(t, mad.MethodGetResp, d.MAD().Method())
		assert.EqualValues(t, 42, d.MAD().TransactionID())
		ni := mad.NodeInfo(d.Data()).Fields()
		assert.Equal(t, tt.guid, ni.NodeGUID)
		assert.Equal(t, tt.port, ni.LocalPortNum)
	}
	assert.Equal(t, memport.Stats{Sent: 3, Received: 3}, p.Stats())
}

// TestRecvAdvances: with nothing to receive, Recv lets the fabric's clock
// run to the caller's timer, which ends the wait, without sleeping.
func TestRecvAdvances(t *testing.T) {
	_, p := newPort(t, 0, 1)
	p.SetFilter(func(madport.MAD) bool { return false })
	require.NoError(t, p.Send(nodeInfo(t)))
	start := p.Clock().Now()
	ctx, cancel := context.WithCancel(context.Background())
	p.Clock().AfterFunc(time.Hour, cancel)
	_, err := p.Recv(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, time.Hour, p.Clock().Now().Sub(start))
	assert.Equal(t, memport.Stats{Filtered: 1, Advances: 1}, p.Stats())

	// Ended contexts poll.
	_, err = p.Recv(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}

// TestRecvBlocks: with no timer either, Recv waits for another goroutine's
// Send, or Close.
func TestRecvBlocks(t *testing.T) {
	_, p := newPort(t, 0, 1)
	got := make(chan error)
	go func() {
		_, err := p.Recv(context.Background())
		got <- err
	}()
	testsupport.WaitBlocked(t, time.Minute, 1, "ibfab/madport/memport.(*Port).Recv")
	require.NoError(t, p.Send(nodeInfo(t)))
	require.NoError(t, <-got)
	go func() {
		_, err := p.Recv(context.Background())
		got <- err
	}()
	require.NoError(t, p.Close())
	assert.ErrorIs(t, <-got, madport.ErrClosed)
	assert.ErrorIs(t, p.Send(nodeInfo(t)), madport.ErrClosed)
	_, err := p.Info()
	assert.ErrorIs(t, err, madport.ErrClosed)
	assert.ErrorIs(t, p.SetIsSM(true), madport.ErrClosed)
	assert.NoError(t, p.Close(), "a second Close")
}

func TestInfoAndIsSM(t *testing.T) {
	f, p := newPort(t, 0, 1)
	info, err := p.Info()
	require.NoError(t, err)
	tn := f.Topology().Node(0)
	assert.Equal(t, madport.Info{NodeGUID: tn.GUID, PortGUID: tn.Ports[1].GUID, PortNum: 1,
		State: uint8(mad.PortStateInit)}, info)
	require.NoError(t, p.SetIsSM(true))
	// With IsSM, an SMInfo Get to the CA is the SM's to answer.
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrSMInfo, Path: []uint8{0}})
	require.NoError(t, err)
	require.NoError(t, p.Send(madport.MAD{LID: mad.PermissiveLID, Data: b}))
	m, err := p.Recv(context.Background())
	require.NoError(t, err)
	assert.Equal(t, mad.MethodGet, mad.MAD(m.Data).Method(), "the request itself, for the SM")
}

func TestNewErrors(t *testing.T) {
	f, err := memfabric.NewFabric(topologies.Thesis8())
	require.NoError(t, err)
	defer f.Close()
	sw1, _ := f.Topology().Lookup("sw1")
	for _, tt := range []struct {
		node int
		port uint8
	}{{-1, 1}, {99, 1}, {sw1, 1}, {0, 0}, {0, 2}} {
		_, err := memport.New(f, tt.node, tt.port)
		assert.Error(t, err, "node %d port %d", tt.node, tt.port)
	}
	p, err := memport.New(f, sw1, 0)
	require.NoError(t, err)
	info, err := p.Info()
	require.NoError(t, err)
	assert.EqualValues(t, mad.PortStateActive, info.State)
	assert.Error(t, p.Send(madport.MAD{Data: []byte{1}}))
	assert.False(t, errors.Is(p.Send(madport.MAD{Data: []byte{1}}), madport.ErrClosed))
}
