package softswitch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/topologies"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// LIDs of star(): ca1 and ca2 as in line().
const (
	lidStarSW = 3
	lidCA3    = 5
)

// star is ca1, ca2 and ca3 on ports 1, 2 and 3 of sw1: two sources into
// one output (port 2) make a congestion root.
func star(t *testing.T) *topologies.Topology {
	t.Helper()
	topo := topologies.New()
	sw, err := topo.AddNode(topologies.Node{Type: topologies.Switch, Name: "sw1", NumPorts: 4, GUID: 0x0100})
	require.NoError(t, err)
	for i, name := range []string{"ca1", "ca2", "ca3"} {
		ca, err := topo.AddNode(topologies.Node{Type: topologies.CA, Name: name, NumPorts: 1, GUID: 0x0200 + uint64(i)<<4})
		require.NoError(t, err)
		require.NoError(t, topo.Connect(topologies.PortRef{Node: ca, Port: 1}, topologies.PortRef{Node: sw, Port: i + 1},
			topologies.Width4x, topologies.SpeedSDR))
	}
	return topo
}

// configureStar does what an SM does to star(): LIDs, routes, every port
// Active.
func (f *fabric) configureStar(t *testing.T) {
	t.Helper()
	require.NoError(t, f.ca["ca1"].a.SetIsSM(1, true))
	toCA := map[uint16][]uint8{lidCA1: nil, lidCA2: {1, 2}, lidCA3: {1, 3}}
	for lid, path := range toCA {
		f.setPortInfo(t, 1, func(pi *mad.PortInfoFields) { pi.LID, pi.MasterSMLID = lid, lidCA1 }, path...)
	}
	f.route(t, lidStarSW, map[uint16]uint8{lidCA1: 1, lidCA2: 2, lidCA3: 3, lidStarSW: 0}, 1)
	for _, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
		for n := uint8(1); n <= 3; n++ {
			f.setState(t, n, s, 1)
		}
		for _, path := range toCA {
			f.setState(t, 1, s, path...)
		}
	}
}

// gmp sends a GMP of class 0x21 or the PMA from ca1 to dlid and returns
// the response.
func (f *fabric) gmp(t *testing.T, dlid uint16, b []byte) mad.MAD {
	t.Helper()
	f.tid++
	mad.MAD(b).SetTransactionID(f.tid)
	return f.sm(t, agent.Request{Port: 1, DLID: dlid, DestQP: wire.QP1, MAD: b})
}

// setMarking sets sw's SwitchCongestionSetting to threshold, packet size,
// marking rate and the Victim_Mask victims.
func (f *fabric) setMarking(t *testing.T, dlid uint16, threshold, size uint8, rate uint16, victims ...uint8) {
	t.Helper()
	s := mad.SwitchCongestionSettingFields{ControlMap: mad.SwitchCongThreshold | mad.SwitchCongMarkingRate |
		mad.SwitchCongVictimMask, Threshold: threshold, PacketSize: size, MarkingRate: rate}
	for _, v := range victims {
		s.VictimMask[mad.PortMaskSize-1-v/8] |= 1 << (v % 8)
	}
	m := mad.CCMADFields{Method: mad.MethodSet, AttrID: mad.AttrSwitchCongestionSetting}
	mad.SwitchCongestionSetting(m.Data[:]).Encode(&s)
	require.Equal(t, mad.StatusOK, f.gmp(t, dlid, mad.AppendCCMAD(nil, &m)).Status())
}

// congestionLog reads the CongestionLog of the switch at dlid.
func (f *fabric) congestionLog(t *testing.T, dlid uint16) mad.CongestionLogFields {
	t.Helper()
	r := f.gmp(t, dlid, mad.AppendCCMAD(nil, &mad.CCMADFields{Method: mad.MethodGet, AttrID: mad.AttrCongestionLog}))
	require.Equal(t, mad.StatusOK, r.Status())
	return mad.CongestionLog(mad.CCMAD(r).LogData()).Fields()
}

