package sm_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/madport"
	"ibfab/memfabric"
	"ibfab/sm"
	"ibfab/sm/routing/routingtest"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// fatTreeView is what the test expects of adaptive routing on a fat
// tree, from the cabling alone: each switch's up ports (to a switch
// farther from the CAs) and the CAs below it (reached going down only).
type fatTreeView struct {
	up    map[int][]uint8
	below map[int]map[int]bool // switch → CA node → below
}

func newFatTreeView(topo *topologies.Topology) *fatTreeView {
	rank := map[int]int{}
	var queue []int
	peers := func(i int) []topologies.PortRef {
		var out []topologies.PortRef
		for p := 1; p <= topo.Node(i).NumPorts; p++ {
			if q, ok := topo.Peer(topologies.PortRef{Node: i, Port: p}); ok {
				out = append(out, q)
			}
		}
		return out
	}
	isSwitch := func(i int) bool { return topo.Node(i).Type == topologies.Switch }
	for i := range topo.NumNodes() {
		if isSwitch(i) && slices.ContainsFunc(peers(i), func(q topologies.PortRef) bool { return !isSwitch(q.Node) }) {
			rank[i] = 0
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, q := range peers(u) {
			if _, ok := rank[q.Node]; !ok && isSwitch(q.Node) {
				rank[q.Node] = rank[u] + 1
				queue = append(queue, q.Node)
			}
		}
	}
	v := &fatTreeView{up: map[int][]uint8{}, below: map[int]map[int]bool{}}
	var down func(s int, seen map[int]bool)
	down = func(s int, seen map[int]bool) {
		for _, q := range peers(s) {
			switch {
			case !isSwitch(q.Node):
				seen[q.Node] = true
			case rank[q.Node] == rank[s]-1:
				down(q.Node, seen)
			}
		}
	}
	for s, r := range rank {
		for p := 1; p <= topo.Node(s).NumPorts; p++ {
			if q, ok := topo.Peer(topologies.PortRef{Node: s, Port: p}); ok && isSwitch(q.Node) && rank[q.Node] == r+1 {
				v.up[s] = append(v.up[s], uint8(p))
			}
		}
		v.below[s] = map[int]bool{}
		down(s, v.below[s])
	}
	return v
}

// checkAR asserts that every switch's table is mode, threshold and AFC
// VL, with every LID of every CA not below it adapting over all its up
// ports (none on a top switch), and the others over none.
func checkAR(t *testing.T, b *bench, mode mad.ARMode, thr, afc uint8) {
	t.Helper()
	v := newFatTreeView(b.topo)
	type caLIDs struct {
		node       int
		base, last uint16
	}
	var cas []caLIDs
	for _, n := range b.f.Nodes() {
		if n.Agent.Type() == mad.NodeTypeSwitch {
			continue
		}
		d, err := n.Agent.LocalGet(1, mad.AttrPortInfo, 1)
		require.NoError(t, err)
		pi := mad.PortInfo(d).Fields()
		require.NotZero(t, pi.LID, n.Name)
		cas = append(cas, caLIDs{n.Index, pi.LID, pi.LID + 1<<pi.LMC - 1})
	}
	for _, n := range b.f.Nodes() {
		if n.Agent.Type() != mad.NodeTypeSwitch {
			continue
		}
		tbl := n.Agent.ARTable()
		assert.Equal(t, mode, tbl.Mode, n.Name)
		if mode != mad.AROff {
			// With the mode off a switch that had nothing to change
			// holds the table of a reset switch.
			assert.Equal(t, thr, tbl.Threshold, n.Name)
			assert.Equal(t, afc, tbl.AFCVL, n.Name)
		}
		for _, ca := range cas {
			for lid := ca.base; lid <= ca.last; lid++ {
				var want []uint8
				if !v.below[n.Index][ca.node] {
					want = v.up[n.Index]
				}
				assert.Equal(t, want, tbl.Alternatives(lid), "%s, LID %d of %s", n.Name, lid, b.topo.Node(ca.node).Name)
			}
		}
	}
}

// arSends counts the adaptive routing MADs the SM sends, by method and
// attribute.
func arSends(b *bench) func() map[string]int {
	var mu sync.Mutex
	sent := map[string]int{}
	b.port.SetFilter(func(m madport.MAD) bool {
		if h := mad.MAD(m.Data); h.MgmtClass() == mad.ClassVendorAR {
			mu.Lock()
			sent[h.Method().String()+" "+h.AttrID().Name(mad.ClassVendorAR)]++
			mu.Unlock()
		}
		return true
	})
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := sent
		sent = map[string]int{}
		return out
	}
}

