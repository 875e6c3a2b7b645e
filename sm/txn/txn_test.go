package txn

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/clock"
	"ibfab/internal/testsupport"
	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

func newTestTxn(t *testing.T, port madport.Port, clk clock.Clock, cfg Config) *Layer {
	t.Helper()
	cfg.SetDefaults()
	return New(port, clk, cfg, 0)
}

// TestWindow: never more than Window SMPs in flight; each lost one is sent
// 1+Retries times, Timeout apart, then fails. Nothing is ever answered: a
// stall, not a loss, so the window stays as it is.
func TestWindow(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	p := &testsupport.SilentPort{Clock: clk}
	tx := newTestTxn(t, p, clk, Config{Window: 3, Retries: 2, Timeout: time.Second, TIDHigh: 0xabc})
	tx.SetPhase("test")
	var errs []error
	for range 5 {
		tx.Get(Request{DR: true, Path: []uint8{0}, Attr: mad.AttrNodeInfo}, func(r *Response) { errs = append(errs, r.Err) })
	}
	require.NoError(t, tx.Run(context.Background()))
	require.Len(t, errs, 5)
	for _, err := range errs {
		assert.ErrorIs(t, err, ErrTimeout)
	}
	// The first three go at 0 s and are resent at 1 s and 2 s; at 3 s
	// they fail and the last two go, resent at 4 s and 5 s.
	var at []int64
	for _, s := range p.Sent {
		at = append(at, s.Unix())
	}
	assert.Equal(t, []int64{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 5}, at)
	ps := tx.phases["test"]
	assert.Equal(t, PhaseStats{SMPs: 15, Retries: 10, Timeouts: 5}, *ps)
	for _, tid := range p.TIDs {
		assert.EqualValues(t, 0xabc, tid>>32, "TID %#x", tid)
	}
	assert.Len(t, uniq(p.TIDs), 5, "a resend keeps its TID")
	assert.Equal(t, 3, tx.window)
	assert.Equal(t, 3, tx.windowMin)
	assert.Zero(t, tx.inflight)
}

// watchPort is a memport port that records, at each send, the SMPs
// in flight (this one included) and the window, and loses the sends drop
// reports true for: i counts sends from 0, burst those since the last
// receive (this one included).
type watchPort struct {
	*memport.Port
	tx       *Layer
	drop     func(i, burst int) bool
	burst    int
	inflight []int
	window   []int
}

func (p *watchPort) Send(m madport.MAD) error {
	i := len(p.inflight)
	p.burst++
	p.inflight = append(p.inflight, p.tx.inflight)
	p.window = append(p.window, p.tx.window)
	if p.drop != nil && p.drop(i, p.burst) {
		return nil
	}
	return p.Port.Send(m)
}

func (p *watchPort) Recv(ctx context.Context) (madport.MAD, error) {
	m, err := p.Port.Recv(ctx)
	if err == nil {
		p.burst = 0
	}
	return m, err
}

