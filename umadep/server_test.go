package umadep_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/internal/testsupport"
	"ibfab/rmpp"
	"ibfab/umadep"
	"ibfab/umadproto"
	"ibfab/wire/mad"
)

// fakePort is an HCA of two ports that keeps what is sent through it.
type fakePort struct {
	mu   sync.Mutex
	sent chan agent.Request
	issm map[uint8]bool
}

func newFakePort() *fakePort {
	return &fakePort{sent: make(chan agent.Request, 1024), issm: map[uint8]bool{}}
}

func (p *fakePort) SendMAD(r agent.Request) error {
	r.MAD = append([]byte(nil), r.MAD...)
	p.sent <- r
	return nil
}
func (p *fakePort) NumPorts() uint8 { return 2 }
func (p *fakePort) PKeys(uint8) []mad.PKey {
	return []mad.PKey{0xffff, 0x8001, 0x0002}
}
func (p *fakePort) LocalGet(port uint8, attr mad.AttrID, _ uint32) ([]byte, error) {
	switch attr {
	case mad.AttrNodeInfo:
		return mad.AppendNodeInfo(nil, &mad.NodeInfoFields{NodeGUID: 0x0002c90300001230, PortGUID: 0x0002c90300001230 + uint64(port), NumPorts: 2}), nil
	case mad.AttrPortInfo:
		pi := mad.PortInfo(make([]byte, 64))
		pi.SetLID(uint16(port) * 10)
		pi.SetMasterSMLID(1)
		pi.SetPortState(mad.PortStateActive)
		return pi, nil
	}
	return nil, errors.New("no such attribute")
}
func (p *fakePort) SetIsSM(port uint8, on bool) error {
	p.mu.Lock()
	p.issm[port] = on
	p.mu.Unlock()
	return nil
}

// next returns the next MAD sent through the port.
func (p *fakePort) next(t *testing.T) agent.Request {
	t.Helper()
	select {
	case r := <-p.sent:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("nothing sent")
	}
	return agent.Request{}
}

func (p *fakePort) none(t *testing.T) {
	t.Helper()
	select {
	case r := <-p.sent:
		t.Fatalf("sent % x", r.MAD[:36])
	case <-time.After(50 * time.Millisecond):
	}
}

type env struct {
	srv  *umadep.Server
	port *fakePort
	clk  *clock.Manual
	name string
}

func start(t *testing.T) *env {
	t.Helper()
	e := &env{port: newFakePort(), clk: clock.NewManual(time.Unix(1000, 0)),
		name: fmt.Sprintf("ibfab-umad-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"))}
	e.srv = umadep.New(umadep.Config{Name: e.name, Clock: e.clk})
	e.srv.Attach(e.port)
	if err := e.srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.srv.Close() })
	return e
}

