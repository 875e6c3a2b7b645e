package sm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// plainPort hides the switches' optimized SLtoVL programming in the
// SwitchInfo answers it passes up, as ibsim's switches lack it.
type plainPort struct{ *memport.Port }

func (p plainPort) Recv(ctx context.Context) (madport.MAD, error) {
	m, err := p.Port.Recv(ctx)
	if err != nil || len(m.Data) < mad.MADSize {
		return m, err
	}
	h := mad.MAD(m.Data)
	if h.AttrID() == mad.AttrSwitchInfo && h.Method() == mad.MethodGetResp && h.MgmtClass() == mad.ClassSubnDirected {
		d := mad.DRSMP(m.Data).Data()
		f := mad.SwitchInfo(d).Fields()
		f.OptimizedSLtoVLMappingProgramming = 0
		copy(d, mad.AppendSwitchInfo(nil, &f))
	}
	return m, nil
}

// countAttrs makes b's port count the SMPs it sends by attribute; the
// returned function reads the count of one attribute so far, safely while
// the SM is still sending.
func countAttrs(b *bench) func(mad.AttrID) int {
	var mu sync.Mutex
	sent := map[mad.AttrID]int{}
	b.port.SetFilter(func(m madport.MAD) bool {
		mu.Lock()
		sent[mad.MAD(m.Data).AttrID()]++
		mu.Unlock()
		return true
	})
	return func(a mad.AttrID) int {
		mu.Lock()
		defer mu.Unlock()
		return sent[a]
	}
}

// cabledPorts returns the ports of node i that have a cable.
func cabledPorts(topo *topologies.Topology, i int) []int {
	var ps []int
	for p := 1; p <= topo.Node(i).NumPorts; p++ {
		if _, ok := topo.LinkAt(topologies.PortRef{Node: i, Port: p}); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// TestVLTables: with VLTables keep the SM sends no SLtoVL or VL
// arbitration SMP and the devices keep their reset tables; with set, the
// tables end up spreading the SLs over the operational data VLs, through
// the all-ports modifiers or, on switches without them, pair by pair.
func TestVLTables(t *testing.T) {
	topo := topologies.Thesis8()
	for _, tc := range []struct {
		name   string
		tables sm.VLTables
		opVLs  uint8
		plain  bool // switches without optimized SLtoVL programming
	}{
		{"keep", sm.VLTablesKeep, 3, false},
		{"keep plain switches", sm.VLTablesKeep, 3, true},
		{"set one VL", sm.VLTablesSet, 1, false},
		{"set four VLs", sm.VLTablesSet, 3, false},
		{"set four VLs plain switches", sm.VLTablesSet, 3, true},
		{"set eight VLs plain switches", sm.VLTablesSet, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, topo, 0, 1)
			fresh := newBench(t, topo, 0, 1) // reset tables, for comparison
			sent := countAttrs(b)
			var port madport.Port = b.port
			if tc.plain {
				port = plainPort{b.port}
			}
			s, err := sm.New(port, sm.Config{PortConfig: sm.PortConfig{VLTables: tc.tables, OpVLs: tc.opVLs}})
			require.NoError(t, err)
			res := b.sweep(t, s)
			require.True(t, res.SubnetUp, res.Reason)
			checkUp(t, b.f)

			n := mad.NumDataVLs(tc.opVLs)
			wantSL2VL, wantArb := 0, 0
			for i := range topo.NumNodes() {
				ports := cabledPorts(topo, i)
				switch {
				case topo.Node(i).Type != topologies.Switch:
					wantSL2VL += len(ports)
				case tc.plain:
					wantSL2VL += (len(ports) + 1) * len(ports) // (in, out) pairs of port 0 and the cabled ones
				default:
					wantSL2VL++ // all in, all out
				}
				if n > 1 {
					wantArb += 2 * len(ports) // the low and the high table
				}
			}
			if tc.tables == sm.VLTablesKeep {
				wantSL2VL, wantArb = 0, 0
			}
			assert.Equal(t, wantSL2VL, sent(mad.AttrSLtoVLMapping)-res.SL2VLReads, "SLtoVL Sets")
			assert.Equal(t, wantArb, sent(mad.AttrVLArbitration), "VLArbitration Sets")
			dist, _ := res.Phase(sm.PhaseDistribution)
			assert.EqualValues(t, topo.NumNodes()+res.Switches+res.LFTBlocks+wantSL2VL+wantArb+res.SL2VLReads, dist.SMPs,
				"NodeDescription, SwitchInfo, LFT blocks, the VL tables and the SLtoVL tables read back")

			for i, nd := range b.f.Nodes() {
				a, reset := nd.Agent, fresh.f.Node(i).Agent
				ports := cabledPorts(topo, i)
				ins := []int{0}
				if topo.Node(i).Type == topologies.Switch {
					ins = append(ins, ports...)
				}
				for _, out := range ports {
					assert.Equal(t, tc.opVLs, a.PortConfig(uint8(out)).OperationalVLs, "%s port %d OperationalVLs", nd.Name, out)
					for _, in := range ins {
						if in == out {
							continue
						}
						for sl := range uint8(mad.NumSLs) {
							want := reset.VLFor(uint8(in), uint8(out), sl)
							if tc.tables == sm.VLTablesSet {
								want = sl % uint8(n)
							}
							if got := a.VLFor(uint8(in), uint8(out), sl); got != want {
								t.Fatalf("%s SL %d from port %d to %d on VL %d, want %d", nd.Name, sl, in, out, got, want)
							}
						}
					}
					arb, resetArb := a.VLArbitration(uint8(out)), reset.VLArbitration(uint8(out))
					if tc.tables == sm.VLTablesKeep || n == 1 {
						assert.Equal(t, resetArb.Low, arb.Low, "%s port %d low-priority table", nd.Name, out)
						assert.Equal(t, resetArb.High, arb.High, "%s port %d high-priority table", nd.Name, out)
						continue
					}
					for vl := range n {
						assert.Equal(t, mad.VLArbEntry{VL: uint8(vl), Weight: sm.DefaultVLArbWeight}, arb.Low[vl],
							"%s port %d low-priority entry %d", nd.Name, out, vl)
					}
					assert.Zero(t, arb.Low[n].Weight, "%s port %d: only the data VLs", nd.Name, out)
				}
			}
		})
	}
}

