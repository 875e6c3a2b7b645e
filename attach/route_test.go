package attach_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/attach"
	"ibfab/madport"
	"ibfab/simclient"
	"ibfab/simproto"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// recorder is b's MAD client in these tests: it keeps what reaches b.
type recorder struct {
	mu  sync.Mutex
	got []agent.Outbound
}

func (r *recorder) DeliverMAD(_ uint8, o agent.Outbound) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, o)
}

// next waits for the next MAD that reached b and returns it.
func (r *recorder) next(t *testing.T) agent.Outbound {
	t.Helper()
	var o agent.Outbound
	waitFor(t, "a MAD at b", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.got) == 0 {
			return false
		}
		o, r.got = r.got[0], r.got[1:]
		return true
	})
	return o
}

// Vendor classes the tests use: ibping's and Mellanox's vendstat class.
const (
	classPing     mad.MgmtClass = 0x32
	classVendstat mad.MgmtClass = 0x0a
)

func gmpMAD(class mad.MgmtClass, meth mad.Method, tid uint64) []byte {
	return mad.AppendMAD(nil, &mad.MADFields{BaseVersion: 1, MgmtClass: class, ClassVersion: 1,
		Method: meth, TransactionID: tid, AttrID: 0x10}, nil)
}

// rawMAD sends a MAD datagram from raw, connected in slot.
func (r *rig) rawMAD(t *testing.T, raw *rawClient, slot uint32, f *simproto.RequestFields) {
	t.Helper()
	_, err := raw.data.WriteToUnix(simproto.AppendRequest(nil, f), simproto.Addr(simproto.OutName(r.base, slot)))
	require.NoError(t, err)
}

// rawRecv returns the next datagram raw is given.
func rawRecv(t *testing.T, raw *rawClient) simproto.Request {
	t.Helper()
	require.NoError(t, raw.data.SetReadDeadline(time.Now().Add(waitLimit)))
	buf := make([]byte, 2*simproto.RequestSize)
	n, _, err := raw.data.ReadFromUnix(buf)
	require.NoError(t, err)
	require.True(t, simproto.Request(buf[:n]).IsValid())
	return simproto.Request(buf[:n])
}

// What goes on the wire is the client's MAD up to the length it gave and
// zeros after it: libumad2sim leaves its stack in the rest.
func TestSendZeroPadsPastLength(t *testing.T) {
	rec := &recorder{}
	r := newRigWith(t, attach.Config{}, rec)
	r.activate(t)
	raw := newRawClient(t, r.base)
	slot, typ := raw.connect(t, false)
	require.Equal(t, simproto.CtlConnect, typ)
	for _, n := range []uint64{24, 40, 255, 256, 300} {
		m := gmpMAD(classVendstat, mad.MethodGet, 0x77)
		for i := mad.MADHeaderSize; i < len(m); i++ {
			m[i] = 0xa5
		}
		r.rawMAD(t, raw, slot, &simproto.RequestFields{DLID: lidB, DestQP: wire.QP1, SrcQP: wire.QP1, Length: n, MAD: m})
		got := rec.next(t).MAD
		// Bits 63-48 of a request's TID carry the client's slot, which is
		// not always 0: a client of activate may still hold slot 0.
		copy(got[8:10], m[8:10])
		keep := int(min(n, mad.MADSize))
		assert.Equal(t, m[:keep], got[:keep], "length %d: the client's bytes", n)
		assert.Equal(t, make([]byte, mad.MADSize-keep), got[keep:], "length %d: zeros after them", n)
	}
	// Shorter than a MAD header: nothing to send.
	before := r.srv.Stats().BadMessages
	r.rawMAD(t, raw, slot, &simproto.RequestFields{DLID: lidB, DestQP: wire.QP1, Length: 10, MAD: gmpMAD(classVendstat, mad.MethodGet, 1)})
	waitFor(t, "the short MAD counted", func() bool { return r.srv.Stats().BadMessages == before+1 })
}

