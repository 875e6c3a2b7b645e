package madfuzz_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/harness"
	"ibfab/harness/madfuzz"
	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

func memFabric(t *testing.T) (*memfabric.Fabric, *memport.Port, int) {
	t.Helper()
	topo := topologies.Default()
	f, err := memfabric.NewFabric(topo)
	require.NoError(t, err)
	t.Cleanup(f.Close)
	from, ok := topo.Lookup("ca4")
	require.True(t, ok)
	p, err := memport.New(f, from, 1)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return f, p, from
}

// TestRunClean fuzzes the in-memory default fabric's agents: every MAD
// goes out, many are answered, every node answers every check.
func TestRunClean(t *testing.T) {
	f, p, from := memFabric(t)
	r, err := madfuzz.Run(context.Background(), madfuzz.Config{Port: p, Topo: f.Topology(), From: from,
		MADs: 3000, Seed: 1, CheckEvery: 1000, Timeout: 2 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, 3000, r.Sent)
	assert.Equal(t, 3, r.Checks)
	assert.Empty(t, r.Failures)
	assert.Positive(t, r.Answered)
	assert.Positive(t, r.Judged, "answers judged against a zeroed template")
	assert.Zero(t, r.Dirty, "answers with reserved bytes set: %+v", r.DirtyFirst)
	for _, s := range []string{"smp", "bad-route", "version", "mutation"} {
		assert.Positive(t, r.ByShape[s], "shape %s", s)
	}
	assert.Greater(t, len(r.ByStatus), 1, "answers with several statuses: %v", r.ByStatus)
	// The same seed makes the same run.
	_, p2, _ := memFabric(t)
	r2, err := madfuzz.Run(context.Background(), madfuzz.Config{Port: p2, Topo: f.Topology(), From: from,
		MADs: 3000, Seed: 1, CheckEvery: 1000, Timeout: 2 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, r.ByShape, r2.ByShape)
}

// crashingPort plants a bug: the first switch on a directed route whose
// hop count is past 63 dies, as an agent that indexed its path with the
// hop count would.
type crashingPort struct {
	*memport.Port
	f    *memfabric.Fabric
	from int
	dead string
}

func (c *crashingPort) Send(m madport.MAD) error {
	if h := mad.MAD(m.Data); h.MgmtClass() == mad.ClassSubnDirected && mad.DRSMP(m.Data).HopCount() > mad.MaxHopCount && c.dead == "" {
		peer, _ := c.f.Topology().Peer(topologies.PortRef{Node: c.from, Port: 1})
		c.dead = c.f.Topology().Node(peer.Node).Name
		if err := c.f.PowerOff(peer.Node); err != nil {
			return err
		}
	}
	return c.Port.Send(m)
}

// TestRunFindsPlantedBug shows the liveness check finding a node that a
// fuzz MAD killed, with that MAD among the last ones reported.
func TestRunFindsPlantedBug(t *testing.T) {
	f, p, from := memFabric(t)
	cp := &crashingPort{Port: p, f: f, from: from}
	r, err := madfuzz.Run(context.Background(), madfuzz.Config{Port: cp, Topo: f.Topology(), From: from,
		MADs: 2000, Seed: 7, CheckEvery: 100, Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NotEmpty(t, cp.dead, "the fuzzer never sent a hop count past 63")
	require.NotEmpty(t, r.Failures)
	fl := r.Failures[0]
	assert.Equal(t, cp.dead, fl.Node)
	found := false
	for _, h := range fl.Last {
		b, err := hex.DecodeString(h)
		require.NoError(t, err)
		if mad.MAD(b).MgmtClass() == mad.ClassSubnDirected && mad.DRSMP(b).HopCount() > mad.MaxHopCount {
			found = true
		}
	}
	assert.True(t, found, "the killing MAD is among the last %d reported", len(fl.Last))
}

func TestConfigErrors(t *testing.T) {
	f, p, from := memFabric(t)
	for _, c := range []madfuzz.Config{
		{Topo: f.Topology(), MADs: 1},
		{Port: p, Topo: f.Topology(), From: -1, MADs: 1},
		{Port: p, Topo: f.Topology(), From: from},
		{Port: p, Topo: f.Topology(), From: from, MADs: 1, Targets: []int{999}},
	} {
		_, err := madfuzz.Run(context.Background(), c)
		assert.Error(t, err, "%+v", c)
	}
}

// TestRunCorpus mutates the MADs of a capture of the fabric's discovery
// (what the demo writes): the corpus reads, every record a whole MAD,
// and a run mutating them keeps every node answering.
func TestRunCorpus(t *testing.T) {
	f, p, from := memFabric(t)
	var buf bytes.Buffer
	w, err := capture.NewWriter(&buf)
	require.NoError(t, err)
	_, err = harness.WriteDiscoverySample(f.Topology(), w, time.Unix(0, 0))
	require.NoError(t, err)
	corpus, err := madfuzz.ReadCorpus(&buf)
	require.NoError(t, err)
	require.NotEmpty(t, corpus)
	for _, m := range corpus {
		require.Len(t, m, mad.MADSize)
		assert.Equal(t, uint8(mad.BaseVersion), mad.MAD(m).BaseVersion())
	}
	r, err := madfuzz.Run(context.Background(), madfuzz.Config{Port: p, Topo: f.Topology(), From: from, Corpus: corpus,
		MADs: 2000, Seed: 9, CheckEvery: 1000, Timeout: 2 * time.Second})
	require.NoError(t, err)
	assert.Empty(t, r.Failures)
	assert.Positive(t, r.ByShape[madfuzz.ShapeMutation.String()])

	_, err = madfuzz.ReadCorpus(bytes.NewReader([]byte("not a capture")))
	assert.Error(t, err)
}
