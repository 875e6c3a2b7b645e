package topologies_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/topologies"
)

func TestSQSNames(t *testing.T) {
	for _, s := range topologies.SQSs() {
		got, err := topologies.ParseSQS(s.String())
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
	for in, want := range map[string]topologies.SQS{"1vc": topologies.SQS1VC, "DBBM": topologies.SQSDBBM,
		"vFtree": topologies.SQSVFtree, "Flow2SL": topologies.SQSFlow2SL} {
		got, err := topologies.ParseSQS(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "2vc", "vftree ", "sqs(1)"} {
		_, err := topologies.ParseSQS(bad)
		assert.ErrorIs(t, err, topologies.ErrInvalid, "%q", bad)
	}
	assert.Equal(t, "SQS(9)", topologies.SQS(9).String())
	assert.Equal(t, "SQS(0)", topologies.SQS(0).String())
}

func TestSQSFormulas(t *testing.T) {
	ends := func(src, dst, srcLeaf, dstLeaf int, dlid uint16) topologies.FlowEnds {
		return topologies.FlowEnds{Src: src, Dst: dst, SrcLeaf: srcLeaf, DstLeaf: dstLeaf, DLID: dlid}
	}
	tests := []struct {
		s      topologies.SQS
		q, n   int
		e      topologies.FlowEnds
		want   uint8
		reason string
	}{
		{topologies.SQS1VC, 3, 16, ends(0, 15, 0, 7, 40), 0, "always SL 0"},
		{topologies.SQS1VC, 1, 16, ends(3, 4, 1, 2, 5), 0, "always SL 0"},
		{topologies.SQSDBBM, 3, 16, ends(0, 15, 0, 7, 40), 1, "40 mod 3"},
		{topologies.SQSDBBM, 3, 16, ends(0, 15, 0, 7, 42), 0, "42 mod 3"},
		{topologies.SQSDBBM, 4, 16, ends(0, 15, 0, 7, 0xbfff), 3, "0xbfff mod 4"},
		{topologies.SQSVFtree, 3, 16, ends(0, 15, 0, 7, 40), 1, "(7+0) mod 3"},
		{topologies.SQSVFtree, 3, 16, ends(4, 9, 2, 4, 40), 0, "(4+2) mod 3"},
		{topologies.SQSVFtree, 3, 16, ends(4, 5, 2, 2, 40), 1, "(2+2) mod 3"},
		// g(x) = ⌊3x/16⌋: hosts 0-5 group 0, 6-10 group 1, 11-15 group 2.
		{topologies.SQSFlow2SL, 3, 16, ends(0, 15, 0, 7, 40), 2, "(2−0) mod 3"},
		{topologies.SQSFlow2SL, 3, 16, ends(15, 0, 7, 0, 40), 1, "(0−2) mod 3"},
		{topologies.SQSFlow2SL, 3, 16, ends(5, 6, 2, 3, 40), 1, "(1−0) mod 3"},
		{topologies.SQSFlow2SL, 3, 16, ends(6, 10, 3, 5, 40), 0, "one group"},
		{topologies.SQSFlow2SL, 3, 54, ends(17, 18, 5, 6, 40), 1, "groups of 18: 0 → 1"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%v q=%d %+v", tt.s, tt.q, tt.e), func(t *testing.T) {
			got, err := tt.s.SL(tt.q, tt.n, tt.e)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, tt.reason)
		})
	}
}

func TestSQSErrors(t *testing.T) {
	ok := topologies.FlowEnds{Src: 0, Dst: 1, SrcLeaf: 0, DstLeaf: 0, DLID: 2}
	tests := []struct {
		s    topologies.SQS
		q, n int
		e    topologies.FlowEnds
	}{
		{topologies.SQSDBBM, 0, 16, ok},
		{topologies.SQSDBBM, topologies.MaxSQSQueues + 1, 16, ok},
		{topologies.SQS1VC, -1, 16, ok},
		{topologies.SQSFlow2SL, 3, 16, topologies.FlowEnds{Src: 16, Dst: 0}},
		{topologies.SQSFlow2SL, 3, 16, topologies.FlowEnds{Src: 0, Dst: -1}},
		{topologies.SQSFlow2SL, 3, 0, ok},
		{topologies.SQSVFtree, 3, 16, topologies.FlowEnds{SrcLeaf: -1}},
		{topologies.SQS(0), 3, 16, ok},
		{topologies.SQS(9), 3, 16, ok},
	}
	for _, tt := range tests {
		_, err := tt.s.SL(tt.q, tt.n, tt.e)
		assert.ErrorIs(t, err, topologies.ErrInvalid, "%v q=%d n=%d %+v", tt.s, tt.q, tt.n, tt.e)
	}
}

