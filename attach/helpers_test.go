package attach_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ibfab/attach"
	"ibfab/hca"
	"ibfab/internal/clock"
	"ibfab/internal/testsupport"
	"ibfab/link"
	"ibfab/link/linktest"
	"ibfab/link/pipe"
	"ibfab/madport"
	"ibfab/port"
	"ibfab/port/porttest"
	"ibfab/simclient"
	"ibfab/simproto"
	"ibfab/wire/mad"
)

// waitLimit bounds every wait on sockets and goroutines, so that a bug
// fails the test instead of hanging it; nothing asserts on durations.
const waitLimit = time.Minute

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	guidA = 0x0002c90300000a00
	guidB = 0x0002c90300000b00
)

var baseSeq atomic.Uint32

// uniqueBase returns a socket base name no other test uses, so that unit
// tests can share the test process's namespace.
func uniqueBase() string {
	return fmt.Sprintf("ibf-t%d-%d", os.Getpid(), baseSeq.Add(1))
}

// rig is HCA a, whose attach point the tests use, back to back with HCA b
// over a pipe, on a manual clock: requests time out only when a test
// advances it.
type rig struct {
	clk    *clock.Manual
	ea, eb *pipe.Endpoint
	a, b   *hca.HCA
	srv    *attach.Server
	base   string
}

func newRig(t *testing.T, cfg attach.Config) *rig {
	t.Helper()
	return newRigWith(t, cfg, nil)
}

// newRigWith is newRig with bc as b's MAD client: it sees what reaches b
// from the wire, and b answers for it with b.SendMAD.
func newRigWith(t *testing.T, cfg attach.Config, bc hca.MADClient) *rig {
	t.Helper()
	linktest.LeakCheck(t)
	r := &rig{clk: clock.NewManual(epoch), base: uniqueBase()}
	cfg.Name, cfg.Clock = r.base, r.clk
	var err error
	r.srv, err = attach.New(cfg)
	require.NoError(t, err)
	r.ea, r.eb = pipe.NewPairWith(pipe.Options{QueueLen: 8192, NameA: "a", NameB: "b"})
	r.a, err = hca.New(hca.Config{NodeGUID: guidA, Description: "ibf-t a", Ports: []link.Endpoint{r.ea}, Clock: r.clk, MADClient: r.srv})
	require.NoError(t, err)
	t.Cleanup(func() { r.a.Close() })
	r.b, err = hca.New(hca.Config{NodeGUID: guidB, Description: "ibf-t b", Ports: []link.Endpoint{r.eb}, Clock: r.clk, MADClient: bc})
	require.NoError(t, err)
	t.Cleanup(func() { r.b.Close() })
	require.NoError(t, r.srv.Attach(r.a))
	require.NoError(t, r.srv.Start())
	t.Cleanup(func() { r.srv.Close() })
	r.settle()
	return r
}

func (r *rig) settle() { porttest.Settle([]*port.Port{r.a.Port(1), r.b.Port(1)}, r.ea) }

// dial attaches a client to the rig's server.
func (r *rig) dial(t *testing.T, cfg simclient.Config) *simclient.Client {
	t.Helper()
	c, err := r.tryDial(t, cfg)
	require.NoError(t, err)
	return c
}

func (r *rig) tryDial(t *testing.T, cfg simclient.Config) (*simclient.Client, error) {
	t.Helper()
	cfg.Name = r.base
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	c, err := simclient.Dial(ctx, cfg)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testsupport.WaitFor(t, waitLimit, what, cond)
}

func drMAD(t *testing.T, method mad.Method, tid uint64, attr mad.AttrID, mod uint32, path []uint8, data []byte) madport.MAD {
	t.Helper()
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: method, TransactionID: tid, AttrID: attr, AttrModifier: mod, Path: path, Data: data})
	require.NoError(t, err)
	return madport.MAD{LID: mad.PermissiveLID, Data: b}
}

func drGet(t *testing.T, tid uint64, attr mad.AttrID, mod uint32, path []uint8) madport.MAD {
	t.Helper()
	return drMAD(t, mad.MethodGet, tid, attr, mod, path, nil)
}

