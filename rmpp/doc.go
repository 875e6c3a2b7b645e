// Package rmpp is the reliable multi-packet transaction protocol of IBA
// 13.6: a Sender that cuts a MAD too large for one packet into DATA
// segments and sends them a window at a time until the receiver has
// acknowledged all of them, and a Receiver that puts the segments back
// together, acknowledging them. Both are state machines with no transport
// of their own: each is given a Send function for the MADs it emits and a
// clock.Clock for its timers, and is fed, through Handle, the RMPP packets
// that arrive for its transfer. Matching a packet to a transfer (by TID,
// peer and class) is the caller's job.
//
//	s, _ := rmpp.NewSender(rmpp.SenderConfig{Clock: clk, Send: send, Timeout: t, Retries: 3,
//		Done: func(err error) { ... }}, bigMAD)
//	s.Start()
//	... s.Handle(ack)       // ACK, STOP or ABORT for the transfer
//
//	r := rmpp.NewReceiver(rmpp.ReceiverConfig{Clock: clk, Send: send})
//	msg, done, err := r.Handle(seg) // each DATA (or STOP/ABORT) of the transfer
//
// # Segments
//
// A transfer is cut as the kernel's MAD layer cuts it: every segment
// repeats the first RMPPClassHeaderSize(class) bytes of the MAD (common,
// RMPP and class header: 56 for SubnAdm), each carries the next
// 256 − that many bytes of what follows, and PayloadLength counts the 220
// bytes of RMPP payload per segment: the number of segments × 220 less the
// padding of the last in the first segment, 220 less the padding in the
// last, 0 in the others. The Receiver's message is the first segment's
// header followed by the data of every segment, less the padding: the
// length the kernel reports to a reader.
//
// # Sender
//
// The first window is one segment. Each ACK whose SegmentNumber is beyond
// the last acknowledged moves the window to its NewWindowLast and resets
// the retry count; the segments up to it are sent. An ACK of the last
// segment completes the transfer (Done(nil)). When Timeout passes with no
// progress, the window is resent from the first unacknowledged segment,
// Retries times; then the transfer fails with ErrTimeout after an ABORT
// with status TooManyRetries. A STOP or ABORT from the receiver fails it
// with an *Error holding the status; an ACK naming a segment past the
// last (SegmentNumberTooBig) or a window that ends before the segment it
// acknowledges (NewWindowLastTooSmall), a STOP or ABORT with a status it
// may not carry (IllegalStatus), a packet of another RMPP version
// (UnsupportedVersion) or of a type a sender does not take (BadRMPPType)
// are answered with an ABORT of that status and fail the transfer too.
//
// # Receiver
//
// The Receiver starts at a DATA with SegmentNumber 1 and the First flag,
// and acknowledges each time the segment it was waiting for ends its
// window (NewWindowLast = that segment + Window), and at the last segment.
// A segment it already has is answered with a repeated ACK (the sender
// lost one); one past the next expected (reordered, or after a loss) is
// dropped, and the sender's timeout resends it, as the kernel does. It
// aborts, with the spec's status, on a DATA that is not version 1
// (UnsupportedVersion), has a non-zero RMPPStatus (IllegalStatus), has
// First without SegmentNumber 1, SegmentNumber 1 without First, or
// SegmentNumber 0 (InconsistentFirstAndSegmentNumber), or a Last whose PayloadLength does
// not fit the segment or the first segment's total
// (InconsistentLastAndPayloadLength), on an ACK (BadRMPPType), and when
// the transfer is not complete TotalTime after its first segment
// (TotalTimeTooLong). A STOP or ABORT from the sender ends it with an
// *Error. After completion it keeps answering repeated last segments
// with the final ACK, so a sender that lost it completes too.
//
// Send is called with the state machine's lock held, so it must not call
// back into the same Sender or Receiver; Done is called with no lock held.
package rmpp