// TestAdaptiveWindow runs requests on the thesis network through a port
// that loses some: timeouts narrow the window, answers widen it again up
// to Window and never beyond, a window of 1 still gets through, and no
// request is sent more than 1+Retries times.
func TestAdaptiveWindow(t *testing.T) {
	for _, tc := range []struct {
		name            string
		window, retries int
		burst           int // Config.Burst
		n               int
		drop            func(i, burst int) bool
		then            int // requests sent after the first n, none lost
		// want: the peak in flight, the narrowest window, the window at
		// the end, SMPs sent, requests that failed.
		maxInflight, windowMin, windowEnd int
		smps, timeouts                    int
	}{
		{name: "lossless", window: 8, retries: 3, n: 40,
			maxInflight: 8, windowMin: 8, windowEnd: 8, smps: 40},
		// Sends 3-8 are lost. The other two slots carry the rest of the
		// requests (the fake fabric answers at once) until the six time
		// out, which is one loss: one cut, to 4, and the resends go 4 at
		// once, then 2 as room frees. 4 answers widen the window to 5.
		{name: "part of a burst lost", window: 8, retries: 3, n: 60,
			drop:        func(i, _ int) bool { return i >= 2 && i < 8 },
			maxInflight: 8, windowMin: 4, windowEnd: 5, smps: 66},
		// The same, then 40 more: 5+6+7 answers widen it back to 8, and
		// no further.
		{name: "regrowth", window: 8, retries: 3, n: 60, then: 40,
			drop:        func(i, _ int) bool { return i >= 2 && i < 8 },
			maxInflight: 8, windowMin: 4, windowEnd: 8, smps: 106},
		// A device that takes bursts of 3 SMPs and drops the rest, as a
		// small VL15 queue does. Of the first 16, 13 are lost and hold
		// their slots until they time out, while the other 3 carry the
		// rest of the requests, one answer at a time: one loss, one cut
		// to 8. The resends then go in bursts of 8 (5 lost) and 5 (2
		// lost). Their timeouts do not cut again: only answers to
		// resends came after them, which may be late answers to first
		// attempts (Karn's rule). Every request gets through.
		// The window alone (no burst limit).
		{name: "bursts of 3", window: 16, retries: 3, burst: -1, n: 200,
			drop:        func(_, burst int) bool { return burst > 3 },
			maxInflight: 16, windowMin: 8, windowEnd: 9, smps: 200 + 13 + 5 + 2},
		// The same device with at most 4 SMPs back to back (OpenSM's
		// max_wire_smps): only a burst into an open window is long enough
		// to lose its fourth, once the window is full each answer lets one
		// SMP go; 6 are lost, against 20.
		{name: "bursts of 3, 4 back to back", window: 16, retries: 3, burst: 4, n: 200,
			drop:        func(_, burst int) bool { return burst > 3 },
			maxInflight: 16, windowMin: 8, windowEnd: 8, smps: 206},
		// A device that takes bursts of 8 (a first hop whose VL15
		// buffer holds 8 SMPs while it does not forward): the window
		// alone loses SMPs, 4 back to back lose none.
		{name: "bursts of 8", window: 16, retries: 3, burst: -1, n: 200,
			drop:        func(_, burst int) bool { return burst > 8 },
			maxInflight: 16, windowMin: 8, windowEnd: 9, smps: 208},
		{name: "bursts of 8, 4 back to back", window: 16, retries: 3, burst: 4, n: 200,
			drop:        func(_, burst int) bool { return burst > 8 },
			maxInflight: 16, windowMin: 16, windowEnd: 16, smps: 200},
		{name: "window 1, every other send lost", window: 1, retries: 1, n: 10,
			drop:        func(i, _ int) bool { return i%2 == 0 },
			maxInflight: 1, windowMin: 1, windowEnd: 1, smps: 20},
		// Nothing answered: a stall, not a loss; the window stays.
		{name: "all lost", window: 4, retries: 2, n: 6,
			drop:        func(int, int) bool { return true },
			maxInflight: 4, windowMin: 4, windowEnd: 4, smps: 18, timeouts: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := memfabric.NewFabric(topologies.Thesis8())
			require.NoError(t, err)
			defer f.Close()
			mp, err := memport.New(f, 0, 1)
			require.NoError(t, err)
			p := &watchPort{Port: mp, drop: tc.drop}
			tx := newTestTxn(t, p, mp.Clock(), Config{Window: tc.window, Retries: tc.retries, Burst: tc.burst})
			p.tx = tx
			tx.SetPhase("test")
			answered, failed := 0, 0
			submit := func(n int) {
				for range n {
					tx.Get(Request{DR: true, Path: []uint8{0, 1}, Attr: mad.AttrNodeInfo}, func(r *Response) {
						if r.Err != nil {
							assert.ErrorIs(t, r.Err, ErrTimeout)
							failed++
							return
						}
						answered++
					})
				}
				require.NoError(t, tx.Run(context.Background()))
			}
			submit(tc.n)
			p.drop = nil
			submit(tc.then)
			assert.Equal(t, tc.n+tc.then, answered+failed, "every request called back once")
			assert.Equal(t, tc.timeouts, failed)
			assert.Equal(t, tc.maxInflight, slices.Max(p.inflight), "peak in flight")
			for i := range p.inflight {
				require.LessOrEqual(t, p.inflight[i], p.window[i], "send %d: in flight beyond the window", i)
				require.LessOrEqual(t, p.window[i], tc.window, "send %d: window beyond its maximum", i)
				require.GreaterOrEqual(t, p.window[i], 1, "send %d", i)
			}
			assert.Equal(t, tc.windowMin, tx.windowMin, "narrowest window")
			assert.Equal(t, tc.windowEnd, tx.window, "window at the end")
			ps := tx.phases["test"]
			assert.EqualValues(t, tc.smps, ps.SMPs)
			assert.EqualValues(t, tc.smps-tc.n-tc.then, ps.Retries)
			assert.LessOrEqual(t, ps.Retries, uint64(tc.n*tc.retries), "retries bounded")
			assert.Zero(t, tx.inflight)
			assert.False(t, tx.Busy())
		})
	}
}

