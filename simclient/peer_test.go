package simclient_test

// The client against an in-process echo server speaking the protocol in
// the test's own network namespace: Recv's waking, deadlines and closing,
// and the cost of a round trip.

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/internal/testsupport"
	"ibfab/madport"
	"ibfab/simclient"
	"ibfab/simproto"
	"ibfab/wire/mad"
)

// echoServer answers Connect and Disconnect, and each MAD datagram with
// the same MAD turned into a response, from "<base>:out1" as ibsim does.
type echoServer struct {
	base string
	ctl  *net.UnixConn
	wg   sync.WaitGroup

	mu  sync.Mutex
	out *net.UnixConn // made by Connect
}

var serverSeq atomic.Uint32

func startEcho(tb testing.TB) *echoServer {
	tb.Helper()
	s := &echoServer{base: fmt.Sprintf("ibf-simclient-test-%d-%d", os.Getpid(), serverSeq.Add(1))}
	var err error
	s.ctl, err = net.ListenUnixgram("unixgram", simproto.Addr(simproto.CtlName(s.base)))
	require.NoError(tb, err)
	s.wg.Add(1)
	go s.serveCtl()
	tb.Cleanup(func() {
		s.ctl.Close()
		s.mu.Lock()
		if s.out != nil {
			s.out.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) serveCtl() {
	defer s.wg.Done()
	buf := make([]byte, 2*simproto.CtlSize)
	for {
		n, from, err := s.ctl.ReadFromUnix(buf)
		if err != nil {
			return
		}
		req, err := simproto.DecodeCtl(buf[:n])
		if err != nil {
			continue
		}
		resp := simproto.CtlFields{Type: req.Type, ClientID: 1}
		if req.Type == simproto.CtlConnect {
			ci, err := simproto.DecodeClientInfo(req.Data[:])
			if err != nil {
				continue
			}
			// Connected to the client's socket, as ibsim's is. One
			// client per server.
			out, err := net.DialUnix("unixgram", simproto.Addr(simproto.OutName(s.base, 1)),
				simproto.Addr(simproto.InName(s.base, ci.ID)))
			if err != nil {
				continue
			}
			s.mu.Lock()
			s.out = out
			s.mu.Unlock()
			s.wg.Add(1)
			go s.serveMADs(out)
			resp.Len = simproto.ClientInfoSize
			got := simproto.ClientInfo{ID: 1, NodeID: "echo"}
			got.Encode(resp.Data[:])
		}
		// Go reads the name back without its trailing NUL: a different
		// abstract name.
		s.ctl.WriteToUnix(simproto.AppendCtl(nil, &resp), simproto.Addr(simproto.AddrName(from)))
	}
}

func (s *echoServer) serveMADs(out *net.UnixConn) {
	defer s.wg.Done()
	buf := make([]byte, 2*simproto.RequestSize)
	for {
		n, err := out.Read(buf)
		if err != nil {
			return
		}
		if echo(buf[:n]) {
			out.Write(buf[:n])
		}
	}
}

// echo turns the MAD datagram b into its answer in place.
func echo(b []byte) bool {
	r := simproto.Request(b)
	if !r.IsValid() {
		return false
	}
	r.MAD()[3] |= 0x80 // the response bit of the method
	r.SetSLID(r.DLID())
	return true
}

func dialEcho(tb testing.TB, s *echoServer) *simclient.Client {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := simclient.Dial(ctx, simclient.Config{Name: s.base})
	require.NoError(tb, err)
	tb.Cleanup(func() { c.Close() })
	return c
}

func smpGet(tid uint64) madport.MAD {
	f := mad.SMPFields{Method: mad.MethodGet, TransactionID: tid, AttrID: mad.AttrNodeInfo}
	return madport.MAD{LID: 7, Data: mad.AppendSMP(nil, &f)}
}

func TestEchoRecv(t *testing.T) {
	s := startEcho(t)
	c := dialEcho(t, s)
	assert.Equal(t, "echo", c.NodeID())

	// The TID's upper bits survive; the answer comes from the LID asked.
	m := call(t, c, smpGet(0xabcd_0000_0000_0042))
	assert.True(t, mad.MAD(m.Data).IsResponse())
	assert.Equal(t, uint16(7), m.LID)
	assert.Len(t, m.Data, madport.MADSize)

	t.Run("deadline", func(t *testing.T) {
		_, err := c.RecvUntil(context.Background(), time.Now().Add(20*time.Millisecond))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err = c.Recv(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		call(t, c, smpGet(0x43)) // the deadline does not stay
	})

	t.Run("cancel wakes", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := c.Recv(ctx)
			errc <- err
		}()
		testsupport.WaitBlocked(t, waitLimit, 1, "ibfab/simclient.(*Client).Recv", "internal/poll.runtime_pollWait") // in the read
		cancel()
		assert.ErrorIs(t, <-errc, context.Canceled)
		// The canceled context's wake-up may land on the next read,
		// which must not fail for it.
		call(t, c, smpGet(0x44))
	})

	t.Run("a context per call", func(t *testing.T) {
		for i := range 50 {
			ctx, cancel := context.WithCancel(context.Background())
			require.NoError(t, c.Send(smpGet(uint64(0x100+i))))
			m, err := c.Recv(ctx)
			cancel()
			require.NoError(t, err)
			assert.Equal(t, uint64(0x100+i), mad.MAD(m.Data).TransactionID())
		}
	})

	t.Run("concurrent receivers", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		got := make(chan uint64, 2)
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				m, err := c.Recv(ctx)
				if assert.NoError(t, err) {
					got <- mad.MAD(m.Data).TransactionID()
				}
			})
		}
		require.NoError(t, c.Send(smpGet(0x45)))
		require.NoError(t, c.Send(smpGet(0x46)))
		wg.Wait()
		close(got)
		var tids []uint64
		for tid := range got {
			tids = append(tids, tid)
		}
		assert.ElementsMatch(t, []uint64{0x45, 0x46}, tids)
	})

	st := c.Stats()
	assert.Zero(t, st.BadMessages+st.StaleCtl, "%+v", st)
	assert.Equal(t, st.Sent, st.Received, "%+v", st)
}

