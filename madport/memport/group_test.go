package memport_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// recvAt waits on p with a timer d ahead on the fabric's clock, and sends
// the clock's time once Recv returns, with what it returned.
type recvAt struct {
	at  time.Time
	m   madport.MAD
	err error
}

func recvWithin(p *memport.Port, d time.Duration) <-chan recvAt {
	out := make(chan recvAt, 1)
	ctx, cancel := context.WithCancel(context.Background())
	p.Clock().AfterFunc(d, cancel)
	go func() {
		defer cancel()
		m, err := p.Recv(ctx)
		out <- recvAt{p.Clock().Now(), m, err}
	}()
	return out
}

// TestGroupSharesTime: two ports of one fabric, each read by its own
// goroutine, share its clock. Time passes only while both wait; a MAD one
// sends to the other arrives with no time passing; a port closed no longer
// holds time back.
func TestGroupSharesTime(t *testing.T) {
	f, err := memfabric.NewFabric(topologies.Thesis8())
	require.NoError(t, err)
	defer f.Close()
	ca4, _ := f.Topology().Lookup("ca4")
	ca7, _ := f.Topology().Lookup("ca7")
	a, err := memport.New(f, ca4, 1)
	require.NoError(t, err)
	b, err := memport.New(f, ca7, 1)
	require.NoError(t, err)
	ca13, _ := f.Topology().Lookup("ca13")
	unused, err := memport.New(f, ca13, 1)
	require.NoError(t, err)
	_, err = memport.NewGroup(a, b, unused)
	require.NoError(t, err)
	start := f.Clock().Now()

	// b starts work (its first Send, whose answer it has not read); a
	// waits for a second: no time passes. The port nobody uses holds
	// nothing back.
	require.NoError(t, b.Send(nodeInfo(t)))
	aDone := recvWithin(a, time.Second)
	select {
	case r := <-aDone:
		t.Fatalf("a's timer fired at %v while b was busy", r.at.Sub(start))
	case <-time.After(50 * time.Millisecond):
	}
	r := <-recvWithin(b, 5*time.Second)
	require.NoError(t, r.err, "b's answer")
	assert.Equal(t, start, r.at)

	// b waits too: a's timer, the earlier, fires first.
	require.NoError(t, b.SetIsSM(true))
	bDone := recvWithin(b, 5*time.Second)
	r = <-aDone
	assert.ErrorIs(t, r.err, context.Canceled)
	assert.Equal(t, time.Second, r.at.Sub(start))

	// a, awake, asks b's SM for its SMInfo: b gets it at once, while a
	// (not reading) holds time back.
	path := drPath(t, f, ca4, ca7)
	req, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrSMInfo, Path: path})
	require.NoError(t, err)
	require.NoError(t, a.Send(madport.MAD{LID: mad.PermissiveLID, Data: req}))
	r = <-bDone
	require.NoError(t, r.err)
	assert.Equal(t, mad.AttrSMInfo, mad.MAD(r.m.Data).AttrID())
	assert.Equal(t, time.Second, r.at.Sub(start), "no time passed")

	// b waits again; a, closed, holds nothing back.
	bDone = recvWithin(b, time.Minute)
	select {
	case r := <-bDone:
		t.Fatalf("b's timer fired at %v while a was busy", r.at.Sub(start))
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, a.Close())
	r = <-bDone
	assert.ErrorIs(t, r.err, context.Canceled)
	assert.Equal(t, time.Second+time.Minute, r.at.Sub(start))
}

// drPath returns a directed route from CA from to CA to (initial path,
// [0] unused) through the topology's switches, shortest first.
func drPath(t *testing.T, f *memfabric.Fabric, from, to int) []uint8 {
	t.Helper()
	topo := f.Topology()
	type hop struct {
		node int
		path []uint8
	}
	seen := map[int]bool{from: true}
	queue := []hop{{from, []uint8{0}}}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h.node == to {
			return h.path
		}
		if h.node != from && topo.Node(h.node).Type != topologies.Switch {
			continue
		}
		for p := 1; p <= topo.Node(h.node).NumPorts; p++ {
			peer, ok := topo.Peer(topologies.PortRef{Node: h.node, Port: p})
			if !ok || seen[peer.Node] {
				continue
			}
			seen[peer.Node] = true
			queue = append(queue, hop{peer.Node, append(append([]uint8(nil), h.path...), uint8(p))})
		}
	}
	t.Fatalf("no route from %d to %d", from, to)
	return nil
}

func TestNewGroupErrors(t *testing.T) {
	f, err := memfabric.NewFabric(topologies.Thesis8())
	require.NoError(t, err)
	defer f.Close()
	g, err := memfabric.NewFabric(topologies.Thesis8())
	require.NoError(t, err)
	defer g.Close()
	p, err := memport.New(f, 0, 1)
	require.NoError(t, err)
	q, err := memport.New(g, 0, 1)
	require.NoError(t, err)
	_, err = memport.NewGroup()
	assert.Error(t, err)
	_, err = memport.NewGroup(p, q)
	assert.Error(t, err, "two fabrics")
	_, err = memport.NewGroup(p, p)
	assert.Error(t, err, "twice")
	_, err = memport.NewGroup(p)
	require.NoError(t, err)
	_, err = memport.NewGroup(p)
	assert.Error(t, err, "in a group already")
}
