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
// header we wrote and find nothing malformed, CongestionLogs with events
// and the congestion PMA attributes included.
func TestTsharkCCAndPMAOptional(t *testing.T) {
	ca := mad.CACongestionSettingFields{PortControl: 1, ControlMap: 3}
	cc := mad.CCMADFields{Method: mad.MethodGetResp, TransactionID: 0x21, AttrID: mad.AttrCACongestionSetting, CCKey: 7}
	mad.CACongestionSetting(cc.Data[:]).Encode(&ca)
	p := mad.PMAFields{Method: mad.MethodGetResp, TransactionID: 0x19, AttrID: mad.AttrPortVLOpPackets}
	mad.PMAOptionalLayouts[mad.AttrPortVLOpPackets].Encode(p.Data[:], &mad.PMACounterSetFields{OpCode: 0x64, PortSelect: 1})
	swLog := mad.CongestionLogFields{LogType: mad.CongestionLogSwitch, EventsCounter: 1, CurrentTimeStamp: 77}
	swLog.PortMap[31] = 2
	swLog.Switch[0] = mad.CongestionLogSwitchEvent{SLID: 1, DLID: 2, SL: 3, Timestamp: 70}
	caLog := mad.CongestionLogFields{LogType: mad.CongestionLogCA, EventsCounter: 1, EventMap: 8, CurrentTimeStamp: 78}
	caLog.CA[0] = mad.CongestionLogCAEvent{LocalQP: 0x10, RemoteQP: 0x20, SL: 3, ServiceType: 3, RemoteLID: 5, Timestamp: 71}
	logMAD := func(tid uint64, f *mad.CongestionLogFields) []byte {
		m := mad.CCMADFields{Method: mad.MethodGetResp, TransactionID: tid, AttrID: mad.AttrCongestionLog}
		b := mad.AppendCCMAD(nil, &m)
		mad.CongestionLog(mad.CCMAD(b).LogData()).Encode(f)
		return b
	}
	cong := mad.PMAFields{Method: mad.MethodGetResp, TransactionID: 0x32, AttrID: mad.AttrPortSLRcvFECN}
	mad.PMAOptionalLayouts[mad.AttrPortSLRcvFECN].Encode(cong.Data[:], &mad.PMACounterSetFields{PortSelect: 1,
		Counters: [mad.PMAMaxCounters]uint64{3: 5}})
	checkTsharkHeaders(t, []tsharkHeaderCase{
		{madQP1(mad.AppendCCMAD(nil, &cc), 4, 1), uint64(mad.ClassCongestion), mad.CCVersion, 0x21, uint64(mad.AttrCACongestionSetting)},
		{madQP1(mad.AppendPMA(nil, &p), 4, 1), uint64(mad.ClassPerfMgt), mad.PerfMgtVersion, 0x19, uint64(mad.AttrPortVLOpPackets)},
		{madQP1(logMAD(0x13, &swLog), 4, 1), uint64(mad.ClassCongestion), mad.CCVersion, 0x13, uint64(mad.AttrCongestionLog)},
		{madQP1(logMAD(0x14, &caLog), 4, 1), uint64(mad.ClassCongestion), mad.CCVersion, 0x14, uint64(mad.AttrCongestionLog)},
		{madQP1(mad.AppendPMA(nil, &cong), 4, 1), uint64(mad.ClassPerfMgt), mad.PerfMgtVersion, 0x32, uint64(mad.AttrPortSLRcvFECN)},
	})
}

// tsharkHeaderCase is a MAD whose class or attribute tshark cannot
// dissect, and the header it must show.
type tsharkHeaderCase struct {
	pkt            []byte
	class, version uint64
	tid, attr      uint64
}

// checkTsharkHeaders has tshark dissect the cases' packets: each must
// show the MAD header we wrote, with nothing malformed.
func checkTsharkHeaders(t *testing.T, cases []tsharkHeaderCase) {
	t.Helper()
	recs := make([]capture.Record, len(cases))
	for i, c := range cases {
		recs[i] = capture.Record{Type: capture.TypeInfiniBand, Data: c.pkt}
	}
	pkts := tsharktest.Decode(t, recs)
	require.Len(t, pkts, len(cases))
	for i, c := range cases {
		assert.Empty(t, pkts[i].Problems(), "packet %d", i)
		assert.Equal(t, c.class, pkts[i].Uint(t, "infiniband.mad.mgmtclass"), "packet %d", i)
		assert.Equal(t, c.version, pkts[i].Uint(t, "infiniband.mad.classversion"), "packet %d", i)
		assert.Equal(t, c.tid, pkts[i].Uint(t, "infiniband.mad.transactionid"), "packet %d", i)
		assert.Equal(t, c.attr, pkts[i].Uint(t, "infiniband.mad.attributeid"), "packet %d", i)
	}
}
