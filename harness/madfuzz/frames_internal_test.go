package madfuzz

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/link"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// TestFrameShapes: every shape comes up, a good frame parses and
// verifies, and each broken one is broken where its shape says.
func TestFrameShapes(t *testing.T) {
	g := newFrameGen(1, 7)
	smp, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 1, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1}})
	require.NoError(t, err)
	gmp := mad.AppendPMA(nil, &mad.PMAFields{Method: mad.MethodGet, TransactionID: 2, AttrID: mad.AttrPortCounters})
	seen := map[FrameShape]int{}
	for i := range 2000 {
		m, lid := smp, uint16(mad.PermissiveLID)
		if i%2 == 1 {
			m, lid = gmp, 3
		}
		p, shape := g.frame(m, lid)
		seen[shape]++
		verr := wire.Verify(p)
		switch shape {
		case FrameGood:
			require.NoError(t, verr)
			u, err := wire.ParseUD(p)
			require.NoError(t, err)
			assert.Equal(t, m, u.Payload[:mad.MADSize])
			assert.Equal(t, uint16(7), wire.LRH(p).SLID())
			if i%2 == 0 {
				assert.Equal(t, uint8(15), wire.LRH(p).VL(), "an SMP on VL15")
			}
		case FrameICRC, FrameVCRC, FrameRunt, FrameJunk:
			assert.Error(t, verr, "%v", shape)
		case FrameVL15:
			require.NoError(t, verr, "sealed again")
			assert.Equal(t, uint8(15), wire.LRH(p).VL())
			assert.NotZero(t, wire.BTH(p[wire.LRHSize:]).DestQP(), "a data QP on VL15")
		case FrameJumbo:
			assert.Greater(t, len(p), 4170)
		}
		assert.NoError(t, link.CheckPacket(link.KindData, len(p)), "a frame a link carries")
	}
	for s := FrameGood; s <= FrameJunk; s++ {
		assert.Positive(t, seen[s], "shape %v", s)
	}
}
