package sm

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

// The transaction layer: every SMP the SM sends is a transaction with a
// TID, held in a window of SMPs in flight; one that gets no answer within
// Config.Timeout is sent again, up to Config.Retries times, then fails
// with ErrTimeout. Everything runs on the caller's goroutine: run sends
// what the window admits, then waits on the port for one MAD or the
// earliest deadline, whichever comes first, and calls the transaction's
// callback, which may queue more. Deadlines are timers on the SM's clock,
// so a fake port with a manual clock times requests out without sleeping.
//
// The window adapts as TCP's congestion window does (AIMD): it starts at
// Config.Window, its maximum; a loss halves it (down to 1), and each run
// of as many answers as the window holds, without a loss, widens it by
// one again. A loss is a timeout of an SMP when one sent after it was
// answered at its first attempt: the fabric answers in order but dropped
// this one, as a switch or a simulator does when a burst overflows its
// small VL15 buffer, and a narrower window then costs less than waiting
// out the timeouts of a wide one. A timeout with nothing sent later
// answered is a stall (a simulator or an SM not scheduled on a loaded
// machine, a dead path): the answers may still come, and a narrower
// window would only make each round trip count more, so the window
// stays. A burst of timeouts is one loss: only an SMP sent after the last
// cut cuts again, so the window halves at most once per Timeout. Resends
// wait for room in the window too, ahead of new requests.
//
// Bursts: however much room the window has, at most Config.Burst SMPs go
// out back to back; more wait for an answer (or a timeout, or nothing in
// flight). Every SMP crosses the SM's first hop, and while that switch
// does not forward (a soft switch's process waiting for the CPU) it also
// passes no answer back, so the SM sends it little more than one burst,
// which a small VL15 buffer takes (silicon's may hold only a few SMPs).
// Without the limit, new work queued into an open window, such as the
// scans of the three neighbours of a killed switch (15 SMPs at once),
// overflows a buffer smaller than the window, and each SMP dropped is
// resent only after a full Timeout.

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

// request is one SMP to send: directed-route along Path (Path[0] unused)
// or LID-routed to LID. A directed-route request with a DrSLID (the SM's
// own LID) first goes LID-routed to LID, the switch where its directed
// part starts.
type Request struct {
	DR     bool
	Path   []uint8
	LID    uint16
	DrSLID uint16
	Method mad.Method
	Attr   mad.AttrID
	Mod    uint32
	Data   []byte // attribute data of a Set, at most 64 bytes
	// tag is the caller's, for cancel to recognize the request by.
	Tag any
	// class, when not zero, makes the request a GMP of that class, sent
	// LID-routed to QP1: mad.ClassCongestion, with ccKey in its CC_Key
	// field and up to 192 bytes of data, or mad.ClassVendorAR (ibfab's
	// adaptive routing) with up to 232.
	Class mad.MgmtClass
	CCKey uint64
	// probe marks a request to a device that may be gone: one attempt,
	// timed out after Config.ProbeTimeout, and its timeout is no loss
	// for the window. The caller checks another way before trying again.
	Probe bool
	// once marks a request sent one time only, timed out after
	// Config.Timeout, its timeout no loss for the window: a standby's poll
	// of the master, whose silence is what it watches for.
	Once bool
}

// String names the request for problem reports.
func (r *Request) String() string {
	where := fmt.Sprintf("lid %d", r.LID)
	switch {
	case r.DR && r.DrSLID != 0:
		where = fmt.Sprintf("lid %d then path %s", r.LID, pathString(r.Path))
	case r.DR:
		where = "path " + pathString(r.Path)
	}
	return fmt.Sprintf("%v(%v %#x) %s", r.Method, r.Attr, r.Mod, where)
}

// response is the outcome of a transaction: the answer's attribute data,
// or an error.
type Response struct {
	Req *Request
	// data is the answer's attribute data: an SMP's 64 bytes (buf's), a
	// CC MAD's 192 bytes of management data, or for CongestionLog its
	// 224 bytes of log and management data, an AR MAD's 232 bytes.
	Data []byte
	Err  error
	buf  [mad.SMPDataSize]byte
}

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

type txnLayer struct {
	port madport.Port
	clk  clock.Clock
	// The adaptive window: window SMPs may be in flight (inflight are),
	// between 1 and maxWindow; answers counts those since it last
	// changed; sends counts every SMP sent, lastAnswered is the latest
	// send (by that count) answered, and cutAt what sends was at the last
	// cut. windowMin is the narrowest since resetWindowMin.
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
	// wakeable makes a wait end early when wake is called (the SM
	// watching the subnet with control calls to serve); wakeup holds
	// the one pending wake.
	wakeable      bool
	wakeup        chan struct{}
	stats         EngineStats
	OnUnsolicited func(m madport.MAD) // requests and traps for the SM
	// keyOf, when set, gives the M_Key an SMP carries (its target
	// port's); else every SMP carries mkey.
	KeyOf func(r *Request) uint64
	OnSA  func(m madport.MAD) // SubnAdm MADs, for the SA
}

