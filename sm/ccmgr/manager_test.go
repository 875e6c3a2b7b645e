package ccmgr_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/clock"
	"ibfab/sm/ccmgr"
	"ibfab/sm/txn"
	"ibfab/sm/txn/txntest"
	"ibfab/wire/mad"
)

// errNoAnswer is what the fake gives a request a node does not answer:
// the transaction layer's timeout.
var errNoAnswer = errors.New("fake: no answer")

// fakeNode is one node's congestion control attributes as its agent holds
// them, in their wire layout, by attribute and modifier.
type fakeNode struct {
	key   uint64 // CongestionKeyInfo's CC_Key: a request with another gets no answer
	attrs map[fakeAttr][]byte
}

type fakeAttr struct {
	id  mad.AttrID
	mod uint32
}

// fakeSender is a ccmgr.Sender over fake nodes, by LID.
type fakeSender struct {
	txntest.Queue
	nodes map[uint16]*fakeNode
}

func newFakeSender() *fakeSender {
	f := &fakeSender{nodes: map[uint16]*fakeNode{}}
	f.Answer = f.answer
	return f
}

// answer is what the node addressed makes of r.
func (f *fakeSender) answer(set bool, r *txn.Request) *txn.Response {
	n := f.nodes[r.LID]
	if n == nil || r.Class != mad.ClassCongestion || (n.key != 0 && r.CCKey != n.key) {
		return &txn.Response{Err: errNoAnswer}
	}
	a := fakeAttr{r.Attr, r.Mod}
	if set {
		n.attrs[a] = append([]byte(nil), r.Data...)
		if r.Attr == mad.AttrCongestionKeyInfo {
			n.key = mad.CongestionKeyInfo(r.Data).Fields().CCKey
		}
	}
	data, ok := n.attrs[a]
	if !ok {
		return &txn.Response{Err: errNoAnswer}
	}
	return &txn.Response{Data: data}
}

// addSwitch gives the fake a switch at lid with ports 1-4, holding
// nothing of the file, port 3 with an element of its own.
func (f *fakeSender) addSwitch(lid uint16, key uint64) ccmgr.Node {
	var ports mad.SwitchPortCongestionSettingFields
	ports.Ports[3].Valid = true
	f.nodes[lid] = &fakeNode{key: key, attrs: map[fakeAttr][]byte{
		{mad.AttrCongestionKeyInfo, 0}:           mad.AppendCongestionKeyInfo(nil, &mad.CongestionKeyInfoFields{CCKey: key}),
		{mad.AttrSwitchCongestionSetting, 0}:     mad.AppendSwitchCongestionSetting(nil, &mad.SwitchCongestionSettingFields{}),
		{mad.AttrSwitchPortCongestionSetting, 0}: mad.AppendSwitchPortCongestionSetting(nil, &ports),
		{mad.AttrCongestionLog, 0}:               mad.AppendCongestionLog(nil, &mad.CongestionLogFields{LogType: mad.CongestionLogSwitch}),
	}}
	return ccmgr.Node{GUID: 0x100 + uint64(lid), Name: fmt.Sprintf("sw%d", lid), LID: lid, Switch: true, NumPorts: 4}
}

// addCA gives the fake a CA port at lid with room for tableCap
// CongestionControlTable blocks, holding nothing of the file.
func (f *fakeSender) addCA(lid uint16, key uint64, tableCap uint8) ccmgr.Node {
	n := &fakeNode{key: key, attrs: map[fakeAttr][]byte{
		{mad.AttrCongestionKeyInfo, 0}:   mad.AppendCongestionKeyInfo(nil, &mad.CongestionKeyInfoFields{CCKey: key}),
		{mad.AttrCACongestionSetting, 0}: mad.AppendCACongestionSetting(nil, &mad.CACongestionSettingFields{}),
		{mad.AttrCongestionInfo, 0}:      mad.AppendCongestionInfo(nil, &mad.CongestionInfoFields{ControlTableCap: tableCap}),
		{mad.AttrCongestionLog, 0}:       mad.AppendCongestionLog(nil, &mad.CongestionLogFields{LogType: mad.CongestionLogCA}),
	}}
	for b := range uint32(tableCap) {
		n.attrs[fakeAttr{mad.AttrCongestionControlTable, b}] = mad.AppendCongestionControlTable(nil, &mad.CongestionControlTableFields{})
	}
	f.nodes[lid] = n
	return ccmgr.Node{GUID: 0x100 + uint64(lid), Port: 1, Name: fmt.Sprintf("ca%d[1]", lid), LID: lid, NumPorts: 1}
}

