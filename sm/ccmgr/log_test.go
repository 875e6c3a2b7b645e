package ccmgr

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/wire/mad"
)

// switchLog builds a switch CongestionLog in IBA's layout (A10.4.3.5):
// events on ports 2 and 17, and the given entries.
func switchLog(counter uint16, entries ...logEntry) []byte {
	b := make([]byte, mad.CongestionLogSize)
	be := binary.BigEndian
	b[0] = mad.CongestionLogSwitch
	be.PutUint16(b[2:], counter)
	be.PutUint32(b[4:], 5000)
	b[8+31] = 1 << 2   // port 2
	b[8+31-2] = 1 << 1 // port 17
	for i, e := range entries {
		x := b[40+12*i:]
		be.PutUint16(x[0:], e.SLID)
		be.PutUint16(x[2:], e.DLID)
		x[4] = e.SL << 4
		be.PutUint32(x[8:], e.Time)
	}
	return b
}

// caLog builds a CA CongestionLog with the given entries.
func caLog(entries ...logEntry) []byte {
	b := make([]byte, mad.CongestionLogSize)
	be := binary.BigEndian
	b[0] = mad.CongestionLogCA
	be.PutUint16(b[2:], uint16(len(entries)))
	be.PutUint32(b[8:], 7000)
	for i, e := range entries {
		x := b[12+16*i:]
		be.PutUint32(x[0:], e.LocalQP<<8)
		be.PutUint32(x[4:], e.RemoteQP<<8|uint32(e.SL)<<4|uint32(e.ServiceType))
		be.PutUint16(x[8:], e.RemoteLID)
		be.PutUint32(x[12:], e.Time)
	}
	return b
}

// TestCCLogEvents: a log's entries become events, each once however
// often the log is read; a switch's carry its port map, a CA port's its
// QPs and SL.
func TestCCLogEvents(t *testing.T) {
	var got []LogEvent
	s := New(&Config{OnEvent: func(e LogEvent) { got = append(got, e) }}, nil, nil)
	sw := &target{name: "sw[0]", lid: 3, sw: true}
	a := logEntry{SLID: 5, DLID: 9, SL: 1, Time: 100}
	b := logEntry{SLID: 6, DLID: 9, SL: 2, Time: 120}
	l := decodeLog(switchLog(2, a, b))
	require.NotNil(t, l)
	assert.Equal(t, []int{2, 17}, l.Ports)
	assert.Equal(t, 2, s.emit(key{0x10, 0}, sw, l))
	require.Len(t, got, 2)
	assert.Equal(t, LogEvent{Event: "cc_log", Node: "sw[0]", GUID: "0x0000000000000010", LID: 3, Type: "switch",
		Ports: []int{2, 17}, SL: 1, SLID: 5, DLID: 9, TimeStamp: 100, LogTime: 5000, Counter: 2}, got[0])
	assert.EqualValues(t, 2, got[1].SL)

	// Read again with one more entry: only that one is new.
	c := logEntry{SLID: 5, DLID: 8, SL: 1, Time: 130}
	assert.Equal(t, 1, s.emit(key{0x10, 0}, sw, decodeLog(switchLog(1, a, b, c))))
	require.Len(t, got, 3)
	assert.EqualValues(t, 8, got[2].DLID)

	ca := &target{name: "ca[1]", lid: 4, port: 1}
	e := logEntry{LocalQP: 0x101, RemoteQP: 0x202, SL: 3, ServiceType: 3, RemoteLID: 7, Time: 99}
	assert.Equal(t, 1, s.emit(key{0x20, 1}, ca, decodeLog(caLog(e))))
	require.Len(t, got, 4)
	assert.Equal(t, LogEvent{Event: "cc_log", Node: "ca[1]", GUID: "0x0000000000000020", LID: 4, Type: "ca", Port: 1,
		SL: 3, LocalQP: 0x101, RemoteQP: 0x202, RemoteLID: 7, ServiceType: 3, TimeStamp: 99, LogTime: 7000, Counter: 1}, got[3])

	assert.Zero(t, s.emit(key{0x20, 1}, ca, decodeLog(caLog())), "an empty log")
	assert.Nil(t, decodeLog(make([]byte, mad.CongestionLogSize)), "log type 0")
	assert.Nil(t, decodeLog(make([]byte, 10)), "short")
}

// FuzzDecodeCCLog: no input makes the decoder panic, and what it
// returns has no more entries than the log holds.
func FuzzDecodeCCLog(f *testing.F) {
	f.Add(switchLog(1, logEntry{SLID: 1, DLID: 2, Time: 3}))
	f.Add(caLog(logEntry{LocalQP: 1, Time: 2}))
	f.Fuzz(func(t *testing.T, b []byte) {
		l := decodeLog(b)
		if l != nil && len(l.Entries) > mad.CongestionLogSwitchEvents {
			t.Fatalf("%d entries", len(l.Entries))
		}
	})
}

// FuzzParseSettings: no file makes the parser panic; what it takes has
// a table CCTI_Limit can index.
func FuzzParseSettings(f *testing.F) {
	f.Add("congestion_control TRUE\ncc_cct 0:1,1:2\ncc_ca_cong_setting_ccti_timer 1 5\n")
	f.Add("cc_sw_cong_setting_victim_mask 0xff\ncc_key 0x10\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := ParseSettings(strings.NewReader(text), "fuzz")
		if err == nil && len(c.CCT) > MaxCCTEntries {
			t.Fatalf("%d table entries", len(c.CCT))
		}
	})
}
