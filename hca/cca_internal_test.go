package hca

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// fakeCCPort is a CCA's port with settings the test writes: 10 Gb/s,
// LMC as set, and the events logged.
type fakeCCPort struct {
	s      agent.CCCA
	lmc    uint8
	events []agent.CCCAEvent
}

func (p *fakeCCPort) port() ccaPort {
	return ccaPort{
		settings: func() agent.CCCA { return p.s },
		lmc:      func() uint8 { return p.lmc },
		rate:     func() uint64 { return 10e9 },
		maxWire:  func() int { return wire.UDPacketSize(2048, false) },
		logCA:    func(ev agent.CCCAEvent) { p.events = append(p.events, ev) },
	}
}

// ccSettings returns settings programming sl: timer in 1.024 µs units,
// increase, threshold, min, and a table 0..limit whose entry i is
// shift 0, multiplier i (IPD i packet times).
func ccSettings(sl uint8, timer uint16, inc, thresh, ccMin uint8, limit uint16) agent.CCCA {
	s := agent.CCCA{SLBased: true, Limit: limit}
	s.SL[sl] = mad.CACongestionEntry{CCTITimer: timer, CCTIIncrease: inc, TriggerThreshold: thresh, CCTIMin: ccMin}
	for i := range limit + 1 {
		s.Table = append(s.Table, mad.CCTEntry(0, i))
	}
	return s
}

func newTestCCA(t *testing.T, p *fakeCCPort) (*cca, *clock.Manual) {
	t.Helper()
	clk := clock.NewManual(flowEpoch)
	return newCCA(1, clk, p.port()), clk
}

func (c *cca) dest(base uint16, sl uint8) *ccDest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dests[ccKey{base: base, sl: sl}]
}

func TestCCADelay(t *testing.T) {
	const pkt = 1000 * time.Nanosecond
	tests := []struct {
		shift uint8
		mult  uint16
		want  time.Duration
	}{
		{0, 0, 0},
		{0, 1, pkt},
		{0, 3, 3 * pkt},
		{1, 1, pkt / 2},
		{2, 5, 5 * pkt / 4},
		{3, 0x3fff, 0x3fff * pkt / 8},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, CCADelay(mad.CCTEntry(tt.shift, tt.mult), pkt), "shift %d mult %d", tt.shift, tt.mult)
	}
}

// TestCCAIBARaise: each notification adds CCTI_Increase, up to
// CCTI_Limit, from CCTI_Min; the IPD follows the table.
func TestCCAIBARaise(t *testing.T) {
	tests := []struct {
		name       string
		inc, ccMin uint8
		limit      uint16
		notes      int
		want       uint16
	}{
		{"one", 1, 0, 10, 1, 1},
		{"several", 3, 0, 10, 3, 9},
		{"at the limit", 3, 0, 10, 4, 10},
		{"far past it", 7, 0, 10, 20, 10},
		{"from the floor", 2, 4, 10, 1, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakeCCPort{s: ccSettings(3, 100, tt.inc, 0, tt.ccMin, tt.limit)}
			c, _ := newTestCCA(t, p)
			for range tt.notes {
				c.notify(7, 3, true)
			}
			d := c.dest(7, 3)
			require.NotNil(t, d)
			assert.Equal(t, tt.want, d.ccti)
			assert.Equal(t, mad.CCTEntry(0, tt.want), d.entry)
			st := c.status(nil)
			require.Len(t, st, 1)
			w := c.wireTime(c.port.maxWire())
			assert.Equal(t, int64(w)*int64(tt.want), st[0].IPDNs, "IPD of CCT[%d] for an MTU packet", tt.want)
			cnt := c.counters()
			assert.Equal(t, uint64(tt.notes), cnt.CNPReceived)
			assert.Equal(t, uint64(tt.notes), cnt.BECNReceived)
		})
	}
}

// TestCCAIBATimer: the CCTI_Timer lowers the CCTI by one per period down
// to CCTI_Min, then stops: no timer is left pending at the floor.
func TestCCAIBATimer(t *testing.T) {
	p := &fakeCCPort{s: ccSettings(0, 10, 5, 0, 2, 20)}
	c, clk := newTestCCA(t, p)
	c.notify(9, 0, false) // 2 + 5
	period := 10 * CCTIUnit
	require.Equal(t, uint16(7), c.dest(9, 0).ccti)
	for want := uint16(6); want >= 2; want-- {
		next, ok := clk.Next()
		require.True(t, ok, "timer stopped above the floor at %d", want+1)
		assert.Equal(t, period, next.Sub(clk.Now()))
		clk.AdvanceToNext()
		assert.Equal(t, want, c.dest(9, 0).ccti)
	}
	_, ok := clk.Next()
	assert.False(t, ok, "a timer is still pending at CCTI_Min")
	clk.Advance(time.Second)
	assert.Equal(t, uint16(2), c.dest(9, 0).ccti)
	// A new notification starts the timer again.
	c.notify(9, 0, true)
	_, ok = clk.Next()
	assert.True(t, ok)
	// Settings taken away: the next tick forgets the destination.
	p.s = agent.CCCA{}
	clk.AdvanceToNext()
	assert.Nil(t, c.dest(9, 0))
	_, ok = clk.Next()
	assert.False(t, ok)
}

