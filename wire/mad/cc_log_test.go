package mad_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// TestCongestionLogLayout: the switch and CA forms put every field where
// libibmad's field table and OpenSM's ib_types.h do (offsets into the log
// data area).
func TestCongestionLogLayout(t *testing.T) {
	sw := mad.CongestionLogFields{LogType: mad.CongestionLogSwitch, CongestionFlags: 0x5a, EventsCounter: 0x1234,
		CurrentTimeStamp: 0xa1b2c3d4}
	sw.PortMap[31] = 0x06 // ports 1 and 2
	sw.Switch[0] = mad.CongestionLogSwitchEvent{SLID: 0x0102, DLID: 0x0304, SL: 0xc, Timestamp: 0x05060708}
	sw.Switch[14] = mad.CongestionLogSwitchEvent{SLID: 0xffff, SL: 1, Timestamp: 1}
	b := mad.AppendCongestionLog(nil, &sw)
	require.Len(t, b, mad.CongestionLogSize)
	assert.Equal(t, []byte{1, 0x5a, 0x12, 0x34, 0xa1, 0xb2, 0xc3, 0xd4}, b[:8], "head, CurrentTimeStamp")
	assert.EqualValues(t, 0x06, b[8+31], "PortMap at 8, port 1 in the last byte")
	assert.Equal(t, []byte{0x01, 0x02, 0x03, 0x04, 0xc0, 0, 0, 0, 0x05, 0x06, 0x07, 0x08}, b[40:52], "first event at 40")
	assert.Equal(t, []byte{0xff, 0xff, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 1}, b[40+14*12:40+15*12], "15th event")
	assert.Equal(t, make([]byte, mad.CongestionLogSize-220), b[220:], "nothing after the entries")
	got, err := mad.DecodeCongestionLog(b)
	require.NoError(t, err)
	assert.Equal(t, sw, got)

	ca := mad.CongestionLogFields{LogType: mad.CongestionLogCA, EventsCounter: 3, EventMap: 0x8001, CurrentTimeStamp: 0x11223344}
	ca.CA[0] = mad.CongestionLogCAEvent{LocalQP: 0xabcdef, RemoteQP: 0x123456, SL: 0x9, ServiceType: 0x3, RemoteLID: 0x0bee,
		Timestamp: 0xcafef00d}
	ca.CA[12] = mad.CongestionLogCAEvent{LocalQP: 1}
	b = mad.AppendCongestionLog(nil, &ca)
	assert.Equal(t, []byte{2, 0, 0, 3, 0x80, 0x01, 0, 0, 0x11, 0x22, 0x33, 0x44}, b[:12], "head, event map, CurrentTimeStamp at 8")
	assert.Equal(t, []byte{0xab, 0xcd, 0xef, 0, 0x12, 0x34, 0x56, 0x93, 0x0b, 0xee, 0, 0, 0xca, 0xfe, 0xf0, 0x0d}, b[12:28],
		"first event at 12")
	assert.Equal(t, []byte{0, 0, 1, 0}, b[12+12*16:12+12*16+4], "13th event")
	got, err = mad.DecodeCongestionLog(b)
	require.NoError(t, err)
	assert.Equal(t, ca, got)

	// Fields wider than their bits are cut to them.
	over := mad.CongestionLogFields{LogType: mad.CongestionLogCA}
	over.CA[0] = mad.CongestionLogCAEvent{LocalQP: 0xff000001, SL: 0x1f, ServiceType: 0x17}
	got, _ = mad.DecodeCongestionLog(mad.AppendCongestionLog(nil, &over))
	assert.Equal(t, mad.CongestionLogCAEvent{LocalQP: 1, SL: 0xf, ServiceType: 0x7}, got.CA[0])

	_, err = mad.DecodeCongestionLog(b[:mad.CongestionLogSize-1])
	assert.Error(t, err)
}

// TestPMACongestionLayouts: the congestion control PMA attributes as
// libibmad lays them out: IDs 0x30-0x35, counters from byte 4.
func TestPMACongestionLayouts(t *testing.T) {
	tests := []struct {
		attr         mad.AttrID
		id           uint16
		width, count int
		size         int
		switchOnly   bool
		firstCounter string
	}{
		{mad.AttrSwPortVLCongestion, 0x30, 16, 16, 36, true, "SWPortVLCongestion0"},
		{mad.AttrPortRcvConCtrl, 0x31, 32, 2, 12, false, "PortPktRcvFECN"},
		{mad.AttrPortSLRcvFECN, 0x32, 32, 16, 68, false, "PortSLRcvFECN0"},
		{mad.AttrPortSLRcvBECN, 0x33, 32, 16, 68, false, "PortSLRcvBECN0"},
		{mad.AttrPortXmitConCtrl, 0x34, 32, 1, 8, true, "PortXmitTimeCong"},
		{mad.AttrPortVLXmitTimeCong, 0x35, 32, 15, 64, true, "PortVLXmitTimeCong0"},
	}
	for _, tt := range tests {
		l := mad.PMAOptionalLayouts[tt.attr]
		require.NotNil(t, l, "%#x", tt.id)
		assert.EqualValues(t, tt.id, l.Attr)
		assert.Equal(t, tt.width, l.Width, l.Name)
		assert.Len(t, l.Names, tt.count, l.Name)
		assert.Equal(t, tt.size, l.Size(), l.Name)
		assert.Equal(t, tt.switchOnly, l.SwitchOnly, l.Name)
		assert.Equal(t, tt.firstCounter, l.Names[0])
		f := mad.PMACounterSetFields{PortSelect: 3, CounterSelect: 0xffff}
		f.Counters[tt.count-1] = 7
		f.Counters[0] = 0x0102
		b := l.Append(nil, &f)
		assert.Equal(t, byte(3), b[1], "PortSelect")
		if tt.width == 32 {
			assert.Equal(t, []byte{0, 0, 1, 2}, b[4:8], l.Name)
		} else {
			assert.Equal(t, []byte{1, 2}, b[4:6], l.Name)
		}
		got, err := l.Decode(b)
		require.NoError(t, err)
		assert.Equal(t, f, got)
	}
}
