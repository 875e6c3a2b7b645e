package madfuzz

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

func drAnswer(t *testing.T, attr mad.AttrID, status mad.Status, set func(data []byte)) []byte {
	t.Helper()
	m, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 1, AttrID: attr, Path: []uint8{0, 1}})
	require.NoError(t, err)
	mad.MAD(m).SetMethod(mad.MethodGetResp)
	mad.DRSMP(m).SetDirection(true)
	mad.DRSMP(m).SetStatus(status)
	set(mad.DRSMP(m).Data())
	return m
}

func pmaAnswer(attr mad.AttrID, set func(data []byte)) []byte {
	m := mad.AppendPMA(nil, &mad.PMAFields{Method: mad.MethodGetResp, TransactionID: 1, AttrID: attr})
	set(mad.PMA(m).Data())
	return m
}

func TestDirtyTail(t *testing.T) {
	none := func([]byte) {}
	for _, c := range []struct {
		name          string
		m             []byte
		at            int
		judged, dirty bool
	}{
		{"NodeInfo, tail zero", drAnswer(t, mad.AttrNodeInfo, 0, func(d []byte) { d[0], d[39] = 1, 0xff }), 0, true, false},
		{"NodeInfo, byte 40 set", drAnswer(t, mad.AttrNodeInfo, 0, func(d []byte) { d[mad.NodeInfoSize] = 1 }), 64 + mad.NodeInfoSize, true, true},
		{"SMInfo, last byte set", drAnswer(t, mad.AttrSMInfo, 0, func(d []byte) { d[63] = 0x80 }), 127, true, true},
		{"NodeInfo, an error answer", drAnswer(t, mad.AttrNodeInfo, mad.StatusMethodAttrUnsupported, func(d []byte) { d[50] = 1 }), 0, false, false},
		{"PortInfo fills its field", drAnswer(t, mad.AttrPortInfo, 0, func(d []byte) { d[63] = 1 }), 0, false, false},
		{"PortCounters, tail set", pmaAnswer(mad.AttrPortCounters, func(d []byte) { d[mad.PortCountersSize+3] = 7 }), 64 + mad.PortCountersSize + 3, true, true},
		{"PortCounters, clean", pmaAnswer(mad.AttrPortCounters, none), 0, true, false},
		{"a Get is not judged", func() []byte {
			m := pmaAnswer(mad.AttrPortCounters, func(d []byte) { d[100] = 1 })
			mad.MAD(m).SetMethod(mad.MethodGet)
			return m
		}(), 0, false, false},
		{"short", []byte{1, 2, 3}, 0, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			at, judged, dirty := dirtyTail(c.m)
			assert.Equal(t, c.judged, judged, "judged")
			assert.Equal(t, c.dirty, dirty, "dirty")
			assert.Equal(t, c.at, at, "offset")
		})
	}
}
