package umad_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/madport/umad"
	"ibfab/madport/umad/umadtest"
	"ibfab/memfabric"
	"ibfab/topologies"
	"ibfab/wire/mad"
)

// waitLimit bounds waits so that a bug fails instead of hanging; no test
// asserts on how long anything takes.
const waitLimit = 30 * time.Second

// testbed is a fake kernel with two ports, each on its own memfabric
// fabric of the thesis's default network at the first node's port 1:
// umad0 is "mlx5_0" port 1, umad1 "old0" port 1 under an old kernel.
type testbed struct {
	topo *topologies.Topology
	wire *memport.Port // umad0's
	k    *umadtest.Kernel
}

func newWire(t *testing.T, topo *topologies.Topology) *memport.Port {
	t.Helper()
	f, err := memfabric.NewFabric(topo)
	require.NoError(t, err)
	t.Cleanup(f.Close)
	wire, err := memport.New(f, 0, 1)
	require.NoError(t, err)
	return wire
}

func newTestbed(t *testing.T) *testbed {
	t.Helper()
	topo := topologies.Default()
	wire, old := newWire(t, topo), newWire(t, topo)
	k := umadtest.New(umadtest.PortConfig{CA: "mlx5_0", Port: 1, Wire: wire},
		umadtest.PortConfig{CA: "old0", Port: 1, Wire: old, OldKernel: true})
	t.Cleanup(func() {
		k.Close()
		wire.Close()
		old.Close()
	})
	return &testbed{topo: topo, wire: wire, k: k}
}

func (tb *testbed) open(t *testing.T, cfg umad.Config) *umad.Port {
	t.Helper()
	if cfg.CA == "" {
		cfg.CA, cfg.Port = "mlx5_0", 1
	}
	cfg.Files = tb.k
	p, err := umad.Open(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func drGet(t *testing.T, tid uint64, attr mad.AttrID, mod uint32, path ...uint8) madport.MAD {
	t.Helper()
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: tid, AttrID: attr,
		AttrModifier: mod, Path: append([]uint8{0}, path...)})
	require.NoError(t, err)
	return madport.MAD{LID: mad.PermissiveLID, Data: b}
}

func recv(t *testing.T, p madport.Port) madport.MAD {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	m, err := p.Recv(ctx)
	require.NoError(t, err)
	return m
}

func TestOpen(t *testing.T) {
	tb := newTestbed(t)
	p := tb.open(t, umad.Config{})
	assert.Equal(t, umad.HeaderSize, p.HeaderSize())
	assert.Equal(t, umad.DeviceInfo{Index: 0, CA: "mlx5_0", Port: 1}, p.Device())
	id81, ok81 := p.AgentID(0x81)
	id01, ok01 := p.AgentID(0x01)
	assert.True(t, ok81 && ok01, "both SMP classes registered")
	assert.NotEqual(t, id81, id01)

	old := tb.open(t, umad.Config{CA: "old0", Port: 1})
	assert.Equal(t, umad.OldHeaderSize, old.HeaderSize(), "a kernel that refuses ENABLE_PKEY gets the old header")

	_, err := umad.Open(umad.Config{CA: "mlx5_0", Port: 2, Files: tb.k})
	assert.ErrorIs(t, err, umad.ErrNoPort)
	_, err = umad.Open(umad.Config{CA: "mlx5_0", Port: 1, Files: tb.k, Agents: []umad.Agent{{Class: 0x81, Methods: []uint8{0x81}}}})
	assert.ErrorContains(t, err, "is a response")

	info, err := p.Info()
	require.NoError(t, err)
	home := tb.topo.Node(0)
	assert.Equal(t, madport.Info{NodeGUID: home.GUID, PortGUID: home.Ports[1].GUID, PortNum: 1, State: 2}, info,
		"from sysfs: GUIDs, no LID yet, Init")
}

// TestRoundTrip sends directed-route Gets through both header layouts:
// the answer comes back with the caller's TID although the kernel owns
// the upper 32 bits on the way.
func TestRoundTrip(t *testing.T) {
	tb := newTestbed(t)
	for _, ca := range []string{"mlx5_0", "old0"} {
		t.Run(ca, func(t *testing.T) {
			p := tb.open(t, umad.Config{CA: ca, Port: 1})
			const tid = 0xabcd_1234_0000_0042
			require.NoError(t, p.Send(drGet(t, tid, mad.AttrNodeInfo, 0, 1, 1)))
			m := recv(t, p)
			require.Zero(t, m.Status)
			smp := mad.DRSMP(m.Data)
			assert.Equal(t, mad.MethodGetResp, smp.MAD().Method())
			assert.Equal(t, uint64(tid), smp.MAD().TransactionID())
			ni, err := mad.DecodeNodeInfo(smp.Data())
			require.NoError(t, err)
			far, ok := tb.topo.Lookup("sw2")
			require.True(t, ok)
			assert.Equal(t, tb.topo.Node(far).GUID, ni.NodeGUID, "the node at 0,1,1")
			p.Close()
		})
	}
	assert.Equal(t, uint64(2), tb.k.Stats().Responses)
}

