package softswitch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/port"
	"ibfab/softswitch"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// twoPath is ca1 - sw1 = sw2 - ca2, sw1's ports 2 and 3 both cabled to
// sw2 (its ports 1 and 2): two up ports from sw1 toward ca2, of which the
// LFT takes port 2.
func twoPath(t *testing.T) *topologies.Topology {
	t.Helper()
	return twoSwitches(t, func(ca1, sw1, sw2, ca2 int) [][2]topologies.PortRef {
		return [][2]topologies.PortRef{
			{{Node: ca1, Port: 1}, {Node: sw1, Port: 1}},
			{{Node: sw1, Port: 2}, {Node: sw2, Port: 1}},
			{{Node: sw1, Port: 3}, {Node: sw2, Port: 2}},
			{{Node: sw2, Port: 3}, {Node: ca2, Port: 1}},
		}
	})
}

// configureTwoPath does what an SM does to twoPath(): LIDs as line()'s,
// routes, every port Active.
func (f *fabric) configureTwoPath(t *testing.T) {
	t.Helper()
	require.NoError(t, f.ca["ca1"].a.SetIsSM(1, true))
	toCA2 := []uint8{1, 2, 3}
	f.setPortInfo(t, 1, func(pi *mad.PortInfoFields) { pi.LID, pi.MasterSMLID = lidCA1, lidCA1 })
	f.setPortInfo(t, 1, func(pi *mad.PortInfoFields) { pi.LID, pi.MasterSMLID = lidCA2, lidCA1 }, toCA2...)
	f.route(t, lidSW1, map[uint16]uint8{lidCA1: 1, lidCA2: 2, lidSW1: 0, lidSW2: 2}, toSW1...)
	f.route(t, lidSW2, map[uint16]uint8{lidCA1: 1, lidCA2: 3, lidSW1: 1, lidSW2: 0}, toSW2...)
	for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		f.setState(t, 1, s)
		for n := uint8(1); n <= 3; n++ {
			f.setState(t, n, s, toSW1...)
			f.setState(t, n, s, toSW2...)
		}
		f.setState(t, 1, s, toCA2...)
	}
}

// floodTwoPath sets adaptive routing in mode (threshold 75 %, AFC VL afc)
// on twoPath's switches, sw1 adapting ca2's LID over ports 2 and 3, sw2
// with no alternatives, then sends n packets from ca1 to ca2 on VL0 while
// ca2 holds them, until ca1 has sent them all or stalls, and lets them
// all arrive.
func (f *fabric) floodTwoPath(t *testing.T, mode mad.ARMode, afc uint8, n int) {
	t.Helper()
	group := make([]uint16, lidCA2+1)
	group[lidCA2] = 1
	f.sw["sw1"].Agent().SetARTable(agent.NewARTable(mode, 75, afc, group, [][]uint8{nil, {2, 3}}))
	f.sw["sw2"].Agent().SetARTable(agent.NewARTable(mode, 75, afc, nil, nil))
	ca2 := f.ca["ca2"]
	ca2.setHold(true)
	for i := range n {
		f.ca["ca1"].sendAll(t, udOn(lidCA1, lidCA2, 0, 1000, byte(i)))
	}
	f.run(t, func() bool { return stalledOrDone(f.ca["ca1"].port()) })
	ca2.setHold(false)
	f.run(t, func() bool { return ca2.received() == n })
}

// downstreamEmpty reports whether sw's view of the peers' buffers behind
// ports holds nothing on VL0 (their credit updates are in).
func downstreamEmpty(sw *softswitch.Switch, ports ...uint8) bool {
	for _, pn := range ports {
		if used, _, _ := sw.Port(pn).Downstream(0); used != 0 {
			return false
		}
	}
	return true
}

// stalledOrDone reports whether p has sent all it queued on VL0, or is
// out of credit for the next packet: the fabric behind it is full.
func stalledOrDone(p *port.Port) bool {
	c := p.Credits(0)
	return c.Queued == 0 || c.Available < port.Blocks(udSize1000)
}

