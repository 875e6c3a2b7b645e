package mad_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/capture"
	"ibfab/internal/testsupport/tsharktest"
	"ibfab/wire/mad"
)

// TestTsharkAR: tshark knows nothing of ibfab's adaptive routing class
// (0x0A, the first vendor range); it must still see the MAD header we
// wrote and find nothing malformed in a request or an answer of each
// attribute.
func TestTsharkAR(t *testing.T) {
	info := mad.ARInfoFields{ModesSupported: mad.ARModesAll, AFISupported: true, GroupCap: 64, LIDCap: 0xc000,
		GroupTop: 1, Enable: true, Mode: mad.ARAFI, Threshold: 75, AFCVL: 3}
	var groups mad.ARGroupTableFields
	groups.Groups[1] = mad.PortMaskOf(3, 4)
	var lids mad.ARLIDTableFields
	for i := range lids.Groups {
		lids.Groups[i] = 1
	}
	build := func(m mad.Method, tid uint64, attr mad.AttrID, mod uint32, st mad.Status, data []byte) []byte {
		f := mad.ARMADFields{Method: m, Status: st, TransactionID: tid, AttrID: attr, AttrModifier: mod}
		copy(f.Data[:], data)
		return mad.AppendARMAD(nil, &f)
	}
	cases := []struct {
		pkt       []byte
		tid, attr uint64
	}{
		{madQP1(build(mad.MethodGet, 0x1, mad.AttrARInfo, 0, 0, nil), 4, 1), 0x1, uint64(mad.AttrARInfo)},
		{madQP1(build(mad.MethodGetResp, 0x1, mad.AttrARInfo, 0, 0, mad.AppendARInfo(nil, &info)), 1, 4), 0x1, uint64(mad.AttrARInfo)},
		{madQP1(build(mad.MethodSet, 0x2, mad.AttrARGroupTable, 0, 0, mad.AppendARGroupTable(nil, &groups)), 4, 1), 0x2, uint64(mad.AttrARGroupTable)},
		{madQP1(build(mad.MethodSet, 0x3, mad.AttrARLIDTable, 2, 0, mad.AppendARLIDTable(nil, &lids)), 4, 1), 0x3, uint64(mad.AttrARLIDTable)},
		{madQP1(build(mad.MethodGetResp, 0x4, mad.AttrARLIDTable, 9, mad.StatusInvalidField, nil), 1, 4), 0x4, uint64(mad.AttrARLIDTable)},
	}
	recs := make([]capture.Record, len(cases))
	for i, c := range cases {
		recs[i] = capture.Record{Type: capture.TypeInfiniBand, Data: c.pkt}
	}
	pkts := tsharktest.Decode(t, recs)
	require.Len(t, pkts, len(cases))
	for i, c := range cases {
		assert.Empty(t, pkts[i].Problems(), "packet %d", i)
		assert.Equal(t, uint64(mad.ClassVendorAR), pkts[i].Uint(t, "infiniband.mad.mgmtclass"))
		assert.Equal(t, uint64(mad.ARVersion), pkts[i].Uint(t, "infiniband.mad.classversion"))
		assert.Equal(t, c.tid, pkts[i].Uint(t, "infiniband.mad.transactionid"))
		assert.Equal(t, c.attr, pkts[i].Uint(t, "infiniband.mad.attributeid"))
	}
}
