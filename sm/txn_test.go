package sm

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent/agenttest"
	"ibfab/internal/clock"
	"ibfab/madport"
	"ibfab/madport/madporttest"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// silentPort takes every MAD and never answers; Recv lets time pass on
// its manual clock, as madporttest does.
type silentPort struct {
	clk  *clock.Manual
	sent []time.Time
	tids []uint64
}

func (p *silentPort) Send(m madport.MAD) error {
	p.sent = append(p.sent, p.clk.Now())
	p.tids = append(p.tids, mad.MAD(m.Data).TransactionID())
	return nil
}

func (p *silentPort) Recv(ctx context.Context) (madport.MAD, error) {
	for ctx.Err() == nil && p.clk.AdvanceToNext() {
	}
	if ctx.Err() == nil {
		return madport.MAD{}, errors.New("silentPort: nothing will ever come")
	}
	return madport.MAD{}, ctx.Err()
}

func (p *silentPort) Info() (madport.Info, error) { return madport.Info{}, nil }
func (p *silentPort) SetIsSM(bool) error          { return nil }
func (p *silentPort) Close() error                { return nil }

func newTestTxn(t *testing.T, port madport.Port, clk clock.Clock, cfg Config) *txnLayer {
	t.Helper()
	require.NoError(t, cfg.normalize())
	return newTxnLayer(port, clk, &cfg)
}

// TestWindow: at most Window SMPs in flight; each lost one is sent
// 1+Retries times, then fails. The first timeouts halve the window and
// every later one, sent after the cut, cuts again (down to 1): after the
// first burst, resends and new requests go one at a time.
func TestWindow(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	p := &silentPort{clk: clk}
	tx := newTestTxn(t, p, clk, Config{Window: 3, Retries: 2, Timeout: time.Second, TIDHigh: 0xabc})
	tx.setPhase("test")
	var errs []error
	for range 5 {
		tx.get(request{dr: true, path: []uint8{0}, attr: mad.AttrNodeInfo}, func(r *response) { errs = append(errs, r.err) })
	}
	require.NoError(t, tx.run(context.Background()))
	require.Len(t, errs, 5)
	for _, err := range errs {
		assert.ErrorIs(t, err, ErrTimeout)
	}
	// Requests 1-3 go at 0 s. At 1 s they time out, the window halves to
	// 1, and they are resent in turn, each a second after the other: 1,
	// 2, 3, then 1, 2, 3 once more, failing as their last attempt times
	// out. Request 4 then goes at 7 s and 5 at 10 s, three attempts each.
	var at, seq []int64
	for i, s := range p.sent {
		at = append(at, s.Unix())
		seq = append(seq, int64(p.tids[i]&0xffffffff))
	}
	assert.Equal(t, []int64{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, at)
	assert.Equal(t, []int64{1, 2, 3, 1, 2, 3, 1, 2, 3, 4, 4, 4, 5, 5, 5}, seq)
	ps := tx.phases["test"]
	assert.Equal(t, PhaseStats{SMPs: 15, Retries: 10, Timeouts: 5}, *ps)
	for _, tid := range p.tids {
		assert.EqualValues(t, 0xabc, tid>>32, "TID %#x", tid)
	}
	assert.Len(t, uniq(p.tids), 5, "a resend keeps its TID")
	assert.Equal(t, 1, tx.window)
	assert.Equal(t, 1, tx.windowMin)
	assert.Zero(t, tx.inflight)
}

// watchPort is a madporttest port that records, at each send, the SMPs
// in flight (this one included) and the window, and loses the sends drop
// reports true for: i counts sends from 0, burst those since the last
// receive (this one included).
type watchPort struct {
	*madporttest.Port
	tx       *txnLayer
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
		n               int
		drop            func(i, burst int) bool
		// want: the peak in flight, the narrowest window, the window at
		// the end, SMPs sent, requests that failed.
		maxInflight, windowMin, windowEnd int
		smps, timeouts                    int
	}{
		{name: "lossless", window: 8, retries: 3, n: 40,
			maxInflight: 8, windowMin: 8, windowEnd: 8, smps: 40},
		// The first burst of 8 is lost: one cut to 4, and 4+5+6+7 answers
		// widen it back to 8.
		{name: "first burst lost", window: 8, retries: 3, n: 60,
			drop:        func(i, _ int) bool { return i < 8 },
			maxInflight: 8, windowMin: 4, windowEnd: 8, smps: 68},
		// A device that takes bursts of 3 SMPs and drops the rest, as a
		// small VL15 queue does. Of the first 16, 13 are lost and hold
		// their slots until they time out, while the other 3 carry the
		// rest of the requests, one answer at a time. The resends then go
		// in bursts of 8 (5 lost), 4 (1 lost), then 1: the window halves
		// three times, and every request gets through.
		{name: "bursts of 3", window: 16, retries: 3, n: 200,
			drop:        func(_, burst int) bool { return burst > 3 },
			maxInflight: 16, windowMin: 2, windowEnd: 2, smps: 200 + 13 + 5 + 1},
		{name: "window 1, every other send lost", window: 1, retries: 1, n: 10,
			drop:        func(i, _ int) bool { return i%2 == 0 },
			maxInflight: 1, windowMin: 1, windowEnd: 1, smps: 20},
		{name: "all lost", window: 4, retries: 2, n: 6,
			drop:        func(int, int) bool { return true },
			maxInflight: 4, windowMin: 1, windowEnd: 1, smps: 18, timeouts: 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := agenttest.NewFabric(topologies.Thesis8())
			require.NoError(t, err)
			defer f.Close()
			mp, err := madporttest.New(f, 0, 1)
			require.NoError(t, err)
			p := &watchPort{Port: mp, drop: tc.drop}
			tx := newTestTxn(t, p, mp.Clock(), Config{Window: tc.window, Retries: tc.retries})
			p.tx = tx
			tx.setPhase("test")
			answered, failed := 0, 0
			for range tc.n {
				tx.get(request{dr: true, path: []uint8{0, 1}, attr: mad.AttrNodeInfo}, func(r *response) {
					if r.err != nil {
						assert.ErrorIs(t, r.err, ErrTimeout)
						failed++
						return
					}
					answered++
				})
			}
			require.NoError(t, tx.run(context.Background()))
			assert.Equal(t, tc.n, answered+failed, "every request called back once")
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
			assert.EqualValues(t, tc.smps-tc.n, ps.Retries)
			assert.LessOrEqual(t, ps.SMPs, uint64(tc.n*(1+tc.retries)), "retries bounded")
			assert.Zero(t, tx.inflight)
			assert.False(t, tx.busy())
		})
	}
}

