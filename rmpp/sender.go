package rmpp

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"ibfab/internal/clock"
	"ibfab/wire/mad"
)

// Defaults for zero config fields.
const (
	DefaultTimeout   = time.Second
	DefaultWindow    = 64
	DefaultTotalTime = 40 * time.Second
	// maxSegments bounds a transfer: far below what SegmentNumber counts,
	// far above any table a fabric gives (16 MiB of payload).
	maxSegments = 1 << 16
)

// SenderConfig configures a Sender.
type SenderConfig struct {
	// Clock times the resends; nil means clock.Real().
	Clock clock.Clock
	// Send transmits one segment or ABORT, a fresh 256-byte MAD the
	// callee owns. It is called with the Sender's lock held. An error
	// is treated as a lost packet.
	Send func(m []byte) error
	// Done is called once, when the transfer ends: nil once every
	// segment is acknowledged, else why it failed. May be nil.
	Done func(err error)
	// Timeout is how long a window waits for progress before it is
	// resent; 0 means DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times a window is resent before the transfer
	// fails.
	Retries int
}

// Sender sends one message as an RMPP transfer. Its methods are safe for
// concurrent use.
type Sender struct {
	cfg  SenderConfig
	clk  clock.Clock
	segs [][]byte // the DATA segments, index i = SegmentNumber i+1

	mu      sync.Mutex
	started bool
	ended   bool
	err     error
	sent    uint32 // highest SegmentNumber sent since the last (re)send
	lastAck uint32
	window  uint32 // NewWindowLast
	retries int    // resends left
	timer   clock.Timer
	stats   SenderStats
}

// SenderStats counts what a Sender did.
type SenderStats struct {
	Segments   int `json:"segments"`    // of the message
	Sent       int `json:"sent"`        // DATA packets, resends included
	Resends    int `json:"resends"`     // windows resent on timeout
	Acks       int `json:"acks"`        // ACKs taken
	StaleAcks  int `json:"stale_acks"`  // ACKs of no progress
	AbortsSent int `json:"aborts_sent"` // ABORTs sent
}

