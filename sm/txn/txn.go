package txn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"ibfab/internal/clock"
	"ibfab/madport"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// Errors a transaction fails with.
var (
	// ErrTimeout: no answer after every retry.
	ErrTimeout = errors.New("sm: no response")
	// ErrStatus: the answer carried a non-zero MAD status; the *StatusError
	// says which.
	ErrStatus = errors.New("sm: error status")
)

// StatusError is a response with a non-zero status.
type StatusError struct {
	Status mad.Status
}

func (e *StatusError) Error() string { return fmt.Sprintf("sm: response status %v", e.Status) }

// Is makes errors.Is(err, ErrStatus) hold.
func (e *StatusError) Is(target error) bool { return target == ErrStatus }

type transaction struct {
	req      Request
	tid      uint64
	attempts int
	deadline time.Time
	sent     uint64 // the layer's send count when this attempt went out
	// waiting: timed out, not in flight, due to be resent when the window
	// has room.
	waiting bool
	// handedBack counts the attempts the transport reported failed.
	handedBack int
	phase      string
	cb         func(*Response)
}

// PhaseStats counts the SMPs of one phase.
type PhaseStats struct {
	SMPs     uint64 // sent, retries included
	Retries  uint64
	Timeouts uint64 // transactions that failed with ErrTimeout
	Errors   uint64 // answers with a bad status, and sends the port refused
	Canceled uint64 // transactions given up before their answer or timeout
}

// EngineStats counts what arrived that was not an answer.
type EngineStats struct {
	Malformed  uint64 // too short, or not an SMP
	Unexpected uint64 // answers to no pending transaction (late or foreign)
	Requests   uint64 // requests and traps passed to the unsolicited handler
	Lost       uint64 // sends the transport reported failed (MAD.Status)
	Stale      uint64 // such reports for an attempt already resent
}

// Layer is a transaction layer on one port. It is not safe for
// concurrent use, but for Wake: everything runs on the goroutine that
// calls Run and Wait.
type Layer struct {
	port madport.Port
	clk  clock.Clock
	// The adaptive window: window SMPs may be in flight (inflight are),
	// between 1 and maxWindow; answers counts those since it last
	// changed; sends counts every SMP sent, lastAnswered is the latest
	// send (by that count) answered, and cutAt what sends was at the last
	// cut. windowMin is the narrowest since ResetWindowMin.
	maxWindow    int
	window       int
	windowMin    int
	inflight     int
	answers      int
	sends        uint64
	lastAnswered uint64
	cutAt        uint64
	resend       []*transaction // timed out and waiting, oldest first
	// burst is the most SMPs sent back to back (0: no limit), burstSent
	// those sent since the last answer, timeout, or moment with nothing
	// in flight.
	burst     int
	burstSent int

	timeout time.Duration
	probeTO time.Duration // a probe's timeout
	retries int
	mkey    uint64
	tidHigh uint64
	seq     uint32
	pending map[uint32]*transaction // by the low 32 bits of the TID
	queue   []*transaction
	phase   string
	phases  map[string]*PhaseStats
	// attrs counts the SMPs sent, retries included, by method and
	// attribute: what a sweep wrote where (a bench compares it with
	// another SM's).
	attrs map[AttrKey]uint64
	// wakeable makes a wait end early when Wake is called (the SM
	// watching the subnet with control calls to serve); wakeup holds
	// the one pending wake.
	wakeable      bool
	wakeup        chan struct{}
	stats         EngineStats
	OnUnsolicited func(m madport.MAD) // requests and traps for the SM
	// KeyOf, when set, gives the M_Key an SMP carries (its target
	// port's); else every SMP carries mkey.
	KeyOf func(r *Request) uint64
	OnSA  func(m madport.MAD) // SubnAdm MADs, for the SA
}

// New returns a layer on port whose deadlines run on clk. cfg is taken
// as given (Config.SetDefaults fills in its zero fields); every SMP
// carries mkey unless KeyOf says otherwise.
func New(port madport.Port, clk clock.Clock, cfg Config, mkey uint64) *Layer {
	return &Layer{
		port: port, clk: clk, maxWindow: cfg.Window, window: cfg.Window, windowMin: cfg.Window, burst: cfg.Burst,
		timeout: cfg.Timeout, probeTO: cfg.ProbeTimeout, retries: cfg.Retries,
		mkey: mkey, tidHigh: uint64(cfg.TIDHigh) << 32,
		pending: map[uint32]*transaction{}, phases: map[string]*PhaseStats{}, attrs: map[AttrKey]uint64{},
		wakeup: make(chan struct{}, 1),
	}
}

