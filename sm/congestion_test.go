package sm_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/madport"
	"ibfab/sm"
	"ibfab/sm/ccmgr"
	"ibfab/sm/routing/routingtest"
	"ibfab/wire/mad"
)

// ccFile is a congestion control file in OpenSM's syntax: switch-wide
// marking on ports 1 and 2 as victims, two SLs of CA settings, a table
// of 70 entries (two blocks).
func ccFile(key string) string {
	var cct []string
	for i := range 70 {
		cct = append(cct, fmt.Sprintf("%d:%d", i%4, i*3))
	}
	return `congestion_control TRUE
cc_key ` + key + `
cc_sw_cong_setting_control_map 0x1f
cc_sw_cong_setting_victim_mask 0x6
cc_sw_cong_setting_threshold 0x0a
cc_sw_cong_setting_packet_size 8
cc_sw_cong_setting_credit_starvation_return_delay 1:10
cc_sw_cong_setting_marking_rate 3
cc_ca_cong_setting_port_control 0x0001
cc_ca_cong_setting_control_map 0x0003
cc_ca_cong_setting_ccti_timer 0 150
cc_ca_cong_setting_ccti_increase 0 2
cc_ca_cong_setting_trigger_threshold 0 5
cc_ca_cong_setting_ccti_timer 1 300
cc_ca_cong_setting_ccti_increase 1 1
cc_cct ` + strings.Join(cct, ",") + "\n"
}

// ccLogs collects the CongestionLog events from the SM's goroutine.
type ccLogs = recorder[sm.CCLogEvent]

func ccConfig(t *testing.T, key string, logs *ccLogs) *sm.CCConfig {
	t.Helper()
	c, err := ccmgr.ParseSettings(strings.NewReader(ccFile(key)), "cc.conf")
	require.NoError(t, err)
	cfg := &sm.CCConfig{Settings: *c}
	if logs != nil {
		cfg.OnEvent = logs.add
	}
	return cfg
}

// checkCC asserts that every node holds the file's settings, as the
// congestion mechanism reads them from its agent.
func checkCC(t *testing.T, b *bench, c *sm.CCSettings) {
	t.Helper()
	for _, n := range b.f.Nodes() {
		a := n.Agent
		if a.Type() == mad.NodeTypeSwitch {
			for p := 1; p <= b.topo.Node(n.Index).NumPorts; p++ {
				want := agent.CCMarking{Threshold: 10, PacketSize: 8, MarkingRate: 3, Victim: p == 1 || p == 2}
				assert.Equal(t, want, a.CCSwitchMarking(uint8(p)), "%s port %d", n.Name, p)
			}
			continue
		}
		got := a.CCCASettings(1)
		assert.True(t, got.SLBased, n.Name)
		assert.Equal(t, c.CA.Entries[0], got.SL[0], n.Name)
		assert.Equal(t, c.CA.Entries[1], got.SL[1], n.Name)
		assert.Equal(t, c.CCTILimit(), got.Limit, n.Name)
		assert.Equal(t, c.CCT, got.Table, n.Name)
	}
}

// TestCCManager: a sweep programs every switch and CA port to the file,
// setting the CC_Key; the next sends nothing but the log reads.
func TestCCManager(t *testing.T) {
	b := newBench(t, routingtest.Grid(t, false, 2, 2), 0, 1)
	cfg := ccConfig(t, "0x1234", nil)
	var ccMADs []madport.MAD
	b.port.SetFilter(func(m madport.MAD) bool {
		if mad.MAD(m.Data).MgmtClass() == mad.ClassCongestion {
			ccMADs = append(ccMADs, m)
		}
		return true
	})
	s := b.newSM(t, sm.Config{CC: cfg})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	require.NotNil(t, res.CC)
	assert.Empty(t, res.Warnings)
	assert.Equal(t, sm.CCResult{Nodes: 8, Read: 8, Sets: 4*1 + 4*(1+2), KeySets: 8}, *res.CC)
	checkCC(t, b, &cfg.Settings)
	for _, m := range ccMADs {
		assert.EqualValues(t, 1, m.QP, "to QP1")
		assert.NotEqual(t, uint16(mad.PermissiveLID), m.LID, "LID-routed")
		assert.EqualValues(t, mad.DefaultPKey, m.PKey)
		assert.EqualValues(t, 0x1234, mad.CCMAD(m.Data).CCKey(), "the CC_Key in every MAD")
	}
	phase, ok := res.Phase(sm.PhaseCC)
	require.True(t, ok)
	assert.EqualValues(t, len(ccMADs), phase.SMPs)

	again := b.sweep(t, s)
	require.True(t, again.SubnetUp, again.Reason)
	assert.Equal(t, sm.CCResult{Nodes: 8}, *again.CC, "nothing differs")
	assert.Equal(t, map[string]uint64{"Get CongestionLog": 8},
		filterAttrs(again.SMPsByAttr, "Congestion"), "only the logs are read")
}

