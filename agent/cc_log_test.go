package agent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/wire/mad"
)

// ccLog reads nd's CongestionLog through port n.
func ccLog(t *testing.T, nd *node, n uint8) mad.CongestionLogFields {
	t.Helper()
	in := gmp(ccMAD(mad.MethodGet, mad.AttrCongestionLog, 0, 0, nil))
	in.Port = n
	r := mad.CCMAD(one(t, nd.a.HandleMAD(in)).MAD)
	require.Equal(t, mad.StatusOK, r.MAD().Status())
	f, err := mad.DecodeCongestionLog(r.LogData())
	require.NoError(t, err)
	return f
}

// TestCCLogSwitch: a switch's CongestionLog carries its marking events,
// oldest first, stamped in 1.024 µs units, the newest 15 of more; a Get
// reports and clears LogEventsCounter and PortMap but keeps the events.
func TestCCLogSwitch(t *testing.T) {
	nd := newNode(t, mad.NodeTypeSwitch, 12)
	f := ccLog(t, nd, 1) // sets the TimeStamp epoch
	assert.Equal(t, mad.CongestionLogSwitch, f.LogType)
	assert.Zero(t, f.EventsCounter)
	assert.Equal(t, mad.CongestionLogSwitchEvent{}, f.Switch[0], "no events")

	nd.clk.Advance(1024 * time.Microsecond)
	nd.a.CCLogSwitch(agent.CCSwitchEvent{Port: 9, SLID: 1, DLID: 2, SL: 3})
	nd.clk.Advance(1024 * time.Microsecond)
	nd.a.CCLogSwitch(agent.CCSwitchEvent{Port: 2, SLID: 5, DLID: 6, SL: 15})
	f = ccLog(t, nd, 1)
	assert.EqualValues(t, 2, f.EventsCounter)
	assert.EqualValues(t, 2000, f.CurrentTimeStamp)
	assert.Equal(t, mad.CongestionLogSwitchEvent{SLID: 1, DLID: 2, SL: 3, Timestamp: 1000}, f.Switch[0])
	assert.Equal(t, mad.CongestionLogSwitchEvent{SLID: 5, DLID: 6, SL: 15, Timestamp: 2000}, f.Switch[1])
	assert.Equal(t, mad.CongestionLogSwitchEvent{}, f.Switch[2])
	var pm [mad.PortMaskSize]byte
	pm[31] = 1 << 2
	pm[30] = 1 << 1 // port 9
	assert.Equal(t, pm, f.PortMap)

	f = ccLog(t, nd, 1)
	assert.Zero(t, f.EventsCounter, "cleared by the Get")
	assert.Equal(t, [mad.PortMaskSize]byte{}, f.PortMap, "cleared by the Get")
	assert.EqualValues(t, 5, f.Switch[1].SLID, "events kept")

	for i := range 20 {
		nd.a.CCLogSwitch(agent.CCSwitchEvent{Port: 1, SLID: uint16(100 + i), DLID: 7})
	}
	f = ccLog(t, nd, 1)
	assert.EqualValues(t, 20, f.EventsCounter, "counts past the entries")
	assert.EqualValues(t, 105, f.Switch[0].SLID, "the oldest of the newest 15")
	assert.EqualValues(t, 119, f.Switch[14].SLID)

	// Events older than twice the TimeStamp's wrap are left out.
	nd.clk.Advance(2*(1<<32)*1024*time.Nanosecond + time.Second)
	nd.a.CCLogSwitch(agent.CCSwitchEvent{Port: 1, SLID: 999})
	f = ccLog(t, nd, 1)
	assert.EqualValues(t, 999, f.Switch[0].SLID)
	assert.Equal(t, mad.CongestionLogSwitchEvent{}, f.Switch[1])
}

// TestCCLogCA: each CA port has its own log of threshold events, with the
// SL map; events of a port a CA does not have are ignored.
func TestCCLogCA(t *testing.T) {
	nd := newNode(t, mad.NodeTypeCA, 2)
	ev := agent.CCCAEvent{LocalQP: 0x123456, SL: 4, ServiceType: 3, RemoteQP: 0xabcdef, RemoteLID: 0x42}
	nd.a.CCLogCA(2, ev)
	nd.a.CCLogCA(3, ev)
	for i := range 15 {
		nd.a.CCLogCA(1, agent.CCCAEvent{LocalQP: uint32(i), SL: uint8(i % 2), RemoteLID: 9})
	}
	f := ccLog(t, nd, 2)
	assert.Equal(t, mad.CongestionLogCA, f.LogType)
	assert.EqualValues(t, 1, f.EventsCounter)
	assert.EqualValues(t, 1<<4, f.EventMap)
	assert.Equal(t, mad.CongestionLogCAEvent{LocalQP: 0x123456, RemoteQP: 0xabcdef, SL: 4, ServiceType: 3, RemoteLID: 0x42},
		f.CA[0])
	assert.Equal(t, mad.CongestionLogCAEvent{}, f.CA[1])

	f = ccLog(t, nd, 1)
	assert.EqualValues(t, 15, f.EventsCounter)
	assert.EqualValues(t, 0b11, f.EventMap)
	assert.EqualValues(t, 2, f.CA[0].LocalQP, "the newest 13")
	assert.EqualValues(t, 14, f.CA[12].LocalQP)
	assert.Zero(t, ccLog(t, nd, 1).EventMap, "cleared by the Get")
}