// Wake ends the current wakeable wait, or the next one; safe for
// concurrent use.
func (e *Layer) Wake() {
	select {
	case e.wakeup <- struct{}{}:
	default:
	}
}

// wakeableCtx returns ctx, ended also by Wake when the layer is wakeable,
// and the function that releases it.
func (e *Layer) wakeableCtx(ctx context.Context) (context.Context, func()) {
	if !e.wakeable {
		return ctx, func() {}
	}
	wctx, cancel := context.WithCancel(ctx)
	stop := make(chan struct{})
	go func() {
		select {
		case <-e.wakeup:
			cancel()
		case <-stop:
		}
	}()
	return wctx, func() { close(stop); cancel() }
}

// AttrKey is a kind of SMP (or GMP): its method and attribute, and the
// GMP's class (0 for SMPs).
type AttrKey struct {
	method mad.Method
	attr   mad.AttrID
	class  mad.MgmtClass
}

func (k AttrKey) String() string {
	if k.class != 0 {
		return k.method.String() + " " + k.attr.Name(k.class)
	}
	return k.method.String() + " " + k.attr.String()
}

// AttrsSince returns the SMPs sent since before (a copy of attrs taken
// then), by "Method Attribute"; nil when none were.
func (e *Layer) AttrsSince(before map[AttrKey]uint64) map[string]uint64 {
	var out map[string]uint64
	for k, n := range e.attrs {
		if d := n - before[k]; d > 0 {
			if out == nil {
				out = map[string]uint64{}
			}
			out[k.String()] = d
		}
	}
	return out
}

// Phase is the phase later sends count for.
func (e *Layer) Phase() string { return e.phase }

// Phases returns a copy of the SMP counts by phase.
func (e *Layer) Phases() map[string]PhaseStats {
	out := make(map[string]PhaseStats, len(e.phases))
	for k, v := range e.phases {
		out[k] = *v
	}
	return out
}

// AttrCounts returns a copy of the SMP counts by method and attribute,
// for AttrsSince.
func (e *Layer) AttrCounts() map[AttrKey]uint64 { return maps.Clone(e.attrs) }

// Sends counts every SMP sent, retries included.
func (e *Layer) Sends() uint64 { return e.sends }

// WindowMin is the narrowest the window got since ResetWindowMin.
func (e *Layer) WindowMin() int { return e.windowMin }

// SetWakeable makes the waits that follow end early on Wake (true), or
// not (false).
func (e *Layer) SetWakeable(on bool) { e.wakeable = on }

// Stats returns what arrived that was not an answer.
func (e *Layer) Stats() EngineStats { return e.stats }

// CountUnexpected counts a MAD the caller took from OnUnsolicited or OnSA
// and found to answer nothing.
func (e *Layer) CountUnexpected() { e.stats.Unexpected++ }

// TIDHigh is the upper half of every TID, shifted into place: a caller
// that sends outside the layer (the SM's traps) keeps to it.
func (e *Layer) TIDHigh() uint64 { return e.tidHigh }

// SetPhase makes later sends count for phase.
func (e *Layer) SetPhase(phase string) { e.phase = phase }

// PhaseStats returns phase's counts, made at first use; the caller may
// read them before and after a phase for its share.
func (e *Layer) PhaseStats(phase string) *PhaseStats {
	s := e.phases[phase]
	if s == nil {
		s = &PhaseStats{}
		e.phases[phase] = s
	}
	return s
}

// Submit queues r; cb runs from Run once it is answered or failed.
func (e *Layer) Submit(r Request, cb func(*Response)) {
	e.queue = append(e.queue, &transaction{req: r, phase: e.phase, cb: cb})
}

// Get submits r as a Get.
func (e *Layer) Get(r Request, cb func(*Response)) {
	r.Method = mad.MethodGet
	e.Submit(r, cb)
}