func TestCloseWakesRecv(t *testing.T) {
	s := startEcho(t)
	c := dialEcho(t, s)
	errc := make(chan error, 2)
	for range 2 { // one in the read, one waiting for its turn
		go func() {
			_, err := c.Recv(context.Background())
			errc <- err
		}()
	}
	testsupport.WaitBlocked(t, waitLimit, 2, "ibfab/simclient.(*Client).Recv")
	require.NoError(t, c.Close())
	assert.ErrorIs(t, <-errc, madport.ErrClosed)
	assert.ErrorIs(t, <-errc, madport.ErrClosed)
	_, err := c.RecvUntil(context.Background(), time.Now().Add(time.Hour))
	assert.ErrorIs(t, err, madport.ErrClosed)
}

// BenchmarkRoundTrip: SMP round trips through the client against the echo
// server with 16 in flight, as the SM keeps them, next to the same round
// trips on bare sockets in the same run: read on the caller's goroutine
// (raw, the floor) and handed over by a reader goroutine through a channel
// (handoff, how the client received before). The three take turns in
// chunks, so that load from elsewhere falls on each alike; ns/op and
// allocs are the client's, the ratios its wall and CPU time (user and
// system, of the whole process: the echo server's included) to theirs.
func BenchmarkRoundTrip(b *testing.B) {
	const window, chunks = 16, 10
	s := startEcho(b)
	c := dialEcho(b, s)
	ctx := context.Background()
	tid := uint64(0)
	client := func() error {
		if _, err := c.RecvUntil(ctx, time.Now().Add(waitLimit)); err != nil {
			return err
		}
		tid++
		return c.Send(smpGet(tid))
	}
	for range window {
		tid++
		require.NoError(b, c.Send(smpGet(tid)))
	}
	raw := bareRoundTrips(b, window, false)
	handoff := bareRoundTrips(b, window, true)
	var wall, cpu [3]time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for k := range chunks {
		n := b.N/chunks + min(1, b.N%chunks/(k+1))
		for v, rt := range []func() error{client, raw, handoff} {
			if v > 0 {
				b.StopTimer()
			}
			w0, c0 := time.Now(), cpuTime(b)
			for range n {
				if err := rt(); err != nil {
					b.Fatal(err)
				}
			}
			wall[v] += time.Since(w0)
			cpu[v] += cpuTime(b) - c0
			if v > 0 {
				b.StartTimer()
			}
		}
	}
	b.StopTimer()
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(wall[1]), "raw-ns/op")
	b.ReportMetric(per(wall[2]), "handoff-ns/op")
	b.ReportMetric(per(cpu[0]), "cpu-ns/op")
	b.ReportMetric(wall[0].Seconds()/wall[2].Seconds(), "client/handoff")
	b.ReportMetric(cpu[0].Seconds()/cpu[2].Seconds(), "cpu-client/handoff")
	b.ReportMetric(cpu[0].Seconds()/cpu[1].Seconds(), "cpu-client/raw")
}