// testSettings is a file of switch-wide marking, two SLs of CA settings
// and a table of 70 entries (two blocks).
func testSettings(t *testing.T, key string) ccmgr.Settings {
	t.Helper()
	var cct []string
	for i := range 70 {
		cct = append(cct, fmt.Sprintf("%d:%d", i%4, i*3))
	}
	s, err := ccmgr.ParseSettings(strings.NewReader(`congestion_control TRUE
cc_key `+key+`
cc_sw_cong_setting_control_map 0x1f
cc_sw_cong_setting_victim_mask 0x6
cc_sw_cong_setting_threshold 0x0a
cc_sw_cong_setting_marking_rate 3
cc_ca_cong_setting_port_control 0x0001
cc_ca_cong_setting_control_map 0x0003
cc_ca_cong_setting_ccti_timer 0 150
cc_ca_cong_setting_ccti_increase 1 1
cc_cct `+strings.Join(cct, ",")+"\n"), "cc.conf")
	require.NoError(t, err)
	return *s
}

// warnings collects the manager's warnings.
type warnings []string

func (w *warnings) add(format string, args ...any) { *w = append(*w, fmt.Sprintf(format, args...)) }

// TestSweep: a first sweep reads every node, sets the key and what
// differs from the file (a switch port's own element cleared); a second
// sends nothing but the log reads; a node whose key the manager does not
// know is reported and sent nothing; a table larger than a port holds is
// reported.
func TestSweep(t *testing.T) {
	for _, tc := range []struct {
		name     string
		key      string // the file's cc_key
		nodeKey  uint64 // what the nodes hold
		tableCap uint8
		first    ccmgr.Result
		sets     map[txntest.Sent]int
		warn     string
	}{
		{name: "programs", key: "0x1234", tableCap: 2,
			first: ccmgr.Result{Nodes: 3, Read: 3, KeySets: 3, Sets: 2 + 2*(1+2)},
			sets: map[txntest.Sent]int{{Set: true, Attr: mad.AttrCongestionKeyInfo}: 3, {Set: true, Attr: mad.AttrSwitchCongestionSetting}: 1, {Set: true, Attr: mad.AttrSwitchPortCongestionSetting}: 1,
				{Set: true, Attr: mad.AttrCACongestionSetting}: 2, {Set: true, Attr: mad.AttrCongestionControlTable}: 4}},
		{name: "no key", key: "0", tableCap: 2,
			first: ccmgr.Result{Nodes: 3, Read: 3, Sets: 2 + 2*(1+2)},
			sets: map[txntest.Sent]int{{Set: true, Attr: mad.AttrSwitchCongestionSetting}: 1, {Set: true, Attr: mad.AttrSwitchPortCongestionSetting}: 1,
				{Set: true, Attr: mad.AttrCACongestionSetting}: 2, {Set: true, Attr: mad.AttrCongestionControlTable}: 4}},
		{name: "another key", key: "0x1234", nodeKey: 0x9999, tableCap: 2,
			first: ccmgr.Result{Nodes: 3, Read: 3, KeyFailures: 3},
			sets:  map[txntest.Sent]int{}, warn: "it may hold another key"},
		{name: "small table", key: "0x1234", tableCap: 1,
			first: ccmgr.Result{Nodes: 3, Read: 3, KeySets: 3, Sets: 2 + 2},
			sets: map[txntest.Sent]int{{Set: true, Attr: mad.AttrCongestionKeyInfo}: 3, {Set: true, Attr: mad.AttrSwitchCongestionSetting}: 1, {Set: true, Attr: mad.AttrSwitchPortCongestionSetting}: 1,
				{Set: true, Attr: mad.AttrCACongestionSetting}: 2},
			warn: "a CongestionControlTable of 70 entries, the port holds 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeSender()
			nodes := []ccmgr.Node{f.addSwitch(1, tc.nodeKey), f.addCA(2, tc.nodeKey, tc.tableCap), f.addCA(3, tc.nodeKey, tc.tableCap)}
			m := ccmgr.New(&ccmgr.Config{Settings: testSettings(t, tc.key)}, f, clock.NewManual(time.Unix(0, 0)))
			var w warnings
			r, err := m.Sweep(context.Background(), nodes, w.add)
			require.NoError(t, err)
			assert.Equal(t, tc.first, *r)
			assert.Equal(t, tc.sets, f.Sets())
			if tc.warn == "" {
				assert.Empty(t, w)
			} else {
				require.NotEmpty(t, w)
				assert.Contains(t, w[0], tc.warn)
			}

			w = nil
			r, err = m.Sweep(context.Background(), nodes, w.add)
			require.NoError(t, err)
			again := ccmgr.Result{Nodes: 3}
			logs := map[txntest.Sent]int{{Set: false, Attr: mad.AttrCongestionLog}: 3}
			if tc.first.KeyFailures > 0 {
				// Never read, so met anew, and no log read.
				again = tc.first
				logs = map[txntest.Sent]int{{Set: false, Attr: mad.AttrCongestionKeyInfo}: 3}
			}
			assert.Equal(t, again, *r)
			assert.Equal(t, logs, f.Take(), "what the second sweep sends")
		})
	}
}