func (e *env) dial(t *testing.T, port uint8) *umadproto.Conn {
	t.Helper()
	c, err := umadproto.Dial(e.name, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func reg(class, version uint8, qpn uint32, rmppV uint8, oui uint32, methods ...uint8) umadproto.Registration {
	r := umadproto.Registration{QPN: qpn, MgmtClass: class, ClassVersion: version, RMPPVersion: rmppV, OUI: oui}
	for _, m := range methods {
		r.SetMethod(m)
	}
	return r
}

// request builds a 256-byte MAD.
func request(class mad.MgmtClass, version uint8, method mad.Method, tid uint64) []byte {
	m := make([]byte, mad.MADSize)
	h := mad.MAD(m)
	h.SetBaseVersion(1)
	h.SetMgmtClass(class)
	h.SetClassVersion(version)
	h.SetMethod(method)
	h.SetTransactionID(tid)
	if class >= 0x30 && class <= 0x4f {
		m[37], m[38], m[39] = 0x00, 0x14, 0x05
	}
	return m
}

func recv(t *testing.T, c *umadproto.Conn) (umadproto.UserMAD, []byte) {
	t.Helper()
	u, m, err := c.Recv(time.Now().Add(5 * time.Second))
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return u, m
}

func noRecv(t *testing.T, c *umadproto.Conn) {
	t.Helper()
	if _, m, err := c.Recv(time.Now().Add(50 * time.Millisecond)); err == nil {
		t.Fatalf("received % x", m[:24])
	}
}

const ouiOpenIB = 0x001405

func TestRegisterRules(t *testing.T) {
	e := start(t)
	a := e.dial(t, 1)
	b := e.dial(t, 1)
	other := e.dial(t, 2)
	if _, err := a.Register(reg(0x32, 1, 1, 0, ouiOpenIB, 1)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		c    *umadproto.Conn
		r    umadproto.Registration
		want error
	}{
		{"same method elsewhere", b, reg(0x32, 1, 1, 0, ouiOpenIB, 1), syscall.EINVAL},
		{"other method", b, reg(0x32, 1, 1, 0, ouiOpenIB, 2), nil},
		{"other OUI", b, reg(0x32, 1, 1, 0, 0x000002, 1), nil},
		{"other version", b, reg(0x32, 2, 1, 0, ouiOpenIB, 1), nil},
		{"other port", other, reg(0x32, 1, 1, 0, ouiOpenIB, 1), nil},
		{"SMP on QP1", b, reg(0x81, 1, 1, 0, 0, 1), syscall.EINVAL},
		{"SMP on QP0", b, reg(0x81, 1, 0, 0, 0, 7), nil},
		{"GMP on QP0", b, reg(0x04, 1, 0, 0, 0, 1), syscall.EINVAL},
		{"QP2", b, reg(0x04, 1, 2, 0, 0, 1), syscall.EINVAL},
		{"RMPP version 2", b, reg(0x03, 2, 1, 2, 0, 1), syscall.EINVAL},
		{"send-only", b, reg(0, 0, 1, 0, 0), nil},
		{"send-only twice", b, reg(0, 0, 1, 0, 0), nil},
		{"bad flag", b, umadproto.Registration{QPN: 1, MgmtClass: 3, Flags: 2}, syscall.EINVAL},
	}
	for _, tt := range tests {
		_, err := tt.c.Register(tt.r)
		if !errors.Is(err, tt.want) && !(err == nil && tt.want == nil) {
			t.Errorf("%s: Register = %v, want %v", tt.name, err, tt.want)
		}
	}
	// Agent ids run out at MaxAgents, as the kernel's.
	c := e.dial(t, 1)
	for i := 0; i < umadep.MaxAgents; i++ {
		if id, err := c.Register(reg(0, 0, 1, 0, 0)); err != nil || id != uint32(i) {
			t.Fatalf("agent %d: id %d, %v", i, id, err)
		}
	}
	if _, err := c.Register(reg(0, 0, 1, 0, 0)); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("agent %d: %v, want ENOMEM", umadep.MaxAgents, err)
	}
	if err := c.Unregister(5); err != nil {
		t.Fatal(err)
	}
	if err := c.Unregister(5); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("second Unregister: %v", err)
	}
	if id, err := c.Register(reg(0, 0, 1, 0, 0)); err != nil || id != 5 {
		t.Fatalf("re-register: %d %v", id, err)
	}
}