// pmaGet reads optional PMA attribute a of port n of the node at dlid.
func (f *fabric) pmaGet(t *testing.T, dlid uint16, a mad.AttrID, n uint8) mad.PMACounterSetFields {
	t.Helper()
	l := mad.PMAOptionalLayouts[a]
	p := mad.PMAFields{Method: mad.MethodGet, AttrID: a}
	l.Encode(p.Data[:], &mad.PMACounterSetFields{PortSelect: n})
	r := f.gmp(t, dlid, mad.AppendPMA(nil, &p))
	require.Equal(t, mad.StatusOK, r.Status(), "%v", l.Name)
	return l.Fields(mad.PMA(r).Data())
}

// cnp is a UD packet from slid to dlid with the CNP opcode.
func cnp(t *testing.T, slid, dlid uint16) []byte {
	t.Helper()
	b := udFrom(slid, dlid, 0, 1000, 0)
	b[wire.LRHSize] = byte(wire.CNP)
	require.NoError(t, wire.Seal(b))
	return b
}

// burst sends n packets from ca1 and ca3 to ca2 at once (ca3's CNPs when
// cnps) and runs the fabric until ca2 has them all.
func (f *fabric) burst(t *testing.T, n int, cnps bool) {
	t.Helper()
	before := f.ca["ca2"].received()
	for i := range n {
		require.NoError(t, f.ca["ca1"].port().Send(port.NewPacket(udFrom(lidCA1, lidCA2, 0, 1000, byte(i)))))
		b := udFrom(lidCA3, lidCA2, 0, 1000, byte(i))
		if cnps {
			b = cnp(t, lidCA3, lidCA2)
		}
		require.NoError(t, f.ca["ca3"].port().Send(port.NewPacket(b)))
	}
	f.run(t, func() bool { return f.ca["ca2"].received() == before+2*n })
}

// TestFECNMarkingRoot: two sources into one output congest it as a root;
// with Threshold 15 the switch marks (Victim_Mask empty), every mark
// reaches ca2 intact (the port verifies ICRC and VCRC: nothing dropped),
// is counted per port and VL, in the PMA, and logged; CNPs and SMPs are
// never marked. With Threshold 0, or a Packet_Size above the packets,
// nothing is.
func TestFECNMarkingRoot(t *testing.T) {
	// No pacing slack: the congestion is the output's, two inputs at the
	// link's rate into one, not that of a transmitter yet to run.
	f := newFabric(t, star(t), port.Config{PaceSlack: -1})
	f.configureStar(t)
	sw, dst := f.sw["sw1"], f.ca["ca2"]

	f.burst(t, 30, false)
	assert.Zero(t, dst.fecnCount(fecnData), "Threshold 0 marks nothing")
	assert.Zero(t, sw.Port(2).Congestion().Marked())

	f.setMarking(t, lidStarSW, 15, 1, 0)
	f.burst(t, 30, false)
	// SMPs through the congested output while it drains.
	f.lid(t, lidCA2, mad.AttrNodeInfo, 0)
	marked := sw.Port(2).Congestion().MarkedByVL[0]
	assert.Positive(t, marked, "marks at the congested output")
	assert.EqualValues(t, marked, dst.fecnCount(fecnData), "every mark reaches ca2")
	assert.EqualValues(t, marked, sw.Stats().FECNMarked)
	assert.Zero(t, dst.fecnCount(fecnVL15), "SMPs")
	for n := uint8(1); n <= 3; n++ {
		if n != 2 {
			assert.Zero(t, sw.Port(n).Congestion().Marked(), "port %d", n)
		}
	}
	seen := f.pmaGet(t, lidStarSW, mad.AttrSwPortVLCongestion, 2).Counters[0]
	// Marking_Rate 0 marks every root; a burst can outrun ca2's credit
	// updates for a moment, which makes a few victims, not marked.
	assert.GreaterOrEqual(t, seen, marked, "congested packets seen")
	rcv, _ := dst.port().OptionalCounters(mad.AttrPortSLRcvFECN, 0)
	assert.EqualValues(t, marked, rcv[0], "ca2's PortSLRcvFECN, SL 0")
	assert.Positive(t, f.pmaGet(t, lidStarSW, mad.AttrPortVLXmitTimeCong, 2).Counters[0], "time congested")

	log := f.congestionLog(t, lidStarSW)
	assert.EqualValues(t, min(marked, 0xffff), log.EventsCounter)
	assert.EqualValues(t, 1<<2, log.PortMap[31], "port 2 only")
	for i := range min(int(marked), mad.CongestionLogSwitchEvents) {
		e := log.Switch[i]
		assert.Contains(t, []uint16{lidCA1, lidCA3}, e.SLID, "entry %d", i)
		assert.EqualValues(t, lidCA2, e.DLID)
		assert.Zero(t, e.SL)
	}

	// CNPs from ca3 mixed with ca1's data: only the data is marked.
	before := dst.fecnCount(fecnData)
	f.burst(t, 30, true)
	assert.Positive(t, dst.fecnCount(fecnData)-before)
	assert.Zero(t, dst.fecnCount(fecnCNP), "CNPs are never marked")

	// Packets under Packet_Size blocks are not even looked at.
	f.setMarking(t, lidStarSW, 15, 100, 0)
	seen = f.pmaGet(t, lidStarSW, mad.AttrSwPortVLCongestion, 2).Counters[0]
	before = dst.fecnCount(fecnData)
	f.burst(t, 30, false)
	assert.Equal(t, before, dst.fecnCount(fecnData), "Packet_Size 100 blocks")
	assert.Equal(t, seen, f.pmaGet(t, lidStarSW, mad.AttrSwPortVLCongestion, 2).Counters[0])
	f.noDrops(t)
}