// Set submits r as a Set.
func (e *Layer) Set(r Request, cb func(*Response)) {
	r.Method = mad.MethodSet
	e.Submit(r, cb)
}

// PendingTIDs returns the TIDs of the transactions in flight or waiting
// for a resend, in no order.
func (e *Layer) PendingTIDs() []uint64 {
	out := make([]uint64, 0, len(e.pending))
	for _, t := range e.pending {
		out = append(out, t.tid)
	}
	return out
}

// Busy reports whether transactions are queued or in flight.
func (e *Layer) Busy() bool { return len(e.queue) > 0 || len(e.pending) > 0 }

// Run sends and waits until no transaction is queued or in flight. It
// returns early only for ctx's end or a port that failed for good.
func (e *Layer) Run(ctx context.Context) error {
	for {
		if err := e.Fill(); err != nil {
			return err
		}
		if len(e.pending) == 0 {
			return nil
		}
		if err := e.Wait(ctx, time.Time{}); err != nil {
			return err
		}
	}
}

// Fill sends, while the window has room and the burst is not over, the
// transactions due for a resend and then queued ones.
func (e *Layer) Fill() error {
	if e.inflight == 0 {
		e.burstSent = 0
	}
	for e.inflight < e.window && (e.burst == 0 || e.burstSent < e.burst) {
		if t := e.nextResend(); t != nil {
			// Built anew: the port may have kept (a fake one even
			// changed) the last attempt's buffer. It built then, so
			// it builds now.
			buf, _ := e.build(&t.req, t.tid)
			if err := e.send(t, buf); err != nil {
				return err
			}
			continue
		}
		if len(e.queue) == 0 {
			break
		}
		t := e.queue[0]
		e.queue[0] = nil
		e.queue = e.queue[1:]
		if err := e.start(t); err != nil {
			return err
		}
	}
	if len(e.queue) == 0 {
		e.queue = nil // let the backing array go
	}
	return nil
}

// nextResend takes the oldest transaction waiting for a resend, skipping
// those answered late or canceled meanwhile.
func (e *Layer) nextResend() *transaction {
	for len(e.resend) > 0 {
		t := e.resend[0]
		e.resend[0] = nil
		e.resend = e.resend[1:]
		if t.waiting && e.pending[uint32(t.tid)] == t {
			return t
		}
	}
	e.resend = nil
	return nil
}

// timedOut narrows the window for t's timeout when it is a loss (an SMP
// sent after t was answered at its first attempt) of a new burst (t was
// sent after the last cut).
func (e *Layer) timedOut(t *transaction) {
	if e.lastAnswered <= t.sent || t.sent <= e.cutAt {
		return
	}
	e.window = max(1, e.window/2)
	e.windowMin = min(e.windowMin, e.window)
	e.cutAt, e.answers = e.sends, 0
}

// answered notes that t was answered, and widens the window by one after
// a run of as many answers as it holds. The answer to a resent SMP may be
// the late one to its first attempt: it proves nothing about what was
// sent later (Karn's rule), so only first attempts move lastAnswered.
func (e *Layer) answered(t *transaction) {
	if t.attempts == 1 {
		e.lastAnswered = max(e.lastAnswered, t.sent)
	}
	if e.window >= e.maxWindow {
		return
	}
	if e.answers++; e.answers >= e.window {
		e.window++
		e.answers = 0
	}
}

// ResetWindowMin starts a new account of the narrowest window (a
// sweep's).
func (e *Layer) ResetWindowMin() { e.windowMin = e.window }

// start gives t a fresh TID and sends it.
func (e *Layer) start(t *transaction) error {
	e.seq++
	if e.seq == 0 {
		e.seq = 1
	}
	for e.pending[e.seq] != nil {
		e.seq++
	}
	t.tid = e.tidHigh | uint64(e.seq)
	buf, err := e.build(&t.req, t.tid)
	if err != nil {
		// A request we cannot build is a bug of the caller; fail it.
		e.PhaseStats(t.phase).Errors++
		t.cb(&Response{Req: &t.req, Err: err})
		return nil
	}
	e.pending[e.seq] = t
	return e.send(t, buf)
}

