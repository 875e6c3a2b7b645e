package mgmtplane

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/bpf"
	"ibfab/simclient"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// call is one control call to the plane's handler.
func call(t *testing.T, p *Plane, op string, args any) any {
	t.Helper()
	b, err := json.Marshal(args)
	require.NoError(t, err)
	res, err := p.handler(func() {})(context.Background(), op, b)
	require.NoError(t, err, op)
	return res
}

// TestFaults: a rule on the SM's port drops its first three NodeInfo Gets
// (the SM resends them and the subnet comes up), a delay rule holds every
// SMP there for 5 ms, their counters say what they did, and a clear
// removes both.
func TestFaults(t *testing.T) {
	topo := topologies.Thesis8()
	p, err := New(topo, Config{Prefix: fmt.Sprintf("ibfab-test-%d-", time.Now().UnixNano())})
	require.NoError(t, err)
	p.Start()
	t.Cleanup(func() { p.Close() })
	host := topo.Node(0).Name
	names, err := p.Open(host)
	require.NoError(t, err)

	nodeInfo := bpf.Match{Fields: bpf.FieldClass | bpf.FieldMethod | bpf.FieldAttr, Class: mad.ClassSubnDirected,
		Method: mad.MethodGet, Attr: mad.AttrNodeInfo}
	drop := call(t, p, OpFaultAdd, FaultArgs{Node: host, Port: 1, Rule: bpf.Rule{Action: bpf.Drop, Rate: bpf.RateOne, Limit: 3, Match: nodeInfo}})
	delay := call(t, p, OpFaultAdd, FaultArgs{Node: host, Port: 1, Rule: bpf.Rule{Action: bpf.Delay, Rate: bpf.RateOne, Delay: 5 * time.Millisecond,
		Match: bpf.Match{Fields: bpf.FieldVL, VL: 15}}})
	assert.Equal(t, 0, drop.(FaultEntry).Slot)
	assert.Equal(t, 1, delay.(FaultEntry).Slot)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	port, err := simclient.Dial(ctx, simclient.Config{Name: names.Sim, IsSM: true})
	require.NoError(t, err)
	t.Cleanup(func() { port.Close() })
	s, err := sm.New(port, sm.Config{})
	require.NoError(t, err)
	start := time.Now()
	res, err := s.Sweep(context.Background())
	require.NoError(t, err)
	require.True(t, res.SubnetUp, res.Reason)

	list := p.listFaults()
	require.Len(t, list, 2)
	assert.EqualValues(t, 3, list[0].Counters.Acted, "three NodeInfo Gets dropped")
	assert.Greater(t, list[0].Counters.Matched, list[0].Counters.Acted, "and the rest passed")
	assert.Equal(t, list[1].Counters.Matched, list[1].Counters.Acted, "every SMP delayed")
	assert.Greater(t, list[1].Counters.Acted, uint64(50))
	// The SM's window keeps several SMPs in flight, so the delays overlap;
	// each round trip takes 5 ms at least.
	assert.GreaterOrEqual(t, time.Since(start), 5*time.Millisecond*time.Duration(topo.Diameter()))

	assert.Equal(t, 2, call(t, p, OpFaultClear, ClearArgs{Node: host}))
	assert.Empty(t, p.listFaults())
	_, err = p.handler(func() {})(context.Background(), OpFaultAdd, json.RawMessage(`{"node":"`+host+`","port":2,"rule":{"Action":"drop","Rate":1000000}}`))
	assert.ErrorContains(t, err, "is not cabled")
}