// TestAdaptiveRouting drives sw1's LFT port toward a holding ca2 over the
// threshold and checks, per mode, where the packets went: nowhere else
// with routing off; also by port 3, on their SL's VL, with Adaptive and
// Adaptive-th; with AFI, once over the threshold, on the AFC VL marked
// adapted, sw2 keeping them there (sw2 has no alternatives: adapted once)
// and never adapting itself. Every packet arrives, none is dropped, and
// on the drained fabric adaptation stops.
func TestAdaptiveRouting(t *testing.T) {
	const (
		n   = 30
		afc = 1
	)
	for _, tc := range []struct {
		mode     mad.ARMode
		viaPort3 bool // some packets leave sw1 by port 3
		marked   bool // some arrive adapted on the AFC
	}{
		{mad.AROff, false, false},
		{mad.ARAdaptive, true, false},
		{mad.ARAdaptiveTh, true, false},
		{mad.ARAFI, true, true},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			// Credit slack 1: sw1's view of its peers' buffers is exact
			// once the fabric is quiet (the drained check reads it).
			f := newFabric(t, twoPath(t), port.Config{RxBlocks: 100, CreditSlack: 1})
			f.configureTwoPath(t)
			sw1, sw2 := f.sw["sw1"], f.sw["sw2"]
			sw2.Watch([]uint16{lidCA2})
			f.floodTwoPath(t, tc.mode, afc, n)

			ca2 := f.ca["ca2"]
			got := ca2.arrivals()
			marked := got[arrival{vl: afc, adapted: true}]
			assert.Equal(t, n, got[arrival{vl: 0}]+marked, "on VL0, or adapted on the AFC: %v", got)
			assert.Equal(t, tc.marked, marked > 0, "adapted on the AFC: %v", got)
			c2, c3 := sw1.PortCounts(2), sw1.PortCounts(3)
			t.Logf("arrivals %v, sw1 adapted by port 2 %d, port 3 %d", got, c2.Adapted, c3.Adapted)
			assert.Equal(t, tc.viaPort3, sw2.PortCounts(2).RcvByVL[0]+sw2.PortCounts(2).RcvByVL[afc] > 0, "sw2 got packets by sw1's port 3")
			assert.Equal(t, tc.viaPort3, c3.Adapted > 0, "adapted by port 3")
			switch tc.mode {
			case mad.ARAFI:
				assert.EqualValues(t, marked, c2.Adapted+c3.Adapted, "every packet marked counted, on the LFT port too")
			default:
				assert.Zero(t, c2.Adapted, "the LFT port is no adaptation")
			}
			for n := uint8(1); n <= 4; n++ {
				assert.Zero(t, sw2.PortCounts(n).Adapted, "sw2 has no alternatives: it never adapts")
			}
			var watched uint64
			for n := uint8(1); n <= 2; n++ {
				for _, w := range sw2.PortCounts(n).WatchedByVL {
					watched += w
				}
			}
			assert.EqualValues(t, n, watched, "sw2 watched every packet for ca2")
			f.noDrops(t)

			// Drained, the fabric is under the threshold: the LFT again.
			// One packet at a time, each sent once the one before arrived
			// and its credit came back: back to back, the second would
			// find the first in sw1's view of port 2 (cut-through sends
			// it at once) and Adaptive would rightly take port 3.
			before := c2.Adapted + c3.Adapted
			for i := range 3 {
				f.ca["ca1"].sendAll(t, udOn(lidCA1, lidCA2, 0, 1000, byte(i)))
				f.run(t, func() bool { return ca2.received() == n+i+1 && downstreamEmpty(sw1, 2, 3) })
			}
			assert.Equal(t, before, sw1.PortCounts(2).Adapted+sw1.PortCounts(3).Adapted, "no adaptation once below the threshold")
			assert.Equal(t, got[arrival{vl: 0}]+3, ca2.arrivals()[arrival{vl: 0}])
		})
	}
}

// TestAdaptiveRoutingIQ: in the IQ switch the decision is made when a
// packet reaches the head of its FIFO; with AFI, packets still arrive
// adapted on the AFC, in order per VL.
func TestAdaptiveRoutingIQ(t *testing.T) {
	const n = 30
	f := newFabric(t, twoPath(t), port.Config{RxBlocks: 100})
	f.configureTwoPath(t)
	sw1, sw2 := f.sw["sw1"], f.sw["sw2"]
	for _, s := range []*softswitch.Switch{sw1, sw2} {
		require.NoError(t, s.SetArch(softswitch.ArchIQ))
	}
	f.floodTwoPath(t, mad.ARAFI, 1, n)
	got := f.ca["ca2"].arrivals()
	assert.Positive(t, got[arrival{vl: 1, adapted: true}], "%v", got)
	assert.Equal(t, n, got[arrival{vl: 0}]+got[arrival{vl: 1, adapted: true}])
	f.noDrops(t)
}