// NewSender prepares msg, a whole MAD of an RMPP class of any length of at
// least its class header, for sending: the segments are cut now, with the
// RMPP header each needs (version 1, DATA, Active, First/Last,
// SegmentNumber, PayloadLength) and RRespTime and the rest of the header
// as msg has them. Nothing is sent before Start.
func NewSender(cfg SenderConfig, msg []byte) (*Sender, error) {
	if cfg.Send == nil {
		return nil, errors.New("rmpp: SenderConfig.Send is nil")
	}
	if len(msg) < mad.MADHeaderSize {
		return nil, fmt.Errorf("rmpp: message of %d bytes: %w", len(msg), mad.ErrTruncated)
	}
	class := mad.MAD(msg).MgmtClass()
	hdr := mad.RMPPClassHeaderSize(class)
	if len(msg) < hdr {
		return nil, fmt.Errorf("rmpp: message of %d bytes, class %#x needs %d: %w", len(msg), uint8(class), hdr, mad.ErrTruncated)
	}
	n := Segments(class, len(msg))
	if n > maxSegments {
		return nil, fmt.Errorf("rmpp: %d segments: %w", n, ErrTooLarge)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	per := mad.MADSize - hdr
	pad := uint32(n*per - (len(msg) - hdr))
	s := &Sender{cfg: cfg, clk: cfg.Clock, segs: make([][]byte, n), window: 1, retries: cfg.Retries}
	s.stats.Segments = n
	data := msg[hdr:]
	for i := range n {
		seg := make([]byte, mad.MADSize)
		copy(seg, msg[:hdr])
		lo := i * per
		copy(seg[hdr:], data[lo:min(lo+per, len(data))])
		r := mad.RMPP(seg)
		flags := mad.RMPPFlagActive
		var paylen uint32
		if i == 0 {
			flags |= mad.RMPPFlagFirst
			paylen = uint32(n*mad.RMPPSegmentSize) - pad
		}
		if i == n-1 {
			flags |= mad.RMPPFlagLast
			paylen = mad.RMPPSegmentSize - pad
		}
		r.SetVersion(mad.RMPPVersion1)
		r.SetType(mad.RMPPTypeData)
		r.SetFlags(flags)
		r.SetStatus(mad.RMPPStatusNormal)
		r.SetSegmentNumber(uint32(i + 1))
		r.SetPayloadLength(paylen)
		s.segs[i] = seg
	}
	return s, nil
}

// Start sends the first window (one segment). Later calls do nothing.
func (s *Sender) Start() {
	s.mu.Lock()
	if s.started || s.ended {
		s.mu.Unlock()
		return
	}
	s.started = true
	s.sendWindow()
	s.mu.Unlock()
}

// sendWindow sends the segments after s.sent up to the window and
// (re)arms the timer; s.mu is held.
func (s *Sender) sendWindow() {
	last := min(s.window, uint32(len(s.segs)))
	for s.sent < last {
		s.sent++
		s.stats.Sent++
		_ = s.cfg.Send(append([]byte(nil), s.segs[s.sent-1]...))
	}
	s.arm()
}

func (s *Sender) arm() {
	if s.timer == nil {
		s.timer = s.clk.AfterFunc(s.cfg.Timeout, s.timeout)
		return
	}
	s.timer.Reset(s.cfg.Timeout)
}

func (s *Sender) timeout() {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	if s.retries <= 0 {
		s.abort(mad.RMPPStatusRetries)
		s.finish(ErrTimeout)
		return
	}
	s.retries--
	s.stats.Resends++
	s.sent = s.lastAck
	s.sendWindow()
	s.mu.Unlock()
}

// abort sends an ABORT with status st; s.mu is held.
func (s *Sender) abort(st mad.RMPPStatus) {
	s.stats.AbortsSent++
	_ = s.cfg.Send(control(s.segs[0], false, mad.RMPPTypeAbort, st, 0, 0))
}

// finish ends the transfer with err; s.mu is held and released.
func (s *Sender) finish(err error) {
	s.ended, s.err = true, err
	if s.timer != nil {
		s.timer.Stop()
	}
	done := s.cfg.Done
	s.mu.Unlock()
	if done != nil {
		done(err)
	}
}

// Handle takes an RMPP packet the receiver sent for this transfer: ACK,
// STOP or ABORT. It returns an error for a packet that is not an active
// RMPP packet (ignored) and after the transfer ended (ErrFinished).
func (s *Sender) Handle(m []byte) error {
	h, err := check(m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return ErrFinished
	}
	if h.Version != mad.RMPPVersion1 {
		s.abort(mad.RMPPStatusUnsupported)
		s.finish(&Error{Type: mad.RMPPTypeAbort, Status: mad.RMPPStatusUnsupported, Sent: true})
		return nil
	}
	switch h.Type {
	case mad.RMPPTypeAck:
		s.ack(h)
		return nil
	case mad.RMPPTypeStop, mad.RMPPTypeAbort:
		if (h.Type == mad.RMPPTypeStop && !h.Status.IsStop()) || (h.Type == mad.RMPPTypeAbort && !h.Status.IsAbort()) {
			s.abort(mad.RMPPStatusIllegal)
			s.finish(&Error{Type: mad.RMPPTypeAbort, Status: mad.RMPPStatusIllegal, Sent: true})
			return nil
		}
		s.finish(&Error{Type: h.Type, Status: h.Status})
		return nil
	}
	s.abort(mad.RMPPStatusBadType)
	s.finish(&Error{Type: mad.RMPPTypeAbort, Status: mad.RMPPStatusBadType, Sent: true})
	return nil
}

// ack handles an ACK; s.mu is held and released.
func (s *Sender) ack(h mad.RMPPFields) {
	seg, win := h.Data1, h.Data2
	fail := func(st mad.RMPPStatus) {
		s.abort(st)
		s.finish(&Error{Type: mad.RMPPTypeAbort, Status: st, Sent: true})
	}
	switch {
	case h.Status != mad.RMPPStatusNormal:
		fail(mad.RMPPStatusIllegal)
		return
	case seg > uint32(len(s.segs)):
		fail(mad.RMPPStatusSegmentBig)
		return
	case win < seg:
		fail(mad.RMPPStatusWindowSmall)
		return
	case seg < s.lastAck:
		s.stats.StaleAcks++
		s.mu.Unlock()
		return
	}
	s.stats.Acks++
	if seg > s.lastAck {
		s.lastAck = seg
		s.retries = s.cfg.Retries
	} else {
		s.stats.StaleAcks++
	}
	if s.sent < s.lastAck {
		s.sent = s.lastAck
	}
	s.window = max(win, s.lastAck)
	if s.lastAck == uint32(len(s.segs)) {
		s.finish(nil)
		return
	}
	s.sendWindow()
	s.mu.Unlock()
}

// Stats returns what the Sender did so far.
func (s *Sender) Stats() SenderStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Err returns nil while the transfer runs or when it succeeded, else why it
// failed.
func (s *Sender) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Cancel ends the transfer without sending anything more; Done is not
// called.
func (s *Sender) Cancel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	if s.timer != nil {
		s.timer.Stop()
	}
}
