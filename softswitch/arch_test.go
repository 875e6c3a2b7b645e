package softswitch_test

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/port"
	"ibfab/softswitch"
	"ibfab/topologies"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// lidCA4 is ca4's LID in star4(); the others are star()'s.
const lidCA4 = 6

// star4 is star() with a fourth CA, ca4, on the switch's port 4: a second
// input into the outputs ca1 shares.
func star4(t *testing.T) *topologies.Topology {
	t.Helper()
	topo := star(t)
	sw, _ := topo.Lookup("sw1")
	ca, err := topo.AddNode(topologies.Node{Type: topologies.CA, Name: "ca4", NumPorts: 1, GUID: 0x0230})
	require.NoError(t, err)
	require.NoError(t, topo.Connect(topologies.PortRef{Node: ca, Port: 1}, topologies.PortRef{Node: sw, Port: 4},
		topologies.Width4x, topologies.SpeedSDR))
	return topo
}

// configureStar4 does what an SM does to star4(): LIDs, routes, SL n on
// VL n at the switch, every port Active.
func (f *fabric) configureStar4(t *testing.T) {
	t.Helper()
	require.NoError(t, f.ca["ca1"].a.SetIsSM(1, true))
	toCA := map[uint16][]uint8{lidCA1: nil, lidCA2: {1, 2}, lidCA3: {1, 3}, lidCA4: {1, 4}}
	for lid, path := range toCA {
		f.setPortInfo(t, 1, func(pi *mad.PortInfoFields) { pi.LID, pi.MasterSMLID = lid, lidCA1 }, path...)
	}
	f.route(t, lidStarSW, map[uint16]uint8{lidCA1: 1, lidCA2: 2, lidCA3: 3, lidCA4: 4, lidStarSW: 0}, 1)
	var sl2vl mad.SLtoVLMappingTableFields
	for sl := range 8 {
		sl2vl.VL[sl] = uint8(sl)
	}
	all := mad.SLtoVLModifier{AllInPorts: true, AllOutPorts: true}.Modifier()
	f.dr(t, mad.MethodSet, mad.AttrSLtoVLMapping, all, mad.AppendSLtoVLMappingTable(nil, &sl2vl), 1)
	for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		for n := uint8(1); n <= 4; n++ {
			f.setState(t, n, s, 1)
		}
		for _, path := range toCA {
			f.setState(t, 1, s, path...)
		}
	}
}

// udOn is udFrom on VL vl, service level vl: what a CA whose SLtoVL maps
// SL n to VL n sends.
func udOn(slid, dlid uint16, vl uint8, n int, seq byte) []byte {
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = seq + byte(i)
	}
	return wire.AppendUD(nil, &wire.UDFields{VL: vl, SL: vl, DLID: dlid, SLID: slid, PKey: 0xffff,
		DestQP: 2, QKey: 0x1234, SrcQP: 2, Payload: payload})
}

// sendAll sends each packet from the CA's port, failing t on error.
func (h *hca) sendAll(t *testing.T, pkts ...[]byte) {
	t.Helper()
	for _, b := range pkts {
		require.NoError(t, h.port().Send(port.NewPacket(b)))
	}
}

// blockCA2 fills ca2's VL0 buffer (100 blocks: five 1000-byte packets)
// from ca1 and leaves three more of ca1's packets for ca2 in the switch,
// seq 0-7.
func (f *fabric) blockCA2(t *testing.T) {
	t.Helper()
	f.ca["ca2"].setHold(true)
	for i := range 8 {
		f.ca["ca1"].sendAll(t, udOn(lidCA1, lidCA2, 0, 1000, byte(i)))
	}
	f.run(t, func() bool {
		return f.ca["ca2"].received() == 5 && f.ca["ca1"].port().Credits(0).Queued == 0 &&
			f.sw["sw1"].Port(1).Credits(0).RxUsed == 3*port.Blocks(udSize1000)
	})
}

