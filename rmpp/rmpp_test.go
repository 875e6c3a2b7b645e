package rmpp_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"ibfab/internal/clock"
	"ibfab/rmpp"
	"ibfab/wire/mad"
)

// message returns an SA GetTableResp of n bytes with a counting payload.
func message(n int) []byte {
	m := make([]byte, n)
	h := mad.MAD(m)
	h.SetBaseVersion(1)
	h.SetMgmtClass(mad.ClassSubnAdm)
	h.SetClassVersion(2)
	h.SetMethod(0x93)
	h.SetTransactionID(0x1234_0000_0000_0042)
	h.SetAttrID(0x11)
	m[26] = 0x12 << 3 // RRespTime
	for i := mad.RMPPHeaderEnd; i < n; i++ {
		m[i] = byte(i * 7)
	}
	return m
}

// queue is one direction of a test link: what a state machine sent.
type queue struct {
	mu   sync.Mutex
	msgs [][]byte
}

func (q *queue) send(m []byte) error {
	q.mu.Lock()
	q.msgs = append(q.msgs, m)
	q.mu.Unlock()
	return nil
}

func (q *queue) take() [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.msgs
	q.msgs = nil
	return out
}

// policy decides the fate of the n-th packet (from 0) of one direction:
// dropped, or (when reorder) swapped with the next in its batch.
type policy struct {
	drop    func(n int, m []byte) bool
	reorder bool
}

func (p policy) apply(start int, batch [][]byte) (out [][]byte) {
	for i, m := range batch {
		if p.drop != nil && p.drop(start+i, m) {
			continue
		}
		out = append(out, m)
	}
	if p.reorder {
		for i := 0; i+1 < len(out); i += 2 {
			out[i], out[i+1] = out[i+1], out[i]
		}
	}
	return out
}

type result struct {
	msg     []byte
	sendErr error
	recvErr error
	sent    rmpp.SenderStats
	recv    rmpp.ReceiverStats
	done    bool
}