// An RMPP-active DATA MAD is sent as a one-segment transfer, its header
// completed as the kernel's RMPP sender does; the receiving attach point
// reports the transfer's length from it, where it reports 256 for
// anything else.
func TestRMPPOneSegment(t *testing.T) {
	rec := &recorder{}
	r := newRigWith(t, attach.Config{}, rec)
	r.activate(t)
	raw := newRawClient(t, r.base)
	slot, _ := raw.connect(t, false)

	// The client asks b's "SA" for a table.
	const tid = 0x0000_0001_0000_0042
	query := mad.AppendMAD(nil, &mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: 2,
		Method: mad.MethodGetTable, TransactionID: tid, AttrID: 0x20}, nil)
	r.rawMAD(t, raw, slot, &simproto.RequestFields{DLID: lidB, DestQP: wire.QP1, SrcQP: wire.QP1, Length: 56, MAD: query})
	q := rec.next(t)
	assert.Equal(t, mad.DefaultPKey, q.PKey)

	// b answers with three 8-byte records (80 bytes) through an attach
	// point of its own, as OpenSM's SA does: the RMPP Active flag, the
	// rest of the RMPP header as the request had it.
	srvB, err := attach.New(attach.Config{Name: uniqueBase(), Clock: r.clk})
	require.NoError(t, err)
	require.NoError(t, srvB.Attach(r.b))
	require.NoError(t, srvB.Start())
	t.Cleanup(func() { srvB.Close() })
	rawB := newRawClient(t, srvB.Stats().Name)
	slotB, _ := rawB.connect(t, true)
	resp := append([]byte(nil), q.MAD...)
	mad.MAD(resp).SetMethod(mad.MethodGetTable | mad.MethodResponse)
	resp[26] = 1 // Active
	for i := 56; i < 80; i++ {
		resp[i] = byte(i)
	}
	for i := 80; i < len(resp); i++ {
		resp[i] = 0xee // stale
	}
	_, err = rawB.data.WriteToUnix(simproto.AppendRequest(nil, &simproto.RequestFields{DLID: q.SLID, DestQP: q.SrcQP, SrcQP: wire.QP1, Length: 80, MAD: resp}),
		simproto.Addr(simproto.OutName(srvB.Stats().Name, slotB)))
	require.NoError(t, err)

	got := rawRecv(t, raw)
	assert.Equal(t, uint64(80), got.Length(), "the length the client is told")
	m := got.MAD()
	assert.Equal(t, uint64(tid), mad.MAD(m).TransactionID())
	assert.Equal(t, []byte{1, 1, 7, 0}, m[24:28], "RMPP version, type DATA, Last|First|Active, status")
	assert.Equal(t, uint32(1), binary.BigEndian.Uint32(m[28:]), "segment number")
	assert.Equal(t, uint32(44), binary.BigEndian.Uint32(m[32:]), "payload length")
	assert.Equal(t, resp[56:80], m[56:80])
	assert.Equal(t, make([]byte, mad.MADSize-80), m[80:], "no stale bytes")

	// A MAD that is not an RMPP transfer is a MAD's worth.
	r.rawMAD(t, raw, slot, &simproto.RequestFields{DLID: lidB, DestQP: wire.QP1, SrcQP: wire.QP1, Length: 56,
		MAD: gmpMAD(classVendstat, mad.MethodGet, 0x43)})
	q = rec.next(t)
	resp = append([]byte(nil), q.MAD...)
	mad.MAD(resp).SetMethod(mad.MethodGetResp)
	require.NoError(t, r.b.SendMAD(agent.Request{Port: 1, DLID: q.SLID, DestQP: q.SrcQP, MAD: resp}))
	assert.Equal(t, uint64(mad.MADSize), rawRecv(t, raw).Length())
}