// blockedStar4 returns star4() configured, with 100-block buffers, sw1
// in arch and ca2 blocked (blockCA2).
func blockedStar4(t *testing.T, arch softswitch.Arch) (*fabric, *softswitch.Switch) {
	t.Helper()
	f := newFabric(t, star4(t), port.Config{RxBlocks: 100})
	sw := f.sw["sw1"]
	require.NoError(t, sw.SetArch(arch))
	f.configureStar4(t)
	f.blockCA2(t)
	return f, sw
}

var udSize1000 = len(udOn(1, 2, 0, 1000, 0))

// TestArchHeadOfLine: in the VOQ switch a packet waits only for its own
// output; in the IQ switch a head waiting for its output (ca2, whose
// buffer is full) blocks the packets behind it on the same VL of the same
// input, and only those: not the input's other VLs, not other inputs.
// Credits stay per VL in both, and releasing ca2 lets everything through
// in order, nothing dropped.
func TestArchHeadOfLine(t *testing.T) {
	for _, tc := range []struct {
		arch softswitch.Arch
		ca3  int // packets ca3 has while ca2 holds
	}{
		{softswitch.ArchVOQ, 2},
		{softswitch.ArchIQ, 1},
	} {
		t.Run(tc.arch.String(), func(t *testing.T) {
			f, sw := blockedStar4(t, tc.arch)
			ca2, ca3 := f.ca["ca2"], f.ca["ca3"]

			f.ca["ca1"].sendAll(t, udOn(lidCA1, lidCA3, 0, 1000, 100)) // behind ca2's on VL0
			f.ca["ca1"].sendAll(t, udOn(lidCA1, lidCA2, 1, 1000, 101)) // ca1's VL1
			f.ca["ca4"].sendAll(t, udOn(lidCA4, lidCA3, 0, 1000, 102)) // another input
			f.run(t, func() bool { return ca2.received() == 6 && ca3.received() == tc.ca3 })
			f.settle()
			assert.Equal(t, 6, ca2.received(), "ca2: its VL0 buffer full, VL1 free")
			assert.Equal(t, tc.ca3, ca3.received())
			assert.Equal(t, map[arrival]int{{vl: 0}: 5, {vl: 1}: 1}, ca2.arrivals())
			waiting, head := sw.InputQueued(1, 0)
			if tc.arch == softswitch.ArchIQ {
				assert.Equal(t, []any{3, true}, []any{waiting, head}, "the head out, 3 behind it")
				assert.Equal(t, 1, sw.Port(2).Credits(0).Queued, "one head at ca2's output")
			} else {
				assert.Equal(t, []any{0, false}, []any{waiting, head})
				assert.Equal(t, 3, sw.Port(2).Credits(0).Queued, "VOQ: all at their output")
			}

			ca2.setHold(false)
			ca2.setHold(false)
			f.run(t, func() bool { return ca2.received() == 9 && ca3.received() == 2 })
			assert.Equal(t, []byte{0, 1, 2, 3, 4, 101, 5, 6, 7}, ca2.order(), "VL0 in order")
			f.noDrops(t)
		})
	}
}

// TestArchChangeKeepsOrder: switching IQ to VOQ while a FIFO holds
// packets queues the VL's new packets behind them, so nothing overtakes.
func TestArchChangeKeepsOrder(t *testing.T) {
	f, sw := blockedStar4(t, softswitch.ArchIQ)
	f.ca["ca1"].sendAll(t, udOn(lidCA1, lidCA3, 0, 1000, 100))
	f.settle()
	require.NoError(t, sw.SetArch(softswitch.ArchVOQ))
	assert.Equal(t, softswitch.ArchVOQ, sw.Arch())
	f.ca["ca1"].sendAll(t, udOn(lidCA1, lidCA3, 0, 1000, 101))
	f.ca["ca4"].sendAll(t, udOn(lidCA4, lidCA3, 0, 1000, 102))
	f.run(t, func() bool { return f.ca["ca3"].received() == 1 })
	f.settle()
	assert.Equal(t, []byte{102}, f.ca["ca3"].order(), "ca1's still behind the head")
	waiting, _ := sw.InputQueued(1, 0)
	assert.Equal(t, 4, waiting)

	f.ca["ca2"].setHold(false)
	f.run(t, func() bool { return f.ca["ca3"].received() == 3 && f.ca["ca2"].received() == 8 })
	assert.Equal(t, []byte{102, 100, 101}, f.ca["ca3"].order())
	_, head := sw.InputQueued(1, 0)
	assert.False(t, head, "drained")
	// Drained, the VOQ switch routes at once again.
	f.ca["ca1"].sendAll(t, udOn(lidCA1, lidCA3, 0, 1000, 103))
	f.run(t, func() bool { return f.ca["ca3"].received() == 4 })
	f.noDrops(t)
	assert.Error(t, sw.SetArch(softswitch.Arch(7)))
}