// TestFECNMarkingRate: with Marking_Rate m one in m+1 of the packets that
// find the output congested is marked.
func TestFECNMarkingRate(t *testing.T) {
	f := newFabric(t, star(t), port.Config{})
	f.configureStar(t)
	sw := f.sw["sw1"]
	f.setMarking(t, lidStarSW, 15, 1, 3, 2)
	f.burst(t, 40, false)
	seen := f.pmaGet(t, lidStarSW, mad.AttrSwPortVLCongestion, 2).Counters[0]
	require.GreaterOrEqual(t, seen, uint64(8))
	assert.Equal(t, seen/4, sw.Port(2).Congestion().MarkedByVL[0], "%d congested packets", seen)
	assert.EqualValues(t, seen/4, f.ca["ca2"].fecnCount(fecnData))
	f.noDrops(t)
}

// TestFECNMarkingVictim: behind a CA that holds its buffer the outputs
// wait for credit: victims, marked only with their Victim_Mask bit.
func TestFECNMarkingVictim(t *testing.T) {
	for _, victim := range []bool{false, true} {
		// No pacing slack: a transmitter sends no bursts that would queue
		// packets with credit (a root) at the next switch.
		f := newFabric(t, line(t), port.Config{RxBlocks: 100, MTU: 1024, PaceSlack: -1})
		f.configure(t, true)
		var victims []uint8
		if victim {
			victims = []uint8{2}
		}
		// Threshold 8: congested from 50 of the 100 blocks, 3 packets.
		f.setMarking(t, lidSW2, 8, 1, 0, victims...)
		src, dst := f.ca["ca1"].port(), f.ca["ca2"]
		dst.setHold(true)
		blocks := port.Blocks(porttest.UDSize(1000))
		const n = 30
		for i := range n {
			require.NoError(t, src.Send(port.NewPacket(udFrom(lidCA1, lidCA2, 0, 1000, byte(i)))))
		}
		f.run(t, func() bool { return src.Credits(0).Available < blocks && src.Credits(0).Queued > 0 })
		// Stalled: sw2's output 2 holds a queue it has no credit for.
		marked := f.sw["sw2"].Port(2).Congestion().Marked()
		if victim {
			assert.Positive(t, marked, "victim marked with its Victim_Mask bit")
		} else {
			assert.Zero(t, marked, "victim not marked without its Victim_Mask bit")
		}
		// (The PMA's answer would wait behind the stalled VL0.)
		seen, _ := f.sw["sw2"].Port(2).OptionalCounters(mad.AttrSwPortVLCongestion, 0)
		assert.Positive(t, seen[0], "congestion seen either way")
		// Released, the output drains its backlog with credit: a root,
		// marked either way.
		dst.setHold(false)
		f.run(t, func() bool { return dst.received() == n })
		assert.EqualValues(t, f.sw["sw2"].Port(2).Congestion().Marked(), dst.fecnCount(fecnData))
		f.noDrops(t)
	}
}
