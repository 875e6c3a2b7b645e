package attach_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/attach"
	"ibfab/simclient"
	"ibfab/simproto"
	"ibfab/wire/mad"
)

func TestNewConfig(t *testing.T) {
	for _, cfg := range []attach.Config{
		{MaxClients: -1}, {MaxClients: attach.MaxClients + 1}, {Timeout: -1}, {Retries: -1}, {QueueLen: -1},
		{Name: string(make([]byte, 120))},
	} {
		_, err := attach.New(cfg)
		assert.ErrorIs(t, err, attach.ErrConfig, "%+v", cfg)
	}
	s, err := attach.New(attach.Config{})
	require.NoError(t, err)
	assert.Equal(t, "sim", s.Stats().Name)
	assert.ErrorIs(t, s.Attach(nil), attach.ErrConfig)
	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.Start(), attach.ErrClosed)
}

func TestRoundTrip(t *testing.T) {
	r := newRig(t, attach.Config{NodeID: "ibf-t-node"})
	c := r.dial(t, simclient.Config{})
	assert.Equal(t, "ibf-t-node", c.NodeID())

	tests := []struct {
		name string
		path []uint8
		guid uint64
	}{
		{"own node", nil, guidA},
		{"one hop", []uint8{0, 1}, guidB},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tid := uint64(0xfeed_0000_0000_0000) | uint64(i) // high bits the server borrows
			resp := call(t, c, drGet(t, tid, mad.AttrNodeInfo, 0, tt.path))
			assert.Zero(t, resp.Status)
			smp := mad.DRSMP(resp.Data)
			require.True(t, smp.MAD().IsResponse())
			assert.Equal(t, mad.StatusOK, smp.Status())
			ni, err := mad.DecodeNodeInfo(smp.Data())
			require.NoError(t, err)
			assert.Equal(t, tt.guid, ni.NodeGUID)
		})
	}
	madsOutReaches(t, r, 2)
	st := r.srv.Stats()
	assert.Equal(t, 1, st.Clients)
	assert.Equal(t, uint64(2), st.MADsIn)
	assert.Equal(t, uint64(2), st.MADsOut)
	assert.Zero(t, st.Outstanding)
	assert.Zero(t, st.DropTotal, "%v", st.Drops)
	_, err := json.Marshal(st)
	assert.NoError(t, err)
}

// Several clients send requests with the same TID at once: each must get
// the answer to its own.
func TestResponsesByClient(t *testing.T) {
	r := newRig(t, attach.Config{})
	attrs := []mad.AttrID{mad.AttrNodeInfo, mad.AttrPortInfo, mad.AttrNodeDescription, mad.AttrPKeyTable}
	var wg sync.WaitGroup
	for i, attr := range attrs {
		c := r.dial(t, simclient.Config{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 20 {
				path := []uint8{0, 1}
				if round%2 == 1 {
					path = nil // the HCA itself, answered at once
				}
				m := drGet(t, 0x42, attr, 1, path)
				if err := c.Send(m); err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				got := recv(t, c)
				h := mad.MAD(got.Data)
				if h.AttrID() != attr || h.TransactionID() != 0x42 || !h.IsResponse() || got.Status != 0 {
					t.Errorf("client %d asked for %v, got %v %v TID %#x status %d", i, attr, h.Method(), h.AttrID(), h.TransactionID(), got.Status)
				}
			}
		}()
	}
	wg.Wait()
	// A client can read its response before the server's write returns
	// and is counted: wait for the count, which must then be exact.
	madsOutReaches(t, r, uint64(20*len(attrs)))
	st := r.srv.Stats()
	assert.Equal(t, uint64(20*len(attrs)), st.MADsOut)
	assert.Zero(t, st.DropTotal, "%v", st.Drops)
}

// MADs that are not responses go to the SM client only.
func TestUnsolicitedToSM(t *testing.T) {
	r := newRig(t, attach.Config{})
	diag := r.dial(t, simclient.Config{})
	sm := r.dial(t, simclient.Config{IsSM: true})
	_, err := r.tryDial(t, simclient.Config{IsSM: true})
	assert.ErrorIs(t, err, simclient.ErrRefused, "a second SM")
	assert.Equal(t, int(sm.Slot()), r.srv.Stats().SMSlot)

	// b's SM asks a for its SMInfo: the request is for a's SM.
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 0x5150, AttrID: mad.AttrSMInfo, Path: []uint8{0, 1}})
	require.NoError(t, err)
	require.NoError(t, r.b.SendMAD(agent.Request{Port: 1, MAD: b}))
	got := recv(t, sm)
	h := mad.MAD(got.Data)
	assert.Equal(t, mad.MethodGet, h.Method())
	assert.Equal(t, mad.AttrSMInfo, h.AttrID())
	assert.Equal(t, uint64(0x5150), h.TransactionID())
	assert.Zero(t, diag.Stats().Received)

	// Without an SM client nothing takes them.
	require.NoError(t, sm.SetIsSM(false))
	assert.Equal(t, -1, r.srv.Stats().SMSlot)
	r.srv.DeliverMAD(1, agent.Outbound{Local: true, Port: 1, MAD: b})
	assert.Equal(t, uint64(1), r.srv.Stats().Drops["no_sm"])

	// A response nobody asked for is dropped.
	resp := append([]byte(nil), b...)
	mad.MAD(resp).SetMethod(mad.MethodGetResp)
	r.srv.DeliverMAD(1, agent.Outbound{Local: true, Port: 1, MAD: resp})
	assert.Equal(t, uint64(1), r.srv.Stats().Drops["no_request"])
	r.srv.DeliverMAD(1, agent.Outbound{Local: true, Port: 1, MAD: resp[:10]})
	assert.Equal(t, uint64(1), r.srv.Stats().BadMessages)
}