// TestTimeout loses every request on the wire: the kernel resends
// Retries times, then hands the request back with ETIMEDOUT and its MAD
// header only, which Recv returns padded, with the caller's TID.
func TestTimeout(t *testing.T) {
	tb := newTestbed(t)
	tb.wire.SetFilter(func(madport.MAD) bool { return false })
	p := tb.open(t, umad.Config{Timeout: 5 * time.Millisecond, Retries: 2})
	const tid = 0x5555_0000_0000_0007
	req := drGet(t, tid, mad.AttrNodeInfo, 0, 1)
	require.NoError(t, p.Send(req))
	m := recv(t, p)
	assert.Equal(t, umad.StatusTimeout, m.Status)
	require.Len(t, m.Data, madport.MADSize)
	h := mad.MAD(m.Data)
	assert.Equal(t, uint64(tid), h.TransactionID())
	assert.Equal(t, mad.MethodGet, h.Method())
	assert.Equal(t, req.Data[:umad.MADHeaderSize], m.Data[:umad.MADHeaderSize])
	assert.Equal(t, make([]byte, madport.MADSize-umad.MADHeaderSize), m.Data[umad.MADHeaderSize:])
	ks := tb.k.Stats()
	assert.Equal(t, uint64(2), ks.Resends)
	assert.Equal(t, uint64(1), ks.Timeouts)
	assert.Equal(t, uint64(3), tb.wire.Stats().Filtered, "first send and two kernel resends")
	assert.Equal(t, uint64(1), p.Stats().TimedOut)
}

// TestDuplicate: a second request with the TID of one still in flight is
// refused, as the kernel does; once answered, the TID is free again.
func TestDuplicate(t *testing.T) {
	tb := newTestbed(t)
	tb.wire.SetFilter(func(madport.MAD) bool { return false })
	p := tb.open(t, umad.Config{Timeout: time.Hour})
	require.NoError(t, p.Send(drGet(t, 9, mad.AttrNodeInfo, 0)))
	err := p.Send(drGet(t, 9, mad.AttrNodeInfo, 0))
	assert.ErrorIs(t, err, umad.ErrDuplicate)
	assert.Equal(t, uint64(1), p.Stats().SendErrors)
	require.NoError(t, p.Send(drGet(t, 10, mad.AttrNodeInfo, 0)), "another TID")
	assert.ErrorIs(t, p.Send(drGet(t, 0xffff_0000_0000_0009, mad.AttrNodeInfo, 0)), umad.ErrDuplicate,
		"the kernel owns the upper 32 bits: the same lower bits are the same TID")
}

func TestNoAgent(t *testing.T) {
	tb := newTestbed(t)
	p := tb.open(t, umad.Config{})
	pma := make([]byte, madport.MADSize)
	pma[0], pma[1], pma[2], pma[3] = 1, byte(mad.ClassPerfMgt), 1, byte(mad.MethodGet)
	assert.ErrorIs(t, p.Send(madport.MAD{LID: 3, QP: 1, Data: pma}), umad.ErrNoAgent)
	assert.ErrorIs(t, p.Send(madport.MAD{Data: pma[:100]}), umad.ErrMAD)

	// With a PerfMgt agent, a GMP goes with the GSI Q_Key.
	g := tb.open(t, umad.Config{Agents: []umad.Agent{{Class: byte(mad.ClassPerfMgt)}}})
	require.NoError(t, g.Send(madport.MAD{LID: 3, QP: 1, Data: pma}))
}

// TestSendLong: a message longer than a MAD goes only to a class whose
// agent does RMPP, with the Active flag; the SA's agent does.
func TestSendLong(t *testing.T) {
	tb := newTestbed(t)
	p := tb.open(t, umad.Config{})
	assert.True(t, p.SegmentsRMPP(uint8(mad.ClassSubnAdm)), "SMAgents include the SA's, with RMPP")
	assert.False(t, p.SegmentsRMPP(uint8(mad.ClassSubnDirected)))
	long := make([]byte, 2*madport.MADSize)
	long[0], long[1], long[2], long[3] = 1, byte(mad.ClassSubnAdm), 2, byte(mad.MethodGetTableResp)
	err := p.Send(madport.MAD{LID: 3, QP: 1, Data: long})
	assert.ErrorIs(t, err, umad.ErrMAD, "without the Active flag")
	smp := drGet(t, 1, mad.AttrNodeInfo, 0)
	assert.ErrorIs(t, p.Send(madport.MAD{Data: append(smp.Data, make([]byte, 100)...)}), umad.ErrMAD, "an SMP")
}

