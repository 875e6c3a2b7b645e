package sa

import (
	"sync"
	"time"

	"ibfab/internal/clock"
	"ibfab/madport"
	"ibfab/rmpp"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// AckHandler is a Sender that runs RMPP transfers and takes the ACKs,
// STOPs and ABORTs of their receivers; HandleRMPP reports whether m was
// one of its transfers'.
type AckHandler interface {
	HandleRMPP(m madport.MAD) bool
}

// PortSender sends answers on a madport.Port. A payload that fits one MAD
// goes as one MAD, a GetTableResp with an RMPP header saying so
// (Active|First|Last, segment 1) as an SA's single segment goes. A longer
// one is an RMPP transfer (package rmpp): a window at a time, resent
// until its receiver has acknowledged every segment. Its methods are safe
// for concurrent use (the transfers' timers send from their own
// goroutines).
type PortSender struct {
	Port  madport.Port
	Clock clock.Clock // nil: the real clock
	// Timeout and Retries of a window (rmpp.SenderConfig); 0: the
	// package's defaults.
	Timeout time.Duration
	Retries int

	mu        sync.Mutex
	transfers map[xferKey]*rmpp.Sender
	stats     SenderStats
}

// SenderStats counts a PortSender's transfers.
type SenderStats struct {
	Single, Transfers, Completed, Failed uint64
}

type xferKey struct {
	lid uint16
	tid uint64
}

// Stats returns the sender's counters.
func (p *PortSender) Stats() SenderStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *PortSender) send(to madport.MAD, b []byte) error {
	return p.Port.Send(madport.MAD{LID: to.LID, QP: to.QP, QKey: wire.QP1QKey, SL: to.SL, PKey: to.PKey, Data: b})
}

// SendSA implements Sender.
func (p *PortSender) SendSA(r Response) error {
	if seg, ok := p.Port.(madport.RMPPSegmenter); ok && usesRMPP(&r) && seg.SegmentsRMPP(uint8(mad.ClassSubnAdm)) {
		// Even an answer of one segment: its length tells the kernel
		// the payload length, which a padded MAD would overstate (the
		// client would read the padding as records).
		return p.sendWhole(r.To, wholeMessage(&r))
	}
	if len(r.Payload) <= mad.SADataSize {
		p.mu.Lock()
		p.stats.Single++
		p.mu.Unlock()
		return p.send(r.To, Segments(&r)[0])
	}
	msg := wholeMessage(&r)
	key := xferKey{r.To.LID, r.Header.MAD.TransactionID}
	to := r.To
	s, err := rmpp.NewSender(rmpp.SenderConfig{Clock: p.Clock, Timeout: p.Timeout, Retries: p.Retries,
		Send: func(m []byte) error { return p.send(to, m) },
		Done: func(err error) {
			// Called with the transfer's lock held; p.mu is never held
			// while calling into a transfer.
			go p.done(key, err)
		}}, msg)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.transfers == nil {
		p.transfers = map[xferKey]*rmpp.Sender{}
	}
	if old := p.transfers[key]; old != nil {
		old.Cancel()
	}
	p.transfers[key] = s
	p.stats.Transfers++
	p.mu.Unlock()
	s.Start()
	return nil
}

// wholeMessage is r as one RMPP message: the headers of its first
// segment and the whole payload, what a transfer cuts into segments.
func wholeMessage(r *Response) []byte {
	first := Segments(&Response{Header: r.Header})[0]
	return append(first[:mad.RMPPClassHeaderSize(mad.ClassSubnAdm)], r.Payload...)
}

// sendWhole hands an RMPP answer to a port that runs RMPP itself (the
// kernel's umad): one message with only the Active flag, which the
// transport numbers, flags First and Last and resends by window.
func (p *PortSender) sendWhole(to madport.MAD, msg []byte) error {
	h := mad.RMPP(msg)
	h.SetVersion(mad.RMPPVersion1)
	h.SetType(mad.RMPPTypeData)
	h.SetFlags(mad.RMPPFlagActive)
	h.SetSegmentNumber(0)
	h.SetPayloadLength(0)
	p.mu.Lock()
	p.stats.Transfers++
	p.mu.Unlock()
	return p.send(to, msg)
}

func (p *PortSender) done(key xferKey, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.transfers, key)
	if err != nil {
		p.stats.Failed++
	} else {
		p.stats.Completed++
	}
}

// HandleRMPP implements AckHandler.
func (p *PortSender) HandleRMPP(m madport.MAD) bool {
	if len(m.Data) < mad.MADSize {
		return false
	}
	p.mu.Lock()
	s := p.transfers[xferKey{m.LID, mad.MAD(m.Data).TransactionID()}]
	p.mu.Unlock()
	if s == nil {
		return false
	}
	_ = s.Handle(m.Data)
	return true
}

// RequestAcker is a Sender that also acknowledges a request that came as
// an RMPP transfer (a MultiPathRecord GetMulti, OpenSM's clients' some
// GetTables): the kernel's MAD layer ACKs those under OpenSM, but ibsm
// reads its port raw, so the SA must, or the requester's side resends
// the request until it gives up, and every resend is answered again.
type RequestAcker interface {
	// AckRequest takes an RMPP DATA segment of a request: it sends the
	// ACK and reports whether the request is whole (one segment, the
	// only kind the SA takes: every SA request fits one MAD).
	AckRequest(m madport.MAD) bool
}

var _ RequestAcker = (*PortSender)(nil)

// AckRequest implements RequestAcker.
func (p *PortSender) AckRequest(m madport.MAD) bool {
	if seg, ok := p.Port.(madport.RMPPSegmenter); ok && seg.SegmentsRMPP(uint8(mad.ClassSubnAdm)) {
		return true // the transport (the kernel's umad) acknowledged and reassembled it
	}
	r, err := rmpp.NewReceiver(rmpp.ReceiverConfig{Clock: p.Clock, Send: func(b []byte) error { return p.send(m, b) }})
	if err != nil {
		return false
	}
	defer r.Cancel()
	_, done, err := r.Handle(m.Data)
	return err == nil && done
}