// TestWindowLateAnswer: a request that timed out and waits for room in
// the window takes a late answer, and a canceled one gives its slot
// back.
func TestWindowLateAnswer(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	p := &testsupport.SilentPort{Clock: clk}
	tx := newTestTxn(t, p, clk, Config{Window: 2, Timeout: time.Second})
	var got []error
	for _, port := range []uint8{1, 2, 3} {
		tx.Get(Request{DR: true, Path: []uint8{0, port}, Attr: mad.AttrNodeInfo}, func(r *Response) { got = append(got, r.Err) })
	}
	require.NoError(t, tx.Fill())
	require.Equal(t, 2, tx.inflight)
	// The second is answered, and the third goes.
	tx.Handle(answer(p.TIDs[1]))
	require.NoError(t, tx.Fill())
	require.Len(t, p.Sent, 3)
	// The first and the third time out; the second, sent after the first,
	// was answered: a loss, and one cut for both.
	clk.Advance(time.Second)
	require.NoError(t, tx.expire(clk.Now()))
	assert.Equal(t, 1, tx.window)
	assert.Equal(t, 1, tx.inflight)
	assert.Len(t, p.Sent, 4)
	assert.Equal(t, p.TIDs[0], p.TIDs[3], "the first is resent; the third waits")
	tx.Handle(answer(p.TIDs[2]))
	assert.Equal(t, []error{nil, nil}, got, "the late answer is taken")
	assert.Equal(t, 1, tx.inflight, "it held no slot")
	assert.Nil(t, tx.nextResend(), "and is not resent")
	assert.Equal(t, 1, tx.Cancel(func(*Request) bool { return true }))
	assert.Zero(t, tx.inflight)
	assert.False(t, tx.Busy())
}

// TestWindowStall: answers that come only after every request timed out
// (a simulator not scheduled for a while) are a stall: the window stays,
// the late answers are taken, and the resends' answers are strays.
func TestWindowStall(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	p := &testsupport.SilentPort{Clock: clk}
	tx := newTestTxn(t, p, clk, Config{Window: 4, Timeout: time.Second})
	answered := 0
	for range 4 {
		tx.Get(Request{DR: true, Path: []uint8{0}, Attr: mad.AttrNodeInfo}, func(r *Response) {
			assert.NoError(t, r.Err)
			answered++
		})
	}
	require.NoError(t, tx.Fill())
	clk.Advance(time.Second)
	require.NoError(t, tx.expire(clk.Now()))
	assert.Len(t, p.Sent, 8, "all four resent at once")
	assert.Equal(t, 4, tx.window)
	for _, tid := range p.TIDs {
		tx.Handle(answer(tid))
	}
	assert.Equal(t, 4, answered)
	assert.EqualValues(t, 4, tx.stats.Unexpected)
	assert.Equal(t, 4, tx.windowMin)
	assert.False(t, tx.Busy())
}

// answer is a NodeInfo GetResp with TID tid.
func answer(tid uint64) madport.MAD {
	b, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGetResp, TransactionID: tid, AttrID: mad.AttrNodeInfo})
	mad.DRSMP(b).SetDirection(true)
	return madport.MAD{Data: b}
}

// TestWindowRegrowth: after one cut the window widens by one per run of
// as many answers as it holds, back to its maximum.
func TestWindowRegrowth(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	tx := newTestTxn(t, &testsupport.SilentPort{Clock: clk}, clk, Config{Window: 16})
	tx.window, tx.windowMin = 4, 4
	var widths []int
	for range 130 {
		tx.answered(&transaction{})
		widths = append(widths, tx.window)
	}
	// 4 answers to 5, 5 to 6, ... 15 to 16, 114 in all; then it stays.
	var want []int
	for w := 4; w < 16; w++ {
		for i := 1; i <= w; i++ {
			want = append(want, map[bool]int{true: w + 1, false: w}[i == w])
		}
	}
	for len(want) < 130 {
		want = append(want, 16)
	}
	assert.Equal(t, want, widths)
	assert.Equal(t, 16, tx.window)
}

