package nodeproc

import (
	"context"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/wire/mad"
)

type collect []agent.Outbound

func (c *collect) DeliverMAD(_ uint8, o agent.Outbound) { *c = append(*c, o) }

func madWith(m mad.Method, tid uint64) []byte {
	return mad.AppendSMP(nil, &mad.SMPFields{Method: m, TransactionID: tid, AttrID: mad.AttrNotice})
}

// TestMADHub: a response goes to the call waiting for its TID; other
// responses pass to the attach point without being logged; traps are
// logged and passed on.
func TestMADHub(t *testing.T) {
	h := newMADHub()
	var next collect
	h.next = &next

	got, err := h.call(context.Background(), agent.Request{MAD: madWith(mad.MethodGet, 7)}, time.Second,
		func(agent.Request) error {
			go h.DeliverMAD(1, agent.Outbound{Local: true, MAD: madWith(mad.MethodGetResp, 7)})
			return nil
		})
	if err != nil || got.TID != 7 {
		t.Fatalf("call = %+v, %v; want the response with TID 7", got, err)
	}
	h.DeliverMAD(1, agent.Outbound{Local: true, MAD: madWith(mad.MethodGetResp, 8)})
	h.DeliverMAD(1, agent.Outbound{Local: true, SLID: 5, MAD: madWith(mad.MethodTrap, 9)})
	if len(next) != 2 {
		t.Errorf("attach point got %d MADs, want the unclaimed response and the trap", len(next))
	}
	log := h.since(context.Background(), 0, 0)
	if len(log) != 1 || log[0].TID != 9 || log[0].SLID != 5 || log[0].Seq != 1 {
		t.Errorf("log = %+v, want only the trap, seq 1", log)
	}
	for i := range 3 * logCap {
		h.DeliverMAD(1, agent.Outbound{Local: true, MAD: madWith(mad.MethodTrap, uint64(100+i))})
	}
	if n := len(h.since(context.Background(), 0, 0)); n < logCap || n >= 2*logCap {
		t.Errorf("log holds %d entries, want between %d and %d", n, logCap, 2*logCap)
	}
}
