package mad_test

import (
	"testing"

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
	ar := func(pkt []byte, tid uint64, attr mad.AttrID) tsharkHeaderCase {
		return tsharkHeaderCase{pkt, uint64(mad.ClassVendorAR), mad.ARVersion, tid, uint64(attr)}
	}
	checkTsharkHeaders(t, []tsharkHeaderCase{
		ar(madQP1(build(mad.MethodGet, 0x1, mad.AttrARInfo, 0, 0, nil), 4, 1), 0x1, mad.AttrARInfo),
		ar(madQP1(build(mad.MethodGetResp, 0x1, mad.AttrARInfo, 0, 0, mad.AppendARInfo(nil, &info)), 1, 4), 0x1, mad.AttrARInfo),
		ar(madQP1(build(mad.MethodSet, 0x2, mad.AttrARGroupTable, 0, 0, mad.AppendARGroupTable(nil, &groups)), 4, 1), 0x2, mad.AttrARGroupTable),
		ar(madQP1(build(mad.MethodSet, 0x3, mad.AttrARLIDTable, 2, 0, mad.AppendARLIDTable(nil, &lids)), 4, 1), 0x3, mad.AttrARLIDTable),
		ar(madQP1(build(mad.MethodGetResp, 0x4, mad.AttrARLIDTable, 9, mad.StatusInvalidField, nil), 1, 4), 0x4, mad.AttrARLIDTable),
	})
}
