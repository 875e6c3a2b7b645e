package rmpp

import (
	"errors"
	"sync"
	"time"

	"ibfab/internal/clock"
	"ibfab/wire/mad"
)

// ReceiverConfig configures a Receiver.
type ReceiverConfig struct {
	// Clock times TotalTime; nil means clock.Real().
	Clock clock.Clock
	// Send transmits an ACK or ABORT, a fresh 256-byte MAD the callee
	// owns. It is called with the Receiver's lock held.
	Send func(m []byte) error
	// Done, when set, is called once if the transfer fails after its
	// first segment without a Handle call to return the error to: when
	// TotalTime runs out (ErrTimeout).
	Done func(err error)
	// Window is how many segments each ACK lets the sender send beyond
	// the one it acknowledges; 0 means DefaultWindow.
	Window uint32
	// TotalTime bounds the transfer from its first segment; 0 means
	// DefaultTotalTime.
	TotalTime time.Duration
	// MaxLength bounds the reassembled message; 0 means no bound beyond
	// the segment count the package takes.
	MaxLength int
}

// Receiver reassembles one RMPP transfer. Its methods are safe for
// concurrent use.
type Receiver struct {
	cfg ReceiverConfig
	clk clock.Clock

	mu       sync.Mutex
	started  bool
	ended    bool // completed or failed
	complete bool
	hdr      int    // class header size
	first    []byte // the first segment, for the header and the ACKs
	total    uint32 // PayloadLength of the first segment (0: not given)
	data     []byte
	expected uint32 // the next SegmentNumber wanted
	window   uint32 // NewWindowLast given in the last ACK
	timer    clock.Timer
	stats    ReceiverStats
}

// ReceiverStats counts what a Receiver did.
type ReceiverStats struct {
	Segments   int `json:"segments"`   // taken in order
	Duplicates int `json:"duplicates"` // already had, re-ACKed
	Dropped    int `json:"dropped"`    // out of order or before the first
	Acks       int `json:"acks"`
	AbortsSent int `json:"aborts_sent"`
}