// TestReadBackBlocks: an ibsm alone blocks its cut nodes' forbidden
// turns ahead of a change (PreBlock) and dies with them in the switches;
// the SM that takes the subnet next reads the SLtoVL tables back and
// undoes the blocks its own routes do not need, where it would otherwise
// never know of them.
func TestReadBackBlocks(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	upAndQuiet(t, b, sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep, Distribution: sm.DistCutDeps, PreBlock: true},
	})
	require.NotZero(t, vl15Turns(b), "the first ibsm blocks turns")
	// minhop, as OpenSM's default: no graph, so no turn it forbids.
	s := b.newSM(t, sm.Config{RoutingConfig: sm.RoutingConfig{Routing: "minhop", AllowCreditLoops: true}})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.NotZero(t, res.SL2VLReads, "tables read back")
	assert.Zero(t, vl15Turns(b), "the dead ibsm's blocks undone")
}

// vl15Turns counts the (input, output, SL) entries of b's switches that
// send data to VL15.
func vl15Turns(b *bench) int {
	n := 0
	for i, nd := range b.f.Nodes() {
		if b.topo.Node(i).Type != topologies.Switch {
			continue
		}
		ports := cabledPorts(b.topo, i)
		for _, in := range ports {
			for _, out := range ports {
				for sl := range mad.NumSLs {
					if in != out && nd.Agent.VLFor(uint8(in), uint8(out), uint8(sl)) == 15 {
						n++
					}
				}
			}
		}
	}
	return n
}

// TestCutDepsKeep: with VLTables keep, a cut-node block reads the table it
// replaces and the undo writes that back, not the SM's own spread.
func TestCutDepsKeep(t *testing.T) {
	b := newBench(t, topologies.Thesis8(), 0, 1)
	sent := countAttrs(b)
	s := upAndQuiet(t, b, sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "updn-fera"},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep, Distribution: sm.DistCutDeps},
		PortConfig:         sm.PortConfig{VLTables: sm.VLTablesKeep, OpVLs: 3},
	})
	read := sent(mad.AttrSLtoVLMapping) // the first sweep's read-back, no Set
	sw6, _ := b.topo.Lookup("sw6")
	a := b.f.Node(sw6).Agent
	reset := make([]uint8, mad.NumSLs)
	for sl := range reset {
		reset[sl] = a.VLFor(2, 1, uint8(sl))
	}

	require.NoError(t, b.port.SetLink("ca13", 1, false))
	res := assimilate(t, s, sm.TriggerSweep)
	assert.Equal(t, 4, res.SL2VLSets)
	assert.Equal(t, read+8, sent(mad.AttrSLtoVLMapping), "a Get and a Set per forbidden turn")
	assert.EqualValues(t, 15, a.VLFor(2, 1, 7))

	require.NoError(t, b.port.SetLink("sw1", 2, false)) // sw6 is no cut node any more
	res = assimilate(t, s, sm.TriggerSweep)
	assert.Equal(t, 2, res.SL2VLSets, "sw6's two blocks undone")
	assert.Equal(t, read+10, sent(mad.AttrSLtoVLMapping))
	for sl, vl := range reset {
		assert.Equal(t, vl, a.VLFor(2, 1, uint8(sl)), "SL %d from port 2 to 1 of sw6 back on its own VL", sl)
	}
	checkUp(t, b.f)
}