// TestCCANothingActs: notifications for an SL without timer and
// increase, or in mode off, are counted and change nothing.
func TestCCANothingActs(t *testing.T) {
	tests := []struct {
		name string
		s    agent.CCCA
		mode CCMode
	}{
		{"nothing programmed", agent.CCCA{}, CCIBA},
		{"another SL programmed", ccSettings(4, 10, 1, 0, 0, 5), CCIBA},
		{"no increase", ccSettings(3, 10, 0, 0, 0, 5), CCIBA},
		{"no timer", ccSettings(3, 0, 1, 0, 0, 5), CCIBA},
		{"mode off", ccSettings(3, 10, 1, 0, 0, 5), CCOff},
		{"DRB, nothing programmed", agent.CCCA{}, CCDRB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &fakeCCPort{s: tt.s, lmc: 2}
			c, clk := newTestCCA(t, p)
			c.setMode(tt.mode, 0)
			c.notify(5, 3, true)
			assert.Nil(t, c.dest(5, 3))
			assert.Empty(t, c.status(nil))
			_, timer := clk.Next()
			assert.False(t, timer)
			assert.True(t, c.holdUntil(5, 3).IsZero())
			assert.Equal(t, ccRoute{dlid: 5, sl: 3, key: ccKey{base: 4, sl: 3}}, c.pick(5, 3))
			cnt := c.counters()
			assert.Equal(t, CCACounters{CNPReceived: 1, BECNReceived: 1, Ignored: 1}, cnt)
		})
	}
}

// TestCCATrigger: a CCTI at or above Trigger_Threshold logs a CA event
// with the destination and SL.
func TestCCATrigger(t *testing.T) {
	p := &fakeCCPort{s: ccSettings(2, 10, 1, 3, 0, 10)}
	c, _ := newTestCCA(t, p)
	for range 4 {
		c.notify(0x20, 2, true)
	}
	require.Len(t, p.events, 2, "CCTI 3 and 4 reach the threshold")
	assert.Equal(t, agent.CCCAEvent{LocalQP: DataQP, SL: 2, ServiceType: 3, RemoteQP: DataQP, RemoteLID: 0x20}, p.events[0])
	assert.Equal(t, uint64(2), c.counters().Events)
}

// TestFlowIPDPacing: a flow far above what its destination's IPD lets
// through leaves no sooner than each packet's wire time plus the IPD
// after the one before, keeps the rest at the source, and its packets
// carry their generation times (the time held at the source is latency).
func TestFlowIPDPacing(t *testing.T) {
	p := &fakeCCPort{s: ccSettings(1, 60000, 2, 0, 0, 4)} // a timer far longer than the test
	c, clk := newTestCCA(t, p)
	fp := &fakeFlowPort{clk: clk, cc: c}
	const payload = 1000
	w := wire.UDPacketSize(payload, false)
	pktTime := c.wireTime(w)
	f, err := newFlow(FlowConfig{ID: 1, DLID: 8, SL: 1, Rate: 8e9, Payload: payload, MaxBacklog: 1000}, clk, fp.port())
	require.NoError(t, err)
	c.notify(8, 1, true) // CCTI 2: IPD = 2 packet times
	ipd := 2 * pktTime
	f.startFlow()
	for range 2000 {
		clk.AdvanceToNext()
	}
	require.Greater(t, len(fp.at), 10)
	exact := 0
	for i := 1; i < len(fp.at); i++ {
		gap := fp.at[i].Sub(fp.at[i-1])
		require.GreaterOrEqual(t, gap, pktTime+ipd, "packet %d left %v after the one before", i, gap)
		require.LessOrEqual(t, fp.stamps[i], fp.at[i].UnixNano())
		if gap == pktTime+ipd {
			exact++
		}
	}
	assert.Equal(t, len(fp.at)-1, exact, "with a backlog, each packet leaves as soon as its IPD ends")
	s := f.stop()
	assert.Greater(t, s.Backlog, 0, "the paced flow keeps a backlog")
	last := len(fp.at) - 1
	assert.Greater(t, fp.at[last].UnixNano()-fp.stamps[last], int64(ipd), "time held at the source is in the stamp")
	cnt := c.counters()
	assert.Greater(t, cnt.Paced, uint64(0))
	// Once the CCTI is back at 0 the flow leaves at its own rate.
	for range 3 {
		c.tick(c.dest(8, 1))
	}
	assert.Equal(t, uint16(0), c.dest(8, 1).ccti)
}

