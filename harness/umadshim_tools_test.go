package harness_test

// Unmodified tools through the umad shim with no fabric: two endpoints
// wired back to back in this process (A at LID 1, B at LID 2), and the
// tools as child processes with the shim preloaded. The fabric tests
// (umadshim_integration_test.go) do the same on real nodes, as root.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/harness"
	"ibfab/internal/testsupport/fabrictest"
	"ibfab/internal/testsupport/testenv"
	"ibfab/umadep"
	"ibfab/umadproto"
	"ibfab/wire/mad"
)

// wirePort is a one-port HCA at lid whose MADs go to its peer's endpoint
// as if across one link: in order, from a goroutine of the link's (the
// endpoint sends from its own).
type wirePort struct {
	lid  uint16
	ep   *umadep.Server
	peer *wirePort
	link chan agent.Outbound // to the peer
	mu   sync.Mutex
	sent []agent.Request
}

// run delivers what the peer sent, in order, until done closes.
func (p *wirePort) run(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case o := <-p.peer.link:
			p.ep.Claim(1, o)
		}
	}
}

func (p *wirePort) SendMAD(r agent.Request) error {
	p.mu.Lock()
	p.sent = append(p.sent, agent.Request{DLID: r.DLID, PKey: r.PKey, MAD: append([]byte(nil), r.MAD[:24]...)})
	p.mu.Unlock()
	if r.DLID != p.peer.lid {
		return nil
	}
	o := agent.Outbound{Local: true, Port: 1, SLID: p.lid, DLID: r.DLID, SL: r.SL, SrcQP: r.DestQP, PKey: r.PKey,
		MAD: append([]byte(nil), r.MAD...)}
	p.link <- o
	return nil
}
func (p *wirePort) NumPorts() uint8        { return 1 }
func (p *wirePort) PKeys(uint8) []mad.PKey { return []mad.PKey{0xffff, 0x8001} }
func (p *wirePort) LocalGet(_ uint8, attr mad.AttrID, _ uint32) ([]byte, error) {
	switch attr {
	case mad.AttrNodeInfo:
		return mad.AppendNodeInfo(nil, &mad.NodeInfoFields{NodeGUID: 0x100 + uint64(p.lid), PortGUID: 0x200 + uint64(p.lid), NumPorts: 1}), nil
	case mad.AttrPortInfo:
		pi := mad.PortInfo(make([]byte, 64))
		pi.SetLID(p.lid)
		pi.SetMasterSMLID(2) // B plays the SA
		pi.SetPortState(mad.PortStateActive)
		pi.SetPortPhysicalState(mad.PhysStateLinkUp)
		pi.SetLinkWidthActive(mad.LinkWidth4X)
		pi.SetLinkSpeedActive(mad.LinkSpeedSDR)
		pi.SetGIDPrefix(0xfe80_0000_0000_0000)
		return pi, nil
	}
	return make([]byte, 64), nil
}
func (p *wirePort) SetIsSM(uint8, bool) error { return nil }

type wiredPair struct {
	a, b         *wirePort
	nameA, nameB string
	lib          string
}

func wirePair(t *testing.T) *wiredPair {
	t.Helper()
	w := &wiredPair{a: &wirePort{lid: 1, link: make(chan agent.Outbound, 1024)}, b: &wirePort{lid: 2, link: make(chan agent.Outbound, 1024)},
		lib: fabrictest.ShimLibrary(t)}
	w.a.peer, w.b.peer = w.b, w.a
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go w.a.run(done)
	go w.b.run(done)
	for _, x := range []struct {
		p    *wirePort
		name *string
	}{{w.a, &w.nameA}, {w.b, &w.nameB}} {
		*x.name = fmt.Sprintf("ibfab-umad-tools-%d-%d", os.Getpid(), x.p.lid)
		x.p.ep = umadep.New(umadep.Config{Name: *x.name})
		x.p.ep.Attach(x.p)
		require.NoError(t, x.p.ep.Start())
		t.Cleanup(func() { x.p.ep.Close() })
	}
	return w
}