// A client's GMPs carry the P_Key of index 0 of its port's table: what
// the kernel sends with pkey_index 0 (libumad2sim cannot pass another).
func TestGMPPKeyIsTableEntry0(t *testing.T) {
	rec := &recorder{}
	r := newRigWith(t, attach.Config{}, rec)
	r.activate(t)
	c := r.dial(t, simclient.Config{})
	send := func(tid uint64) mad.PKey {
		require.NoError(t, c.Send(madGMP(gmpMAD(classVendstat, mad.MethodGet, tid))))
		return rec.next(t).PKey
	}
	assert.Equal(t, mad.DefaultPKey, send(1), "the table as the HCA starts")

	// The SM makes entry 0 the limited default partition.
	var tbl mad.PKeyTableFields
	tbl.PKeys[0], tbl.PKeys[1] = 0x7fff, 0xffff
	resp := call(t, c, drMAD(t, mad.MethodSet, 2, mad.AttrPKeyTable, 0, nil, mad.AppendPKeyTable(nil, &tbl)))
	require.Equal(t, mad.StatusOK, mad.DRSMP(resp.Data).Status())
	assert.Equal(t, mad.PKey(0x7fff), send(3), "entry 0, not 0xffff")
}

func madGMP(b []byte) madport.MAD {
	return madport.MAD{LID: lidB, QP: wire.QP1, Data: b}
}

// Requests go to the client that takes their class (route.go): the SM
// for its classes, else the last client that sent one of the class, else
// the one client that has sent nothing; with none, a Get or Set is
// answered with "unsupported method/attribute".
func TestRequestRouting(t *testing.T) {
	type clientSpec struct {
		sm   bool
		sent mad.MgmtClass // a class it sent a MAD of first; 0 for none
	}
	tests := []struct {
		name    string
		clients []clientSpec
		class   mad.MgmtClass
		method  mad.Method
		want    int // index of the client that gets it; -1: answered; -2: dropped
	}{
		{"SA request to the SM", []clientSpec{{}, {sm: true}}, mad.ClassSubnAdm, mad.MethodGetTable, 1},
		{"SA Get without an SM", []clientSpec{{}}, mad.ClassSubnAdm, mad.MethodGet, -1},
		{"SA GetTable without an SM", []clientSpec{{}}, mad.ClassSubnAdm, mad.MethodGetTable, -2},
		{"SA Report to its subscriber", []clientSpec{{sm: true, sent: mad.ClassSubnAdm}, {sent: mad.ClassSubnAdm}}, mad.ClassSubnAdm, mad.MethodReport, 1},
		{"ping to the idle server, not the SM", []clientSpec{{sm: true}, {}}, classPing, mad.MethodGet, 1},
		{"ping to the server that answered before", []clientSpec{{}, {sent: classPing}, {}}, classPing, mad.MethodGet, 1},
		{"ping with two idle clients", []clientSpec{{}, {}}, classPing, mad.MethodGet, -1},
		{"ping with only other classes' clients", []clientSpec{{sent: mad.ClassPerfMgt}}, classPing, mad.MethodGet, -1},
		{"vendstat with no client", nil, classVendstat, mad.MethodGet, -1},
		{"vendor Set with no client", nil, classVendstat, mad.MethodSet, -1},
		{"vendor Send with no client", nil, classVendstat, mad.MethodSend, -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			r := newRigWith(t, attach.Config{}, rec)
			r.activate(t)
			var cs []*simclient.Client
			for i, spec := range tt.clients {
				c := r.dial(t, simclient.Config{IsSM: spec.sm})
				if spec.sent != 0 {
					// A response: nothing waits for it, it just leaves.
					require.NoError(t, c.Send(madGMP(gmpMAD(spec.sent, mad.MethodGetResp, uint64(100+i)))))
					rec.next(t)
				}
				cs = append(cs, c)
			}
			const tid = 0x0102_0304_0506_0708
			req := gmpMAD(tt.class, tt.method, tid)
			require.NoError(t, r.b.SendMAD(agent.Request{Port: 1, DLID: lidA, DestQP: wire.QP1, MAD: req}))
			switch tt.want {
			case -1:
				ans := mad.MAD(rec.next(t).MAD)
				assert.Equal(t, mad.MethodGetResp, ans.Method())
				assert.Equal(t, mad.StatusMethodAttrUnsupported, ans.Status())
				assert.Equal(t, uint64(tid), ans.TransactionID())
				assert.Equal(t, uint64(1), r.srv.Stats().Unmatched)
			case -2:
				waitFor(t, "the drop", func() bool { return r.srv.Stats().DropTotal == 1 })
			default:
				got := mad.MAD(recv(t, cs[tt.want]).Data)
				assert.Equal(t, uint64(tid), got.TransactionID())
				assert.Equal(t, tt.method, got.Method())
			}
			for i, c := range cs {
				if i != tt.want {
					assert.Zero(t, c.Stats().Received, "client %d", i)
				}
			}
		})
	}
}