// TestMessageFlow: each arrival is a message split into Payload-sized
// packets (the last shorter, never below the flow header), all stamped
// with its generation time, and the rate counts the message's wire
// bytes.
func TestMessageFlow(t *testing.T) {
	clk := clock.NewManual(flowEpoch)
	fp := &fakeFlowPort{clk: clk}
	sizes := []int{2048, 2048, 1000}
	var msgWire int
	for _, n := range sizes {
		msgWire += wire.UDPacketSize(n, false)
	}
	rate := uint64(msgWire*8) * 1000 // one message per ms
	f, err := newFlow(FlowConfig{ID: 2, DLID: 3, Rate: rate, Payload: 2048, MessageBytes: 5096}, clk, fp.port())
	require.NoError(t, err)
	assert.Equal(t, int64(time.Millisecond), f.stats.IntervalNs)
	f.startFlow()
	clk.Advance(3 * time.Millisecond)
	s := f.stop()
	assert.Equal(t, uint64(3), s.Messages)
	assert.Equal(t, uint64(9), s.Offered)
	assert.Equal(t, uint64(9), s.Sent)
	assert.Equal(t, uint64(3*msgWire), s.SentBytes)
	assert.Equal(t, 3, s.MessagePackets)
	require.Len(t, fp.sizes, 9)
	for i, n := range fp.sizes {
		assert.Equal(t, sizes[i%3], n, "packet %d", i)
		assert.Equal(t, flowEpoch.Add(time.Duration(i/3+1)*time.Millisecond).UnixNano(), fp.stamps[i], "packet %d's stamp", i)
	}
	assert.Equal(t, []int{2048, 28}, messageSizes(2049, 2048), "the last packet holds at least the flow header")
	assert.Equal(t, []int{512}, messageSizes(0, 512))
	// A message that can never fit the backlog is refused.
	_, err = newFlow(FlowConfig{ID: 3, DLID: 3, Rate: rate, Payload: 100, MessageBytes: 1000, MaxBacklog: 9}, clk, fp.port())
	assert.ErrorIs(t, err, ErrConfig)
}

// TestMessageDroppedWhole: a message finding the backlog short of room
// for all its packets is dropped whole.
func TestMessageDroppedWhole(t *testing.T) {
	clk := clock.NewManual(flowEpoch)
	fp := &fakeFlowPort{clk: clk, queue: flowPortWindow}
	f, err := newFlow(FlowConfig{ID: 2, DLID: 3, Rate: 1e9, Payload: 100, MessageBytes: 300, MaxBacklog: 7}, clk, fp.port())
	require.NoError(t, err)
	f.startFlow()
	for range 3 {
		clk.AdvanceToNext()
	}
	s := f.stop()
	assert.Equal(t, uint64(9), s.Offered)
	assert.Equal(t, 6, s.Backlog)
	assert.Equal(t, uint64(3), s.Dropped)
}

// drbCCA is a CCA in DRB mode with cap paths at most, LMC lmc, SL 2
// programmed with a timer of period.
func drbCCA(t *testing.T, lmc uint8, capacity int) (*cca, *clock.Manual, time.Duration) {
	t.Helper()
	p := &fakeCCPort{s: ccSettings(2, 50, 1, 0, 0, 0), lmc: lmc}
	c, clk := newTestCCA(t, p)
	c.setMode(CCDRB, capacity)
	return c, clk, 50 * CCTIUnit
}

// TestDRBOpens: each notification opens one more path, up to the cap and
// to the aliases the LMC gives; DRB does not throttle.
func TestDRBOpens(t *testing.T) {
	tests := []struct {
		name      string
		lmc       uint8
		capacity  int
		notes     int
		wantPaths []uint16
		wantOpens uint64
	}{
		{"one notification", 2, 4, 1, []uint16{0x40, 0x41}, 1},
		{"three", 2, 4, 3, []uint16{0x40, 0x41, 0x42, 0x43}, 3},
		{"cap reached", 3, 4, 10, []uint16{0x40, 0x41, 0x42, 0x43}, 3},
		{"cap 2", 3, 2, 10, []uint16{0x40, 0x41}, 1},
		{"LMC 1 gives 2", 1, 4, 10, []uint16{0x40, 0x41}, 1},
		{"LMC 0: no alias", 0, 4, 10, []uint16{0x40}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, _ := drbCCA(t, tt.lmc, tt.capacity)
			for range tt.notes {
				c.notify(0x40, 2, true)
			}
			st := c.status(nil)
			require.Len(t, st, 1)
			assert.Equal(t, tt.wantPaths, st[0].Active)
			assert.Equal(t, uint64(tt.notes), st[0].Notifications[0], "every notification was on the base path")
			assert.Equal(t, tt.wantOpens, c.counters().Opens)
			assert.Zero(t, st[0].CCTI)
			assert.Zero(t, st[0].IPDNs)
			assert.True(t, c.holdUntil(0x40, 2).IsZero(), "DRB does not throttle")
		})
	}
}