// TestDispatchRequests checks that unsolicited requests reach the agent
// registered for their class, version, method and OUI, and only it: the
// ibping server and the ibsysstat server each get theirs.
func TestDispatchRequests(t *testing.T) {
	e := start(t)
	ping := e.dial(t, 1)
	sysstat := e.dial(t, 1)
	pingID, _ := ping.Register(reg(0x32, 1, 1, 0, ouiOpenIB, uint8(mad.MethodGet)))
	statID, _ := sysstat.Register(reg(0x33, 1, 1, 0, ouiOpenIB, uint8(mad.MethodGet)))
	tests := []struct {
		name   string
		m      []byte
		port   uint8
		to     *umadproto.Conn
		id     uint32
		claims bool
	}{
		{"ping", request(0x32, 1, mad.MethodGet, 7), 1, ping, pingID, true},
		{"sysstat", request(0x33, 1, mad.MethodGet, 8), 1, sysstat, statID, true},
		{"ping Set", request(0x32, 1, mad.MethodSet, 9), 1, nil, 0, false},
		{"ping version 2", request(0x32, 2, mad.MethodGet, 10), 1, nil, 0, false},
		{"ping on port 2", request(0x32, 1, mad.MethodGet, 11), 2, nil, 0, false},
		{"other class", request(0x34, 1, mad.MethodGet, 12), 1, nil, 0, false},
		{"response of no agent", request(0x32, 1, mad.MethodGetResp, 13), 1, nil, 0, false},
	}
	for _, tt := range tests {
		o := agent.Outbound{Local: true, Port: tt.port, SLID: 42, SL: 3, SrcQP: 1, PKey: 0x8001, MAD: tt.m}
		if got := e.srv.Claim(tt.port, o); got != tt.claims {
			t.Fatalf("%s: Claim = %v, want %v", tt.name, got, tt.claims)
		}
		if !tt.claims {
			continue
		}
		u, m := recv(t, tt.to)
		if u.AgentID != tt.id || u.LID != 42 || u.SL != 3 || u.QPN != 1 || u.PKeyIndex != 1 ||
			u.Length != umadproto.HeaderSize+mad.MADSize || mad.MAD(m).TransactionID() != mad.MAD(tt.m).TransactionID() {
			t.Errorf("%s: delivered %+v", tt.name, u)
		}
	}
	noRecv(t, ping)
	noRecv(t, sysstat)
}

// TestSendAndResponse checks a request's way out (agent's TID bits, the
// P_Key of its index) and its response's way back.
func TestSendAndResponse(t *testing.T) {
	e := start(t)
	c := e.dial(t, 1)
	id, _ := c.Register(reg(0x32, 1, 1, 0, ouiOpenIB))
	m := request(0x32, 1, mad.MethodGet, 0x1234_5678)
	if err := c.Send(umadproto.UserMAD{AgentID: id, LID: 7, SL: 2, QPN: 1, QKey: 0x80010000, PKeyIndex: 1, TimeoutMS: 100}, m[:100]); err != nil {
		t.Fatal(err)
	}
	r := e.port.next(t)
	tid := mad.MAD(r.MAD).TransactionID()
	if r.DLID != 7 || r.SL != 2 || r.DestQP != 1 || r.PKey != 0x8001 || r.Port != 1 || len(r.MAD) != mad.MADSize {
		t.Fatalf("sent %+v", r)
	}
	if tid&0xffff_ffff != 0x1234_5678 || tid>>63 != 1 {
		t.Fatalf("TID %#x: want the agent's bits on top of the client's low 32", tid)
	}
	resp := request(0x32, 1, mad.MethodGetResp, tid)
	if !e.srv.Claim(1, agent.Outbound{Local: true, Port: 1, SLID: 7, SrcQP: 1, PKey: 0x8001, MAD: resp}) {
		t.Fatal("response not claimed")
	}
	u, got := recv(t, c)
	if u.AgentID != id || u.Status != 0 || mad.MAD(got).TransactionID() != tid {
		t.Fatalf("response %+v TID %#x", u, mad.MAD(got).TransactionID())
	}
	// A second response to the same request comes late: claimed, dropped.
	if !e.srv.Claim(1, agent.Outbound{Local: true, Port: 1, SLID: 7, SrcQP: 1, MAD: request(0x32, 1, mad.MethodGetResp, tid)}) {
		t.Fatal("late response not claimed")
	}
	noRecv(t, c)
	// A send with an index past the table carries the default P_Key.
	c.Send(umadproto.UserMAD{AgentID: id, LID: 7, QPN: 1, PKeyIndex: 9}, request(0x32, 1, mad.MethodGet, 1))
	if r := e.port.next(t); r.PKey != mad.DefaultPKey {
		t.Fatalf("P_Key %#x for an index past the table", r.PKey)
	}
	// Sends from an agent the connection does not hold go nowhere.
	c.Send(umadproto.UserMAD{AgentID: id + 1, LID: 7, QPN: 1}, request(0x32, 1, mad.MethodGet, 2))
	c.Send(umadproto.UserMAD{AgentID: id, LID: 7, QPN: 1}, make([]byte, 300))
	e.port.none(t)
}