// transfer runs one message from a Sender to a Receiver over queues that
// apply the policies, advancing a manual clock whenever nothing is in
// flight, until both sides are done or time runs out.
func transfer(t *testing.T, msg []byte, window uint32, retries int, data, acks policy) result {
	t.Helper()
	clk := clock.NewManual(time.Unix(0, 0))
	var toR, toS queue
	var res result
	senderDone := false
	s, err := rmpp.NewSender(rmpp.SenderConfig{Clock: clk, Send: toR.send, Timeout: 100 * time.Millisecond,
		Retries: retries, Done: func(err error) { senderDone, res.sendErr = true, err }}, msg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := rmpp.NewReceiver(rmpp.ReceiverConfig{Clock: clk, Send: toS.send, Window: window, TotalTime: time.Minute,
		Done: func(err error) { res.recvErr = err }})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	nData, nAck := 0, 0
	for step := 0; step < 10000; step++ {
		batch := toR.take()
		for _, m := range data.apply(nData, batch) {
			out, done, err := r.Handle(m)
			if err != nil && res.recvErr == nil {
				res.recvErr = err
			}
			if done {
				res.msg, res.done = out, true
			}
		}
		nData += len(batch)
		back := toS.take()
		for _, m := range acks.apply(nAck, back) {
			_ = s.Handle(m)
		}
		nAck += len(back)
		if len(batch) == 0 && len(back) == 0 {
			if senderDone && (res.done || res.recvErr != nil) {
				break
			}
			if !clk.AdvanceToNext() {
				break
			}
		}
	}
	res.sent, res.recv = s.Stats(), r.Stats()
	return res
}

func TestTransfer(t *testing.T) {
	dropSeg := func(segs ...uint32) func(int, []byte) bool {
		seen := map[uint32]bool{}
		return func(_ int, m []byte) bool {
			n := mad.RMPP(m).SegmentNumber()
			for _, s := range segs {
				if n == s && !seen[n] {
					seen[n] = true
					return true
				}
			}
			return false
		}
	}
	dropNth := func(ns ...int) func(int, []byte) bool {
		return func(i int, _ []byte) bool {
			for _, n := range ns {
				if i == n {
					return true
				}
			}
			return false
		}
	}
	tests := []struct {
		name        string
		size        int
		window      uint32
		retries     int
		data, acks  policy
		wantSegs    int
		wantResends int // at least
		wantErr     error
	}{
		{name: "one segment", size: 256, wantSegs: 1},
		{name: "short single", size: 100, wantSegs: 1},
		{name: "exact two", size: 56 + 400, wantSegs: 2},
		{name: "two and a byte", size: 56 + 401, wantSegs: 3},
		{name: "large window 1", size: 56 + 200*40 + 17, window: 1, wantSegs: 41},
		{name: "large window 8", size: 56 + 200*40 + 17, window: 8, wantSegs: 41},
		{name: "large default window", size: 56 + 200*200, wantSegs: 200},
		{name: "lost data", size: 56 + 200*30, window: 4, retries: 3, data: policy{drop: dropSeg(3, 17)}, wantSegs: 30, wantResends: 2},
		{name: "lost first", size: 56 + 200*5, retries: 2, data: policy{drop: dropSeg(1)}, wantSegs: 5, wantResends: 1},
		{name: "lost last", size: 56 + 200*5, retries: 2, data: policy{drop: dropSeg(5)}, wantSegs: 5, wantResends: 1},
		{name: "lost acks", size: 56 + 200*20, window: 3, retries: 3, acks: policy{drop: dropNth(0, 2)}, wantSegs: 20, wantResends: 2},
		{name: "lost final ack", size: 56 + 200*4, window: 10, retries: 2, acks: policy{drop: dropNth(1)}, wantSegs: 4, wantResends: 1},
		{name: "reordered", size: 56 + 200*50, window: 8, retries: 20, data: policy{reorder: true}, wantSegs: 50, wantResends: 1},
		{name: "reordered acks", size: 56 + 200*50, window: 4, retries: 20, acks: policy{reorder: true}, wantSegs: 50},
		{name: "no retries, lost", size: 56 + 200*5, retries: 0, data: policy{drop: dropSeg(2)}, wantErr: rmpp.ErrTimeout},
		{name: "black hole", size: 56 + 200*5, retries: 3, data: policy{drop: func(int, []byte) bool { return true }}, wantErr: rmpp.ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := message(tt.size)
			res := transfer(t, msg, tt.window, tt.retries, tt.data, tt.acks)
			if tt.wantErr != nil {
				if !errors.Is(res.sendErr, tt.wantErr) {
					t.Fatalf("sender error %v, want %v", res.sendErr, tt.wantErr)
				}
				if res.sent.AbortsSent != 1 {
					t.Errorf("sender sent %d ABORTs, want 1", res.sent.AbortsSent)
				}
				return
			}
			if res.sendErr != nil || res.recvErr != nil {
				t.Fatalf("sender error %v, receiver error %v", res.sendErr, res.recvErr)
			}
			if !res.done {
				t.Fatalf("receiver not done: %+v %+v", res.sent, res.recv)
			}
			// A short message comes back as long as it was sent: the
			// last PayloadLength tells the padding.
			want := msg
			// The receiver's copy has the first segment's RMPP header.
			got := append([]byte(nil), res.msg...)
			copy(got[mad.MADHeaderSize:mad.RMPPHeaderEnd], want[mad.MADHeaderSize:mad.RMPPHeaderEnd])
			if !bytes.Equal(got, want) {
				t.Fatalf("reassembled %d bytes, want %d (equal prefix %d)", len(got), len(want), commonPrefix(got, want))
			}
			if res.sent.Segments != tt.wantSegs {
				t.Errorf("%d segments, want %d", res.sent.Segments, tt.wantSegs)
			}
			if res.sent.Resends < tt.wantResends {
				t.Errorf("%d resends, want at least %d", res.sent.Resends, tt.wantResends)
			}
			if tt.wantResends == 0 && tt.data.drop == nil && tt.acks.drop == nil && !tt.data.reorder && res.sent.Sent != tt.wantSegs {
				t.Errorf("sent %d DATA for %d segments on a clean link", res.sent.Sent, tt.wantSegs)
			}
		})
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestSegmentHeaders checks the RMPP header of every segment against the
// kernel's segmentation.
func TestSegmentHeaders(t *testing.T) {
	msg := message(56 + 200*2 + 50) // 3 segments, the last with 50 bytes of data
	var q queue
	s, err := rmpp.NewSender(rmpp.SenderConfig{Clock: clock.NewManual(time.Unix(0, 0)), Send: q.send}, msg)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	segs := q.take()
	if len(segs) != 1 {
		t.Fatalf("first window sent %d segments, want 1", len(segs))
	}
	ack := ackFor(segs[0], 1, 3)
	if err := s.Handle(ack); err != nil {
		t.Fatal(err)
	}
	segs = append(segs, q.take()...)
	want := []mad.RMPPFields{
		{Version: 1, Type: mad.RMPPTypeData, RespTime: 0x12, Flags: mad.RMPPFlagActive | mad.RMPPFlagFirst, Data1: 1, Data2: 3*220 - 150},
		{Version: 1, Type: mad.RMPPTypeData, RespTime: 0x12, Flags: mad.RMPPFlagActive, Data1: 2},
		{Version: 1, Type: mad.RMPPTypeData, RespTime: 0x12, Flags: mad.RMPPFlagActive | mad.RMPPFlagLast, Data1: 3, Data2: 220 - 150},
	}
	if len(segs) != len(want) {
		t.Fatalf("%d segments sent, want %d", len(segs), len(want))
	}
	for i, seg := range segs {
		if got := mad.RMPP(seg).Fields(); got != want[i] {
			t.Errorf("segment %d: %v, want %v", i+1, got, want[i])
		}
		if !bytes.Equal(seg[:mad.MADHeaderSize], msg[:mad.MADHeaderSize]) || !bytes.Equal(seg[36:56], msg[36:56]) {
			t.Errorf("segment %d does not repeat the class header", i+1)
		}
	}
}

// ackFor builds the ACK a receiver sends for seg.
func ackFor(seg []byte, n, win uint32) []byte {
	a := make([]byte, mad.MADSize)
	copy(a, seg[:mad.MADHeaderSize])
	mad.MAD(a).SetMethod(mad.MAD(a).Method() ^ 0x80)
	mad.RMPP(a).Encode(&mad.RMPPFields{Version: 1, Type: mad.RMPPTypeAck, Flags: mad.RMPPFlagActive, Data1: n, Data2: win})
	return a
}

// TestSenderProtocolErrors feeds a sender bad answers and checks the
// ABORT it sends and the error it ends with.
func TestSenderProtocolErrors(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(a mad.RMPP)
		status mad.RMPPStatus
		sent   bool // the sender aborts (else it takes the peer's)
	}{
		{"segment too big", func(a mad.RMPP) { a.SetSegmentNumber(9); a.SetNewWindowLast(9) }, mad.RMPPStatusSegmentBig, true},
		{"window too small", func(a mad.RMPP) { a.SetSegmentNumber(2); a.SetNewWindowLast(1) }, mad.RMPPStatusWindowSmall, true},
		{"bad version", func(a mad.RMPP) { a.SetVersion(2) }, mad.RMPPStatusUnsupported, true},
		{"bad type", func(a mad.RMPP) { a.SetType(7) }, mad.RMPPStatusBadType, true},
		{"data to sender", func(a mad.RMPP) { a.SetType(mad.RMPPTypeData) }, mad.RMPPStatusBadType, true},
		{"ack with status", func(a mad.RMPP) { a.SetStatus(5) }, mad.RMPPStatusIllegal, true},
		{"stop", func(a mad.RMPP) { a.SetType(mad.RMPPTypeStop); a.SetStatus(mad.RMPPStatusResources) }, mad.RMPPStatusResources, false},
		{"stop bad status", func(a mad.RMPP) { a.SetType(mad.RMPPTypeStop); a.SetStatus(3) }, mad.RMPPStatusIllegal, true},
		{"abort", func(a mad.RMPP) { a.SetType(mad.RMPPTypeAbort); a.SetStatus(mad.RMPPStatusTotalTime) }, mad.RMPPStatusTotalTime, false},
		{"abort bad status", func(a mad.RMPP) { a.SetType(mad.RMPPTypeAbort); a.SetStatus(0) }, mad.RMPPStatusIllegal, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q queue
			var doneErr error
			calls := 0
			s, err := rmpp.NewSender(rmpp.SenderConfig{Clock: clock.NewManual(time.Unix(0, 0)), Send: q.send,
				Done: func(err error) { calls++; doneErr = err }}, message(56+200*4))
			if err != nil {
				t.Fatal(err)
			}
			s.Start()
			first := q.take()[0]
			a := ackFor(first, 1, 1)
			tt.edit(mad.RMPP(a))
			if err := s.Handle(a); err != nil {
				t.Fatal(err)
			}
			var e *rmpp.Error
			if calls != 1 || !errors.As(doneErr, &e) || e.Status != tt.status || e.Sent != tt.sent {
				t.Fatalf("Done called %d times with %v, want status %v sent %v", calls, doneErr, tt.status, tt.sent)
			}
			out := q.take()
			if tt.sent {
				if len(out) != 1 || mad.RMPP(out[0]).Type() != mad.RMPPTypeAbort || mad.RMPP(out[0]).Status() != tt.status {
					t.Fatalf("sender sent %d packets, want one ABORT %v", len(out), tt.status)
				}
				if mad.MAD(out[0]).Method() != mad.MAD(first).Method() {
					t.Errorf("ABORT method %#x, want the data's %#x", mad.MAD(out[0]).Method(), mad.MAD(first).Method())
				}
			} else if len(out) != 0 {
				t.Fatalf("sender sent %d packets after the peer ended the transfer", len(out))
			}
			if err := s.Handle(a); !errors.Is(err, rmpp.ErrFinished) {
				t.Errorf("Handle after the end: %v, want ErrFinished", err)
			}
		})
	}
}