func (e *Layer) build(r *Request, tid uint64) ([]byte, error) {
	if r.Class != 0 {
		return buildGMP(r, tid)
	}
	mkey := e.mkey
	if e.KeyOf != nil {
		mkey = e.KeyOf(r)
	}
	if r.DR {
		return mad.AppendDRRequest(make([]byte, 0, mad.MADSize), &mad.DRRequest{
			Method: r.Method, TransactionID: tid, AttrID: r.Attr, AttrModifier: r.Mod,
			MKey: mkey, Path: r.Path, Data: r.Data, DrSLID: r.DrSLID,
		})
	}
	if len(r.Data) > mad.SMPDataSize {
		return nil, fmt.Errorf("sm: SMP data of %d bytes", len(r.Data))
	}
	f := mad.SMPFields{Method: r.Method, TransactionID: tid, AttrID: r.Attr, AttrModifier: r.Mod, MKey: mkey}
	copy(f.Data[:], r.Data)
	return mad.AppendSMP(make([]byte, 0, mad.MADSize), &f), nil
}

// send transmits t (again) in buf, which the port may keep, in flight in
// the window, and sets its deadline.
func (e *Layer) send(t *transaction, buf []byte) error {
	t.attempts++
	t.waiting = false
	e.inflight++
	e.sends++
	e.burstSent++
	t.sent = e.sends
	e.attrs[AttrKey{t.req.Method, t.req.Attr, t.req.Class}]++
	ps := e.PhaseStats(t.phase)
	ps.SMPs++
	if t.attempts > 1 {
		ps.Retries++
	}
	to := e.timeout
	if t.req.Probe {
		to = e.probeTO
	}
	t.deadline = e.clk.Now().Add(to)
	lid := uint16(mad.PermissiveLID)
	if !t.req.DR || t.req.DrSLID != 0 {
		lid = t.req.LID
	}
	m := madport.MAD{LID: lid, Data: buf}
	if t.req.Class != 0 {
		m.QP, m.QKey, m.PKey = wire.QP1, wire.QP1QKey, uint16(mad.DefaultPKey)
	}
	err := e.port.Send(m)
	switch {
	case errors.Is(err, madport.ErrClosed):
		return err
	case err != nil:
		// A refused send is a lost one: the deadline retries it.
		ps.Errors++
	}
	return nil
}

// Cancel forgets, without calling back, the queued and pending
// transactions drop reports true for; their late answers count as
// unexpected. It returns how many it dropped.
func (e *Layer) Cancel(drop func(r *Request) bool) int {
	n := 0
	for seq, t := range e.pending {
		if drop(&t.req) {
			delete(e.pending, seq)
			if !t.waiting {
				e.inflight--
			}
			e.PhaseStats(t.phase).Canceled++
			n++
		}
	}
	q := e.queue[:0]
	for _, t := range e.queue {
		if drop(&t.req) {
			n++
			continue
		}
		q = append(q, t)
	}
	clear(e.queue[len(q):])
	e.queue = q
	return n
}

// Wait receives one MAD, or lets the earliest deadline pass, and handles
// it. With no transaction in flight it waits until until (zero: forever)
// for requests and traps.
func (e *Layer) Wait(ctx context.Context, until time.Time) error {
	deadline := until
	for _, t := range e.pending {
		if t.waiting {
			continue
		}
		if deadline.IsZero() || t.deadline.Before(deadline) {
			deadline = t.deadline
		}
	}
	now := e.clk.Now()
	if !deadline.IsZero() && !now.Before(deadline) {
		return e.expire(now)
	}
	m, err := e.recv(ctx, now, deadline)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return e.expire(e.clk.Now())
		}
		return err
	}
	e.Handle(m)
	return nil
}