// TestCCMarking: CCSwitchMarking follows the switch-wide setting and a
// port's valid element, and CCMarkingGeneration moves with every Set that
// may change it and with no other.
func TestCCMarking(t *testing.T) {
	sw := newNode(t, mad.NodeTypeSwitch, 40)
	set := func(attr mad.AttrID, mod uint32, data []byte) {
		r := mad.CCMAD(one(t, sw.a.HandleMAD(gmp(ccMAD(mad.MethodSet, attr, mod, 0, data)))).MAD)
		require.Equal(t, mad.StatusOK, r.MAD().Status())
	}
	g0 := sw.a.CCMarkingGeneration()
	ssc := mad.SwitchCongestionSettingFields{ControlMap: mad.SwitchCongThreshold | mad.SwitchCongMarkingRate |
		mad.SwitchCongVictimMask, Threshold: 9, PacketSize: 2, MarkingRate: 3}
	ssc.VictimMask[mad.PortMaskSize-1-33/8] = 1 << (33 % 8)
	set(mad.AttrSwitchCongestionSetting, 0, mad.AppendSwitchCongestionSetting(nil, &ssc))
	g1 := sw.a.CCMarkingGeneration()
	assert.NotEqual(t, g0, g1)
	assert.Equal(t, agent.CCMarking{Threshold: 9, PacketSize: 2, MarkingRate: 3}, sw.a.CCSwitchMarking(1))
	assert.Equal(t, agent.CCMarking{Threshold: 9, PacketSize: 2, MarkingRate: 3, Victim: true}, sw.a.CCSwitchMarking(33))

	var sp mad.SwitchPortCongestionSettingFields
	sp.Ports[1] = mad.SwitchPortCongestionElement{Valid: true, Threshold: 15, PacketSize: 1, CongParm: 0}
	sp.Ports[2] = mad.SwitchPortCongestionElement{Valid: true, ControlType: true, Threshold: 4}
	set(mad.AttrSwitchPortCongestionSetting, 1, mad.AppendSwitchPortCongestionSetting(nil, &sp))
	assert.NotEqual(t, g1, sw.a.CCMarkingGeneration())
	assert.Equal(t, agent.CCMarking{Threshold: 15, PacketSize: 1, Victim: true}, sw.a.CCSwitchMarking(33), "port element")
	assert.Equal(t, agent.CCMarking{Threshold: 9, PacketSize: 2, MarkingRate: 3}, sw.a.CCSwitchMarking(34),
		"credit starvation element: switch-wide marking")

	g2 := sw.a.CCMarkingGeneration()
	one(t, sw.a.HandleMAD(gmp(ccMAD(mad.MethodGet, mad.AttrSwitchCongestionSetting, 0, 0, nil))))
	assert.Equal(t, g2, sw.a.CCMarkingGeneration(), "a Get changes nothing")
	assert.Equal(t, agent.CCMarking{}, sw.a.CCSwitchMarking(0), "port 0 does not mark")
	assert.Equal(t, agent.CCMarking{}, sw.a.CCSwitchMarking(41), "no such port")
}

// TestPMACongestionAttrs: a CA's PMA refuses the switch-only congestion
// attributes and serves the receive ones; a switch serves all.
func TestPMACongestionAttrs(t *testing.T) {
	for _, typ := range []mad.NodeType{mad.NodeTypeCA, mad.NodeTypeSwitch} {
		nd := newNode(t, typ, 2, func(c *agent.Config) { c.Counters = optCounters{c.Counters} })
		for attr, l := range mad.PMAOptionalLayouts {
			want := mad.StatusOK
			if l.SwitchOnly && typ == mad.NodeTypeCA {
				want = mad.StatusMethodAttrUnsupported
			}
			got := mad.MAD(one(t, nd.a.HandleMAD(gmp(pma(mad.MethodGet, attr, []byte{0, 1})))).MAD).Status()
			assert.Equal(t, want, got, "%v at a %v", l.Name, typ)
		}
	}
}