// cmd returns argv as a command at the endpoint name, the shim preloaded.
func (w *wiredPair) cmd(name string, argv ...string) *exec.Cmd {
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), "LD_PRELOAD="+w.lib, umadproto.EnvSocket+"="+name)
	return c
}

// server starts argv at the endpoint of p until the test ends, and waits
// until it has registered its agent.
func (w *wiredPair) server(t *testing.T, p *wirePort, argv ...string) {
	t.Helper()
	before := p.ep.Stats().Agents
	c := w.cmd(w.name(p), argv...)
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	require.NoError(t, c.Start())
	t.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
		harness.RemoveShimSysfs(c.Process.Pid)
		t.Logf("%v: %s", argv, out.String())
	})
	fabrictest.Wait(t, 10*time.Second, fmt.Sprintf("%v registering", argv), func() bool { return p.ep.Stats().Agents > before })
}

func (w *wiredPair) name(p *wirePort) string {
	if p == w.a {
		return w.nameA
	}
	return w.nameB
}

func TestShimTools(t *testing.T) {
	for _, p := range [][2]string{{"ibping", "infiniband-diags"}, {"saquery", "infiniband-diags"}, {"ibsysstat", "infiniband-diags"}, {"ibstat", "infiniband-diags"}} {
		testenv.RequireProgram(t, p[0], p[1])
	}
	w := wirePair(t)

	t.Run("ibstat", func(t *testing.T) {
		out, err := w.cmd(w.nameA, "ibstat").CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, want := range []string{"CA 'ibfab0'", "State: Active", "Base lid: 1", "SM lid: 2", "Rate: 10", "Port GUID: 0x0000000000000201"} {
			assert.Contains(t, string(out), want)
		}
	})

	t.Run("ibping", func(t *testing.T) {
		w.server(t, w.b, "ibping", "-S")
		out, err := w.cmd(w.nameA, "ibping", "-c", "5", "-L", "2").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), "5 packets transmitted, 5 received, 0% packet loss")
		// No server at A: the client's requests time out (ETIMEDOUT from
		// the endpoint), 100 % loss, and ibping says so.
		out, _ = w.cmd(w.nameB, "ibping", "-c", "2", "-t", "200", "-L", "1").CombinedOutput()
		assert.Contains(t, string(out), "100% packet loss", "%s", out)
	})

	t.Run("ibsysstat", func(t *testing.T) {
		w.server(t, w.b, "ibsysstat", "-S")
		host, _ := os.Hostname()
		out, err := w.cmd(w.nameA, "ibsysstat", "2", "host").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), host)
	})

	t.Run("saquery RMPP", func(t *testing.T) {
		const records = 40 // 40 × 112 bytes: 23 segments
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		defer func() { cancel(); <-done }()
		sa := dialSA(t, w.nameB)
		go func() { defer close(done); serveSA(t, ctx, sa, records) }()
		out, err := w.cmd(w.nameA, "saquery", "NR").CombinedOutput()
		require.NoError(t, err, "%s", fabrictest.Tail(string(out), 20))
		assert.Equal(t, records, strings.Count(string(out), "NodeRecord dump:"), fabrictest.Tail(string(out), 20))
		assert.Contains(t, string(out), fmt.Sprintf("%#016x", uint64(0x5000+records-1)))
	})
}

// miniSA is a Go client of an endpoint playing an SA: its agent takes
// SubnAdm Get and GetTable with RMPP.
type miniSA struct {
	c  *umadproto.Conn
	id uint32
}

func dialSA(t *testing.T, name string) miniSA {
	t.Helper()
	c, err := umadproto.Dial(name, 1)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	r := umadproto.Registration{QPN: 1, MgmtClass: uint8(mad.ClassSubnAdm), ClassVersion: 2, RMPPVersion: 1}
	r.SetMethod(uint8(mad.MethodGetTable))
	r.SetMethod(uint8(mad.MethodGet))
	id, err := c.Register(r)
	require.NoError(t, err)
	return miniSA{c: c, id: id}
}