// recv waits on the port for one MAD until deadline (zero: none), which
// ends it with context.DeadlineExceeded or context.Canceled. On the real
// clock a port that can wait until a time does so: a context and a timer
// for each of the SM's thousands of waits cost it CPU and allocations
// per SMP that BenchmarkTxn shows.
func (e *Layer) recv(ctx context.Context, now, deadline time.Time) (madport.MAD, error) {
	ctx, release := e.wakeableCtx(ctx)
	defer release()
	if u, ok := e.port.(madport.UntilReceiver); ok && e.clk == clock.Real() {
		return u.RecvUntil(ctx, deadline)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !deadline.IsZero() {
		tm := e.clk.AfterFunc(deadline.Sub(now), cancel)
		defer tm.Stop()
	}
	return e.port.Recv(wctx)
}

// expire narrows the window for the transactions whose deadline has
// passed, lines them up for a resend or fails them, and sends what the
// window then admits.
func (e *Layer) expire(now time.Time) error {
	var again, failed []*transaction
	e.burstSent = 0 // a timeout's worth of time has passed since those went
	for seq, t := range e.pending {
		if t.waiting || now.Before(t.deadline) {
			continue
		}
		e.inflight--
		if t.req.Probe || t.req.Once {
			delete(e.pending, seq)
			failed = append(failed, t)
			continue
		}
		e.timedOut(t)
		if t.attempts <= e.retries {
			again = append(again, t)
			continue
		}
		delete(e.pending, seq)
		failed = append(failed, t)
	}
	// In TID order, so that neither the resends nor what callbacks queue
	// depend on map order.
	sortTxns(again)
	for _, t := range again {
		t.waiting = true
		e.resend = append(e.resend, t)
	}
	sortTxns(failed)
	for _, t := range failed {
		e.PhaseStats(t.phase).Timeouts++
		t.cb(&Response{Req: &t.req, Err: ErrTimeout})
	}
	return e.Fill()
}

func sortTxns(ts []*transaction) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].tid < ts[j-1].tid; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// Handle takes one received MAD: an answer to a pending transaction, or
// something for the unsolicited handler. Nothing in it can make Handle
// panic.
func (e *Layer) Handle(m madport.MAD) {
	b := m.Data
	if len(b) >= mad.MADSize && mad.MAD(b).MgmtClass() == mad.ClassSubnAdm && m.Status == 0 && e.OnSA != nil {
		e.stats.Requests++
		e.OnSA(m) // the SA's: requests, and answers to its Reports
		return
	}
	if len(b) < mad.MADSize || !(mad.MAD(b).MgmtClass().IsSubn() || isGMPClass(mad.MAD(b).MgmtClass())) {
		e.stats.Malformed++
		return
	}
	h := mad.MAD(b)
	switch {
	case m.Status != 0:
		e.handedBack(h)
	case !h.Method().IsResponse() && !h.MgmtClass().IsSubn():
		// A CC trap or request: nothing here serves those.
		e.stats.Unexpected++
	case !h.Method().IsResponse():
		e.stats.Requests++
		if e.OnUnsolicited != nil {
			e.OnUnsolicited(m)
		}
	default:
		e.answer(b)
	}
}

// handedBack takes the transport's report that it gave up on one of our
// sends (umad's own timeout hands the request back): the attempt is
// retried now rather than at its deadline. A transport gives each
// attempt up in turn, the same time after it went; one whose timeout is
// not shorter than ours (a soft HCA's attach point waits 200 ms, as ibsm
// does) hands an attempt back after ibsm resent it itself: that
// hand-back is for an earlier attempt, and the one in flight is still
// due.
func (e *Layer) handedBack(h mad.MAD) {
	t := e.pending[uint32(h.TransactionID())]
	if t == nil || h.Method().IsResponse() {
		e.stats.Unexpected++
		return
	}
	t.handedBack++
	if t.waiting || t.handedBack < t.attempts {
		e.stats.Stale++
		return
	}
	t.deadline = e.clk.Now()
	e.stats.Lost++
}

// answer completes the pending transaction response b answers, if it
// answers one; anything else is unexpected.
func (e *Layer) answer(b []byte) {
	h := mad.MAD(b)
	seq := uint32(h.TransactionID())
	t := e.pending[seq]
	if t == nil || !answers(b, &t.req) {
		e.stats.Unexpected++
		return
	}
	delete(e.pending, seq)
	if !t.waiting {
		e.inflight--
	}
	e.burstSent = 0 // the first hop forwards again
	e.answered(t)
	r := &Response{Req: &t.req}
	if st := responseStatus(b, &t.req); st != mad.StatusOK {
		e.PhaseStats(t.phase).Errors++
		r.Err = &StatusError{Status: st}
	} else {
		r.setData(b)
	}
	t.cb(r)
}