// checkIdentitySL2VL asserts that every port runs the 8 data VLs of its
// VLCap (the SM's default bounds nothing), maps SL s to VL s (s mod 8) and
// arbitrates them with equal weights.
func checkIdentitySL2VL(t *testing.T, b *bench) {
	t.Helper()
	n := mad.NumDataVLs(agent.DefaultVLCap)
	for _, nd := range b.f.Nodes() {
		for _, out := range cabledPorts(b.topo, nd.Index) {
			assert.Equal(t, uint8(agent.DefaultVLCap), nd.Agent.PortConfig(uint8(out)).OperationalVLs, "%s port %d", nd.Name, out)
			for sl := range uint8(mad.NumSLs) {
				assert.Equal(t, sl%uint8(n), nd.Agent.VLFor(0, uint8(out), sl), "%s port %d SL %d", nd.Name, out, sl)
			}
			arb := nd.Agent.VLArbitration(uint8(out))
			for vl := range n {
				assert.Equal(t, mad.VLArbEntry{VL: uint8(vl), Weight: sm.DefaultVLArbWeight}, arb.Low[vl], "%s port %d", nd.Name, out)
			}
			assert.Zero(t, arb.Low[n].Weight, "%s port %d: only the data VLs", nd.Name, out)
			assert.Zero(t, arb.High[0].Weight, "high-priority table empty")
		}
	}
}

// TestARManager: on a 2-ary 3-tree (12 switches, 8 CAs, LMC 1) a sweep
// reads every switch and leaves it holding group 1 (its up ports) for
// the CA LIDs, aliases included, not below it, and the configured mode,
// threshold and AFC VL; a second sweep sends nothing of the class, and a
// new SM reads every switch and sets nothing.
func TestARManager(t *testing.T) {
	topo := mustGen(t)(topologies.KAryNTree(2, 3))
	b := newBench(t, topo, 0, 1)
	sends := arSends(b)
	var ev recorder[sm.AREvent]
	s := b.newSM(t, sm.Config{
		RoutingConfig: sm.RoutingConfig{Routing: "ftree"},
		LIDConfig:     sm.LIDConfig{LMC: 1},
		AR:            &sm.ARConfig{Mode: mad.ARAFI, AFCVL: 3, OnEvent: ev.add},
	})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	require.NotNil(t, res.AR)
	assert.Empty(t, res.Warnings)
	assert.Equal(t, sm.ARResult{Mode: mad.ARAFI, Threshold: sm.DefaultARThreshold, AFCVL: 3, Switches: 12,
		Enabled: 12, Read: 12, Sets: res.AR.Sets, Groups: 1}, *res.AR)
	checkAR(t, b, mad.ARAFI, sm.DefaultARThreshold, 3)
	// Every switch is read (ARInfo, one group block, the LIDs' blocks);
	// the blocks that differ from the reset state (empty) are set: not
	// on the 4 top switches, which have no up ports.
	lidBlocks := int(res.MaxLID)/mad.ARLIDsPerBlock + 1
	got := sends()
	assert.Equal(t, map[string]int{"Get ARInfo": 12, "Get ARGroupTable": 12, "Get ARLIDTable": 12 * lidBlocks,
		"Set ARGroupTable": 8, "Set ARLIDTable": 8 * lidBlocks, "Set ARInfo": 12}, got)
	assert.Equal(t, 8+8*lidBlocks+12, res.AR.Sets)
	phase, ok := res.Phase(sm.PhaseAR)
	require.True(t, ok)
	assert.EqualValues(t, 12*(2+lidBlocks)+8+8*lidBlocks+12, phase.SMPs)
	assert.Empty(t, ev.list(), "no event in a sweep that went well")

	again := b.sweep(t, s)
	require.True(t, again.SubnetUp, again.Reason)
	assert.Equal(t, sm.ARResult{Mode: mad.ARAFI, Threshold: sm.DefaultARThreshold, AFCVL: 3, Switches: 12,
		Enabled: 12, Groups: 1}, *again.AR, "nothing differs")
	assert.Empty(t, sends(), "no AR MAD on the second sweep")

	// A new SM reads every switch and finds it in place.
	require.NoError(t, s.Close())
	s2 := b.newSM(t, sm.Config{
		RoutingConfig: sm.RoutingConfig{Routing: "ftree"},
		LIDConfig:     sm.LIDConfig{LMC: 1},
		AR:            &sm.ARConfig{Mode: mad.ARAFI, AFCVL: 3},
	})
	res = b.sweep(t, s2)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, 12, res.AR.Read)
	assert.Zero(t, res.AR.Sets, "a new SM finds everything in place")
	got = sends()
	assert.Zero(t, got["Set ARInfo"]+got["Set ARGroupTable"]+got["Set ARLIDTable"])
}

