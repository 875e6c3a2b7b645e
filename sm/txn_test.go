package sm

import (
	"context"
	"errors"
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

// TestWindow: never more than Window SMPs in flight; each lost one is sent
// 1+Retries times, Timeout apart, then fails.
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
	// The first three go at 0 s and are resent at 1 s and 2 s; at 3 s
	// they fail and the last two go, resent at 4 s and 5 s.
	var at []int64
	for _, s := range p.sent {
		at = append(at, s.Unix())
	}
	assert.Equal(t, []int64{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 5}, at)
	ps := tx.phases["test"]
	assert.Equal(t, PhaseStats{SMPs: 15, Retries: 10, Timeouts: 5}, *ps)
	for _, tid := range p.tids {
		assert.EqualValues(t, 0xabc, tid>>32, "TID %#x", tid)
	}
	assert.Len(t, uniq(p.tids), 5, "a resend keeps its TID")
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