func newTxnLayer(port madport.Port, clk clock.Clock, cfg *Config) *txnLayer {
	return &txnLayer{
		port: port, clk: clk, maxWindow: cfg.Window, window: cfg.Window, windowMin: cfg.Window, burst: cfg.Burst,
		timeout: cfg.Timeout, probeTO: cfg.ProbeTimeout, retries: cfg.Retries,
		mkey: cfg.MKey, tidHigh: uint64(cfg.TIDHigh) << 32,
		pending: map[uint32]*transaction{}, phases: map[string]*PhaseStats{}, attrs: map[AttrKey]uint64{},
		wakeup: make(chan struct{}, 1),
	}
}

// wake ends the current wakeable wait, or the next one; safe for
// concurrent use.
func (e *txnLayer) Wake() {
	select {
	case e.wakeup <- struct{}{}:
	default:
	}
}

// wakeableCtx returns ctx, ended also by wake when the layer is wakeable,
// and the function that releases it.
func (e *txnLayer) wakeableCtx(ctx context.Context) (context.Context, func()) {
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

// attrKey is a kind of SMP (or GMP): its method and attribute, and the
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

// attrsSince returns the SMPs sent since before (a copy of attrs taken
// then), by "Method Attribute"; nil when none were.
func (e *txnLayer) AttrsSince(before map[AttrKey]uint64) map[string]uint64 {
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
func (e *txnLayer) Phase() string { return e.phase }

// Phases returns a copy of the SMP counts by phase.
func (e *txnLayer) Phases() map[string]PhaseStats {
	out := make(map[string]PhaseStats, len(e.phases))
	for k, v := range e.phases {
		out[k] = *v
	}
	return out
}

// AttrCounts returns a copy of the SMP counts by method and attribute,
// for AttrsSince.
func (e *txnLayer) AttrCounts() map[AttrKey]uint64 { return maps.Clone(e.attrs) }

// Sends counts every SMP sent, retries included.
func (e *txnLayer) Sends() uint64 { return e.sends }

// WindowMin is the narrowest the window got since ResetWindowMin.
func (e *txnLayer) WindowMin() int { return e.windowMin }

// SetWakeable makes the waits that follow end early on Wake (true), or
// not (false).
func (e *txnLayer) SetWakeable(on bool) { e.wakeable = on }

// Stats returns what arrived that was not an answer.
func (e *txnLayer) Stats() EngineStats { return e.stats }

// CountUnexpected counts a MAD the caller took from OnUnsolicited or OnSA
// and found to answer nothing.
func (e *txnLayer) CountUnexpected() { e.stats.Unexpected++ }

// TIDHigh is the upper half of every TID, shifted into place: a caller
// that sends outside the layer (the SM's traps) keeps to it.
func (e *txnLayer) TIDHigh() uint64 { return e.tidHigh }

// setPhase makes later sends count for phase.
func (e *txnLayer) SetPhase(phase string) { e.phase = phase }

func (e *txnLayer) PhaseStats(phase string) *PhaseStats {
	s := e.phases[phase]
	if s == nil {
		s = &PhaseStats{}
		e.phases[phase] = s
	}
	return s
}

// submit queues r; cb runs from run once it is answered or failed.
func (e *txnLayer) Submit(r Request, cb func(*Response)) {
	e.queue = append(e.queue, &transaction{req: r, phase: e.phase, cb: cb})
}

// get and set are the common requests.
func (e *txnLayer) Get(r Request, cb func(*Response)) {
	r.Method = mad.MethodGet
	e.Submit(r, cb)
}

func (e *txnLayer) Set(r Request, cb func(*Response)) {
	r.Method = mad.MethodSet
	e.Submit(r, cb)
}

// busy reports whether transactions are queued or in flight.
func (e *txnLayer) Busy() bool { return len(e.queue) > 0 || len(e.pending) > 0 }

// run sends and waits until no transaction is queued or in flight. It
// returns early only for ctx's end or a port that failed for good.
func (e *txnLayer) Run(ctx context.Context) error {
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

// fill sends, while the window has room and the burst is not over, the
// transactions due for a resend and then queued ones.
func (e *txnLayer) Fill() error {
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
func (e *txnLayer) nextResend() *transaction {
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
func (e *txnLayer) timedOut(t *transaction) {
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
func (e *txnLayer) answered(t *transaction) {
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

// resetWindowMin starts a new account of the narrowest window (a
// sweep's).
func (e *txnLayer) ResetWindowMin() { e.windowMin = e.window }

// start gives t a fresh TID and sends it.
func (e *txnLayer) start(t *transaction) error {
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

func (e *txnLayer) build(r *Request, tid uint64) ([]byte, error) {
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
func (e *txnLayer) send(t *transaction, buf []byte) error {
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

// cancel forgets, without calling back, the queued and pending
// transactions drop reports true for; their late answers count as
// unexpected. It returns how many it dropped.
func (e *txnLayer) Cancel(drop func(r *Request) bool) int {
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

// wait receives one MAD, or lets the earliest deadline pass, and handles
// it. With no transaction in flight it waits until until (zero: forever)
// for requests and traps.
func (e *txnLayer) Wait(ctx context.Context, until time.Time) error {
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
func (e *txnLayer) recv(ctx context.Context, now, deadline time.Time) (madport.MAD, error) {
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
func (e *txnLayer) expire(now time.Time) error {
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

// handle takes one received MAD: an answer to a pending transaction, or
// something for the unsolicited handler. Nothing in it can make handle
// panic.
func (e *txnLayer) Handle(m madport.MAD) {
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
func (e *txnLayer) handedBack(h mad.MAD) {
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
func (e *txnLayer) answer(b []byte) {
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

// answers reports whether response b, whose TID is req's, is the answer
// to req: a GetResp of its attribute, in its class and routing (an SMP
// directed-route or LID-routed as req was, a GMP of req's class), and a
// directed-route one on its way back.
func answers(b []byte, req *Request) bool {
	h := mad.MAD(b)
	switch {
	case h.AttrID() != req.Attr || h.Method() != mad.MethodGetResp:
		return false
	case (h.MgmtClass() == mad.ClassSubnDirected) != req.DR:
		return false
	case req.Class == 0 && !h.MgmtClass().IsSubn():
		return false
	case req.Class != 0 && h.MgmtClass() != req.Class:
		return false
	}
	return !req.DR || mad.DRSMP(b).Direction()
}

// responseStatus is answer b's status: a directed-route SMP carries its
// own.
func responseStatus(b []byte, req *Request) mad.Status {
	if req.DR {
		return mad.DRSMP(b).Status()
	}
	return mad.MAD(b).Status()
}

// setData takes the attribute data of answer b to r's request: a GMP's
// copied as its class lays it out, an SMP's 64 bytes into r.buf.
func (r *Response) setData(b []byte) {
	switch {
	case r.Req.Class != 0:
		r.Data = gmpData(b, r.Req.Attr)
	case r.Req.DR:
		copy(r.buf[:], mad.DRSMP(b).Data())
		r.Data = r.buf[:]
	default:
		copy(r.buf[:], mad.SMP(b).Data())
		r.Data = r.buf[:]
	}
}

// pathString spells a directed route as ibnetdiscover does: "0,1,3".
func pathString(p []uint8) string {
	if len(p) == 0 {
		return "0"
	}
	s := "0"
	for _, x := range p[1:] {
		s += fmt.Sprintf(",%d", x)
	}
	return s
}

// isGMPClass reports whether the SM sends requests of class c (and so
// takes its answers): congestion control and adaptive routing.
func isGMPClass(c mad.MgmtClass) bool { return c == mad.ClassCongestion || c == mad.ClassVendorAR }

// buildGMP builds a class 0x21 request: the CC_Key in its place, the
// data in the management data area (IBA A10.4.1); or a class 0x0A one,
// the data behind the header.
func buildGMP(r *Request, tid uint64) ([]byte, error) {
	switch r.Class {
	case mad.ClassCongestion:
	case mad.ClassVendorAR:
		if len(r.Data) > mad.ARDataSize {
			return nil, fmt.Errorf("sm: AR data of %d bytes", len(r.Data))
		}
		f := mad.ARMADFields{Method: r.Method, TransactionID: tid, AttrID: r.Attr, AttrModifier: r.Mod}
		copy(f.Data[:], r.Data)
		return mad.AppendARMAD(make([]byte, 0, mad.MADSize), &f), nil
	default:
		return nil, fmt.Errorf("sm: GMP class %v", r.Class)
	}
	if len(r.Data) > mad.CCDataSize {
		return nil, fmt.Errorf("sm: CC data of %d bytes", len(r.Data))
	}
	f := mad.CCMADFields{Method: r.Method, TransactionID: tid, AttrID: r.Attr, AttrModifier: r.Mod, CCKey: r.CCKey}
	copy(f.Data[:], r.Data)
	return mad.AppendCCMAD(make([]byte, 0, mad.MADSize), &f), nil
}

// gmpData copies the attribute data of a GMP answer: for congestion
// control the log data and the management data for CongestionLog, the
// management data otherwise; for adaptive routing all behind the header.
func gmpData(b []byte, attr mad.AttrID) []byte {
	if mad.MAD(b).MgmtClass() == mad.ClassVendorAR {
		return append([]byte(nil), mad.ARMAD(b).Data()...)
	}
	if attr == mad.AttrCongestionLog {
		return append([]byte(nil), mad.CCMAD(b).LogData()...)
	}
	return append([]byte(nil), mad.CCMAD(b).Data()...)
}