// TestWindowLateAnswer: a request that timed out and waits for room in
// the window takes a late answer, and a canceled one gives its slot
// back.
func TestWindowLateAnswer(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	p := &silentPort{clk: clk}
	tx := newTestTxn(t, p, clk, Config{Window: 2, Timeout: time.Second})
	var got []error
	for _, port := range []uint8{1, 2} {
		tx.get(request{dr: true, path: []uint8{0, port}, attr: mad.AttrNodeInfo}, func(r *response) { got = append(got, r.err) })
	}
	require.NoError(t, tx.fill())
	require.Equal(t, 2, tx.inflight)
	clk.Advance(time.Second)
	require.NoError(t, tx.expire(clk.Now()))
	// Window 1: the first is resent, the second waits.
	assert.Equal(t, 1, tx.window)
	assert.Equal(t, 1, tx.inflight)
	assert.Len(t, p.sent, 3)
	var waiting *txn
	for _, tt := range tx.pending {
		if tt.waiting {
			waiting = tt
		}
	}
	require.NotNil(t, waiting)
	b, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGetResp, TransactionID: waiting.tid, AttrID: mad.AttrNodeInfo})
	mad.DRSMP(b).SetDirection(true)
	tx.handle(madport.MAD{Data: b})
	assert.Equal(t, []error{nil}, got, "the late answer is taken")
	assert.Equal(t, 1, tx.inflight, "it held no slot")
	assert.Nil(t, tx.nextResend(), "and is not resent")
	assert.Equal(t, 1, tx.cancel(func(*request) bool { return true }))
	assert.Zero(t, tx.inflight)
	assert.False(t, tx.busy())
}

