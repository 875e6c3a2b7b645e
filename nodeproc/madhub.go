package nodeproc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"ibfab/agent"
	"ibfab/hca"
	"ibfab/wire/mad"
)

// madHub is an HCA's MADClient: it hands a response to the control-socket
// call waiting for its TID, and keeps the rest (traps, requests to the SM)
// in a bounded log the "mads" op reads. It is how tests and the harness send
// hand-built SMPs before an SM attaches; the ibsim-protocol attach point
// takes what the hub does not claim.
type madHub struct {
	mu      sync.Mutex
	waiters map[uint64]chan ReceivedMAD
	log     []ReceivedMAD // unsolicited, oldest first, the last logCap to 2*logCap
	seq     uint64
	notify  chan struct{} // closed and replaced on every log append
	next    hca.MADClient // receives what no waiter claims; may be nil
}

const logCap = 1024

// ReceivedMAD is a MAD the node's SM side received.
type ReceivedMAD struct {
	Seq    uint64 `json:"seq"`     // 1, 2, … in arrival order
	Time   int64  `json:"time_ns"` // arrival, Unix ns of the real clock
	Port   uint8  `json:"port"`
	SLID   uint16 `json:"slid"`
	SL     uint8  `json:"sl"`
	SrcQP  uint32 `json:"src_qp"`
	Method string `json:"method"`
	Attr   string `json:"attr"`
	TID    uint64 `json:"tid"`
	MAD    []byte `json:"mad"` // base64 in JSON
}

func newMADHub() *madHub {
	return &madHub{waiters: map[uint64]chan ReceivedMAD{}, notify: make(chan struct{})}
}

func (h *madHub) DeliverMAD(port uint8, o agent.Outbound) {
	if len(o.MAD) < mad.MADHeaderSize {
		return
	}
	m := mad.MAD(o.MAD)
	tid, resp := m.TransactionID(), m.Method().IsResponse()
	h.mu.Lock()
	w, waited := h.waiters[tid]
	switch {
	case waited && resp:
		delete(h.waiters, tid)
	case resp:
		// A response to an attach-point client: not the log's business,
		// and on the path of every MAD an SM sweeps with.
		next := h.next
		h.mu.Unlock()
		if next != nil {
			next.DeliverMAD(port, o)
		}
		return
	}
	h.mu.Unlock()
	r := ReceivedMAD{Time: time.Now().UnixNano(), Port: port, SLID: o.SLID, SL: o.SL, SrcQP: o.SrcQP, TID: tid,
		Method: m.Method().String(), Attr: m.AttrID().String(), MAD: o.MAD}
	if waited {
		w <- r
		return
	}
	h.mu.Lock()
	h.seq++
	r.Seq = h.seq
	h.log = append(h.log, r)
	if len(h.log) >= 2*logCap {
		// Trimmed in halves, so a full log costs one copy per logCap MADs.
		h.log = append(h.log[:0:0], h.log[len(h.log)-logCap:]...)
	}
	close(h.notify)
	h.notify = make(chan struct{})
	next := h.next
	h.mu.Unlock()
	if next != nil {
		next.DeliverMAD(port, o)
	}
}

// errNoResponse is returned when a request times out.
var errNoResponse = errors.New("no response")

// call sends r with send and waits for the response with r's TID.
func (h *madHub) call(ctx context.Context, r agent.Request, timeout time.Duration, send func(agent.Request) error) (ReceivedMAD, error) {
	if len(r.MAD) != mad.MADSize {
		return ReceivedMAD{}, fmt.Errorf("mad: %d bytes, want %d", len(r.MAD), mad.MADSize)
	}
	tid := mad.MAD(r.MAD).TransactionID()
	w := make(chan ReceivedMAD, 1)
	h.mu.Lock()
	if _, busy := h.waiters[tid]; busy {
		h.mu.Unlock()
		return ReceivedMAD{}, fmt.Errorf("mad: TID %#x already in flight", tid)
	}
	h.waiters[tid] = w
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.waiters, tid)
		h.mu.Unlock()
	}()
	if err := send(r); err != nil {
		return ReceivedMAD{}, err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case resp := <-w:
		return resp, nil
	case <-t.C:
		return ReceivedMAD{}, fmt.Errorf("mad: TID %#x: %w within %v", tid, errNoResponse, timeout)
	case <-ctx.Done():
		return ReceivedMAD{}, ctx.Err()
	}
}

// since returns the logged MADs with Seq > after, waiting up to wait for
// the first one when there is none yet.
func (h *madHub) since(ctx context.Context, after uint64, wait time.Duration) []ReceivedMAD {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		var out []ReceivedMAD
		for _, r := range h.log {
			if r.Seq > after {
				out = append(out, r)
			}
		}
		notify := h.notify
		h.mu.Unlock()
		if len(out) > 0 || wait <= 0 {
			return out
		}
		select {
		case <-notify:
		case <-deadline.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}