// TestTimeoutRetries checks resends and the hand-back with ETIMEDOUT.
func TestTimeoutRetries(t *testing.T) {
	e := start(t)
	c := e.dial(t, 1)
	id, _ := c.Register(reg(0x32, 1, 1, 0, ouiOpenIB))
	c.Send(umadproto.UserMAD{AgentID: id, LID: 7, QPN: 1, TimeoutMS: 100, Retries: 2}, request(0x32, 1, mad.MethodGet, 0x55))
	first := e.port.next(t)
	for i := 0; i < 2; i++ {
		e.clk.Advance(100 * time.Millisecond)
		again := e.port.next(t)
		if mad.MAD(again.MAD).TransactionID() != mad.MAD(first.MAD).TransactionID() {
			t.Fatalf("resend %d has another TID", i+1)
		}
	}
	e.clk.Advance(99 * time.Millisecond)
	noRecv(t, c)
	e.clk.Advance(time.Millisecond)
	u, m := recv(t, c)
	if u.Status != umadproto.StatusTimedOut || len(m) != mad.MADHeaderSize || mad.MAD(append(m, make([]byte, 232)...)).TransactionID() != 0x55 {
		t.Fatalf("handed back %+v, %d bytes", u, len(m))
	}
	e.port.none(t)
	if st := e.srv.Stats(); st.Timeouts != 1 || st.Retries != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// saTable builds an SA GetTableResp of n records of size 100 for TID tid.
func saTable(tid uint64, n int) []byte {
	m := make([]byte, 56+100*n)
	h := mad.MAD(m)
	h.SetBaseVersion(1)
	h.SetMgmtClass(mad.ClassSubnAdm)
	h.SetClassVersion(2)
	h.SetMethod(0x93)
	h.SetTransactionID(tid)
	mad.RMPP(m[:256:256]).SetFlags(mad.RMPPFlagActive)
	for i := 56; i < len(m); i++ {
		m[i] = byte(i)
	}
	return m
}

// TestRMPPReceive checks that a multi-segment response is reassembled,
// ACKed, and given whole to the requesting agent.
func TestRMPPReceive(t *testing.T) {
	e := start(t)
	c := e.dial(t, 1)
	id, _ := c.Register(reg(uint8(mad.ClassSubnAdm), 2, 1, 1, 0))
	c.Send(umadproto.UserMAD{AgentID: id, LID: 1, QPN: 1, TimeoutMS: 1000}, request(mad.ClassSubnAdm, 2, mad.MethodGetTable, 0x77))
	tid := mad.MAD(e.port.next(t).MAD).TransactionID()
	table := saTable(tid, 15) // 1556 bytes: 8 segments
	var segs [][]byte
	snd, _ := rmpp.NewSender(rmpp.SenderConfig{Clock: clock.NewManual(time.Unix(0, 0)), Send: func(m []byte) error {
		segs = append(segs, m)
		return nil
	}}, table)
	snd.Start()
	deliver := func(m []byte) {
		if !e.srv.Claim(1, agent.Outbound{Local: true, Port: 1, SLID: 1, SrcQP: 1, MAD: m}) {
			t.Fatal("segment not claimed")
		}
	}
	for len(segs) > 0 {
		s := segs[0]
		segs = segs[1:]
		deliver(s)
		if mad.RMPP(s).Flags()&mad.RMPPFlagLast != 0 {
			break
		}
		// Each ACK the endpoint sends goes back to the sender.
		for {
			select {
			case r := <-e.port.sent:
				if mad.RMPP(r.MAD).Type() != mad.RMPPTypeAck || r.DLID != 1 {
					t.Fatalf("endpoint sent %v", mad.RMPP(r.MAD).Fields())
				}
				snd.Handle(r.MAD)
				continue
			case <-time.After(20 * time.Millisecond):
			}
			break
		}
	}
	u, m := recv(t, c)
	if u.AgentID != id || len(m) != len(table) || int(u.Length) != umadproto.HeaderSize+len(table) {
		t.Fatalf("reassembled %d bytes (length %d), want %d", len(m), u.Length, len(table))
	}
	if string(m[56:]) != string(table[56:]) {
		t.Fatal("reassembled data differs")
	}
}

// TestRMPPSend checks that an SA agent's large response goes out as an
// RMPP transfer paced by ACKs.
func TestRMPPSend(t *testing.T) {
	e := start(t)
	c := e.dial(t, 1)
	id, _ := c.Register(reg(uint8(mad.ClassSubnAdm), 2, 1, 1, 0, uint8(mad.MethodGetTable)))
	if !e.srv.Claim(1, agent.Outbound{Local: true, Port: 1, SLID: 9, SrcQP: 1, MAD: request(mad.ClassSubnAdm, 2, mad.MethodGetTable, 0xabc)}) {
		t.Fatal("GetTable not claimed")
	}
	recv(t, c)
	table := saTable(0xabc, 30) // 3056 bytes: 16 segments
	c.Send(umadproto.UserMAD{AgentID: id, LID: 9, QPN: 1}, table)
	var got []byte
	r, _ := rmpp.NewReceiver(rmpp.ReceiverConfig{Clock: clock.NewManual(time.Unix(0, 0)), Window: 4, Send: func(a []byte) error {
		if !e.srv.Claim(1, agent.Outbound{Local: true, Port: 1, SLID: 9, SrcQP: 1, MAD: a}) {
			t.Error("ACK not claimed")
		}
		return nil
	}})
	for got == nil {
		seg := e.port.next(t)
		if seg.DLID != 9 || mad.MAD(seg.MAD).TransactionID() != 0xabc {
			t.Fatalf("segment to %d TID %#x", seg.DLID, mad.MAD(seg.MAD).TransactionID())
		}
		msg, done, err := r.Handle(seg.MAD)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			got = msg
		}
	}
	if len(got) != len(table) || string(got[56:]) != string(table[56:]) {
		t.Fatalf("peer reassembled %d bytes, want %d", len(got), len(table))
	}
	// The last ACK completes the transfer on the server's goroutine.
	waitFor(t, "the transfer completed", func() bool { return e.srv.Stats().RMPPSent != 0 })
	if st := e.srv.Stats(); st.RMPPSent != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRMPPLoopbackBothWays checks an RMPP request answered by an RMPP
// response of the same TID on the same port, as when osmtest's GetMulti
// goes to an OpenSM on its own HCA: the request's finished transfer must
// not swallow the response's segments or ACKs.
func TestRMPPLoopbackBothWays(t *testing.T) {
	e := start(t)
	const lid = 10 // the port's own: what it sends to itself comes back
	go func() {
		for {
			select {
			case r := <-e.port.sent:
				e.srv.Claim(r.Port, agent.Outbound{Local: true, Port: r.Port, SLID: r.DLID, SrcQP: 1, MAD: r.MAD})
			case <-t.Context().Done():
				return
			}
		}
	}()
	client, sa := e.dial(t, 1), e.dial(t, 1)
	cid, _ := client.Register(reg(uint8(mad.ClassSubnAdm), 2, 1, 1, 0))
	sid, _ := sa.Register(reg(uint8(mad.ClassSubnAdm), 2, 1, 1, 0, uint8(mad.MethodGetMulti)))
	req := saTable(0x16, 3) // 356 bytes: two segments
	mad.MAD(req).SetMethod(mad.MethodGetMulti)
	if err := client.Send(umadproto.UserMAD{AgentID: cid, LID: lid, QPN: 1, TimeoutMS: 1000}, req); err != nil {
		t.Fatal(err)
	}
	u, got := recv(t, sa)
	if u.AgentID != sid || len(got) != len(req) {
		t.Fatalf("SA got %d bytes for agent %d, want %d for %d", len(got), u.AgentID, len(req), sid)
	}
	resp := saTable(mad.MAD(got).TransactionID(), 15) // eight segments
	mad.MAD(resp).SetMethod(mad.MethodGetMultiResp)
	if err := sa.Send(umadproto.UserMAD{AgentID: sid, LID: lid, QPN: 1}, resp); err != nil {
		t.Fatal(err)
	}
	u, got = recv(t, client)
	if u.AgentID != cid || u.Status != 0 || len(got) != len(resp) || string(got[56:]) != string(resp[56:]) {
		t.Fatalf("client got %d bytes (status %d), want the %d of the response", len(got), u.Status, len(resp))
	}
	waitFor(t, "both transfers completed", func() bool { st := e.srv.Stats(); return st.RMPPSent == 2 && st.RMPPRecv == 2 })
}

func TestSysfsAndISSM(t *testing.T) {
	e := start(t)
	for path, want := range map[string]string{
		"infiniband_mad/abi_version":               "5\n",
		"infiniband/ibfab0/node_type":              "1: CA\n",
		"infiniband/ibfab0/ports/2/lid":            "0x14\n",
		"infiniband/ibfab0/ports/1/state":          "4: ACTIVE\n",
		"infiniband/ibfab0/ports/1/pkeys/1":        "0x8001\n",
		"infiniband/ibfab0/ports/1/gids/0":         "0000:0000:0000:0000:0002:c903:0000:1231\n",
		"infiniband_mad/umad1/port":                "2\n",
		"infiniband/ibfab0/node_guid":              "0002:c903:0000:1230\n",
		"infiniband_mad/issm0/ibdev":               "ibfab0\n",
		"infiniband/ibfab0/ports/1/lid_mask_count": "0\n",
	} {
		got, err := umadproto.ReadSysfs(e.name, path)
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := umadproto.ReadSysfs(e.name, "infiniband/ibfab0/ports/3/lid"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := umadproto.ReadSysfs(e.name, "infiniband/ibfab0/ports"); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("directory: %v", err)
	}
	if ents, err := umadproto.ListSysfs(e.name); err != nil || len(ents) < 30 {
		t.Errorf("ListSysfs: %d entries, %v", len(ents), err)
	}
	s, err := umadproto.OpenISSM(e.name, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := umadproto.OpenISSM(e.name, 2); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("second issm: %v", err)
	}
	waitFor(t, "port 2's IsSM set", func() bool { e.port.mu.Lock(); defer e.port.mu.Unlock(); return e.port.issm[2] })
	s.Close()
	waitFor(t, "port 2's IsSM cleared", func() bool { e.port.mu.Lock(); defer e.port.mu.Unlock(); return !e.port.issm[2] })
	if _, err := umadproto.Dial(e.name, 3); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("port 3: %v", err)
	}
}

// waitFor waits up to 5 s for what the server does on its goroutines.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testsupport.WaitFor(t, 5*time.Second, what, cond)
}