// TestSQSProperties checks each scheme on every flow of RLFTs against the
// properties seed 003 states for it, with the flows' ends as the layout
// numbers them and DLIDs as the SM would give them (1..N here).
func TestSQSProperties(t *testing.T) {
	for _, k := range []int{2, 3, 4} {
		tp, err := topologies.RLFT(k, 3)
		require.NoError(t, err)
		l, err := topologies.LayoutFatTree(tp)
		require.NoError(t, err)
		n := len(l.Hosts)
		for _, q := range []int{1, 2, 3, 4} {
			t.Run(fmt.Sprintf("K=%d Q=%d", k, q), func(t *testing.T) {
				sl := func(s topologies.SQS, src, dst int) uint8 {
					e, ok := l.Flow(src, dst, uint16(dst+1))
					require.True(t, ok)
					v, err := s.SL(q, n, e)
					require.NoError(t, err)
					require.Less(t, int(v), q, "SLs stay below Q (the AFC VL)")
					return v
				}
				// Flow2SL: one SL per (source group, destination group),
				// and one source group's flows to the Q destination
				// groups take Q different SLs.
				pairSL := map[[2]int]uint8{}
				toGroups := map[int]map[uint8]int{} // source group → SL → destination group
				for src := range n {
					for dst := range n {
						if src == dst {
							continue
						}
						gs, gd := topologies.Flow2SLGroup(src, q, n), topologies.Flow2SLGroup(dst, q, n)
						v := sl(topologies.SQSFlow2SL, src, dst)
						if prev, seen := pairSL[[2]int{gs, gd}]; seen {
							require.Equal(t, prev, v, "groups %d→%d share an SL", gs, gd)
						}
						pairSL[[2]int{gs, gd}] = v
						if toGroups[gs] == nil {
							toGroups[gs] = map[uint8]int{}
						}
						if g, seen := toGroups[gs][v]; seen {
							require.Equal(t, g, gd, "group %d: SL %d for two destination groups", gs, v)
						}
						toGroups[gs][v] = gd
					}
				}
				for gs := range q {
					assert.Len(t, toGroups[gs], q, "source group %d uses all Q SLs", gs)
				}
				for src := range n {
					assert.Zero(t, sl(topologies.SQS1VC, src, (src+1)%n))
					assert.Equal(t, uint8((src+1)%q), sl(topologies.SQSDBBM, (src+5)%n, src), "DBBM: DLID %d", src+1)
				}

				// vFtree: one SL per (source leaf, destination leaf);
				// from one source leaf, consecutive destination leaves
				// take consecutive SLs (mod Q).
				leafSL := map[[2]int]uint8{}
				for src := range n {
					sLeaf, _ := l.Leaf(src)
					for dst := range n {
						dLeaf, _ := l.Leaf(dst)
						v := sl(topologies.SQSVFtree, src, dst)
						if prev, seen := leafSL[[2]int{sLeaf, dLeaf}]; seen {
							require.Equal(t, prev, v, "leaves %d→%d share an SL", sLeaf, dLeaf)
						}
						leafSL[[2]int{sLeaf, dLeaf}] = v
					}
				}
				for key, v := range leafSL {
					if next, ok := leafSL[[2]int{key[0], key[1] + 1}]; ok {
						assert.Equal(t, (int(v)+1)%q, int(next), "leaf %d: destination leaves %d and %d", key[0], key[1], key[1]+1)
					}
				}
			})
		}
	}
}