// TestIQInputDown: the FIFOs of an input that goes Down are dropped with
// its buffer, counted as input_port_down, the head handed on with them.
func TestIQInputDown(t *testing.T) {
	f, sw := blockedStar4(t, softswitch.ArchIQ)
	in := sw.Port(1)
	f.pipes[topologies.PortRef{Node: 1, Port: 1}].SetCarrier(false) // ca1's cable (star: sw1 is node 0)
	f.settle()
	require.NotEqual(t, mad.PortStateActive, in.State().Port)
	assert.EqualValues(t, 3, in.Drops()[port.DropInputDown], "2 waiting and the head")
	waiting, head := sw.InputQueued(1, 0)
	assert.Equal(t, []any{0, false}, []any{waiting, head})
	assert.Zero(t, in.Credits(0).RxUsed)
	assert.Zero(t, sw.Port(2).Credits(0).Queued)
	f.ca["ca2"].setHold(false)
	f.settle()
	assert.Equal(t, 5, f.ca["ca2"].received())
}

// TestIQDropStorm: a head that leaves with thousands of packets behind
// it that the switch drops (unroutable) routes them in one loop: a drop
// while routing, whose release makes the next packet the head, does not
// recurse. With the stack limited, recursion would crash the test.
func TestIQDropStorm(t *testing.T) {
	const n = 2000
	f := newFabricWith(t, star4(t), port.Config{RxBlocks: 2100}, func(node string, c *port.Config) {
		if node == "ca2" {
			c.RxBlocks = 100
		}
	})
	sw := f.sw["sw1"]
	require.NoError(t, sw.SetArch(softswitch.ArchIQ))
	f.configureStar4(t)
	ca2 := f.ca["ca2"]
	ca2.setHold(true)
	for i := range 6 {
		f.ca["ca1"].sendAll(t, udOn(lidCA1, lidCA2, 0, 1000, byte(i)))
	}
	for range n {
		f.ca["ca1"].sendAll(t, udOn(lidCA1, 50, 0, 0, 0))
	}
	f.run(t, func() bool { w, _ := sw.InputQueued(1, 0); return w == n })

	defer debug.SetMaxStack(debug.SetMaxStack(256 << 10))
	ca2.setHold(false)
	f.run(t, func() bool { return sw.Port(1).Drops()[port.DropUnroutable] == n })
	assert.Equal(t, 6, ca2.received())
	_, head := sw.InputQueued(1, 0)
	assert.False(t, head)
}

// TestMulticastArch: a multicast packet reaches every port of its MFT
// entry but the input, in either architecture.
func TestMulticastArch(t *testing.T) {
	const mlid = mad.MulticastLIDBase + 3
	for _, arch := range []softswitch.Arch{softswitch.ArchVOQ, softswitch.ArchIQ} {
		t.Run(arch.String(), func(t *testing.T) {
			f := newFabric(t, star4(t), port.Config{})
			require.NoError(t, f.sw["sw1"].SetArch(arch))
			f.configureStar4(t)
			var blk mad.MulticastForwardingTableFields
			blk.PortMasks[3] = 1<<1 | 1<<2 | 1<<3 | 1<<4
			f.dr(t, mad.MethodSet, mad.AttrMulticastFwdTbl, mad.MFTModifier(0, 0), mad.AppendMulticastForwardingTable(nil, &blk), 1)
			for i := range 3 {
				f.ca["ca1"].sendAll(t, udOn(lidCA1, mlid, 0, 500, byte(i)))
				f.ca["ca1"].sendAll(t, udOn(lidCA1, mlid, 1, 500, byte(10+i)))
			}
			f.run(t, func() bool {
				return f.ca["ca2"].received() == 6 && f.ca["ca3"].received() == 6 && f.ca["ca4"].received() == 6
			})
			f.settle()
			assert.Zero(t, f.ca["ca1"].received(), "not back out of the input")
			assert.EqualValues(t, 6, f.sw["sw1"].Stats().Multicast)
			f.noDrops(t)
		})
	}
}