// cpuTime is the process's CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareRoundTrips returns a round trip of the protocol's datagrams to an
// echo goroutine over a connected pair of sockets, without the client,
// after putting window of them in flight.
func bareRoundTrips(b *testing.B, window int, handoff bool) func() error {
	name := fmt.Sprintf("ibf-simclient-bare-%d-%d", os.Getpid(), serverSeq.Add(1))
	a, err := net.ListenUnixgram("unixgram", simproto.Addr(name+":a"))
	require.NoError(b, err)
	srv, err := net.DialUnix("unixgram", simproto.Addr(name+":b"), simproto.Addr(name+":a"))
	require.NoError(b, err)
	rc, err := a.SyscallConn()
	require.NoError(b, err)
	var cerr error
	require.NoError(b, rc.Control(func(fd uintptr) {
		cerr = syscall.Connect(int(fd), &syscall.SockaddrUnix{Name: simproto.Addr(name + ":b").Name})
	}))
	require.NoError(b, cerr)
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 2*simproto.RequestSize)
		for {
			n, err := srv.Read(buf)
			if err != nil {
				return
			}
			echo(buf[:n])
			srv.Write(buf[:n])
		}
	})
	b.Cleanup(func() {
		srv.Close()
		a.Close()
		wg.Wait()
	})

	var recv func() error
	if handoff {
		// As the client was: a reader goroutine decodes (copying the MAD)
		// and queues for the caller.
		q := make(chan madport.MAD, 4096)
		wg.Go(func() {
			defer close(q)
			buf := make([]byte, 2*simproto.RequestSize)
			for {
				n, err := a.Read(buf)
				if err != nil {
					return
				}
				if r, err := simproto.DecodeRequest(buf[:n]); err == nil {
					q <- madport.MAD{LID: r.SLID, Data: r.MAD}
				}
			}
		})
		recv = func() error {
			if _, ok := <-q; !ok {
				return net.ErrClosed
			}
			return nil
		}
	} else {
		buf := make([]byte, 2*simproto.RequestSize)
		recv = func() error {
			_, err := a.Read(buf)
			return err
		}
	}
	tid := uint64(0)
	send := func() error {
		tid++
		m := smpGet(tid)
		_, err := a.Write(simproto.AppendRequest(nil, &simproto.RequestFields{DLID: m.LID, MAD: m.Data}))
		return err
	}
	for range window {
		require.NoError(b, send())
	}
	return func() error {
		if err := recv(); err != nil {
			return err
		}
		return send()
	}
}