// IsSM follows the SM clients: set while one is attached, cleared when it
// leaves.
func TestIsSMCapability(t *testing.T) {
	r := newRig(t, attach.Config{})
	diag := r.dial(t, simclient.Config{})
	caps := func() uint32 {
		resp := call(t, diag, drGet(t, 7, mad.AttrPortInfo, 1, nil))
		pi, err := mad.DecodePortInfo(mad.DRSMP(resp.Data).Data())
		require.NoError(t, err)
		return pi.CapabilityMask
	}
	assert.Zero(t, caps()&mad.PortCapIsSM)
	sm := r.dial(t, simclient.Config{IsSM: true})
	assert.NotZero(t, caps()&mad.PortCapIsSM, "after an SM connected")
	require.NoError(t, sm.SetIsSM(false))
	assert.Zero(t, caps()&mad.PortCapIsSM, "after SetIsSM(false)")
	require.NoError(t, diag.SetIsSM(true))
	assert.NotZero(t, caps()&mad.PortCapIsSM, "after SetIsSM(true)")
	require.NoError(t, diag.Close())
	assert.Zero(t, r.a.Agent().PortConfig(1).LID) // (no SM ran)
	c := r.dial(t, simclient.Config{})
	resp := call(t, c, drGet(t, 8, mad.AttrPortInfo, 1, nil))
	pi, err := mad.DecodePortInfo(mad.DRSMP(resp.Data).Data())
	require.NoError(t, err)
	assert.Zero(t, pi.CapabilityMask&mad.PortCapIsSM, "after the SM client left")
}

// A request that gets no answer is resent Retries times, then handed back
// with ETIMEDOUT; the manual clock decides when.
func TestTimeout(t *testing.T) {
	r := newRig(t, attach.Config{Retries: 1})
	c := r.dial(t, simclient.Config{})
	// b is a CA: it does not forward a directed route further.
	m := drGet(t, 0xdead_0000_0000_0001, mad.AttrNodeInfo, 0, []uint8{0, 1, 1})
	require.NoError(t, c.Send(m))
	waitFor(t, "the request to be outstanding", func() bool { return r.srv.Stats().Outstanding == 1 })
	r.settle()
	r.clk.Advance(attach.DefaultTimeout)
	waitFor(t, "the retry", func() bool { return r.srv.Stats().Retries == 1 })
	r.settle()
	r.clk.Advance(attach.DefaultTimeout)
	got := recv(t, c)
	assert.Equal(t, simproto.StatusTimeout, got.Status)
	assert.Equal(t, m.Data, got.Data, "the request as sent, TID included")
	st := r.srv.Stats()
	assert.Equal(t, uint64(1), st.Timeouts)
	assert.Zero(t, st.Outstanding)
	assert.Equal(t, uint64(1), st.MADsIn)
	assert.Equal(t, uint64(1), st.Retries)
}

