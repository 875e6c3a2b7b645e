package mad_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/internal/testsupport/tsharktest"
	"ibfab/wire/mad"
)

// TestTsharkCCAndPMAOptional: tshark 4.0 has no dissector for class 0x21
// attributes or the optional PMA attributes; it must still see the MAD
// header we wrote and find nothing malformed.
func TestTsharkCCAndPMAOptional(t *testing.T) {
	ca := mad.CACongestionSettingFields{PortControl: 1, ControlMap: 3}
	cc := mad.CCMADFields{Method: mad.MethodGetResp, TransactionID: 0x21, AttrID: mad.AttrCACongestionSetting, CCKey: 7}
	mad.CACongestionSetting(cc.Data[:]).Encode(&ca)
	p := mad.PMAFields{Method: mad.MethodGetResp, TransactionID: 0x19, AttrID: mad.AttrPortVLOpPackets}
	mad.PMAOptionalLayouts[mad.AttrPortVLOpPackets].Encode(p.Data[:], &mad.PMACounterSetFields{OpCode: 0x64, PortSelect: 1})
	cases := []struct {
		pkt            []byte
		class, version uint64
		tid, attr      uint64
	}{
		{madQP1(mad.AppendCCMAD(nil, &cc), 4, 1), uint64(mad.ClassCongestion), mad.CCVersion, 0x21, uint64(mad.AttrCACongestionSetting)},
		{madQP1(mad.AppendPMA(nil, &p), 4, 1), uint64(mad.ClassPerfMgt), mad.PerfMgtVersion, 0x19, uint64(mad.AttrPortVLOpPackets)},
	}
	recs := make([]capture.Record, len(cases))
	for i, c := range cases {
		recs[i] = capture.Record{Type: capture.TypeInfiniBand, Data: c.pkt}
	}
	pkts := tsharktest.Decode(t, recs)
	require.Len(t, pkts, len(cases))
	for i, c := range cases {
		assert.Empty(t, pkts[i].Problems())
		assert.Equal(t, c.class, pkts[i].Uint(t, "infiniband.mad.mgmtclass"))
		assert.Equal(t, c.version, pkts[i].Uint(t, "infiniband.mad.classversion"))
		assert.Equal(t, c.tid, pkts[i].Uint(t, "infiniband.mad.transactionid"))
		assert.Equal(t, c.attr, pkts[i].Uint(t, "infiniband.mad.attributeid"))
	}
}
