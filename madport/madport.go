package madport

import (
	"context"
	"errors"
	"time"
)

// MADSize is the size of every MAD a Port carries.
const MADSize = 256

// ErrClosed is returned by a Port's methods after Close.
var ErrClosed = errors.New("madport: port closed")

// MAD is one management datagram with the addressing of the packet that
// carries it, as seen from the local port: for a send, where it goes; for a
// receive, where it came from. Directed-route SMPs carry their route inside
// Data; for them LID is the permissive LID (0xFFFF) or the LID-routed
// prefix's destination.
type MAD struct {
	LID  uint16 // remote LID: LRH DLID on send, SLID on receive
	QP   uint32 // remote QP: 0 for SMPs, 1 for GMPs to the GSI
	QKey uint32 // Q_Key of GMPs (0x80010000 for QP1); ignored for SMPs
	SL   uint8
	PKey uint16 // P_Key of GMPs; 0 means the default partition 0xFFFF
	Data []byte // the MAD, MADSize bytes
	// Status is what the transport reports for a receive: 0, or a
	// transport error such as a send that timed out (ETIMEDOUT) when the
	// transport does its own timeouts. Ignored on send.
	Status int
}

// Info describes the local port a Port sends from.
type Info struct {
	NodeGUID uint64
	PortGUID uint64
	PortNum  uint8
	LID      uint16 // 0 until an SM assigned one
	SMLID    uint16
	State    uint8 // PortInfo PortState, 1 Down … 4 Active
}

// Port moves MADs between its user and one local IB port. Send and Recv
// may be called from different goroutines at once.
type Port interface {
	// Send hands one MAD to the port. It does not wait for a response.
	Send(m MAD) error
	// Recv returns the next MAD for this user: a response to one of its
	// requests, a trap, or a request addressed to the local SM. It
	// returns ctx's error when ctx ends first and ErrClosed after Close.
	Recv(ctx context.Context) (MAD, error)
	// Info returns the local port's identity and current LID.
	Info() (Info, error)
	// SetIsSM sets or clears the IsSM capability bit of the local port,
	// as an SM does when it starts and stops.
	SetIsSM(on bool) error
	// Close releases the port; pending Recvs return ErrClosed.
	Close() error
}

// UntilReceiver is a Port that can also wait for a MAD until a time on
// the real clock, without a context per call: a consumer that waits for
// each of many answers with its own deadline would otherwise derive a
// context, and a timer, for every one. A consumer whose time is not the
// real clock uses Recv with a context it cancels itself.
type UntilReceiver interface {
	// RecvUntil is Recv that also returns context.DeadlineExceeded when
	// deadline (the zero time: none) passes first.
	RecvUntil(ctx context.Context, deadline time.Time) (MAD, error)
}

// RMPPSegmenter is a Port whose transport runs RMPP (IBA 13.6) itself for
// some classes, as the kernel's umad does for an agent registered with
// RMPP version 1: Send takes one MAD longer than MADSize with the Active
// flag in its RMPP header and sends it as a transfer, and the receiver's
// ACKs go to the transport, not to Recv. A consumer with a message longer
// than a MAD sends it so; on other ports it runs the transfer itself.
type RMPPSegmenter interface {
	// SegmentsRMPP reports whether the port runs RMPP for management
	// class class.
	SegmentsRMPP(class uint8) bool
}