// recv returns the next MAD for c.
func recv(t *testing.T, c madport.Port) madport.MAD {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	m, err := c.Recv(ctx)
	require.NoError(t, err)
	return m
}

// call sends m and returns the next MAD back, which must carry m's TID.
func call(t *testing.T, c madport.Port, m madport.MAD) madport.MAD {
	t.Helper()
	require.NoError(t, c.Send(m))
	got := recv(t, c)
	require.Equal(t, mad.MAD(m.Data).TransactionID(), mad.MAD(got.Data).TransactionID(), "TID of the MAD back")
	return got
}

// rawClient speaks the protocol byte by byte, to send what a well-behaved
// client would not.
type rawClient struct {
	base      string
	id        uint32
	ctl, data *net.UnixConn
}

var rawSeq atomic.Uint32

func newRawClient(t *testing.T, base string) *rawClient {
	t.Helper()
	// Ids far above the pids simclient uses.
	r := &rawClient{base: base, id: 1<<30 + rawSeq.Add(1)}
	var err error
	r.data, err = net.ListenUnixgram("unixgram", simproto.Addr(simproto.InName(base, r.id)))
	require.NoError(t, err)
	r.ctl, err = net.DialUnix("unixgram", simproto.Addr(simproto.ClientCtlName(base, r.id)), simproto.Addr(simproto.CtlName(base)))
	require.NoError(t, err)
	t.Cleanup(r.close)
	return r
}

func (r *rawClient) close() {
	r.ctl.Close()
	r.data.Close()
}

// send writes b to the control socket.
func (r *rawClient) send(t *testing.T, b []byte) {
	t.Helper()
	_, err := r.ctl.Write(b)
	require.NoError(t, err)
}

// ctlRT sends a control message and returns the answer.
func (r *rawClient) ctlRT(t *testing.T, f simproto.CtlFields) simproto.CtlFields {
	t.Helper()
	r.send(t, simproto.AppendCtl(nil, &f))
	require.NoError(t, r.ctl.SetReadDeadline(time.Now().Add(waitLimit)))
	buf := make([]byte, 512)
	n, err := r.ctl.Read(buf)
	require.NoError(t, err)
	resp, err := simproto.DecodeCtl(buf[:n])
	require.NoError(t, err)
	return resp
}

// connect connects r and returns its slot.
func (r *rawClient) connect(t *testing.T, issm bool) (uint32, simproto.CtlType) {
	t.Helper()
	f := simproto.CtlFields{Type: simproto.CtlConnect, Len: simproto.ClientInfoSize}
	(&simproto.ClientInfo{ID: r.id, IsSM: issm}).Encode(f.Data[:])
	resp := r.ctlRT(t, f)
	ci, err := simproto.DecodeClientInfo(resp.Data[:])
	require.NoError(t, err)
	return ci.ID, resp.Type
}

// Rig LIDs once activate has run.
const (
	lidA = 1
	lidB = 2
)

// activate makes both ports Active with LIDs lidA and lidB, through a
// client of a's attach point playing SM for a moment: GMPs pass only
// Active ports.
func (r *rig) activate(t *testing.T) {
	t.Helper()
	c := r.dial(t, simclient.Config{})
	defer c.Close()
	for i, n := range []struct {
		path []uint8
		lid  uint16
	}{{nil, lidA}, {[]uint8{0, 1}, lidB}} {
		get := call(t, c, drGet(t, uint64(10*i+1), mad.AttrPortInfo, 1, n.path))
		pi, err := mad.DecodePortInfo(mad.DRSMP(get.Data).Data())
		require.NoError(t, err)
		for j, s := range []mad.PortState{mad.PortStateArmed, mad.PortStateActive} {
			pi.LID, pi.PortState, pi.PortPhysicalState = n.lid, s, mad.PhysStateNoChange
			set := call(t, c, drMAD(t, mad.MethodSet, uint64(10*i+2+j), mad.AttrPortInfo, 1, n.path, mad.AppendPortInfo(nil, &pi)))
			got, err := mad.DecodePortInfo(mad.DRSMP(set.Data).Data())
			require.NoError(t, err)
			require.Equal(t, s, got.PortState)
		}
	}
}
