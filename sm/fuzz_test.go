package sm_test

import (
	"context"
	"testing"
	"time"

	"ibfab/internal/clock"
	"ibfab/madport"
	"ibfab/sm"
	"ibfab/wire/mad"
)

// echoPort answers every request it is sent with the same attribute data
// and status, as a fabric of identical, strange devices would.
type echoPort struct {
	clk    *clock.Manual
	data   []byte
	status mad.Status
	queue  []madport.MAD
	sent   int
}

func (p *echoPort) Send(m madport.MAD) error {
	p.sent++
	h := mad.MAD(m.Data)
	if h.Method().IsResponse() || p.sent > 5000 {
		return nil
	}
	r := append([]byte(nil), m.Data...)
	mad.MAD(r).SetMethod(mad.MethodGetResp)
	if h.MgmtClass() == mad.ClassSubnDirected {
		d := mad.DRSMP(r)
		d.SetDirection(true)
		d.SetStatus(p.status)
		copy(d.Data(), p.data)
	} else {
		mad.MAD(r).SetStatus(p.status)
		copy(mad.SMP(r).Data(), p.data)
	}
	p.queue = append(p.queue, madport.MAD{LID: m.LID, Data: r})
	return nil
}

func (p *echoPort) Recv(ctx context.Context) (madport.MAD, error) {
	for len(p.queue) == 0 && ctx.Err() == nil && p.clk.AdvanceToNext() {
	}
	if len(p.queue) > 0 {
		m := p.queue[0]
		p.queue = p.queue[1:]
		return m, nil
	}
	return madport.MAD{}, ctx.Err()
}

func (p *echoPort) Info() (madport.Info, error) { return madport.Info{PortGUID: 1, PortNum: 1}, nil }
func (p *echoPort) SetIsSM(bool) error          { return nil }
func (p *echoPort) Close() error                { return nil }
func (p *echoPort) Clock() clock.Clock          { return p.clk }

// FuzzSweepAnswers sweeps a "fabric" whose every answer carries the same
// fuzzed attribute data: discovery meets one strange device again and
// again. The sweep must end, with a result, without panicking.
func FuzzSweepAnswers(f *testing.F) {
	ni := mad.AppendNodeInfo(nil, &mad.NodeInfoFields{BaseVersion: 1, ClassVersion: 1, NodeType: mad.NodeTypeSwitch,
		NumPorts: 4, NodeGUID: 0x10, PortGUID: 0x10, LocalPortNum: 2})
	f.Add(ni, uint16(0))
	ca := mad.AppendNodeInfo(nil, &mad.NodeInfoFields{NodeType: mad.NodeTypeCA, NumPorts: 2, NodeGUID: 0x20,
		PortGUID: 0x21, LocalPortNum: 1})
	f.Add(ca, uint16(0))
	f.Add(ni, uint16(mad.StatusInvalidField))
	f.Add([]byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, status uint16) {
		p := &echoPort{clk: clock.NewManual(time.Unix(0, 0)), data: data, status: mad.Status(status)}
		s, err := sm.New(p, sm.Config{Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Sweep(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if res == nil || (!res.SubnetUp && res.Reason == "") {
			t.Fatalf("no reason for a subnet not up: %+v", res)
		}
	})
}
