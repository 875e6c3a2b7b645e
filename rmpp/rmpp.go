package rmpp

import (
	"errors"
	"fmt"

	"ibfab/wire/mad"
)

// Errors a transfer ends with.
var (
	// ErrTimeout ends a send whose segments were not acknowledged after
	// Retries resends, and a receive not complete within TotalTime.
	ErrTimeout = errors.New("rmpp: transfer timed out")
	// ErrNotRMPP is returned for a MAD that is not an active RMPP packet
	// of version 1 (too short, or the Active flag clear).
	ErrNotRMPP = errors.New("rmpp: not an active RMPP packet")
	// ErrFinished is returned by Handle after the transfer ended.
	ErrFinished = errors.New("rmpp: transfer already ended")
	// ErrTooLarge is returned for a message that needs more segments than
	// a SegmentNumber counts, or a reassembly larger than MaxLength.
	ErrTooLarge = errors.New("rmpp: message too large")
)

// Error is a transfer ended by an ABORT or STOP: Sent tells whether this
// side sent it (the peer broke the protocol) or received it.
type Error struct {
	Type   mad.RMPPType // RMPPTypeAbort or RMPPTypeStop
	Status mad.RMPPStatus
	Sent   bool
}

func (e *Error) Error() string {
	dir := "received"
	if e.Sent {
		dir = "sent"
	}
	return fmt.Sprintf("rmpp: %s %v (%d) %s", e.Type, e.Status, uint8(e.Status), dir)
}

// Status returns the RMPP status an error ends a transfer with:
// TooManyRetries or TotalTimeTooLong for ErrTimeout (by side), the
// status of an *Error, else Unspecified.
func Status(err error) mad.RMPPStatus {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e.Status
	case errors.Is(err, ErrTimeout):
		return mad.RMPPStatusRetries
	}
	return mad.RMPPStatusUnspecified
}

// control builds an ACK, STOP or ABORT for the transfer the DATA segment
// m belongs to: the common header of m, with the response bit of the
// method flipped when it goes back to m's sender (reverse: ACKs, and what
// a receiver aborts with), the RMPP header given, and zero data.
func control(m []byte, reverse bool, t mad.RMPPType, st mad.RMPPStatus, seg, data2 uint32) []byte {
	out := make([]byte, mad.MADSize)
	copy(out, m[:mad.MADHeaderSize])
	h := mad.MAD(out)
	if reverse {
		h.SetMethod(h.Method() ^ 0x80)
	}
	h.SetStatus(0)
	mad.RMPP(out).Encode(&mad.RMPPFields{
		Version: mad.RMPPVersion1, Type: t, RespTime: mad.RMPP(m).RespTime(),
		Flags: mad.RMPPFlagActive, Status: st, Data1: seg, Data2: data2,
	})
	return out
}

// check returns the RMPP header of m if m is an active RMPP packet.
func check(m []byte) (mad.RMPPFields, error) {
	if len(m) < mad.MADSize || !mad.RMPP(m).Active() {
		return mad.RMPPFields{}, ErrNotRMPP
	}
	return mad.RMPP(m).Fields(), nil
}

// Segments returns how many segments a message of n bytes of class c
// takes (at least one).
func Segments(c mad.MgmtClass, n int) int {
	hdr := mad.RMPPClassHeaderSize(c)
	per := mad.MADSize - hdr
	if n <= hdr {
		return 1
	}
	return (n - hdr + per - 1) / per
}
