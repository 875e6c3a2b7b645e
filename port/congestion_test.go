package port_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/wire"
	"ibfab/wire/mad"
)

func TestCongestionLevel(t *testing.T) {
	tests := []struct {
		threshold uint8
		rx, want  int
	}{
		{0, 1024, 0},   // never
		{1, 1024, 960}, // 15/16
		{8, 1024, 512},
		{15, 1024, 64}, // 1/16
		{15, 100, 7},   // 6.25 rounds up
		{16, 1024, 64}, // beyond 15 counts as 15
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, port.CongestionLevel(tt.threshold, tt.rx), "threshold %d, %d blocks", tt.threshold, tt.rx)
	}
}

// optional reads a PMA attribute's counters from p.
func optional(t *testing.T, p *port.Port, a mad.AttrID) [mad.PMAMaxCounters]uint64 {
	t.Helper()
	c, ok := p.OptionalCounters(a, 0)
	require.True(t, ok, "%v counted", a.Name(mad.ClassPerfMgt))
	return c
}

// TestTxCongestion: the queued blocks follow the queue; a VL is congested
// at the Threshold's level, as a victim while the peer gives no credit and
// as a root while it does; the congested time is counted in
// PortXmitConCtrl and PortVLXmitTimeCong, which a reset restarts.
func TestTxCongestion(t *testing.T) {
	const rxBlocks = 64
	// No pacing slack: a packet queued behind one on the wire waits its
	// serialization time on the manual clock, so "queued faster than the
	// link sends them" below holds by construction, not because the
	// transmitter goroutine had not run yet (a race it lost about once in
	// a hundred runs).
	e := newEnv(t, port.Config{RxBlocks: rxBlocks, MTU: 1024, PaceSlack: -1}, nil)
	e.activate(t)
	e.rb.setHold(true)
	size := porttest.UDSize(1000)
	blocks := port.Blocks(size)
	const n = 10
	for i := range n {
		send(t, e.a, porttest.UD(0, 1, 1000, byte(i)))
	}
	e.run(t, func() bool { return e.rb.count() == rxBlocks/blocks && e.a.Queued(0) == n-rxBlocks/blocks })
	queued := (n - rxBlocks/blocks) * blocks
	got, credit := e.a.TxQueue(0)
	assert.Equal(t, queued, got, "queued blocks")
	assert.False(t, credit, "head credit with the peer's buffer full")

	congested, _ := e.a.TxCongestion(0)
	assert.False(t, congested, "congested with Threshold 0")
	e.a.SetCongestionThreshold(15) // level 4 blocks
	congested, root := e.a.TxCongestion(0)
	assert.True(t, congested)
	assert.False(t, root, "a VL without credit is a victim")
	assert.EqualValues(t, 1, optional(t, e.a, mad.AttrSwPortVLCongestion)[0])

	e.clk.Advance(50 * time.Microsecond)
	assert.EqualValues(t, 50, optional(t, e.a, mad.AttrPortXmitConCtrl)[0], "PortXmitTimeCong, µs ticks")
	assert.EqualValues(t, 50, optional(t, e.a, mad.AttrPortVLXmitTimeCong)[0])
	assert.Zero(t, optional(t, e.a, mad.AttrPortVLXmitTimeCong)[1], "VL1 has nothing queued")
	e.a.ResetOptionalCounters(mad.AttrPortXmitConCtrl, 0, 1)
	e.clk.Advance(7 * time.Microsecond)
	assert.EqualValues(t, 7, optional(t, e.a, mad.AttrPortXmitConCtrl)[0], "after a reset")
	assert.EqualValues(t, 57, optional(t, e.a, mad.AttrPortVLXmitTimeCong)[0], "not reset")

	// Threshold 0 ends the spell.
	e.a.SetCongestionThreshold(0)
	e.clk.Advance(20 * time.Microsecond)
	assert.EqualValues(t, 7, optional(t, e.a, mad.AttrPortXmitConCtrl)[0])
	e.a.SetCongestionThreshold(15)

	e.rb.setHold(false)
	e.rb.release(-1)
	e.run(t, func() bool { return e.rb.count() == n })
	got, credit = e.a.TxQueue(0)
	assert.Zero(t, got, "queued blocks after draining")
	assert.False(t, credit, "no head packet")
	congested, _ = e.a.TxCongestion(0)
	assert.False(t, congested)

	// Packets queued faster than the link sends them wait with credit:
	// the VL congests as a root.
	for i := range 6 {
		send(t, e.a, porttest.UD(0, 1, 1000, byte(i)))
	}
	congested, root = e.a.TxCongestion(0)
	assert.True(t, congested)
	assert.True(t, root, "queued with credit for the head packet")
	e.run(t, func() bool { return e.rb.count() == n+6 })
	noDrops(t, e.a, e.b)
}