// serveSA answers every SA request with n NodeRecords, as one RMPP
// transfer, until ctx ends.
func serveSA(t *testing.T, ctx context.Context, sa miniSA, n int) {
	c, id := sa.c, sa.id
	for ctx.Err() == nil {
		u, m, err := c.Recv(time.Now().Add(200 * time.Millisecond))
		if err != nil {
			continue
		}
		const recSize = 112 // NodeRecord 108 bytes, padded to 8
		resp := make([]byte, 56+n*recSize)
		copy(resp, m[:24])
		h := mad.MAD(resp)
		h.SetMethod(mad.MethodGetTable | 0x80)
		h.SetStatus(0)
		mad.RMPP(resp[:256:256]).SetVersion(1)
		mad.RMPP(resp[:256:256]).SetFlags(mad.RMPPFlagActive)
		binary.BigEndian.PutUint16(resp[44:], recSize/8) // SA AttributeOffset
		for i := range n {
			rec := resp[56+i*recSize:]
			binary.BigEndian.PutUint16(rec, uint16(100+i)) // LID
			mad.NodeInfo(rec[4:]).Encode(&mad.NodeInfoFields{BaseVersion: 1, ClassVersion: 1, NodeType: 1, NumPorts: 1,
				NodeGUID: 0x5000 + uint64(i), PortGUID: 0x6000 + uint64(i), PartitionCap: 1, LocalPortNum: 1})
			copy(rec[44:], fmt.Sprintf("node %d", i))
		}
		u.AgentID, u.TimeoutMS, u.Retries = id, 0, 0
		if err := c.Send(u, resp); err != nil {
			t.Error(err)
		}
	}
}