// segmentsOf returns the DATA segments a sender makes of msg, all at once.
func segmentsOf(t *testing.T, msg []byte) [][]byte {
	t.Helper()
	var q queue
	s, err := rmpp.NewSender(rmpp.SenderConfig{Clock: clock.NewManual(time.Unix(0, 0)), Send: q.send}, msg)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	first := q.take()
	_ = s.Handle(ackFor(first[0], 1, 1000))
	return append(first, q.take()...)
}

// TestReceiverProtocolErrors feeds a receiver bad segments and checks the
// ABORT it answers with.
func TestReceiverProtocolErrors(t *testing.T) {
	tests := []struct {
		name   string
		at     int // index of the segment edited
		edit   func(m mad.RMPP)
		status mad.RMPPStatus
		typ    mad.RMPPType
		sent   bool
	}{
		{"first without First", 0, func(m mad.RMPP) { m.SetFlags(mad.RMPPFlagActive) }, mad.RMPPStatusBadSegment, mad.RMPPTypeAbort, true},
		{"segment 0", 1, func(m mad.RMPP) { m.SetSegmentNumber(0) }, mad.RMPPStatusBadSegment, mad.RMPPTypeAbort, true},
		{"First on segment 2", 1, func(m mad.RMPP) { m.SetFlags(mad.RMPPFlagActive | mad.RMPPFlagFirst) }, mad.RMPPStatusBadSegment, mad.RMPPTypeAbort, true},
		{"version 2", 0, func(m mad.RMPP) { m.SetVersion(2) }, mad.RMPPStatusUnsupported, mad.RMPPTypeAbort, true},
		{"status in data", 1, func(m mad.RMPP) { m.SetStatus(1) }, mad.RMPPStatusIllegal, mad.RMPPTypeAbort, true},
		{"ack to receiver", 1, func(m mad.RMPP) { m.SetType(mad.RMPPTypeAck) }, mad.RMPPStatusBadType, mad.RMPPTypeAbort, true},
		{"last too long", 3, func(m mad.RMPP) { m.SetPayloadLength(221) }, mad.RMPPStatusBadLength, mad.RMPPTypeAbort, true},
		{"last shorter than header", 3, func(m mad.RMPP) { m.SetPayloadLength(5) }, mad.RMPPStatusBadLength, mad.RMPPTypeAbort, true},
		{"last disagrees with first", 3, func(m mad.RMPP) { m.SetPayloadLength(200) }, mad.RMPPStatusBadLength, mad.RMPPTypeAbort, true},
		{"sender aborts", 2, func(m mad.RMPP) { m.SetType(mad.RMPPTypeAbort); m.SetStatus(mad.RMPPStatusRetries) }, mad.RMPPStatusRetries, mad.RMPPTypeAbort, false},
		{"sender stops", 2, func(m mad.RMPP) { m.SetType(mad.RMPPTypeStop); m.SetStatus(mad.RMPPStatusResources) }, mad.RMPPStatusResources, mad.RMPPTypeStop, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			segs := segmentsOf(t, message(56+200*3+10))
			if len(segs) != 4 {
				t.Fatalf("%d segments", len(segs))
			}
			tt.edit(mad.RMPP(segs[tt.at]))
			var q queue
			r, err := rmpp.NewReceiver(rmpp.ReceiverConfig{Clock: clock.NewManual(time.Unix(0, 0)), Send: q.send, Window: 10})
			if err != nil {
				t.Fatal(err)
			}
			var last error
			for _, s := range segs[:tt.at+1] {
				_, _, last = r.Handle(s)
			}
			var e *rmpp.Error
			if !errors.As(last, &e) || e.Status != tt.status || e.Type != tt.typ || e.Sent != tt.sent {
				t.Fatalf("Handle: %v, want %v %v sent %v", last, tt.typ, tt.status, tt.sent)
			}
			out := q.take()
			var aborts []mad.RMPPFields
			for _, m := range out {
				if f := mad.RMPP(m).Fields(); f.Type != mad.RMPPTypeAck {
					aborts = append(aborts, f)
					if mad.MAD(m).Method() != mad.MAD(segs[0]).Method()^0x80 {
						t.Errorf("ABORT method %#x", mad.MAD(m).Method())
					}
				}
			}
			if tt.sent != (len(aborts) == 1) || (tt.sent && aborts[0].Status != tt.status) {
				t.Fatalf("receiver sent %v, want one ABORT %v: %v", aborts, tt.status, tt.sent)
			}
			if !r.Ended() {
				t.Errorf("transfer not ended")
			}
		})
	}
}

