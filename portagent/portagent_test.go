package portagent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/link/pipe"
	"ibfab/port"
	"ibfab/portagent"
	"ibfab/wire/mad"
)

// newPort returns one port over a pipe whose other end nobody reads.
func newPort(t *testing.T, dataVLs int) *port.Port {
	t.Helper()
	a, _ := pipe.NewPair()
	p, err := port.New(a, port.Config{Width: mad.LinkWidth4X, Speed: mad.LinkSpeedSDR, DataVLs: dataVLs,
		RxBlocks: 64, VL15Packets: 4, MTU: 2048, Clock: clock.NewManual(time.Unix(0, 0))},
		port.ReceiverFunc(func(_ *port.Port, pkt *port.Packet) { pkt.Release() }))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, p.Close()) })
	return p
}

func TestControl(t *testing.T) {
	p := newPort(t, 4)
	var configured []agent.PortConfig
	c := &portagent.Control{
		Ports: func(n uint8) *port.Port {
			if n == 1 {
				return p
			}
			return nil
		},
		OnConfigure: func(n uint8, got *port.Port, pc agent.PortConfig) {
			assert.Equal(t, uint8(1), n)
			assert.Same(t, p, got)
			configured = append(configured, pc)
		},
	}

	l := c.Link(1)
	assert.Equal(t, mad.LinkWidth4X, l.Width)
	assert.Equal(t, mad.LinkSpeedSDR, l.Speed)
	assert.Equal(t, mad.LinkWidth1X|mad.LinkWidth4X, l.WidthSupported, "a 4X port supports 1X and 4X")
	assert.Equal(t, l.WidthSupported, l.WidthEnabled)
	assert.Equal(t, mad.LinkSpeedSDR, l.SpeedSupported)
	// An uncabled port polls, with valid widths and speeds (never 0).
	w, s := mad.LinkWidth1X|mad.LinkWidth4X, mad.LinkSpeedSDR
	assert.Equal(t, agent.LinkState{State: mad.PortStateDown, Phys: mad.PhysStatePolling, Width: mad.LinkWidth4X,
		Speed: mad.LinkSpeedSDR, WidthSupported: w, WidthEnabled: w, SpeedSupported: s, SpeedEnabled: s}, c.Link(2))
	assert.ErrorIs(t, c.SetState(2, mad.PortStateArmed), portagent.ErrNoPort)
	assert.ErrorIs(t, c.SetPhysState(2, mad.PhysStateDisabled), portagent.ErrNoPort)

	c.Configure(1, agent.PortConfig{LID: 7, OperationalVLs: 2}) // 2 data VLs
	assert.Equal(t, 2, p.OperationalVLs())
	c.Configure(1, agent.PortConfig{LID: 7, OperationalVLs: 3}) // 4 data VLs
	assert.Equal(t, 4, p.OperationalVLs())
	c.Configure(1, agent.PortConfig{LID: 7, LinkWidthEnabled: mad.LinkWidth1X})
	assert.Equal(t, mad.LinkWidth1X, p.LinkRate().WidthEnabled)
	assert.Equal(t, mad.LinkSpeedSDR, p.LinkRate().SpeedEnabled, "speed unchanged")
	c.Configure(2, agent.PortConfig{LID: 8}) // no such port: ignored
	require.Len(t, configured, 3)
	assert.Equal(t, uint16(7), configured[0].LID)
}

func TestCounters(t *testing.T) {
	p := newPort(t, 1)
	c := portagent.Counters(func(n uint8) *port.Port {
		if n == 1 {
			return p
		}
		return nil
	})
	assert.Equal(t, p.Counters(), c.PortCounters(1))
	assert.Equal(t, mad.PortCountersFields{}, c.PortCounters(3))
	assert.Equal(t, mad.PortCountersExtendedFields{}, c.PortCountersExtended(3))
	c.ResetPortCounters(3, 0xffff, 0xff) // no such port: no effect, no panic
	c.ResetPortCountersExtended(3, 0xffff)
}

func TestVLCap(t *testing.T) {
	for _, tt := range []struct {
		dataVLs int
		want    uint8
	}{{0, 4}, {1, 1}, {2, 2}, {4, 3}, {8, 4}, {15, 5}, {3, 0}, {16, 0}} {
		assert.Equal(t, tt.want, portagent.VLCap(tt.dataVLs), "%d data VLs", tt.dataVLs)
	}
}

