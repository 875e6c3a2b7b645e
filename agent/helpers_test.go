package agent_test

import (
	"encoding/binary"
	"testing"
	"time"

	"ibfab/agent"
	"ibfab/internal/clock"
	"ibfab/memfabric"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// node is one agent under test with its fakes.
type node struct {
	a     *agent.Agent
	ports *memfabric.Ports
	ctrs  *memfabric.Counters
	clk   *clock.Manual
	sent  *[]agent.Outbound // what the agent gave its Sender
}

const (
	swGUID = 0x02fab0_0000000100
	caGUID = 0x02fab0_0000000200
)

// newNode returns an agent of type typ with n ports, all cabled and in
// Init, adjusted by opts.
func newNode(t testing.TB, typ mad.NodeType, n uint8, opts ...func(*agent.Config)) *node {
	t.Helper()
	nd := &node{
		ports: memfabric.NewPorts(n),
		ctrs:  memfabric.NewCounters(n),
		clk:   clock.NewManual(time.Unix(0, 0)),
		sent:  new([]agent.Outbound),
	}
	nd.ports.RecordCalls()
	guid := uint64(swGUID)
	if typ == mad.NodeTypeCA {
		guid = caGUID
	}
	cfg := agent.Config{
		Type: typ, NumPorts: n, NodeGUID: guid, Description: "node under test",
		Ports: nd.ports, Counters: nd.ctrs,
		Clock:  nd.clk,
		Sender: agent.SenderFunc(func(o agent.Outbound) { *nd.sent = append(*nd.sent, o) }),
	}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatalf("agent.New(%+v): %v", cfg, err)
	}
	t.Cleanup(a.Close)
	nd.a = a
	for p := uint8(1); p <= n; p++ {
		nd.setLink(p, mad.PortStateInit)
	}
	if typ == mad.NodeTypeSwitch {
		// Route LID 1, the requester of the tests' LID-routed MADs, out of
		// port 1, so that responses find their way.
		top := min(cfg.LinearFDBCap-1, 63)
		if cfg.LinearFDBCap == 0 {
			top = 63
		}
		nd.local(t, mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{LinearFDBTop: top}))
		var lft mad.LinearForwardingTableFields
		for i := range lft.Ports {
			lft.Ports[i] = mad.LFTNoPort
		}
		lft.Ports[1] = 1
		nd.local(t, mad.MethodSet, mad.AttrLinearFwdTbl, 0, mad.AppendLinearForwardingTable(nil, &lft))
	}
	return nd
}

// local sends a directed-route SMP of hop count 0 from the SM at the
// node's management port (port 0 on a switch, 1 on a CA) and returns the
// response the node's SMA gives it.
func (nd *node) local(t testing.TB, m mad.Method, attr mad.AttrID, mod uint32, data []byte) mad.DRSMP {
	t.Helper()
	b, err := mad.AppendDRRequest(nil, &mad.DRRequest{Method: m, TransactionID: 0x77, AttrID: attr, AttrModifier: mod, Data: data})
	if err != nil {
		t.Fatalf("AppendDRRequest: %v", err)
	}
	port := uint8(1)
	if nd.a.Type() == mad.NodeTypeSwitch {
		port = 0
	}
	o := one(t, nd.a.Send(agent.Request{Port: port, MAD: b}))
	r := mad.DRSMP(o.MAD)
	if !o.Local || !r.Direction() || r.HopPointer() != 0 {
		t.Fatalf("Send(local %v %v): got %+v, D %v hop pointer %d, want a Local response", m, attr, o, r.Direction(), r.HopPointer())
	}
	if st := r.Status(); st != mad.StatusOK {
		t.Fatalf("Send(local %v %v): status %v", m, attr, st)
	}
	return r
}

// setLink sets port's logical state (physically up unless Down) and tells
// the agent.
func (nd *node) setLink(p uint8, s mad.PortState) {
	phys := mad.PhysStateLinkUp
	if s == mad.PortStateDown {
		phys = mad.PhysStatePolling
	}
	nd.ports.SetLink(p, agent.LinkState{State: s, Phys: phys, Width: mad.LinkWidth4X, Speed: mad.LinkSpeedSDR})
	nd.a.PortStateChanged(p)
}

// smp builds a LID-routed SMP.
func smp(m mad.Method, attr mad.AttrID, mod uint32, data []byte) []byte {
	f := mad.SMPFields{Method: m, TransactionID: 0x1234, AttrID: attr, AttrModifier: mod}
	copy(f.Data[:], data)
	return mad.AppendSMP(nil, &f)
}

// withMKey sets the M_Key of SMP b (either format) and returns b.
func withMKey(b []byte, key uint64) []byte {
	binary.BigEndian.PutUint64(b[24:], key)
	return b
}

// pma builds a PMA MAD.
func pma(m mad.Method, attr mad.AttrID, data []byte) []byte {
	f := mad.PMAFields{Method: m, TransactionID: 0x5678, AttrID: attr}
	copy(f.Data[:], data)
	return mad.AppendPMA(nil, &f)
}

// lidSMP is the Inbound of a LID-routed SMP arriving on port 1 for the
// permissive DLID.
func lidSMP(b []byte) agent.Inbound {
	return agent.Inbound{Port: 1, SLID: 1, DLID: mad.PermissiveLID, DstQP: wire.QP0, MAD: b}
}

// gmp is the Inbound of a GMP on port 1 in the default partition.
func gmp(b []byte) agent.Inbound {
	return agent.Inbound{Port: 1, SLID: 1, DLID: mad.PermissiveLID, SrcQP: 1, DstQP: wire.QP1,
		PKey: mad.DefaultPKey, MAD: b}
}

// one returns the single Outbound of outs.
func one(t testing.TB, outs []agent.Outbound) agent.Outbound {
	t.Helper()
	if len(outs) != 1 {
		t.Fatalf("got %d outbounds, want 1: %+v", len(outs), outs)
	}
	return outs[0]
}

// do sends b to nd on port 1 as a LID-routed SMP and returns the response.
func (nd *node) do(t testing.TB, b []byte) mad.SMP {
	t.Helper()
	o := one(t, nd.a.HandleMAD(lidSMP(b)))
	return mad.SMP(o.MAD)
}

// status returns the status of a response MAD.
func status(b []byte) mad.Status { return mad.MAD(b).Status() }

// portInfo reads port p's PortInfo through the agent.
func (nd *node) portInfo(t testing.TB, p uint8) mad.PortInfoFields {
	t.Helper()
	r := nd.do(t, smp(mad.MethodGet, mad.AttrPortInfo, uint32(p), nil))
	if st := status(r); st != mad.StatusOK {
		t.Fatalf("Get(PortInfo %d): status %v", p, st)
	}
	return mad.PortInfo(r.Data()).Fields()
}

// setPortInfo sends Set(PortInfo) of port p with the fields f and returns
// the response.
func (nd *node) setPortInfo(t testing.TB, p uint8, f mad.PortInfoFields) mad.SMP {
	t.Helper()
	return nd.do(t, smp(mad.MethodSet, mad.AttrPortInfo, uint32(p), mad.AppendPortInfo(nil, &f)))
}

// forSet turns PortInfo read by a Get into a Set that changes nothing:
// the state fields of a Set say "no change" with 0.
func forSet(pi mad.PortInfoFields) mad.PortInfoFields {
	pi.PortState, pi.PortPhysicalState = mad.PortStateNoChange, mad.PhysStateNoChange
	return pi
}