// TestDRBAliases: alias i goes out on SL (flow SL + i) to base + i, and a
// notification coming back by alias i on SL+i counts on path i of the
// flow's destination and SL.
func TestDRBAliases(t *testing.T) {
	c, _, _ := drbCCA(t, 2, 4)
	for range 3 {
		c.notify(0x40, 2, true)
	}
	seen := map[ccRoute]bool{}
	for range 40 {
		r := c.pick(0x40, 2)
		seen[r] = true
		c.sent(r, flowEpoch, flowEpoch, 100)
	}
	for i := range 4 {
		r := ccRoute{dlid: 0x40 + uint16(i), sl: 2 + uint8(i), key: ccKey{base: 0x40, sl: 2}, path: i}
		assert.True(t, seen[r], "path %d never used: %+v", i, seen)
	}
	c.notify(0x42, 4, true) // alias 2 on SL 2+2
	d := c.dest(0x40, 2)
	assert.Equal(t, []uint64{3, 0, 1, 0}, d.notes)
	assert.Nil(t, c.dest(0x40, 4), "no state of its own for the alias's SL")
	c.notify(0x43, 1, true) // alias 3 on SL 1: no SL of ours sends it
	assert.Equal(t, uint64(1), c.counters().Ignored)
}

// TestDRBWeights: the open paths share the packets in inverse proportion
// to 1 + their notifications, exactly over a whole round.
func TestDRBWeights(t *testing.T) {
	c, _, _ := drbCCA(t, 1, 2)
	c.notify(0x40, 2, true) // opens path 1; base counts 1
	d := c.dest(0x40, 2)
	c.mu.Lock()
	d.notes[0], d.notes[1] = 3, 0 // weights 1/4 and 1: shares 1/5 and 4/5
	c.mu.Unlock()
	var count [2]int
	for range 100 {
		count[c.pick(0x40, 2).path]++
	}
	assert.Equal(t, [2]int{20, 80}, count)
	assert.Equal(t, uint64(80), c.counters().DRBRerouted)
}

// TestDRBCloses: each CCTI_Timer period without a notification closes the
// most recently opened path, never the base, and halves the counts; a
// period with one closes nothing; the timer stops once only the base is
// open with no count left.
func TestDRBCloses(t *testing.T) {
	c, clk, period := drbCCA(t, 2, 4)
	for range 3 {
		c.notify(0x40, 2, true)
	}
	active := func() int { return len(c.status(nil)[0].Active) }
	require.Equal(t, 4, active())
	clk.Advance(period) // notifications in this period: nothing closes
	assert.Equal(t, 4, active())
	c.notify(0x41, 3, true) // path 1, another period with one
	clk.Advance(period)
	assert.Equal(t, 4, active())
	for want := 3; want >= 1; want-- {
		clk.Advance(period)
		assert.Equal(t, want, active())
	}
	assert.Equal(t, uint64(3), c.counters().Closes)
	for range 10 {
		clk.Advance(period)
	}
	assert.Equal(t, 1, active(), "the base path stays")
	assert.Equal(t, []uint64{0}, c.status(nil)[0].Notifications, "counts decayed")
	_, ok := clk.Next()
	assert.False(t, ok, "no timer once there is nothing to close or decay")
	assert.Equal(t, uint64(3), c.counters().Closes)
}

// TestCCAModeChange: a new mode starts every destination over and stops
// its timers.
func TestCCAModeChange(t *testing.T) {
	p := &fakeCCPort{s: ccSettings(0, 10, 1, 0, 0, 5)}
	c, clk := newTestCCA(t, p)
	c.notify(3, 0, true)
	c.setMode(CCDRB, 3)
	assert.Empty(t, c.status(nil))
	clk.Advance(time.Second)
	assert.Empty(t, c.status(nil), "a stale timer made no state")
	c.mu.Lock()
	assert.Equal(t, 3, c.cap)
	c.mu.Unlock()
}