// TestShimBadInput runs a C program that calls the device and sysfs
// functions libibumad calls, with bad arguments among them, through the
// shim: each gets the errno the kernel gives (a write of garbage excepted:
// the kernel fails it, the shim passes it to the endpoint, which drops
// it), nothing crashes, and an RMPP transfer too long for the reader's
// buffer is read as the kernel hands it over (ENOSPC with its length,
// then whole).
func TestShimBadInput(t *testing.T) {
	testenv.RequireProgram(t, "gcc", "gcc")
	w := wirePair(t)
	probe := filepath.Join(t.TempDir(), "probe")
	src, err := filepath.Abs("../umadshim/testdata/probe.c")
	require.NoError(t, err)
	out, err := exec.Command("gcc", "-O2", "-o", probe, src).CombinedOutput()
	require.NoError(t, err, "%s", out)

	// A's Go client sends B's probe a GetTable of 600 bytes, as RMPP.
	cl, err := umadproto.Dial(w.nameA, 1)
	require.NoError(t, err)
	defer cl.Close()
	id, err := cl.Register(umadproto.Registration{QPN: 1, MgmtClass: uint8(mad.ClassSubnAdm), ClassVersion: 2, RMPPVersion: 1})
	require.NoError(t, err)
	const size = 600
	req := make([]byte, size)
	h := mad.MAD(req)
	h.SetBaseVersion(1)
	h.SetMgmtClass(mad.ClassSubnAdm)
	h.SetClassVersion(2)
	h.SetMethod(mad.MethodGetTable)
	h.SetTransactionID(0x99)
	mad.RMPP(req[:256:256]).SetVersion(1)
	mad.RMPP(req[:256:256]).SetFlags(mad.RMPPFlagActive)

	// A copy left by a process killed by a signal (a PID no process has)
	// is swept when the probe makes its own.
	stale := filepath.Join(os.TempDir(), "ibfab-umad-4194300-test")
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "infiniband"), 0o700))
	t.Cleanup(func() { os.RemoveAll(stale) })

	c := w.cmd(w.nameB, probe)
	var stderr strings.Builder
	c.Stderr = &stderr
	stdout, err := c.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.Start())
	defer c.Wait()
	got := map[string][2]int64{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 1 && f[0] == "READY" {
			require.NoError(t, cl.Send(umadproto.UserMAD{AgentID: id, LID: 2, QPN: 1, QKey: 0x80010000, TimeoutMS: 2000}, req))
			continue
		}
		require.Len(t, f, 3, "probe line %q", sc.Text())
		rc, _ := strconv.ParseInt(f[1], 10, 64)
		e, _ := strconv.ParseInt(f[2], 10, 64)
		got[f[0]] = [2]int64{rc, e}
	}
	neg := func(e syscall.Errno) [2]int64 { return [2]int64{-1, int64(e)} }
	want := map[string][2]int64{
		"open_umad9":          neg(syscall.ENODEV),
		"open_sys_escape":     neg(syscall.ENOENT),
		"opendir_cas":         {1, 0},
		"open_umad0":          {0, 0},
		"ioctl_null_reg":      neg(syscall.EFAULT),
		"ioctl_null_unreg":    neg(syscall.EFAULT),
		"ioctl_unknown":       neg(syscall.ENOTTY),
		"ioctl_bad_qpn":       neg(syscall.EINVAL),
		"ioctl_bad_flags":     neg(syscall.EINVAL),
		"ioctl_bad_flags_cap": {1, 0},
		"read_empty":          neg(syscall.EAGAIN),
		"enable_pkey":         {0, 0},
		"register_sa":         {0, 0},
		"unregister_bad":      neg(syscall.EINVAL),
		"poll":                {1, 0},
		"read_enospc":         neg(syscall.ENOSPC),
		"enospc_length":       {64 + size, 0},
		"read_short":          neg(syscall.EINVAL),
		"read_null":           neg(syscall.EFAULT),
		"read_whole":          {64 + size, 0},
		"read_after":          neg(syscall.EAGAIN),
		"write_garbage":       {7, 0},
		"write_null":          neg(syscall.EFAULT),
		// Not the kernel's answer (it takes an RMPP message of any
		// length): a unix datagram's linear part is one allocation of at
		// most 4 MiB. Said on stderr.
		"write_huge":  neg(syscall.ENOBUFS),
		"close":       {0, 0},
		"close_again": neg(syscall.EBADF),
	}
	for k, v := range want {
		assert.Equal(t, v, got[k], k)
	}
	require.NoError(t, c.Wait())
	assert.Contains(t, stderr.String(), "a MAD of 5213656 bytes is more than ibfab's umad transport carries")
	assert.NoDirExists(t, stale, "a dead process's sysfs copy is swept")
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("ibfab-umad-%d-*", c.Process.Pid)))
	assert.Empty(t, m, "the probe's own copy is removed at exit")
}

// TestExecUMADFlag checks exec's --umad values and the environments they
// give.
func TestExecUMADFlag(t *testing.T) {
	code, _, stderr := run("exec", "--umad=bogus", "nosuchfabric", "ca1", "--", "true")
	assert.Equal(t, harness.ExitUsage, code)
	assert.Contains(t, stderr, "want one of off, shim, sim")
	for _, v := range []string{"--umad", "--umad=sim", "--umad=shim", "--umad=false"} {
		code, _, stderr := run("exec", v, "nosuchfabric", "ca1", "--", "true")
		assert.Equal(t, harness.ExitFailure, code, v)
		assert.NotContains(t, stderr, "want one of off, shim, sim", v)
	}
	lib := fabrictest.ShimLibrary(t)
	env, err := harness.ModeEnv(harness.UMADShim, "", "")
	require.NoError(t, err)
	assert.Contains(t, env, umadproto.EnvSocket+"="+umadproto.DefaultSocket)
	assert.True(t, strings.HasPrefix(env[0], "LD_PRELOAD="+lib), env[0])
	_, err = harness.ModeEnv(harness.UMADOff, "", "")
	assert.Error(t, err)
}