// filterAttrs keeps the SMP counts whose attribute name has sub.
func filterAttrs(m map[string]uint64, sub string) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		if strings.Contains(k, sub) {
			out[k] = v
		}
	}
	return out
}

// TestCCManagerWrongKey: nodes holding another CC_Key do not answer the
// manager; it says so, leaves them as they are, and the subnet comes up.
// With the right key a later SM finds them programmed and sends nothing.
func TestCCManagerWrongKey(t *testing.T) {
	b := newBench(t, routingtest.Grid(t, false, 2, 2), 0, 1)
	first := b.newSM(t, sm.Config{CC: ccConfig(t, "0x1234", nil)})
	res := b.sweep(t, first)
	require.True(t, res.SubnetUp, res.Reason)
	require.NoError(t, first.Close())

	other := b.newSM(t, sm.Config{CC: ccConfig(t, "0x9999", nil)})
	res = b.sweep(t, other)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, 8, res.CC.KeyFailures)
	assert.Zero(t, res.CC.KeySets)
	assert.Zero(t, res.CC.Sets)
	require.Len(t, res.Warnings, 8)
	assert.Contains(t, res.Warnings[0], "it may hold another key")
	checkCC(t, b, &ccConfig(t, "0x1234", nil).Settings)
	require.NoError(t, other.Close())

	right := b.newSM(t, sm.Config{CC: ccConfig(t, "0x1234", nil)})
	res = b.sweep(t, right)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, sm.CCResult{Nodes: 8, Read: 8}, *res.CC, "read, found right")
}

// TestCCManagerLogs: entries the agents log come out as events, each
// once, at the next sweep or periodic read.
func TestCCManagerLogs(t *testing.T) {
	b := newBench(t, routingtest.Grid(t, false, 2, 2), 0, 1)
	logs := &ccLogs{}
	cfg := ccConfig(t, "0", logs)
	cfg.LogInterval = time.Second
	var logReads int
	b.port.SetFilter(func(m madport.MAD) bool {
		if h := mad.MAD(m.Data); h.MgmtClass() == mad.ClassCongestion && h.AttrID() == mad.AttrCongestionLog {
			logReads++
		}
		return true
	})
	s := b.newSM(t, sm.Config{CC: cfg})
	res := b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Equal(t, 8, logReads, "every node's log, once a sweep")
	assert.Zero(t, res.CC.LogEntries)

	// The periodic read: two intervals of watching read twice more.
	require.NoError(t, s.Serve(context.Background(), 2*time.Second+time.Millisecond))
	assert.Equal(t, 8*3, logReads)

	var sw, ca = b.f.Node(0), b.f.Node(0)
	for _, n := range b.f.Nodes() {
		if n.Agent.Type() == mad.NodeTypeSwitch {
			sw = n
		}
	}
	require.Equal(t, mad.NodeTypeSwitch, sw.Agent.Type())
	require.Equal(t, mad.NodeTypeCA, ca.Agent.Type())
	sw.Agent.CCLogSwitch(agent.CCSwitchEvent{Port: 2, SLID: 5, DLID: 9, SL: 1})
	ca.Agent.CCLogCA(1, agent.CCCAEvent{LocalQP: 0x101, SL: 3, ServiceType: 3, RemoteQP: 0x202, RemoteLID: 7})
	res = b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	ev := logs.list()
	require.Len(t, ev, 2)
	assert.Equal(t, 2, res.CC.LogEntries)
	for _, e := range ev {
		assert.Equal(t, "cc_log", e.Event)
		switch e.Type {
		case "switch":
			assert.Equal(t, []int{2}, e.Ports)
			assert.EqualValues(t, 5, e.SLID)
			assert.EqualValues(t, 9, e.DLID)
			assert.EqualValues(t, 1, e.SL)
		case "ca":
			assert.Equal(t, 1, e.Port)
			assert.EqualValues(t, 0x101, e.LocalQP)
			assert.EqualValues(t, 0x202, e.RemoteQP)
			assert.EqualValues(t, 7, e.RemoteLID)
			assert.EqualValues(t, 3, e.SL)
		default:
			t.Errorf("event type %q", e.Type)
		}
	}
	res = b.sweep(t, s)
	require.True(t, res.SubnetUp, res.Reason)
	assert.Zero(t, res.CC.LogEntries, "each entry once")
	assert.Len(t, logs.list(), 2)
}