// ecnUD is a UD packet on SL sl with FECN and BECN as given.
func ecnUD(t *testing.T, sl uint8, fecn, becn bool) []byte {
	t.Helper()
	b := wire.AppendUD(nil, &wire.UDFields{SL: sl, DLID: 1, SLID: 2, PKey: 0xffff, DestQP: 2, QKey: 1, SrcQP: 2,
		Payload: make([]byte, 64)})
	bth := wire.BTH(b[wire.LRHSize:])
	bth.SetFECN(fecn)
	bth.SetBECN(becn)
	require.NoError(t, wire.Seal(b))
	return b
}

// TestRcvECN: data packets received with FECN or BECN are counted per SL
// in the PMA's PortSLRcvFECN/BECN and PortRcvConCtrl, and in the running
// totals, which PMA resets leave alone; marks made here are counted per
// VL.
func TestRcvECN(t *testing.T) {
	e := newEnv(t, port.Config{}, nil)
	e.activate(t)
	for _, p := range []struct {
		sl         uint8
		fecn, becn bool
		n          int
	}{{3, true, false, 2}, {5, false, true, 3}, {7, true, true, 1}, {0, false, false, 4}} {
		for range p.n {
			send(t, e.a, ecnUD(t, p.sl, p.fecn, p.becn))
		}
	}
	e.run(t, func() bool { return e.rb.count() == 10 })
	fecn := optional(t, e.b, mad.AttrPortSLRcvFECN)
	becn := optional(t, e.b, mad.AttrPortSLRcvBECN)
	assert.EqualValues(t, 2, fecn[3])
	assert.EqualValues(t, 1, fecn[7])
	assert.EqualValues(t, 3, becn[5])
	assert.EqualValues(t, 1, becn[7])
	assert.Zero(t, fecn[0]+fecn[5]+becn[0]+becn[3])
	rcc := optional(t, e.b, mad.AttrPortRcvConCtrl)
	assert.EqualValues(t, [2]uint64{3, 4}, [2]uint64{rcc[0], rcc[1]}, "PortPktRcvFECN, PortPktRcvBECN")

	e.b.ResetOptionalCounters(mad.AttrPortSLRcvFECN, 0, 1<<3)
	e.b.ResetOptionalCounters(mad.AttrPortRcvConCtrl, 0, 0b10)
	assert.Zero(t, optional(t, e.b, mad.AttrPortSLRcvFECN)[3])
	assert.EqualValues(t, 1, optional(t, e.b, mad.AttrPortSLRcvFECN)[7])
	rcc = optional(t, e.b, mad.AttrPortRcvConCtrl)
	assert.EqualValues(t, [2]uint64{3, 0}, [2]uint64{rcc[0], rcc[1]})

	e.a.CountFECNMark(2)
	e.a.CountFECNMark(2)
	c, ca := e.b.Congestion(), e.a.Congestion()
	assert.EqualValues(t, 3, c.RcvFECNTotal(), "totals untouched by PMA resets")
	assert.EqualValues(t, 4, c.RcvBECNTotal())
	assert.EqualValues(t, 2, ca.MarkedByVL[2])
	assert.EqualValues(t, 2, ca.Marked())
	assert.Zero(t, c.Marked())
}