// TestSweepNodesComeAndGo: a node left out of a sweep is forgotten and
// read again when it comes back; Forget makes every node new.
func TestSweepNodesComeAndGo(t *testing.T) {
	f := newFakeSender()
	sw, ca := f.addSwitch(1, 0), f.addCA(2, 0, 2)
	m := ccmgr.New(&ccmgr.Config{Settings: testSettings(t, "0")}, f, clock.NewManual(time.Unix(0, 0)))
	ctx := context.Background()
	for _, step := range []struct {
		nodes  []ccmgr.Node
		forget bool
		want   ccmgr.Result
	}{
		{nodes: []ccmgr.Node{sw, ca}, want: ccmgr.Result{Nodes: 2, Read: 2, Sets: 2 + 1 + 2}},
		{nodes: []ccmgr.Node{sw}, want: ccmgr.Result{Nodes: 1}},
		{nodes: []ccmgr.Node{sw, ca}, want: ccmgr.Result{Nodes: 2, Read: 1}},
		{nodes: []ccmgr.Node{sw, ca}, forget: true, want: ccmgr.Result{Nodes: 2, Read: 2}},
	} {
		if step.forget {
			m.Forget()
		}
		r, err := m.Sweep(ctx, step.nodes, func(string, ...any) {})
		require.NoError(t, err)
		assert.Equal(t, step.want, *r)
	}
}

// TestLogs: each new CongestionLog entry becomes one event, at a sweep or
// at the periodic read, whose due time follows the clock; a disabled
// manager has none due.
func TestLogs(t *testing.T) {
	f := newFakeSender()
	sw := f.addSwitch(1, 0)
	clk := clock.NewManual(time.Unix(100, 0))
	var events []ccmgr.LogEvent
	cfg := &ccmgr.Config{Settings: testSettings(t, "0"), LogInterval: time.Second,
		OnEvent: func(e ccmgr.LogEvent) { events = append(events, e) }}
	m := ccmgr.New(cfg, f, clk)
	_, ok := m.LogDue()
	assert.False(t, ok, "nothing due before the first sweep")
	ctx := context.Background()
	r, err := m.Sweep(ctx, []ccmgr.Node{sw}, func(string, ...any) {})
	require.NoError(t, err)
	assert.Zero(t, r.LogEntries)
	due, ok := m.LogDue()
	require.True(t, ok)
	assert.Equal(t, clk.Now().Add(time.Second), due)

	log := mad.CongestionLogFields{LogType: mad.CongestionLogSwitch, EventsCounter: 1, CurrentTimeStamp: 77}
	log.Switch[0] = mad.CongestionLogSwitchEvent{SLID: 5, DLID: 9, SL: 1, Timestamp: 70}
	f.nodes[1].attrs[fakeAttr{mad.AttrCongestionLog, 0}] = mad.AppendCongestionLog(nil, &log)
	clk.Advance(time.Second)
	require.NoError(t, m.ReadLogs(ctx))
	require.Len(t, events, 1)
	assert.Equal(t, ccmgr.LogEvent{Event: "cc_log", Node: "sw1", GUID: "0x0000000000000101", LID: 1, Type: "switch",
		SL: 1, SLID: 5, DLID: 9, TimeStamp: 70, LogTime: 77, Counter: 1}, events[0])
	due, _ = m.LogDue()
	assert.Equal(t, clk.Now().Add(time.Second), due, "the next read rescheduled")

	r, err = m.Sweep(ctx, []ccmgr.Node{sw}, func(string, ...any) {})
	require.NoError(t, err)
	assert.Zero(t, r.LogEntries, "the same log again: nothing new")
	assert.Len(t, events, 1)

	off := ccmgr.New(&ccmgr.Config{LogInterval: time.Second}, f, clk)
	assert.False(t, off.Enabled())
	_, ok = off.LogDue()
	assert.False(t, ok, "congestion_control FALSE: no log read due")
}
