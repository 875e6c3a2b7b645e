package umadep

import (
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/internal/fifo"
	"ibfab/umadproto"
	"ibfab/wire/mad"
)

// nullPort is an HCA that takes every MAD and has one port.
type nullPort struct{}

func (nullPort) SendMAD(agent.Request) error { return nil }
func (nullPort) NumPorts() uint8             { return 1 }
func (nullPort) PKeys(uint8) []mad.PKey      { return []mad.PKey{0xffff, 0x8001} }
func (nullPort) LocalGet(uint8, mad.AttrID, uint32) ([]byte, error) {
	return make([]byte, 64), nil
}
func (nullPort) SetIsSM(uint8, bool) error { return nil }

// FuzzEndpoint feeds arbitrary client datagrams (fromClient) and arbitrary
// received MADs (Claim) to an endpoint with agents of every kind
// registered, RMPP ones included, and runs its timers: nothing may panic.
func FuzzEndpoint(f *testing.F) {
	seg := make([]byte, 256)
	seg[0], seg[1], seg[2], seg[3] = 1, 3, 2, 0x12
	seg[24], seg[25], seg[26] = 1, 1, 3
	seg[31] = 1
	f.Add(seg, umadproto.AppendUserMAD(nil, &umadproto.UserMAD{AgentID: 1, TimeoutMS: 10, Retries: 1}, umadproto.HeaderSize))
	f.Add([]byte{1, 0x32, 1, 1}, []byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, claim, dgram []byte) {
		clk := clock.NewManual(time.Unix(0, 0))
		s := New(Config{Name: "fuzz-unused", Clock: clk})
		defer s.Close()
		s.Attach(nullPort{})
		uc := &conn{token: 1, port: 1, out: fifo.New[[]byte](16), done: make(chan struct{})}
		uc.hdrSize.Store(umadproto.HeaderSize)
		for _, r := range []umadproto.Registration{
			{QPN: 1, MgmtClass: 3, ClassVersion: 2, RMPPVersion: 1, MethodMask: [4]uint32{^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0)}},
			{QPN: 1, MgmtClass: 0x32, ClassVersion: 1, OUI: 0x001405, MethodMask: [4]uint32{^uint32(0)}},
			{QPN: 0, MgmtClass: 0x81, ClassVersion: 1, MethodMask: [4]uint32{^uint32(0)}},
			{QPN: 1},
		} {
			if _, errno := s.Register(uc, r); errno != 0 {
				t.Fatalf("register %+v: %v", r, errno)
			}
		}
		// The client's datagram, with both header sizes.
		s.fromClient(uc, dgram)
		uc.hdrSize.Store(umadproto.HeaderSizeOld)
		s.fromClient(uc, dgram)
		// The received MAD, as given and as a response to one of the
		// agents' requests, padded to a MAD.
		m := append(append([]byte(nil), claim...), make([]byte, max(0, mad.MADSize-len(claim)))...)
		s.Claim(1, agent.Outbound{Local: true, Port: 1, SLID: 3, SrcQP: 1, MAD: append([]byte(nil), m...)})
		if len(m) >= 16 {
			m[8], m[9], m[10], m[11] = 0x80, 0, 0, 1 // agent 1's TID bits
			s.Claim(1, agent.Outbound{Local: true, Port: 1, SLID: 3, SrcQP: 1, MAD: append([]byte(nil), m...)})
		}
		for range 5 {
			clk.Advance(time.Second)
		}
		s.Claim(1, agent.Outbound{Local: true, Port: 1, MAD: claim}) // short or odd, as given
	})
}