// TestWatch: the switch counts the data packets it receives per input
// port and VL, and of those the ones for watched DLIDs; Watch replaces
// the set and starts its counts over.
func TestWatch(t *testing.T) {
	f := newFabric(t, star4(t), port.Config{})
	sw := f.sw["sw1"]
	f.configureStar4(t)
	sw.Watch([]uint16{lidCA3, 40})
	assert.Equal(t, []uint16{lidCA3, 40}, sw.Watched())
	ca1, ca4 := f.ca["ca1"], f.ca["ca4"]
	ca1.sendAll(t, udOn(lidCA1, lidCA2, 0, 100, 0), udOn(lidCA1, lidCA2, 0, 100, 0))
	ca1.sendAll(t, udOn(lidCA1, lidCA3, 0, 100, 0), udOn(lidCA1, lidCA3, 0, 100, 0), udOn(lidCA1, lidCA3, 0, 100, 0))
	ca1.sendAll(t, udOn(lidCA1, lidCA3, 1, 100, 0))
	ca4.sendAll(t, udOn(lidCA4, lidCA3, 0, 100, 0), udOn(lidCA4, lidCA3, 0, 100, 0))
	f.run(t, func() bool { return f.ca["ca2"].received() == 2 && f.ca["ca3"].received() == 6 })
	c1, c4 := sw.PortCounts(1), sw.PortCounts(4)
	assert.Equal(t, []uint64{5, 1}, c1.RcvByVL[:2])
	assert.Equal(t, []uint64{3, 1}, c1.WatchedByVL[:2])
	assert.Equal(t, []uint64{2, 0}, c4.WatchedByVL[:2])
	assert.Zero(t, c1.Adapted)

	sw.Watch(nil)
	assert.Nil(t, sw.Watched())
	assert.Zero(t, sw.PortCounts(1).WatchedByVL[0], "counts start over")
	assert.EqualValues(t, 5, sw.PortCounts(1).RcvByVL[0], "received counts run on")
	assert.Equal(t, softswitch.PortCounts{}, sw.PortCounts(200), "no such port")
}

// TestSwitchVLBlocks: the switch sizes every port's buffers, later ones
// included, and refuses sizes a port cannot run with.
func TestSwitchVLBlocks(t *testing.T) {
	f := newFabric(t, star4(t), port.Config{})
	sw := f.sw["sw1"]
	require.NoError(t, sw.SetVLBlocks([]int{512, 0, 256}))
	assert.Equal(t, []int{512, 0, 256}, sw.VLBlocks())
	for n := uint8(1); n <= 4; n++ {
		p := sw.Port(n)
		assert.Equal(t, []int{512, 0, 256, port.DefaultRxBlocks},
			[]int{p.Credits(0).RxCapacity, p.Credits(1).RxCapacity, p.Credits(2).RxCapacity, p.Credits(3).RxCapacity})
	}
	f.settle()
	_, capacity, _ := f.ca["ca1"].port().Downstream(0)
	assert.Equal(t, 512, capacity, "the peer's view follows")
	assert.ErrorIs(t, sw.SetVLBlocks([]int{10}), port.ErrConfig)
	assert.Equal(t, []int{512, 0, 256}, sw.VLBlocks(), "unchanged by a refused size")
}