// TestReceiverTotalTime checks the ABORT a stalled transfer ends with.
func TestReceiverTotalTime(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	var q queue
	var doneErr error
	r, _ := rmpp.NewReceiver(rmpp.ReceiverConfig{Clock: clk, Send: q.send, TotalTime: time.Second,
		Done: func(err error) { doneErr = err }})
	segs := segmentsOf(t, message(56+200*3))
	if _, _, err := r.Handle(segs[0]); err != nil {
		t.Fatal(err)
	}
	clk.Advance(999 * time.Millisecond)
	if doneErr != nil {
		t.Fatal("expired early")
	}
	clk.Advance(time.Millisecond)
	if !errors.Is(doneErr, rmpp.ErrTimeout) {
		t.Fatalf("Done(%v), want ErrTimeout", doneErr)
	}
	out := q.take()
	if f := mad.RMPP(out[len(out)-1]).Fields(); f.Type != mad.RMPPTypeAbort || f.Status != mad.RMPPStatusTotalTime {
		t.Fatalf("last sent %v, want ABORT TotalTimeTooLong", f)
	}
	if _, _, err := r.Handle(segs[1]); !errors.Is(err, rmpp.ErrFinished) {
		t.Fatalf("Handle after expiry: %v", err)
	}
}

func TestReceiverMaxLength(t *testing.T) {
	var q queue
	r, _ := rmpp.NewReceiver(rmpp.ReceiverConfig{Clock: clock.NewManual(time.Unix(0, 0)), Send: q.send, MaxLength: 500, Window: 10})
	var err error
	for _, s := range segmentsOf(t, message(56+200*5)) {
		if _, _, err = r.Handle(s); err != nil {
			break
		}
	}
	var e *rmpp.Error
	if !errors.As(err, &e) || e.Type != mad.RMPPTypeStop || e.Status != mad.RMPPStatusResources {
		t.Fatalf("err %v, want STOP ResourcesExhausted", err)
	}
}