// NewReceiver returns a Receiver waiting for the first segment.
func NewReceiver(cfg ReceiverConfig) (*Receiver, error) {
	if cfg.Send == nil {
		return nil, errors.New("rmpp: ReceiverConfig.Send is nil")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.TotalTime <= 0 {
		cfg.TotalTime = DefaultTotalTime
	}
	return &Receiver{cfg: cfg, clk: cfg.Clock, expected: 1}, nil
}

// Handle takes one RMPP packet of the transfer from its sender: a DATA
// segment, or a STOP or ABORT. When the segment completes the transfer it
// returns the whole message and done; when the packet ends the transfer
// otherwise, the error (an *Error: the ABORT this side sent, or the STOP
// or ABORT received). Other errors (ErrNotRMPP, ErrFinished) leave the
// transfer as it was. A segment dropped or answered with a repeated ACK
// returns nothing.
func (r *Receiver) Handle(m []byte) (msg []byte, done bool, err error) {
	h, err := check(m)
	if err != nil {
		return nil, false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended && !(r.complete && h.Type == mad.RMPPTypeData) {
		return nil, false, ErrFinished
	}
	if err := r.checkPacket(m, h); err != nil {
		return nil, false, err
	}
	if !r.inOrder(h) {
		return nil, false, nil
	}
	if h.Flags&mad.RMPPFlagFirst != 0 {
		r.start(m, h)
	}
	return r.take(m, h)
}

// checkPacket checks the version, type, status and segment number of
// packet m, whose RMPP header is h, and returns the error that ends the
// transfer: the ABORT sent for a bad packet, or the STOP or ABORT
// received. nil is a DATA segment to go on with. r.mu is held.
func (r *Receiver) checkPacket(m []byte, h mad.RMPPFields) error {
	if h.Version != mad.RMPPVersion1 {
		return r.abort(m, mad.RMPPStatusUnsupported)
	}
	switch h.Type {
	case mad.RMPPTypeData:
	case mad.RMPPTypeStop, mad.RMPPTypeAbort:
		if (h.Type == mad.RMPPTypeStop && !h.Status.IsStop()) || (h.Type == mad.RMPPTypeAbort && !h.Status.IsAbort()) {
			return r.abort(m, mad.RMPPStatusIllegal)
		}
		r.end()
		return &Error{Type: h.Type, Status: h.Status}
	default:
		return r.abort(m, mad.RMPPStatusBadType)
	}
	if h.Status != mad.RMPPStatusNormal {
		return r.abort(m, mad.RMPPStatusIllegal)
	}
	first := h.Flags&mad.RMPPFlagFirst != 0
	if (h.Data1 == 1) != first || (h.Data1 == 0 && !plantedSegmentZero) {
		return r.abort(m, mad.RMPPStatusBadSegment)
	}
	return nil
}

// inOrder reports whether segment h is the one expected next; a segment
// already had is answered with a repeated ACK, one beyond it dropped.
// r.mu is held.
func (r *Receiver) inOrder(h mad.RMPPFields) bool {
	if r.complete {
		// The sender missed the final ACK and resends: repeat it.
		if h.Data1 < r.expected {
			r.stats.Duplicates++
			r.ack(r.expected - 1)
		}
		return false
	}
	switch {
	case h.Data1 < r.expected && (r.started || plantedSegmentZero):
		r.stats.Duplicates++
		r.ack(r.expected - 1)
		return false
	case h.Data1 > r.expected || h.Data1 > maxSegments:
		r.stats.Dropped++
		return false
	}
	return true
}

// take appends the payload of segment m, the one expected, and ACKs it
// when the sender's window ends there; the last segment completes the
// transfer and returns the message. r.mu is held.
func (r *Receiver) take(m []byte, h mad.RMPPFields) (msg []byte, done bool, err error) {
	last := h.Flags&mad.RMPPFlagLast != 0
	per := uint32(mad.MADSize - r.hdr)
	if last {
		// The last segment's PayloadLength counts the RMPP payload used
		// in it, class header included.
		minimum := uint32(r.hdr - mad.RMPPHeaderEnd)
		if h.Data2 > mad.RMPPSegmentSize || h.Data2 < minimum ||
			(r.total != 0 && r.total != (h.Data1-1)*mad.RMPPSegmentSize+h.Data2) {
			return nil, false, r.abort(m, mad.RMPPStatusBadLength)
		}
		per -= mad.RMPPSegmentSize - h.Data2
	}
	if r.cfg.MaxLength > 0 && r.hdr+len(r.data)+int(per) > r.cfg.MaxLength {
		return nil, false, r.abort(m, mad.RMPPStatusResources)
	}
	r.data = append(r.data, m[r.hdr:r.hdr+int(per)]...)
	r.stats.Segments++
	r.expected++
	switch {
	case last:
		r.complete = true
		r.window = max(r.window, h.Data1)
		r.ack(h.Data1)
		r.end()
		out := make([]byte, 0, r.hdr+len(r.data))
		out = append(out, r.first[:r.hdr]...)
		out = append(out, r.data...)
		r.data = nil
		return out, true, nil
	case h.Data1 >= r.window:
		r.window = h.Data1 + r.cfg.Window
		r.ack(h.Data1)
	}
	return nil, false, nil
}

// start begins the transfer at its first segment m; r.mu is held.
func (r *Receiver) start(m []byte, h mad.RMPPFields) {
	r.started = true
	r.first = append([]byte(nil), m[:mad.MADSize]...)
	r.hdr = mad.RMPPClassHeaderSize(mad.MAD(m).MgmtClass())
	r.total = h.Data2
	r.window = 1
	r.timer = r.clk.AfterFunc(r.cfg.TotalTime, r.expire)
}

func (r *Receiver) expire() {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return
	}
	_ = r.abort(r.first, mad.RMPPStatusTotalTime)
	done := r.cfg.Done
	r.mu.Unlock()
	if done != nil {
		done(ErrTimeout)
	}
}

// ack sends an ACK of segment seg with the current window; r.mu is held.
func (r *Receiver) ack(seg uint32) {
	r.stats.Acks++
	_ = r.cfg.Send(control(r.first, true, mad.RMPPTypeAck, mad.RMPPStatusNormal, seg, max(r.window, seg)))
}

// abort sends an ABORT with status st in answer to m and ends the
// transfer (a STOP for Resources); r.mu is held.
func (r *Receiver) abort(m []byte, st mad.RMPPStatus) error {
	t := mad.RMPPTypeAbort
	if st.IsStop() {
		t = mad.RMPPTypeStop
	}
	r.stats.AbortsSent++
	_ = r.cfg.Send(control(m, true, t, st, 0, 0))
	r.end()
	r.complete = false
	return &Error{Type: t, Status: st, Sent: true}
}

// end stops the transfer's timer; r.mu is held.
func (r *Receiver) end() {
	r.ended = true
	if r.timer != nil {
		r.timer.Stop()
	}
}

// Started reports whether the first segment arrived.
func (r *Receiver) Started() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

// Ended reports whether the transfer completed or failed.
func (r *Receiver) Ended() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended
}

// Stats returns what the Receiver did so far.
func (r *Receiver) Stats() ReceiverStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Cancel ends the transfer without sending anything.
func (r *Receiver) Cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.end()
}