func TestInfo(t *testing.T) {
	r := newRig(t, attach.Config{})
	c := r.dial(t, simclient.Config{})
	info, err := c.Info()
	require.NoError(t, err)
	assert.Equal(t, uint64(guidA), info.NodeGUID)
	assert.Equal(t, uint64(guidA+1), info.PortGUID)
	assert.Equal(t, uint8(1), info.PortNum)
	assert.Equal(t, uint8(mad.PortStateInit), info.State)
	assert.Zero(t, info.LID)
	assert.Equal(t, "ibf-t a", c.NodeID(), "NodeID defaults to the description")

	// An SM gives the port LID 5 and SM LID 1: Info follows.
	resp := call(t, c, drGet(t, 1, mad.AttrPortInfo, 1, nil))
	pi, err := mad.DecodePortInfo(mad.DRSMP(resp.Data).Data())
	require.NoError(t, err)
	pi.LID, pi.MasterSMLID, pi.PortState, pi.PortPhysicalState = 5, 1, mad.PortStateNoChange, mad.PhysStateNoChange
	resp = call(t, c, drMAD(t, mad.MethodSet, 2, mad.AttrPortInfo, 1, nil, mad.AppendPortInfo(nil, &pi)))
	require.Equal(t, mad.StatusOK, mad.DRSMP(resp.Data).Status())
	info, err = c.Info()
	require.NoError(t, err)
	assert.Equal(t, uint16(5), info.LID)
	assert.Equal(t, uint16(1), info.SMLID)
}

// The control queries umad2sim makes, byte for byte, and bad control
// messages.
func TestControl(t *testing.T) {
	r := newRig(t, attach.Config{})
	raw := newRawClient(t, r.base)
	slot, typ := raw.connect(t, false)
	require.Equal(t, simproto.CtlConnect, typ)
	q := func(typ simproto.CtlType, data ...byte) simproto.CtlFields {
		f := simproto.CtlFields{ClientID: slot, Type: typ, Len: uint32(len(data))}
		copy(f.Data[:], data)
		return raw.ctlRT(t, f)
	}
	resp := q(simproto.CtlGetPKeys)
	require.Equal(t, simproto.CtlGetPKeys, resp.Type)
	keys, _ := simproto.DecodePKeys(resp.Data[:])
	assert.Equal(t, uint16(0xffff), keys[0])

	resp = q(simproto.CtlGetGUID)
	guid, _ := simproto.DecodeGUID(resp.Data[:])
	assert.Equal(t, uint64(guidA), guid)

	resp = q(simproto.CtlGetGID)
	gid, _ := simproto.DecodeGID(resp.Data[:])
	assert.Equal(t, simproto.GID{Prefix: 0xfe80_0000_0000_0000, GUID: guidA}, gid)

	resp = q(simproto.CtlGetPort)
	ps, _ := simproto.DecodePortState(resp.Data[:])
	assert.Equal(t, simproto.PortState{LID: 0, State: uint8(mad.PortStateInit)}, ps)

	resp = q(simproto.CtlGetVendor)
	v, _ := simproto.DecodeVendor(resp.Data[:])
	assert.Equal(t, uint64(1), v.FWVer)

	resp = q(simproto.CtlGetNodeInfo)
	ni := mad.NodeInfo(resp.Data[:])
	assert.Equal(t, mad.NodeTypeCA, ni.NodeType())
	assert.Equal(t, uint64(guidA), ni.NodeGUID())

	for _, p := range []byte{0, 1, 9} { // 0 and out of range: the client's port
		resp = q(simproto.CtlGetPortInfo, p)
		assert.Equal(t, uint8(1), mad.PortInfo(resp.Data[:]).LocalPortNum(), "port %d", p)
	}

	bad := []struct {
		name string
		f    simproto.CtlFields
	}{
		{"unknown type", simproto.CtlFields{ClientID: slot, Type: 99}},
		{"error type", simproto.CtlFields{ClientID: slot, Type: simproto.CtlError}},
		{"slot not ours", simproto.CtlFields{ClientID: slot + 1, Type: simproto.CtlGetGUID}},
		{"slot out of range", simproto.CtlFields{ClientID: 1 << 20, Type: simproto.CtlGetGUID}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			before := r.srv.Stats().BadMessages
			assert.Equal(t, simproto.CtlError, raw.ctlRT(t, tt.f).Type)
			assert.Equal(t, before+1, r.srv.Stats().BadMessages)
		})
	}
	// Messages of the wrong size or magic are not answered: the next
	// answer is to the next good message.
	raw.send(t, []byte{1, 2, 3})
	junk := simproto.AppendCtl(nil, &simproto.CtlFields{ClientID: slot, Type: simproto.CtlGetGUID})
	junk[0] = 0
	raw.send(t, junk)
	assert.Equal(t, simproto.CtlGetPKeys, q(simproto.CtlGetPKeys).Type)
	st := r.srv.Stats()
	assert.Equal(t, uint64(6), st.BadMessages)
	assert.Equal(t, uint64(4), st.CtlErrors)

	// A MAD datagram of the wrong size is dropped and counted.
	out := simproto.Addr(simproto.OutName(r.base, slot))
	_, err := raw.data.WriteToUnix(make([]byte, 100), out)
	require.NoError(t, err)
	waitFor(t, "the bad datagram", func() bool { return r.srv.Stats().BadMessages == 7 })

	// Disconnect, then the slot is no longer ours.
	assert.Equal(t, simproto.CtlDisconnect, q(simproto.CtlDisconnect).Type)
	assert.Equal(t, simproto.CtlError, q(simproto.CtlGetGUID).Type)
}