func TestNotRMPP(t *testing.T) {
	r, _ := rmpp.NewReceiver(rmpp.ReceiverConfig{Send: func([]byte) error { return nil }})
	if _, _, err := r.Handle(make([]byte, 10)); !errors.Is(err, rmpp.ErrNotRMPP) {
		t.Errorf("short: %v", err)
	}
	if _, _, err := r.Handle(make([]byte, 256)); !errors.Is(err, rmpp.ErrNotRMPP) {
		t.Errorf("inactive: %v", err)
	}
	if _, err := rmpp.NewSender(rmpp.SenderConfig{Send: func([]byte) error { return nil }}, make([]byte, 30)); err == nil {
		t.Error("NewSender took a message shorter than its class header")
	}
	if _, err := rmpp.NewSender(rmpp.SenderConfig{}, message(300)); err == nil {
		t.Error("NewSender took a nil Send")
	}
}

func FuzzReceiver(f *testing.F) {
	for _, s := range [][]byte{message(256), message(900)} {
		var q queue
		snd, _ := rmpp.NewSender(rmpp.SenderConfig{Clock: clock.NewManual(time.Unix(0, 0)), Send: q.send}, s)
		snd.Start()
		f.Add(q.take()[0])
	}
	f.Add([]byte{1, 3, 2, 0x93})
	// Two MADs: the first segment of a transfer, then a bad one.
	two := append(append([]byte(nil), message(256)...), message(256)...)
	mad.RMPP(two).Encode(&mad.RMPPFields{Version: 1, Type: mad.RMPPTypeData, Flags: mad.RMPPFlagActive | mad.RMPPFlagFirst, Data1: 1, Data2: 440})
	mad.RMPP(two[256:]).Encode(&mad.RMPPFields{Version: 1, Type: mad.RMPPTypeData, Flags: mad.RMPPFlagActive})
	f.Add(two)
	f.Fuzz(func(t *testing.T, data []byte) {
		var q queue
		r, _ := rmpp.NewReceiver(rmpp.ReceiverConfig{Clock: clock.NewManual(time.Unix(0, 0)), Send: q.send, Window: 2, MaxLength: 4096})
		// The input is cut into MADs, fed in order, twice.
		for round := 0; round < 2; round++ {
			for off := 0; off < len(data); off += mad.MADSize {
				m := data[off:min(off+mad.MADSize, len(data))]
				msg, done, _ := r.Handle(m)
				if done && len(msg) < mad.RMPPHeaderEnd {
					t.Fatalf("reassembled %d bytes", len(msg))
				}
			}
		}
		for _, m := range q.take() {
			if len(m) != mad.MADSize || !mad.RMPP(m).Active() {
				t.Fatalf("receiver sent a bad packet % x", m[:36])
			}
		}
	})
}