// TestResetAdvertisesWhatRuns checks that a node's agent, out of reset,
// reports the VLs and the VL arbitration its ports run: VLCap and
// OperationalVLs are the port's data VLs, and the VLArbitrationTable is
// the port's arbiter's table.
func TestResetAdvertisesWhatRuns(t *testing.T) {
	for _, typ := range []mad.NodeType{mad.NodeTypeSwitch, mad.NodeTypeCA} {
		p := newPort(t, 0)
		c := &portagent.Control{Ports: func(n uint8) *port.Port { return p }}
		a, err := agent.New(agent.Config{Type: typ, NumPorts: 1, NodeGUID: 0x1000, Ports: c,
			VLCap: portagent.VLCap(p.Config().DataVLs)})
		require.NoError(t, err)
		t.Cleanup(a.Close)
		mgmt := uint8(1)
		if typ == mad.NodeTypeSwitch {
			mgmt = 0
		}
		data, err := a.LocalGet(mgmt, mad.AttrPortInfo, 1)
		require.NoError(t, err)
		pi := mad.PortInfo(data).Fields()
		assert.Equal(t, p.Config().DataVLs, mad.NumDataVLs(pi.VLCap), "%v VLCap", typ)
		assert.Equal(t, p.OperationalVLs(), mad.NumDataVLs(pi.OperationalVLs), "%v OperationalVLs", typ)
		arb := a.VLArbitration(1)
		run := p.VLArbitration()
		assert.Equal(t, run.High, arb.High, "%v high table", typ)
		assert.Equal(t, run.Low, arb.Low, "%v low table", typ)
		assert.Equal(t, run.HighLimit, arb.VLHighLimit, "%v VLHighLimit", typ)
	}
}

// TestVLArbitrationSetRuns sets a VLArbitrationTable block and
// VLHighLimit through the SMA, as an SM does, and checks that the port's
// arbiter runs exactly what the SMA then reports, on a CA port as on a
// switch port.
func TestVLArbitrationSetRuns(t *testing.T) {
	for _, typ := range []mad.NodeType{mad.NodeTypeSwitch, mad.NodeTypeCA} {
		p := newPort(t, 0)
		c := &portagent.Control{Ports: func(n uint8) *port.Port { return p }}
		a, err := agent.New(agent.Config{Type: typ, NumPorts: 1, NodeGUID: 0x1000, Ports: c})
		require.NoError(t, err)
		t.Cleanup(a.Close)
		mgmt := map[mad.NodeType]uint8{mad.NodeTypeSwitch: 0, mad.NodeTypeCA: 1}[typ]
		set := func(attr mad.AttrID, mod uint32, data []byte) {
			t.Helper()
			m, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodSet, AttrID: attr, AttrModifier: mod, Data: data})
			require.NoError(t, err)
			outs := a.Send(agent.Request{Port: mgmt, MAD: m}) // the node's own SM
			require.Len(t, outs, 1, "%v: one response", typ)
			require.Equal(t, mad.StatusOK, mad.DRSMP(outs[0].MAD).Status(), "%v: Set(%v)", typ, attr)
		}
		var blk mad.VLArbitrationTableFields
		blk.Entries[0] = mad.VLArbEntry{VL: 4, Weight: 99}
		blk.Entries[1] = mad.VLArbEntry{VL: 6, Weight: 33}
		set(mad.AttrVLArbitration, mad.VLArbModifier(mad.VLArbLow0, 1), mad.AppendVLArbitrationTable(nil, &blk))
		data, err := a.LocalGet(mgmt, mad.AttrPortInfo, 1)
		require.NoError(t, err)
		pi := mad.PortInfo(data).Fields()
		pi.VLHighLimit = 3
		pi.PortState, pi.PortPhysicalState = mad.PortStateNoChange, mad.PhysStateNoChange
		pi.LinkWidthEnabled, pi.LinkSpeedEnabled = mad.LinkWidthNoChange, mad.LinkSpeedNoChange
		set(mad.AttrPortInfo, 1, mad.AppendPortInfo(nil, &pi))

		run := p.VLArbitration()
		sma := a.VLArbitration(1)
		assert.Equal(t, mad.VLArbEntry{VL: 4, Weight: 99}, run.Low[0], "%v", typ)
		assert.Equal(t, mad.VLArbEntry{VL: 6, Weight: 33}, run.Low[1], "%v", typ)
		assert.Equal(t, sma.Low, run.Low, "%v low table", typ)
		assert.Equal(t, sma.High, run.High, "%v high table", typ)
		assert.Equal(t, uint8(3), run.HighLimit, "%v LimitOfHighPriority", typ)
	}
}
