package attach

// Fuzz targets for what clients send the server, below the sockets: the
// control handler and the MAD path, on a soft HCA back to back with
// another over a pipe, on a manual clock.

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/hca"
	"ibfab/internal/clock"
	"ibfab/internal/fifo"
	"ibfab/link"
	"ibfab/link/pipe"
	"ibfab/simproto"
	"ibfab/wire/mad"
)

// fuzzBed is shared by the iterations of one fuzz target: building HCAs
// per input would drown the fuzzer.
type fuzzBed struct {
	h    *hca.HCA
	peer *hca.HCA               // the HCA at the other end of h's link
	srv  atomic.Pointer[Server] // the server of the current input gets the HCA's MADs
	sock *net.UnixConn          // the slot socket of the fake client
	from rawAddr
}

var (
	bedOnce sync.Once
	bed     *fuzzBed
	bedErr  error
)

func fuzzBedFor(t testing.TB) *fuzzBed {
	bedOnce.Do(func() {
		b := &fuzzBed{}
		clk := clock.NewManual(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		ea, eb := pipe.NewPairWith(pipe.Options{QueueLen: 1 << 16})
		mc := hca.MADClientFunc(func(port uint8, o agent.Outbound) {
			if s := b.srv.Load(); s != nil {
				s.DeliverMAD(port, o)
			}
		})
		if b.h, bedErr = hca.New(hca.Config{NodeGUID: 0xa00, Ports: []link.Endpoint{ea}, Clock: clk, MADClient: mc}); bedErr != nil {
			return
		}
		if b.peer, bedErr = hca.New(hca.Config{NodeGUID: 0xb00, Ports: []link.Endpoint{eb}, Clock: clk}); bedErr != nil {
			return
		}
		// A bound socket for the fake client's slot: nothing listens at
		// the client's address, so connecting to it fails, as for a
		// client that died.
		if b.sock, bedErr = net.ListenUnixgram("unixgram", simproto.Addr(fmt.Sprintf("ibf-t%d-fuzz:out0", os.Getpid()))); bedErr != nil {
			return
		}
		b.from.n = 12
		bed = b
	})
	if bedErr != nil {
		t.Fatalf("fuzz bed: %v", bedErr)
	}
	return bed
}

// closeFuzzBed closes the bed, if a test made one, when the package's
// tests are done, before the leak check.
func closeFuzzBed() {
	if bed == nil {
		return
	}
	bed.h.Close()
	bed.peer.Close()
	bed.sock.Close()
}

// server returns a fresh server on the bed's HCA with one client in slot 0.
func (b *fuzzBed) server(t testing.TB) (*Server, *client) {
	s, err := New(Config{Name: fmt.Sprintf("ibf-t%d-fuzz", os.Getpid()), Retries: 1, QueueLen: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Attach(b.h); err != nil {
		t.Fatal(err)
	}
	sl := &slot{n: 0, conn: b.sock}
	c := &client{slot: sl, id: 1, ctl: b.from.key(), port: 1, out: fifo.New[[]byte](4), done: make(chan struct{})}
	sl.cl = c
	s.slots = []*slot{sl}
	b.srv.Store(s)
	return s, c
}

// FuzzServerCtl feeds arbitrary control messages to the server's handler:
// it must answer each with its own type or CtlError, and never panic.
func FuzzServerCtl(f *testing.F) {
	var ci [simproto.CtlDataSize]byte
	(&simproto.ClientInfo{ID: 77, IsSM: true, NodeID: "x"}).Encode(ci[:])
	f.Add(uint8(simproto.CtlConnect), uint8(0), ci[:])
	for typ := simproto.CtlDisconnect; typ <= simproto.CtlGetPKeys; typ++ {
		f.Add(uint8(typ), uint8(0), []byte{1})
	}
	f.Add(uint8(simproto.CtlSetIsSM), uint8(0), []byte{1, 0, 0, 0})
	f.Add(uint8(simproto.CtlGetPortInfo), uint8(0), []byte{200})
	f.Add(uint8(200), uint8(1), []byte{})
	f.Fuzz(func(t *testing.T, typ, id uint8, data []byte) {
		b := fuzzBedFor(t)
		s, _ := b.server(t)
		defer b.srv.Store(nil)
		req := simproto.CtlFields{ClientID: uint32(id), Type: simproto.CtlType(typ), Len: uint32(len(data))}
		copy(req.Data[:], data)
		for range 2 { // again, after whatever the first did
			resp := s.handleCtl(&req, &b.from)
			if resp.Type != req.Type && resp.Type != simproto.CtlError {
				t.Fatalf("%v answered with %v", req.Type, resp.Type)
			}
		}
		b.h.Agent().SetIsSM(1, false)
	})
}

// FuzzServerMAD feeds arbitrary MAD datagrams from a client through the
// server into the HCA, lets every outstanding request time out, and checks
// that nothing panics and nothing stays outstanding.
func FuzzServerMAD(f *testing.F) {
	for _, path := range [][]uint8{nil, {0, 1}, {0, 1, 1}} {
		m, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, TransactionID: 1, AttrID: mad.AttrNodeInfo, Path: path})
		f.Add(simproto.AppendRequest(nil, &simproto.RequestFields{DLID: 0xffff, SLID: 0xffff, MAD: m}))
	}
	pma := make([]byte, mad.MADSize)
	mad.MAD(pma).Encode(&mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassPerfMgt, ClassVersion: 1, Method: mad.MethodGet, AttrID: 0x12})
	f.Add(simproto.AppendRequest(nil, &simproto.RequestFields{DLID: 0, DestQP: 1, SrcQP: 1, MAD: pma}))
	f.Fuzz(func(t *testing.T, dgram []byte) {
		if !simproto.Request(dgram).IsValid() {
			return // serveSlot counts and drops these
		}
		b := fuzzBedFor(t)
		s, c := b.server(t)
		defer b.srv.Store(nil)
		s.fromClient(c, dgram)
		s.mu.Lock()
		var ps []*pending
		for _, p := range s.mu.pending {
			ps = append(ps, p)
		}
		s.mu.Unlock()
		for _, p := range ps {
			for range s.cfg.Retries + 1 {
				s.expire(p)
			}
		}
		if st := s.Stats(); st.Outstanding != 0 {
			t.Fatalf("%d requests still outstanding", st.Outstanding)
		}
		s.disconnect(c, "done")
	})
}