// A client's request to its own node is not handed back to it as a
// request (it would take it for the answer, same TID): with no other
// taker it is answered with a status, as the kernel answers a client that
// registered the class only to ask.
func TestRequestToOwnNode(t *testing.T) {
	rec := &recorder{}
	r := newRigWith(t, attach.Config{}, rec)
	r.activate(t)
	c := r.dial(t, simclient.Config{})
	req := madport.MAD{LID: lidA, QP: wire.QP1, Data: gmpMAD(classVendstat, mad.MethodGet, 0x99)}
	got := mad.MAD(call(t, c, req).Data)
	assert.Equal(t, mad.MethodGetResp, got.Method())
	assert.Equal(t, mad.StatusMethodAttrUnsupported, got.Status())
	assert.Equal(t, uint64(1), r.srv.Stats().Unmatched)
}

// A Trap waits for its TrapRepress like any request for its response:
// the repress, its TID's agent bits rewritten by the far libumad2sim as
// for any request, reaches the SM that sent the trap with the TID it
// sent; a trap nobody represses is handed back timed out, so OpenSM's
// QP0 window does not fill.
func TestTrapRepress(t *testing.T) {
	rec := &recorder{}
	r := newRigWith(t, attach.Config{}, rec)
	r.activate(t)
	sm := r.dial(t, simclient.Config{IsSM: true})
	trap := func(tid uint64) madport.MAD {
		f := mad.SMPFields{Method: mad.MethodTrap, TransactionID: tid, AttrID: mad.AttrNotice}
		return madport.MAD{LID: lidB, Data: mad.AppendSMP(nil, &f)}
	}
	const tid = 0x0000_0003_0000_1234
	require.NoError(t, sm.Send(trap(tid)))
	got := rec.next(t)
	require.Equal(t, mad.MethodTrap, mad.MAD(got.MAD).Method())
	assert.Equal(t, 1, r.srv.Stats().Outstanding)

	repress := append([]byte(nil), got.MAD...)
	h := mad.MAD(repress)
	h.SetMethod(mad.MethodTrapRepress)
	h.SetTransactionID(h.TransactionID()&^(0xffff<<32) | 0x0009<<32) // the far agent's number
	require.NoError(t, r.b.SendMAD(agent.Request{Port: 1, DLID: lidA, MAD: repress}))
	back := mad.MAD(recv(t, sm).Data)
	assert.Equal(t, mad.MethodTrapRepress, back.Method())
	assert.Equal(t, uint64(tid), back.TransactionID())
	assert.Zero(t, r.srv.Stats().Outstanding)

	require.NoError(t, sm.Send(trap(tid+1)))
	rec.next(t)
	r.settle()
	r.clk.Advance(attach.DefaultTimeout)
	m := recv(t, sm)
	assert.Equal(t, simproto.StatusTimeout, m.Status)
	assert.Equal(t, uint64(tid+1), mad.MAD(m.Data).TransactionID())
}