// TestIsSM: SetIsSM holds the issm device, which sets the port's IsSM
// capability; a second SM on the port is refused until the first lets go.
func TestIsSM(t *testing.T) {
	tb := newTestbed(t)
	p := tb.open(t, umad.Config{})
	other := tb.open(t, umad.Config{})
	caps := func() uint32 {
		require.NoError(t, p.Send(drGet(t, 0x77, mad.AttrPortInfo, 1)))
		m := recv(t, p)
		require.Zero(t, m.Status)
		pi, err := mad.DecodePortInfo(mad.DRSMP(m.Data).Data())
		require.NoError(t, err)
		return pi.CapabilityMask & mad.PortCapIsSM
	}
	assert.Zero(t, caps())
	require.NoError(t, p.SetIsSM(true))
	require.NoError(t, p.SetIsSM(true), "idempotent")
	assert.True(t, tb.k.IsSM(0))
	assert.NotZero(t, caps())
	assert.ErrorIs(t, other.SetIsSM(true), umad.ErrSMPresent)
	require.NoError(t, p.SetIsSM(false))
	assert.Zero(t, caps())
	require.NoError(t, other.SetIsSM(true))
	require.NoError(t, other.Close())
	assert.False(t, tb.k.IsSM(0), "Close lets the issm device go")
}

// chanWire is a wire the test plays: sends are recorded, and what the test
// injects comes out of Recv.
type chanWire struct {
	in   chan madport.MAD
	sent chan madport.MAD
}

func newChanWire() *chanWire {
	return &chanWire{in: make(chan madport.MAD, 16), sent: make(chan madport.MAD, 16)}
}

func (w *chanWire) Send(m madport.MAD) error { w.sent <- m; return nil }
func (w *chanWire) Recv(ctx context.Context) (madport.MAD, error) {
	select {
	case m := <-w.in:
		return m, nil
	case <-ctx.Done():
		return madport.MAD{}, ctx.Err()
	}
}
func (w *chanWire) Info() (madport.Info, error) {
	return madport.Info{NodeGUID: 1, PortGUID: 2, PortNum: 1}, nil
}
func (w *chanWire) SetIsSM(bool) error { return nil }
func (w *chanWire) Close() error       { return nil }

// TestUnsolicited: requests from the fabric reach the agent registered for
// their class and method; others, and responses nobody waits for, are
// dropped by the kernel.
func TestUnsolicited(t *testing.T) {
	w := newChanWire()
	k := umadtest.New(umadtest.PortConfig{CA: "hca0", Port: 1, Wire: w})
	defer k.Close()
	p, err := umad.Open(umad.Config{CA: "hca0", Port: 1, Files: k})
	require.NoError(t, err)
	defer p.Close()

	smp := func(class mad.MgmtClass, method mad.Method, tid uint64) []byte {
		b := make([]byte, madport.MADSize)
		mad.MAD(b).Encode(&mad.MADFields{BaseVersion: 1, MgmtClass: class, ClassVersion: 1, Method: method,
			TransactionID: tid, AttrID: mad.AttrNotice})
		return b
	}
	w.in <- madport.MAD{LID: 7, Data: smp(mad.ClassSubnLID, mad.MethodGetResp, 1)}        // nobody waits
	w.in <- madport.MAD{LID: 7, Data: smp(mad.ClassSubnLID, mad.MethodReport, 2)}         // method not asked for
	w.in <- madport.MAD{LID: 7, QP: 1, Data: smp(mad.ClassPerfMgt, mad.MethodGet, 3)}     // class not registered
	w.in <- madport.MAD{LID: 7, SL: 0, Data: smp(mad.ClassSubnLID, mad.MethodTrap, 0x44)} // a trap
	m := recv(t, p)
	assert.Equal(t, uint16(7), m.LID)
	assert.Equal(t, mad.MethodTrap, mad.MAD(m.Data).Method())
	assert.Equal(t, uint64(0x44), mad.MAD(m.Data).TransactionID(), "a request from elsewhere keeps its TID")
	ks := k.Stats()
	assert.Equal(t, uint64(1), ks.DroppedResp)
	assert.Equal(t, uint64(2), ks.DroppedReq)
	assert.Equal(t, uint64(1), ks.Unsolicited)

	// Our answer to it goes out as a response: no timeout, no TID change.
	resp := smp(mad.ClassSubnLID, mad.MethodTrapRepress, 0x44)
	require.NoError(t, p.Send(madport.MAD{LID: 7, Data: resp}))
	got := <-w.sent
	assert.Equal(t, resp, got.Data)
	assert.Equal(t, uint16(7), got.LID)
}

func TestClose(t *testing.T) {
	tb := newTestbed(t)
	p := tb.open(t, umad.Config{})
	errc := make(chan error, 1)
	go func() {
		_, err := p.Recv(context.Background())
		errc <- err
	}()
	require.NoError(t, p.Close())
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, madport.ErrClosed)
	case <-time.After(waitLimit):
		t.Fatal("Recv did not return after Close")
	}
	assert.ErrorIs(t, p.Send(drGet(t, 1, mad.AttrNodeInfo, 0)), madport.ErrClosed)
	assert.ErrorIs(t, p.SetIsSM(true), madport.ErrClosed)
	_, err := p.Info()
	assert.ErrorIs(t, err, madport.ErrClosed)
	require.NoError(t, p.Close(), "twice")
}