// FuzzRMPPLength checks the RMPP header rules on arbitrary MADs: the
// length a receiver is told is always a MAD's worth or less and at least
// the two headers, and an RMPP-active MAD sealed as one segment of n bytes is
// reported as n bytes (36 at least: the headers).
func FuzzRMPPLength(f *testing.F) {
	sa := make([]byte, mad.MADSize)
	mad.MAD(sa).Encode(&mad.MADFields{BaseVersion: 1, MgmtClass: mad.ClassSubnAdm, ClassVersion: 2, Method: mad.MethodGetTable | mad.MethodResponse})
	sa[rmppFlagsOff] = rmppFlagActive // as OpenSM sends it
	f.Add(sa, uint16(80))
	f.Add(sa, uint16(0))
	f.Add(make([]byte, 40), uint16(300))
	f.Fuzz(func(t *testing.T, m []byte, n uint16) {
		if got := receivedLength(m); got < rmppHeaderEnd || got > mad.MADSize {
			t.Fatalf("receivedLength = %d", got)
		}
		if len(m) != mad.MADSize || !rmppMAD(m).isActive() {
			return
		}
		length := int(min(max(n, mad.MADHeaderSize), mad.MADSize))
		rmppMAD(m).sealOneSegment(length)
		if got, want := receivedLength(m), max(length, rmppHeaderEnd); got != want {
			t.Fatalf("sealed as %d bytes, received as %d", length, got)
		}
	})
}

// FuzzDeliverMAD hands arbitrary MADs to the server as if the HCA had
// received them: responses, requests of every class, with and without a
// client that takes them. Nothing may panic.
func FuzzDeliverMAD(f *testing.F) {
	for _, class := range []mad.MgmtClass{mad.ClassSubnAdm, mad.ClassSubnLID, 0x32, 0x0a} {
		for _, meth := range []mad.Method{mad.MethodGet, mad.MethodGetResp, mad.MethodTrapRepress, mad.MethodReport} {
			m := make([]byte, mad.MADSize)
			mad.MAD(m).Encode(&mad.MADFields{BaseVersion: 1, MgmtClass: class, ClassVersion: 1, Method: meth})
			f.Add(m, false)
		}
	}
	f.Fuzz(func(t *testing.T, m []byte, sent bool) {
		b := fuzzBedFor(t)
		s, c := b.server(t)
		defer b.srv.Store(nil)
		if sent && len(m) >= mad.MADHeaderSize {
			s.mu.Lock()
			s.noteSentLocked(c, mad.MAD(m))
			s.mu.Unlock()
		}
		s.DeliverMAD(1, agent.Outbound{Local: true, Port: 1, SLID: 1, DLID: 2, SrcQP: 1, DestQP: 1, PKey: mad.DefaultPKey, MAD: bytes.Clone(m)})
		s.disconnect(c, "done")
	})
}