// TestBadInput sends the endpoint what a broken client might: it refuses,
// counts, and keeps serving.
func TestBadInput(t *testing.T) {
	e := start(t)
	raw := func(b []byte) []byte {
		c, err := net.DialUnix("unixpacket", nil, umadproto.Addr(e.name))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(b)
		c.SetReadDeadline(time.Now().Add(time.Second))
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		return buf[:n]
	}
	tests := []struct {
		name  string
		hello []byte
		errno syscall.Errno // 0: the connection is closed without a reply
	}{
		{"short", []byte{1, 2, 3}, 0},
		{"bad magic", append([]byte{0, 0, 0, 0}, umadproto.AppendHello(nil, umadproto.Hello{Role: umadproto.RoleUMAD, Port: 1})[4:]...), 0},
		{"unknown role", umadproto.AppendHello(nil, umadproto.Hello{Role: 9, Port: 1}), syscall.EINVAL},
		{"port 0", umadproto.AppendHello(nil, umadproto.Hello{Role: umadproto.RoleUMAD}), syscall.ENODEV},
		{"issm port 9", umadproto.AppendHello(nil, umadproto.Hello{Role: umadproto.RoleISSM, Port: 9}), syscall.ENODEV},
		{"unknown token", umadproto.AppendHello(nil, umadproto.Hello{Role: umadproto.RoleControl, Token: 999}), syscall.EBADF},
	}
	for _, tt := range tests {
		got := raw(tt.hello)
		if tt.errno == 0 {
			if len(got) != 0 {
				t.Errorf("%s: reply % x, want none", tt.name, got)
			}
			continue
		}
		h, err := umadproto.DecodeHello(got)
		if err != nil || syscall.Errno(h.Errno) != tt.errno {
			t.Errorf("%s: reply %+v %v, want errno %v", tt.name, h, err, tt.errno)
		}
	}
	// A control connection with no umad may read sysfs only.
	c, err := net.DialUnix("unixpacket", nil, umadproto.Addr(e.name))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(umadproto.AppendHello(nil, umadproto.Hello{Role: umadproto.RoleControl}))
	buf := make([]byte, umadproto.MaxControl)
	c.Read(buf)
	for _, req := range [][]byte{
		umadproto.AppendRequest(nil, umadproto.OpRegister, make([]byte, umadproto.RegistrationSize)),
		umadproto.AppendRequest(nil, umadproto.OpEnablePKey, nil),
		umadproto.AppendRequest(nil, 77, nil),
		{1},
	} {
		c.Write(req)
		n, _ := c.Read(buf)
		if errno, _, err := umadproto.DecodeReply(buf[:n]); err != nil || errno == 0 {
			t.Errorf("request % x: errno %d, %v", req, errno, err)
		}
	}
	// Garbage on a umad connection is counted, not sent.
	u := e.dial(t, 1)
	id, _ := u.Register(reg(0x32, 1, 1, 0, ouiOpenIB))
	u.Send(umadproto.UserMAD{AgentID: id}, []byte{1, 2})
	e.port.none(t)
	if st := e.srv.Stats(); st.BadMessages == 0 {
		t.Errorf("stats %+v", st)
	}
	// And it still serves.
	if _, err := umadproto.ReadSysfs(e.name, "infiniband_mad/abi_version"); err != nil {
		t.Fatal(err)
	}
}

// TestLargeTransfer moves an RMPP message of 400 KB (an SA table of a few
// thousand records) from a client through the endpoint, past the default
// socket buffer (root raises it).
func TestLargeTransfer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SO_SNDBUFFORCE needs root; without it one write is bounded by wmem_max")
	}
	e := start(t)
	c := e.dial(t, 1)
	id, _ := c.Register(reg(uint8(mad.ClassSubnAdm), 2, 1, 1, 0, uint8(mad.MethodGetTable)))
	table := saTable(0x42, 4000) // 400 KB: 2000 segments of 200 bytes
	require := func(err error) {
		if err != nil {
			t.Helper()
			t.Fatal(err)
		}
	}
	require(c.Send(umadproto.UserMAD{AgentID: id, LID: 9, QPN: 1}, table))
	first := e.port.next(t)
	if f := mad.RMPP(first.MAD).Fields(); f.Data1 != 1 || f.Data2 != 2000*220 {
		t.Fatalf("first segment %v", f)
	}
}