// TestARManagerDiffers: a change of configuration between two SMs sends
// only ARInfo; a switch whose LID block was changed behind the SM's back
// gets that block alone. Every port maps SL s to VL s, equal weights.
func TestARManagerDiffers(t *testing.T) {
	topo := mustGen(t)(topologies.KAryNTree(2, 3))
	b := newBench(t, topo, 0, 1)
	sends := arSends(b)
	s := b.newSM(t, sm.Config{
		RoutingConfig: sm.RoutingConfig{Routing: "ftree"},
		AR:            &sm.ARConfig{Mode: mad.ARAdaptive},
	})
	require.True(t, b.sweep(t, s).SubnetUp)
	checkAR(t, b, mad.ARAdaptive, sm.DefaultARThreshold, 0)
	checkIdentitySL2VL(t, b)
	require.NoError(t, s.Close())

	var leaf *memfabric.Node
	for _, n := range b.f.Nodes() {
		if n.Agent.Type() == mad.NodeTypeSwitch && len(newFatTreeView(topo).below[n.Index]) == 2 {
			leaf = n
			break
		}
	}
	require.NotNil(t, leaf)
	var lids mad.ARLIDTableFields
	f := mad.ARMADFields{Method: mad.MethodSet, AttrID: mad.AttrARLIDTable, TransactionID: 5}
	mad.ARLIDTable(f.Data[:]).Encode(&lids)
	resp := leaf.Agent.HandleMAD(agent.Inbound{Port: 1, SLID: b.sweep(t, s).SMLID, DLID: mad.PermissiveLID,
		SrcQP: 1, DstQP: 1, PKey: mad.DefaultPKey, MAD: mad.AppendARMAD(nil, &f)})
	require.Len(t, resp, 1)
	require.Equal(t, mad.StatusOK, mad.MAD(resp[0].MAD).Status())
	sends()

	s = b.newSM(t, sm.Config{
		RoutingConfig: sm.RoutingConfig{Routing: "ftree"},
		AR:            &sm.ARConfig{Mode: mad.ARAdaptiveTh, Threshold: 50},
	})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	got := sends()
	assert.Equal(t, 12, got["Set ARInfo"], "the mode changed on every switch")
	assert.Equal(t, 1, got["Set ARLIDTable"], "the block cleared behind the SM's back")
	assert.Zero(t, got["Set ARGroupTable"])
	checkAR(t, b, mad.ARAdaptiveTh, 50, 0)
}