func uniq(xs []uint64) map[uint64]bool {
	m := map[uint64]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// TestRetryAnswers loses the first two attempts of a request; the third
// is answered.
func TestRetryAnswers(t *testing.T) {
	f, err := memfabric.NewFabric(topologies.Thesis8())
	require.NoError(t, err)
	defer f.Close()
	p, err := memport.New(f, 0, 1)
	require.NoError(t, err)
	lost := 0
	p.SetFilter(func(madport.MAD) bool { lost++; return lost > 2 })
	tx := newTestTxn(t, p, p.Clock(), Config{})
	tx.SetPhase("test")
	var got *Response
	tx.Get(Request{DR: true, Path: []uint8{0, 1}, Attr: mad.AttrNodeInfo}, func(r *Response) { got = r })
	require.NoError(t, tx.Run(context.Background()))
	require.NotNil(t, got)
	require.NoError(t, got.Err)
	assert.Equal(t, mad.NodeTypeSwitch, mad.NodeInfo(got.Data).NodeType())
	assert.Equal(t, PhaseStats{SMPs: 3, Retries: 2}, *tx.phases["test"])

	// A bad attribute modifier comes back with an error status.
	tx.Get(Request{DR: true, Path: []uint8{0, 1}, Attr: mad.AttrPortInfo, Mod: 9}, func(r *Response) { got = r })
	require.NoError(t, tx.Run(context.Background()))
	var se *StatusError
	require.ErrorAs(t, got.Err, &se)
	assert.ErrorIs(t, got.Err, ErrStatus)
	assert.Equal(t, mad.StatusInvalidField, se.Status.Code())
	assert.EqualValues(t, 1, tx.phases["test"].Errors)
}

// TestHandleStrays: answers to nothing pending, and garbage, are counted,
// not taken for answers.
func TestHandleStrays(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	tx := newTestTxn(t, &testsupport.SilentPort{Clock: clk}, clk, Config{})
	called := 0
	tx.Get(Request{DR: true, Path: []uint8{0}, Attr: mad.AttrNodeInfo}, func(*Response) { called++ })
	require.NoError(t, tx.Fill())
	var tid uint64
	for _, tt := range tx.pending {
		tid = tt.tid
	}
	resp := func(mut func(b mad.DRSMP)) madport.MAD {
		b, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGetResp, TransactionID: tid, AttrID: mad.AttrNodeInfo})
		mad.DRSMP(b).SetDirection(true)
		mut(mad.DRSMP(b))
		return madport.MAD{Data: b}
	}
	tx.Handle(madport.MAD{Data: []byte{1, 2, 3}})
	tx.Handle(resp(func(b mad.DRSMP) { b.MAD().SetTransactionID(tid + 1) }))
	tx.Handle(resp(func(b mad.DRSMP) { b.MAD().SetAttrID(mad.AttrPortInfo) }))
	tx.Handle(resp(func(b mad.DRSMP) { b.SetDirection(false) }))
	tx.Handle(resp(func(b mad.DRSMP) { b.MAD().SetMgmtClass(mad.ClassPerfMgt) }))
	assert.Zero(t, called)
	assert.Equal(t, EngineStats{Malformed: 2, Unexpected: 3}, tx.stats)
	// The transport hands a request back as lost: it is due again at once.
	lost := resp(func(b mad.DRSMP) { b.MAD().SetMethod(mad.MethodGet) })
	lost.Status = 110
	tx.Handle(lost)
	assert.EqualValues(t, 1, tx.stats.Lost)
	for _, tt := range tx.pending {
		assert.Equal(t, clk.Now(), tt.deadline)
	}
	tx.Handle(resp(func(mad.DRSMP) {}))
	assert.Equal(t, 1, called)
	tx.Handle(resp(func(mad.DRSMP) {}))
	assert.Equal(t, 1, called, "a second answer is a stray")
	assert.EqualValues(t, 4, tx.stats.Unexpected)
}

// TestHandBackStale: a transport whose own timeout is as long as the
// SM's (the soft HCA's attach point: 200 ms, as ibsm's) hands the first
// attempt back just after the SM resent it. That hand-back is stale: the
// resend is still due at its own deadline, not resent at once, which
// would burn a retry and an SMP per lost SMP. The hand-back of the
// attempt in flight makes it due at once.
func TestHandBackStale(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	p := &testsupport.SilentPort{Clock: clk}
	tx := newTestTxn(t, p, clk, Config{Timeout: time.Second, Retries: 3})
	tx.SetPhase("test")
	tx.Get(Request{DR: true, Path: []uint8{0}, Attr: mad.AttrNodeInfo}, func(*Response) {})
	require.NoError(t, tx.Fill())
	handBack := func() {
		b, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: p.TIDs[0], AttrID: mad.AttrNodeInfo})
		tx.Handle(madport.MAD{Data: b, Status: 110})
		require.NoError(t, tx.Fill())
	}
	clk.Advance(time.Second)
	require.NoError(t, tx.expire(clk.Now()))
	require.Len(t, p.Sent, 2, "resent at its deadline")
	clk.Advance(time.Millisecond)
	handBack() // the first attempt's
	require.NoError(t, tx.expire(clk.Now()))
	assert.Len(t, p.Sent, 2, "a stale hand-back sends nothing")
	assert.Equal(t, EngineStats{Stale: 1}, tx.stats)
	for _, tt := range tx.pending {
		assert.Equal(t, time.Unix(2, 0), tt.deadline, "the resend keeps its deadline")
	}
	clk.Advance(100 * time.Millisecond)
	handBack() // the second's: the attempt in flight
	require.NoError(t, tx.expire(clk.Now()))
	assert.Len(t, p.Sent, 3, "resent at once")
	assert.Equal(t, EngineStats{Stale: 1, Lost: 1}, tx.stats)
	assert.Equal(t, PhaseStats{SMPs: 3, Retries: 2}, *tx.phases["test"])
}