// TestWindowRegrowth: after one cut the window widens by one per run of
// as many answers as it holds, back to its maximum.
func TestWindowRegrowth(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	tx := newTestTxn(t, &silentPort{clk: clk}, clk, Config{Window: 16})
	tx.window, tx.windowMin = 4, 4
	var widths []int
	for range 130 {
		tx.answered()
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
	f, err := agenttest.NewFabric(topologies.Thesis8())
	require.NoError(t, err)
	defer f.Close()
	p, err := madporttest.New(f, 0, 1)
	require.NoError(t, err)
	lost := 0
	p.SetFilter(func(madport.MAD) bool { lost++; return lost > 2 })
	tx := newTestTxn(t, p, p.Clock(), Config{})
	tx.setPhase("test")
	var got *response
	tx.get(request{dr: true, path: []uint8{0, 1}, attr: mad.AttrNodeInfo}, func(r *response) { got = r })
	require.NoError(t, tx.run(context.Background()))
	require.NotNil(t, got)
	require.NoError(t, got.err)
	assert.Equal(t, mad.NodeTypeSwitch, mad.NodeInfo(got.data).NodeType())
	assert.Equal(t, PhaseStats{SMPs: 3, Retries: 2}, *tx.phases["test"])

	// A bad attribute modifier comes back with an error status.
	tx.get(request{dr: true, path: []uint8{0, 1}, attr: mad.AttrPortInfo, mod: 9}, func(r *response) { got = r })
	require.NoError(t, tx.run(context.Background()))
	var se *StatusError
	require.ErrorAs(t, got.err, &se)
	assert.ErrorIs(t, got.err, ErrStatus)
	assert.Equal(t, mad.StatusInvalidField, se.Status.Code())
	assert.EqualValues(t, 1, tx.phases["test"].Errors)
}

// TestHandleStrays: answers to nothing pending, and garbage, are counted,
// not taken for answers.
func TestHandleStrays(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	tx := newTestTxn(t, &silentPort{clk: clk}, clk, Config{})
	called := 0
	tx.get(request{dr: true, path: []uint8{0}, attr: mad.AttrNodeInfo}, func(*response) { called++ })
	require.NoError(t, tx.fill())
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
	tx.handle(madport.MAD{Data: []byte{1, 2, 3}})
	tx.handle(resp(func(b mad.DRSMP) { b.MAD().SetTransactionID(tid + 1) }))
	tx.handle(resp(func(b mad.DRSMP) { b.MAD().SetAttrID(mad.AttrPortInfo) }))
	tx.handle(resp(func(b mad.DRSMP) { b.SetDirection(false) }))
	tx.handle(resp(func(b mad.DRSMP) { b.MAD().SetMgmtClass(mad.ClassPerfMgt) }))
	assert.Zero(t, called)
	assert.Equal(t, EngineStats{Malformed: 2, Unexpected: 3}, tx.stats)
	// The transport hands a request back as lost: it is due again at once.
	lost := resp(func(b mad.DRSMP) { b.MAD().SetMethod(mad.MethodGet) })
	lost.Status = 110
	tx.handle(lost)
	assert.EqualValues(t, 1, tx.stats.Lost)
	for _, tt := range tx.pending {
		assert.Equal(t, clk.Now(), tt.deadline)
	}
	tx.handle(resp(func(mad.DRSMP) {}))
	assert.Equal(t, 1, called)
	tx.handle(resp(func(mad.DRSMP) {}))
	assert.Equal(t, 1, called, "a second answer is a stray")
	assert.EqualValues(t, 4, tx.stats.Unexpected)
}

// FuzzHandle feeds arbitrary MADs to the transaction layer while a
// request is pending, half of them with its TID: no panic, and an answer
// taken reaches the callback as 64 bytes of data or an error.
func FuzzHandle(f *testing.F) {
	seed, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGetResp, AttrID: mad.AttrNodeInfo})
	mad.DRSMP(seed).SetDirection(true)
	f.Add(seed, true)
	f.Add(seed[:100], true)
	lid := mad.AppendSMP(nil, &mad.SMPFields{Method: mad.MethodTrap, AttrID: mad.AttrNotice})
	f.Add(lid, false)
	sminfo, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrSMInfo, Path: []uint8{0, 1, 2}})
	f.Add(sminfo, false)
	f.Fuzz(func(t *testing.T, b []byte, matchTID bool) {
		clk := clock.NewManual(time.Unix(0, 0))
		p := &silentPort{clk: clk}
		s := &SM{cfg: Config{}, port: p, clk: clk, shadow: map[shadowKey][]byte{}}
		require.NoError(t, s.cfg.normalize())
		s.tx = newTxnLayer(p, clk, &s.cfg)
		s.tx.onUnsoli = s.unsolicited
		s.tx.get(request{dr: true, path: []uint8{0}, attr: mad.AttrNodeInfo}, func(r *response) {
			if r.err == nil && len(r.data) != mad.SMPDataSize {
				t.Fatalf("answer with %d bytes of data", len(r.data))
			}
		})
		if err := s.tx.fill(); err != nil {
			t.Fatal(err)
		}
		if matchTID && len(b) >= 16 {
			b = append([]byte(nil), b...)
			for _, tt := range s.tx.pending {
				mad.MAD(b).SetTransactionID(tt.tid)
			}
		}
		s.tx.handle(madport.MAD{LID: 7, Data: b})
	})
}