// TestARControl: a mode change through the control call reprograms every
// switch at once with one ARInfo Set each and reports it; a bad setting
// is refused and changes nothing; show reads the configuration.
func TestARControl(t *testing.T) {
	topo := mustGen(t)(topologies.KAryNTree(2, 3))
	b := newBench(t, topo, 0, 1)
	var ev recorder[sm.AREvent]
	s := b.newSM(t, sm.Config{
		RoutingConfig:      sm.RoutingConfig{Routing: "ftree"},
		AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectSweep},
		AR:                 &sm.ARConfig{OnEvent: ev.add},
	})
	ctx := runSM(t, s)
	call := func(set *sm.ARSetting) (sm.ARReply, error) {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		defer ccancel()
		return s.ARCall(cctx, set)
	}
	require.Eventually(t, func() bool {
		rep, err := call(nil)
		return err == nil && rep.Installed && rep.Last != nil
	}, 10*time.Second, 10*time.Millisecond)
	checkAR(t, b, mad.AROff, sm.DefaultARThreshold, 0)
	rep, err := call(nil)
	require.NoError(t, err)
	assert.Equal(t, mad.AROff, rep.Mode)
	assert.Zero(t, rep.Last.Enabled, "mode off: the tables are in, AR is not enabled")

	sends := arSends(b)
	afi, thr, vl := mad.ARAFI, uint8(60), uint8(2)
	rep, err = call(&sm.ARSetting{Mode: &afi, Threshold: &thr, AFCVL: &vl})
	require.NoError(t, err)
	require.NotNil(t, rep.Event)
	assert.Equal(t, sm.ARActionSet, rep.Event.Action)
	assert.Equal(t, 12, rep.Event.Enabled)
	assert.Equal(t, 12, rep.Event.Sets)
	assert.EqualValues(t, 12, rep.Event.SMPs)
	assert.Equal(t, map[string]int{"Set ARInfo": 12}, sends(), "one ARInfo Set per switch, no table")
	checkAR(t, b, mad.ARAFI, 60, 2)
	assert.Equal(t, mad.ARAFI, rep.Mode)

	adaptive := mad.ARAdaptive
	rep, err = call(&sm.ARSetting{Mode: &adaptive})
	require.NoError(t, err)
	checkAR(t, b, mad.ARAdaptive, 60, 2)
	assert.EqualValues(t, 60, rep.Threshold, "kept")
	assert.Equal(t, map[string]int{"Set ARInfo": 12}, sends())

	bad := uint8(0)
	rep, err = call(&sm.ARSetting{Threshold: &bad})
	require.Error(t, err)
	assert.Equal(t, sm.ARActionReject, rep.Event.Action)
	assert.Contains(t, rep.Event.Reason, "threshold 0")
	// The subnet's ports run VL0-VL7 (their VLCap): VL8 is no data VL of
	// theirs, though the configuration's bound (VL0-VL14) holds it.
	badVL := uint8(8)
	_, err = call(&sm.ARSetting{AFCVL: &badVL})
	assert.ErrorContains(t, err, "AFC VL 8, the ports run VL0-VL7")
	assert.Empty(t, sends(), "nothing sent for refused settings")
	checkAR(t, b, mad.ARAdaptive, 60, 2)

	var actions []sm.ARAction
	for _, e := range ev.list() {
		assert.Equal(t, "ar", e.Event)
		actions = append(actions, e.Action)
	}
	assert.Equal(t, []sm.ARAction{sm.ARActionSet, sm.ARActionSet, sm.ARActionReject, sm.ARActionReject}, actions)
}

