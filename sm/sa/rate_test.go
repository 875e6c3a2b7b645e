package sa_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/sm"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// TestPathRecordRatesMixed: on NDR spine links with hosts at HDR, NDR and
// EDR, a path's rate is its slowest link's, in the rate codes of IBA 1.5
// (OpenSM's ib_types.h): 21 (400 Gb/s) NDR end to end, 17 (200) through
// an HDR host link, 16 (100) through an EDR one (MultiPathRecord takes
// the same pathProps).
func TestPathRecordRatesMixed(t *testing.T) {
	topo, err := topologies.FatTree(2, 2, 2)
	require.NoError(t, err)
	require.NoError(t, topo.SetRate(topologies.Rate{Width: topologies.Width4x, Speed: topologies.SpeedNDR}))
	hostRate := map[uint64]topologies.Speed{} // by node GUID: the SM names nodes its own way
	k := 0
	for i, n := range topo.Nodes() {
		if n.Type != topologies.CA {
			continue
		}
		s := []topologies.Speed{topologies.SpeedHDR, topologies.SpeedNDR, topologies.SpeedNDR, topologies.SpeedEDR}[k]
		k++
		require.NoError(t, topo.SetLinkRate(topologies.PortRef{Node: i, Port: 1}, topologies.Width4x, s))
		hostRate[n.GUID] = s
	}
	e := newEnvTopo(t, topo, sm.Config{})
	l := mad.SAPathRecordLayout
	rate := func(a, b int) uint8 {
		q := mad.PathRecordFields{SLID: e.lid(a), DLID: e.lid(b)}
		r := e.ask(t, 0, mad.MethodGet, mad.AttrSAPathRecord, l.Bit("SLID")|l.Bit("DLID"), mad.AppendPathRecord(nil, &q))
		require.Equal(t, mad.StatusOK, r.Header.MAD.Status)
		f, err := mad.DecodePathRecord(r.Payload)
		require.NoError(t, err)
		return f.Rate
	}
	code := map[topologies.Speed]uint8{topologies.SpeedEDR: 16, topologies.SpeedHDR: 17, topologies.SpeedNDR: 21}
	for a := range 4 {
		for b := range 4 {
			sa, sb := hostRate[e.sn.Topo.Node(e.hcas[a]).GUID], hostRate[e.sn.Topo.Node(e.hcas[b]).GUID]
			want := code[min(sa, sb)]
			if a == b {
				want = code[sa]
			}
			assert.Equal(t, want, rate(a, b), "%d→%d (%v, %v)", a, b, sa, sb)
		}
	}
	// The SM's view has the extended speeds: a port at NDR reads QDR in
	// LinkSpeedActive, NDR in LinkSpeedExtActive.
	var ndr int
	for i, n := range e.sn.Topo.Nodes() {
		if hostRate[n.GUID] == topologies.SpeedNDR {
			pi := e.sn.PortInfo[i][1]
			assert.Equal(t, mad.LinkSpeedQDR, pi.LinkSpeedActive)
			assert.Equal(t, mad.LinkSpeedExtNDR, pi.LinkSpeedExtActive)
			ndr++
		}
	}
	assert.Equal(t, 2, ndr)
}
