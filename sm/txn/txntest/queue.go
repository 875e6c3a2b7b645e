package txntest

import (
	"context"

	"ibfab/sm/txn"
	"ibfab/wire/mad"
)

// Sent names what a request was, for counting: a Set or a Get, and its
// attribute (the CC and AR classes reuse the SMPs' attribute IDs, so an
// AttrID's name does not tell them).
type Sent struct {
	Set  bool
	Attr mad.AttrID
}

// Queue is a fake transaction layer. Get and Set queue a request; Run
// answers every one queued, and those the callbacks queue, through
// Answer. The zero Queue answers every request with nothing; set Answer
// first.
type Queue struct {
	// Answer is the response to r, a Set when set.
	Answer func(set bool, r *txn.Request) *txn.Response
	queue  []pending
	sent   map[Sent]int
	sends  uint64
}

type pending struct {
	set  bool
	r    txn.Request
	done func(*txn.Response)
}

// Get queues a Get of r.
func (q *Queue) Get(r txn.Request, done func(*txn.Response)) {
	q.queue = append(q.queue, pending{false, r, done})
}

// Set queues a Set of r.
func (q *Queue) Set(r txn.Request, done func(*txn.Response)) {
	q.queue = append(q.queue, pending{true, r, done})
}

// Sends counts the requests answered so far.
func (q *Queue) Sends() uint64 { return q.sends }

// Run answers the queued requests until none is left.
func (q *Queue) Run(context.Context) error {
	for len(q.queue) > 0 {
		p := q.queue[0]
		q.queue = q.queue[1:]
		q.sends++
		if q.sent == nil {
			q.sent = map[Sent]int{}
		}
		q.sent[Sent{p.set, p.r.Attr}]++
		resp := &txn.Response{}
		if q.Answer != nil {
			resp = q.Answer(p.set, &p.r)
		}
		resp.Req = &p.r
		p.done(resp)
	}
	return nil
}

// Take returns the requests answered since the last call, counted by
// what they were.
func (q *Queue) Take() map[Sent]int {
	out := q.sent
	if out == nil {
		out = map[Sent]int{}
	}
	q.sent = map[Sent]int{}
	return out
}

// Sets returns the Sets among what Take returns.
func (q *Queue) Sets() map[Sent]int {
	out := map[Sent]int{}
	for k, n := range q.Take() {
		if k.Set {
			out[k] = n
		}
	}
	return out
}