// TestARNotFatTree: on a mesh, with a mode asked for, adaptive routing is
// left off on every switch, with an error event and result saying why;
// the subnet still comes up.
func TestARNotFatTree(t *testing.T) {
	b := newBench(t, routingtest.Grid(t, false, 2, 2), 0, 1)
	var ev recorder[sm.AREvent]
	s := b.newSM(t, sm.Config{AR: &sm.ARConfig{Mode: mad.ARAdaptive, OnEvent: ev.add}})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	require.NotNil(t, res.AR)
	assert.Contains(t, res.AR.Error, "adaptive routing left off")
	assert.Contains(t, res.AR.Error, "not a fat tree")
	assert.Zero(t, res.AR.Enabled)
	evs := ev.list()
	require.Len(t, evs, 1)
	assert.Equal(t, sm.ARActionError, evs[0].Action)
	assert.Equal(t, res.AR.Error, evs[0].Error)
	for _, n := range b.f.Nodes() {
		assert.Equal(t, mad.AROff, n.Agent.ARTable().Mode, n.Name)
	}
}

// TestARConfigCheck: the configuration is refused with a clear error for
// a bad mode, threshold or AFC VL.
func TestARConfigCheck(t *testing.T) {
	b := newBench(t, routingtest.Grid(t, false, 2, 2), 0, 1)
	for _, tc := range []struct {
		cfg  sm.ARConfig
		want string
	}{
		{sm.ARConfig{Mode: 7}, "adaptive routing mode 7"},
		{sm.ARConfig{Mode: mad.ARAFI, Threshold: 150}, "threshold 150"},
		{sm.ARConfig{Mode: mad.ARAFI, AFCVL: 4}, "AFC VL 4, the ports run VL0-VL3"},
		{sm.ARConfig{Mode: mad.ARAFI, AFCVL: 15}, "AFC VL 15, the ports run VL0-VL14"},
	} {
		// The first cases bound the ports at VL0-VL3, the last has no
		// bound but the spec's.
		opVLs := uint8(3)
		if tc.cfg.AFCVL == 15 {
			opVLs = 0
		}
		_, err := sm.New(b.port, sm.Config{AR: &tc.cfg, PortConfig: sm.PortConfig{OpVLs: opVLs}})
		assert.ErrorIs(t, err, sm.ErrConfig)
		assert.ErrorContains(t, err, tc.want)
	}
}

// FuzzARAnswers brings a fat tree up with adaptive routing while the
// switches' answers of some AR attributes carry fuzzed data (caps of 0
// or 64K, masks naming any port): the sweep ends with the subnet up,
// whatever the manager makes of them, and a second sweep too.
func FuzzARAnswers(f *testing.F) {
	info := mad.AppendARInfo(nil, &mad.ARInfoFields{GroupCap: 1, LIDCap: 3, GroupTop: 9, Mode: 9})
	f.Add(info, uint8(1))
	f.Add(mad.AppendARGroupTable(nil, &mad.ARGroupTableFields{Groups: [7]mad.PortMask{1: mad.PortMaskOf(0, 255)}}), uint8(2))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint8(7))
	f.Add([]byte{}, uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		b := newBench(t, mustGen(t)(topologies.KAryNTree(2, 2)), 0, 1)
		p := &garblePort{Port: b.port, data: data, on: true, garble: func(h mad.MAD) bool {
			return h.MgmtClass() == mad.ClassVendorAR && which&(1<<(h.AttrID()-mad.AttrARInfo)) != 0
		}}
		s, err := sm.New(p, sm.Config{
			RoutingConfig: sm.RoutingConfig{Routing: "ftree"},
			TxnConfig:     sm.TxnConfig{Retries: -1},
			AR:            &sm.ARConfig{Mode: mad.ARAFI},
		})
		require.NoError(t, err)
		for range 2 {
			res := b.sweep(t, s)
			require.True(t, res.SubnetUp, "%+v", res)
			require.NotNil(t, res.AR)
		}
	})
}
