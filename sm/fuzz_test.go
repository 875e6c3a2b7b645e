package sm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/madport"
	"ibfab/madport/memport"
	"ibfab/memfabric"
	"ibfab/sm"
	"ibfab/topologies"
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
		s, err := sm.New(p, sm.Config{TxnConfig: sm.TxnConfig{Retries: -1}})
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

// garblePort passes MADs to and from a fake fabric, replacing the
// attribute data of the answers garble picks with data, as a node with a
// strange agent would answer: SMPs, LID-routed or directed, and the
// adaptive routing class.
type garblePort struct {
	*memport.Port
	data   []byte
	garble func(h mad.MAD) bool
	on     bool
}

func (p *garblePort) Recv(ctx context.Context) (madport.MAD, error) {
	m, err := p.Port.Recv(ctx)
	if err != nil || !p.on || len(m.Data) < mad.MADSize {
		return m, err
	}
	h := mad.MAD(m.Data)
	if !h.Method().IsResponse() || !p.garble(h) {
		return m, nil
	}
	var d []byte
	switch h.MgmtClass() {
	case mad.ClassSubnDirected:
		d = mad.DRSMP(m.Data).Data()
	case mad.ClassVendorAR:
		d = mad.ARMAD(m.Data).Data()
	default:
		d = mad.SMP(m.Data).Data()
	}
	clear(d)
	copy(d, p.data)
	return m, nil
}

// FuzzAssimilateAnswers brings the thesis network up, kills a switch,
// and assimilates the change while the answers of some attributes carry
// fuzzed data: the assimilation must end, with or without a result,
// without panicking.
func FuzzAssimilateAnswers(f *testing.F) {
	si := mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{LinearFDBCap: 1024, PortStateChange: true})
	pi := mad.AppendPortInfo(nil, &mad.PortInfoFields{PortState: mad.PortStateInit, LID: 3})
	ni := mad.AppendNodeInfo(nil, &mad.NodeInfoFields{NodeType: mad.NodeTypeSwitch, NumPorts: 4, NodeGUID: 0x77, LocalPortNum: 1})
	f.Add(si, uint8(1), false)
	f.Add(pi, uint8(2), true)
	f.Add(ni, uint8(4), true)
	f.Add([]byte{}, uint8(7), false)
	f.Fuzz(func(t *testing.T, data []byte, which uint8, trap bool) {
		fab, err := memfabric.NewFabric(topologies.Thesis8())
		if err != nil {
			t.Fatal(err)
		}
		defer fab.Close()
		mp, err := memport.New(fab, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		p := &garblePort{Port: mp, data: data, garble: func(h mad.MAD) bool {
			a := h.AttrID()
			return (which&1 != 0 && a == mad.AttrSwitchInfo) || (which&2 != 0 && a == mad.AttrPortInfo) ||
				(which&4 != 0 && a == mad.AttrNodeInfo)
		}}
		s, err := sm.New(p, sm.Config{
			RoutingConfig: sm.RoutingConfig{Routing: "updn-fera"},
			TxnConfig:     sm.TxnConfig{Retries: -1},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if res, err := s.Sweep(ctx); err != nil || !res.SubnetUp {
			t.Fatalf("bring-up: %v %+v", err, res)
		}
		if err := mp.PowerOff("sw2"); err != nil {
			t.Fatal(err)
		}
		trigger := sm.TriggerSweep
		if trap {
			trigger = sm.TriggerTrap
			if err := s.Serve(ctx, sm.DefaultSweepInterval); err != nil {
				t.Fatal(err)
			}
		}
		p.on = true
		res, err := s.Assimilate(ctx, trigger)
		if errors.Is(err, sm.ErrNoChange) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !res.SubnetUp && res.Reason == "" {
			t.Fatalf("no reason for a subnet not up: %+v", res)
		}
	})
}

// FuzzTrap feeds a running SM unsolicited MADs: traps (128, 144),
// requests (SMInfo Get and Set), junk. Nothing may panic, and a trap
// naming no switch must not start a change.
func FuzzTrap(f *testing.F) {
	n := mad.Trap128(2)
	tr := mad.SMPFields{Method: mad.MethodTrap, AttrID: mad.AttrNotice}
	mad.Notice(tr.Data[:]).Encode(&n)
	f.Add(mad.AppendSMP(nil, &tr))
	n = mad.Trap128(200)
	mad.Notice(tr.Data[:]).Encode(&n)
	f.Add(mad.AppendSMP(nil, &tr))
	n = mad.Trap144(mad.NodeTypeCA, 5, mad.PortCapIsSM, mad.Trap144SMPriority)
	mad.Notice(tr.Data[:]).Encode(&n)
	f.Add(mad.AppendSMP(nil, &tr))
	for _, method := range []mad.Method{mad.MethodGet, mad.MethodSet} {
		smi := mad.SMPFields{Method: method, AttrID: mad.AttrSMInfo, AttrModifier: mad.SMInfoHandover}
		mad.SMInfo(smi.Data[:]).Encode(&mad.SMInfoFields{GUID: 9, Priority: 15, SMState: mad.SMStateMaster})
		f.Add(mad.AppendSMP(nil, &smi))
	}
	f.Add(make([]byte, 256))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, m []byte) {
		fab, err := memfabric.NewFabric(topologies.Thesis8())
		if err != nil {
			t.Fatal(err)
		}
		defer fab.Close()
		mp, err := memport.New(fab, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := sm.New(mp, sm.Config{AssimilationConfig: sm.AssimilationConfig{Detect: sm.DetectTrap}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if res, err := s.Sweep(ctx); err != nil || !res.SubnetUp {
			t.Fatalf("bring-up: %v %+v", err, res)
		}
		for range 3 {
			if err := s.Serve(ctx, sm.DefaultSweepInterval); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Assimilate(ctx, sm.TriggerTrap); err != nil && !errors.Is(err, sm.ErrNoChange) {
			t.Fatal(err)
		}
		// The MAD arrives at the SM's port as if from the fabric.
		fab.Inject(1, agent.Outbound{Port: 3, DLID: 1, SLID: 2, VL: 15, MAD: append(m, make([]byte, max(0, 256-len(m)))...)})
		if err := s.Serve(ctx, time.Second); err != nil {
			t.Fatal(err)
		}
		res, err := s.Assimilate(ctx, sm.TriggerTrap)
		if sets := smaSet(m); errors.Is(err, sm.ErrNoChange) || sets && err == nil {
			return
		}
		t.Fatalf("a change from nothing: %v %+v", err, res)
	})
}

// smaSet reports whether m is an SMP Set for the SM's node's SMA rather
// than the SM (any attribute but SMInfo): the SMA takes it (the fabric
// has no M_Key here), as silicon's does, and what it changes (a port set
// Down, a new LID) is a change the SM rightly finds (the fuzzer found a
// Set(PortInfo) that took the SM's own link down).
func smaSet(m []byte) bool {
	if len(m) < mad.MADHeaderSize {
		return false
	}
	h := mad.MAD(m)
	smp := h.MgmtClass() == mad.ClassSubnLID || h.MgmtClass() == mad.ClassSubnDirected
	return smp && h.Method() == mad.MethodSet && h.AttrID() != mad.AttrSMInfo
}