// Clients that died without a Disconnect give their slots up when slots
// are short.
func TestDeadClients(t *testing.T) {
	r := newRig(t, attach.Config{MaxClients: 2})
	first := newRawClient(t, r.base)
	_, typ := first.connect(t, true)
	require.Equal(t, simproto.CtlConnect, typ)
	live := r.dial(t, simclient.Config{})
	third := newRawClient(t, r.base)
	_, typ = third.connect(t, false)
	assert.Equal(t, simproto.CtlError, typ, "all slots taken")

	first.close() // killed: no Disconnect
	waitFor(t, "the first client to be found dead and its slot freed", func() bool {
		_, typ = third.connect(t, true) // wants the SM role the dead one held too
		return typ == simproto.CtlConnect
	})
	st := r.srv.Stats()
	assert.Equal(t, uint64(1), st.Dead)
	assert.Equal(t, 2, st.Clients)
	_, err := live.Info()
	assert.NoError(t, err)
}

func TestNotAttached(t *testing.T) {
	s, err := attach.New(attach.Config{Name: uniqueBase()})
	require.NoError(t, err)
	require.NoError(t, s.Start())
	defer s.Close()
	raw := newRawClient(t, s.Stats().Name)
	_, typ := raw.connect(t, false)
	assert.Equal(t, simproto.CtlError, typ)
	s.DeliverMAD(1, agent.Outbound{MAD: make([]byte, mad.MADSize)})
	st := s.Stats()
	assert.Equal(t, uint64(1), st.Refused)
	assert.Equal(t, uint64(1), st.Drops["not_attached"])
	assert.ErrorIs(t, s.Start(), attach.ErrStarted)
}

func TestNameInUse(t *testing.T) {
	r := newRig(t, attach.Config{})
	s, err := attach.New(attach.Config{Name: r.base})
	require.NoError(t, err)
	err = s.Start()
	assert.Error(t, err)
	assert.Contains(t, fmt.Sprint(err), r.base)
}

// madsOutReaches waits until the server has counted n MADs written.
func madsOutReaches(t *testing.T, r *rig, n uint64) {
	t.Helper()
	require.Eventually(t, func() bool { return r.srv.Stats().MADsOut >= n }, 5*time.Second, time.Millisecond,
		"MADsOut = %d, want %d", r.srv.Stats().MADsOut, n)
}