// A client doing RMPP itself (ibsm's SA with package rmpp) keeps the
// headers it writes and gets the ACKs of its transfers; a client that
// never did (OpenSM through libumad2sim) is not given an ACK, which it
// would take for a new request.
func TestUserRMPP(t *testing.T) {
	for _, user := range []bool{true, false} {
		t.Run(fmt.Sprintf("user=%v", user), func(t *testing.T) {
			rec := &recorder{}
			r := newRigWith(t, attach.Config{}, rec)
			r.activate(t)
			raw := newRawClient(t, r.base)
			slot, _ := raw.connect(t, true) // the SM: SubnAdm requests go to it

			const tid = 0x77
			seg := mad.AppendMAD(nil, &mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: 2,
				Method: mad.MethodGetTable | mad.MethodResponse, TransactionID: tid, AttrID: 0x11}, make([]byte, mad.MADDataSize))
			if user {
				// Segment 1 of 3, its header written by the client.
				mad.RMPP(seg).Encode(&mad.RMPPFields{Version: 1, Type: mad.RMPPTypeData,
					Flags: mad.RMPPFlagActive | mad.RMPPFlagFirst, Data1: 1, Data2: 3 * 220})
			} else {
				seg[26] = 1 // Active alone, as OpenSM writes it
			}
			want := append([]byte(nil), seg[24:36]...)
			r.rawMAD(t, raw, slot, &simproto.RequestFields{DLID: lidB, DestQP: wire.QP1, SrcQP: wire.QP1, Length: mad.MADSize, MAD: seg})
			q := rec.next(t)
			if user {
				assert.Equal(t, want, q.MAD[24:36], "the client's RMPP header, untouched")
			} else {
				assert.Equal(t, []byte{1, 1, 7, 0}, q.MAD[24:28], "sealed as one segment")
			}

			// b ACKs segment 1: a GetTable with RMPP type ACK.
			ack := append([]byte(nil), q.MAD...)
			mad.MAD(ack).SetMethod(mad.MethodGetTable)
			mad.RMPP(ack).Encode(&mad.RMPPFields{Version: 1, Type: mad.RMPPTypeAck, Flags: mad.RMPPFlagActive, Data1: 1, Data2: 3})
			before := r.srv.Stats().Drops[attach.DropRMPPControl.String()]
			require.NoError(t, r.b.SendMAD(agent.Request{Port: 1, DLID: q.SLID, DestQP: q.SrcQP, MAD: ack}))
			if user {
				got := rawRecv(t, raw)
				assert.Equal(t, mad.RMPPTypeAck, mad.RMPP(got.MAD()).Type())
				assert.Equal(t, uint64(tid), mad.MAD(got.MAD()).TransactionID())
			} else {
				waitFor(t, "the ACK dropped", func() bool {
					return r.srv.Stats().Drops[attach.DropRMPPControl.String()] == before+1
				})
			}

			// A DATA numbered 0: a client doing RMPP itself sends it as
			// written (a raw agent's bad header, which the receiver must
			// abort), a libumad2sim client's is a whole transfer, sealed.
			bad := append([]byte(nil), seg...)
			mad.MAD(bad).SetTransactionID(tid + 1)
			mad.RMPP(bad).Encode(&mad.RMPPFields{Version: 1, Type: mad.RMPPTypeData, Flags: mad.RMPPFlagActive})
			want = append([]byte(nil), bad[24:36]...)
			r.rawMAD(t, raw, slot, &simproto.RequestFields{DLID: lidB, DestQP: wire.QP1, SrcQP: wire.QP1, Length: mad.MADSize, MAD: bad})
			q = rec.next(t)
			if user {
				assert.Equal(t, want, q.MAD[24:36], "the client's bad header, untouched")
			} else {
				assert.Equal(t, []byte{1, 1, 7, 0}, q.MAD[24:28], "sealed as one segment")
			}
		})
	}
}
