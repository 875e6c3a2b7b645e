package softumad_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/madport"
	"ibfab/madport/softumad"
	"ibfab/madport/umad"
	"ibfab/umadep"
	"ibfab/wire/mad"
)

// loopPort is an HCA whose every SMP sent is answered at once with a
// GetResp through the endpoint, as a neighbour's SMA would answer it.
type loopPort struct {
	ep   *umadep.Server
	issm chan bool
}

func (p *loopPort) SendMAD(r agent.Request) error {
	m := append([]byte(nil), r.MAD...)
	h := mad.MAD(m)
	if h.IsResponse() {
		return nil
	}
	h.SetMethod(mad.MethodGetResp)
	go p.ep.Claim(r.Port, agent.Outbound{Local: true, Port: r.Port, SLID: 5, MAD: m})
	return nil
}
func (p *loopPort) NumPorts() uint8        { return 1 }
func (p *loopPort) PKeys(uint8) []mad.PKey { return []mad.PKey{0xffff} }
func (p *loopPort) LocalGet(port uint8, attr mad.AttrID, _ uint32) ([]byte, error) {
	if attr == mad.AttrNodeInfo {
		return mad.AppendNodeInfo(nil, &mad.NodeInfoFields{NodeGUID: 0x10, PortGUID: 0x11, NumPorts: 1}), nil
	}
	pi := mad.PortInfo(make([]byte, 64))
	pi.SetLID(3)
	pi.SetPortState(mad.PortStateActive)
	return pi, nil
}
func (p *loopPort) SetIsSM(_ uint8, on bool) error { p.issm <- on; return nil }

// TestUMADPortOnEndpoint opens package umad's Port on an endpoint and
// does an SMP round trip and the SM capability through it.
func TestUMADPortOnEndpoint(t *testing.T) {
	name := fmt.Sprintf("ibfab-softumad-test-%d", os.Getpid())
	ep := umadep.New(umadep.Config{Name: name})
	lp := &loopPort{ep: ep, issm: make(chan bool, 4)}
	ep.Attach(lp)
	if err := ep.Start(); err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	p, err := umad.Open(umad.Config{Files: softumad.Files(name), CA: softumad.CA, Port: 1, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.HeaderSize() != umad.HeaderSize {
		t.Errorf("header size %d, want the pkey_index one", p.HeaderSize())
	}
	info, err := p.Info()
	if err != nil || info.LID != 3 || info.PortGUID != 0x11 || info.NodeGUID != 0x10 {
		t.Fatalf("Info = %+v, %v", info, err)
	}
	smp := make([]byte, mad.MADSize)
	h := mad.MAD(smp)
	h.SetBaseVersion(1)
	h.SetMgmtClass(mad.ClassSubnDirected)
	h.SetClassVersion(1)
	h.SetMethod(mad.MethodGet)
	h.SetTransactionID(0xfeed_0000_1234)
	h.SetAttrID(mad.AttrNodeInfo)
	if err := p.Send(madport.MAD{LID: 0xffff, Data: smp}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := p.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := mad.MAD(got.Data); r.Method() != mad.MethodGetResp || r.TransactionID() != 0xfeed_0000_1234 || got.Status != 0 {
		t.Fatalf("got method %v TID %#x status %d", r.Method(), r.TransactionID(), got.Status)
	}
	if err := p.SetIsSM(true); err != nil {
		t.Fatal(err)
	}
	if on := <-lp.issm; !on {
		t.Fatal("IsSM not set")
	}
	if err := p.SetIsSM(false); err != nil {
		t.Fatal(err)
	}
	if on := <-lp.issm; on {
		t.Fatal("IsSM not cleared")
	}
}
