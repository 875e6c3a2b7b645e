package umadep_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/umadep"
	"ibfab/umadproto"
	"ibfab/wire/mad"
)

// answeringPort is an HCA whose far end answers every Get at once
// (through Claim, as a loopback does), after gate lets its sends go.
type answeringPort struct {
	fakePort
	srv  *umadep.Server
	gate chan struct{} // closed: sends go; nil: always
	mu   sync.Mutex
	sent int
}

func (p *answeringPort) SendMAD(r agent.Request) error {
	if p.gate != nil {
		<-p.gate
	}
	p.mu.Lock()
	p.sent++
	p.mu.Unlock()
	m := append([]byte(nil), r.MAD...)
	mad.MAD(m).SetMethod(mad.MethodGetResp)
	p.srv.Claim(r.Port, agent.Outbound{Local: true, Port: r.Port, SLID: r.DLID, SrcQP: r.DestQP, MAD: m})
	return nil
}

func (p *answeringPort) sends() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent
}

func startAnswering(t *testing.T, gate chan struct{}) (*umadep.Server, *answeringPort, *clock.Manual, string) {
	t.Helper()
	clk := clock.NewManual(time.Unix(1000, 0))
	name := fmt.Sprintf("ibfab-umad-burst-%d-%s", os.Getpid(), t.Name())
	srv := umadep.New(umadep.Config{Name: name, Clock: clk})
	p := &answeringPort{fakePort: *newFakePort(), srv: srv, gate: gate}
	srv.Attach(p)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	return srv, p, clk, name
}

// TestBurst: a client writes 20,000 requests before it reads any answer,
// as a diagnostic sweeping a large subnet may; the kernel queues sends
// past its send queue and keeps the answers on the file's receive list,
// and so does the endpoint: every answer arrives, in order, none dropped.
func TestBurst(t *testing.T) {
	const n = 20_000
	srv, _, _, name := startAnswering(t, nil)
	c, err := umadproto.Dial(name, 1)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	id, errno := c.Register(reg(0x32, 1, 1, 0, ouiOpenIB))
	require.Zero(t, errno)
	for i := range n {
		require.NoError(t, c.Send(umadproto.UserMAD{AgentID: id, LID: 7, QPN: 1, TimeoutMS: 100}, request(0x32, 1, mad.MethodGet, uint64(i+1))))
	}
	waitFor(t, "every answer queued for the client", func() bool { return srv.Stats().Claimed >= n })
	for i := range n {
		u, m := recv(t, c)
		require.Zero(t, u.Status, "answer %d", i)
		require.Equal(t, uint64(i+1), mad.MAD(m).TransactionID()&0xffff_ffff, "answers in the order of their arrival")
	}
	st := srv.Stats()
	assert.Zero(t, st.Dropped, "dropped")
	assert.Zero(t, st.SendFailed, "send failures")
	assert.Zero(t, st.Timeouts, "timeouts")
}

// TestTimeoutFromSend: a request's response time starts when it has left
// the HCA, as the kernel starts it at the send's completion; a request
// that waits in the send queue longer than its timeout is not resent for
// that.
func TestTimeoutFromSend(t *testing.T) {
	gate := make(chan struct{})
	srv, p, clk, name := startAnswering(t, gate)
	c, err := umadproto.Dial(name, 1)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	id, _ := c.Register(reg(0x32, 1, 1, 0, ouiOpenIB))
	const n = 50
	for i := range n {
		require.NoError(t, c.Send(umadproto.UserMAD{AgentID: id, LID: 7, QPN: 1, TimeoutMS: 100, Retries: 3}, request(0x32, 1, mad.MethodGet, uint64(i+1))))
	}
	waitFor(t, "the requests written", func() bool { return srv.Stats().FromClients == n })
	clk.Advance(time.Second) // ten timeouts pass while the sends wait
	close(gate)
	for i := range n {
		u, _ := recv(t, c)
		require.Zero(t, u.Status, "answer %d", i)
	}
	assert.Zero(t, srv.Stats().Retries, "a request that had not left was resent")
	assert.Equal(t, n, p.sends(), "each sent once")
}
