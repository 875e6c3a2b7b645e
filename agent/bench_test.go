package agent_test

import (
	"testing"

	"ibfab/wire/mad"
)

// benchSwitch returns a 36-port switch with a full LFT block 0.
func benchSwitch(b *testing.B) *node {
	nd := newNode(b, mad.NodeTypeSwitch, 36)
	var lft mad.LinearForwardingTableFields
	for i := range lft.Ports {
		lft.Ports[i] = uint8(i%36 + 1)
	}
	for blk := range uint32(4) {
		nd.do(b, smp(mad.MethodSet, mad.AttrLinearFwdTbl, blk, mad.AppendLinearForwardingTable(nil, &lft)))
	}
	nd.do(b, smp(mad.MethodSet, mad.AttrSwitchInfo, 0, mad.AppendSwitchInfo(nil, &mad.SwitchInfoFields{LinearFDBTop: 255})))
	return nd
}

// BenchmarkOutPort is the data plane's per-packet LFT lookup.
func BenchmarkOutPort(b *testing.B) {
	nd := benchSwitch(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok := nd.a.OutPort(uint16(i&255) | 1); !ok {
			b.Fatal("unroutable")
		}
	}
}

// BenchmarkVLFor is the data plane's per-packet SLtoVL lookup.
func BenchmarkVLFor(b *testing.B) {
	nd := benchSwitch(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		nd.a.VLFor(uint8(i%36+1), uint8((i+5)%36+1), uint8(i&15))
	}
}

// BenchmarkPKeyMatch is an HCA's receive-side partition check.
func BenchmarkPKeyMatch(b *testing.B) {
	nd := benchSwitch(b)
	b.ReportAllocs()
	for b.Loop() {
		if !nd.a.PKeyMatch(0, mad.DefaultPKey) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkForwardDR is one directed-route hop through a switch's SMI.
func BenchmarkForwardDR(b *testing.B) {
	nd := benchSwitch(b)
	req, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrNodeInfo, Path: []uint8{0, 1, 7, 3}})
	mad.DRSMP(req).SetHopPointer(1)
	in := lidDR(req)
	b.ReportAllocs()
	for b.Loop() {
		if len(nd.a.HandleMAD(in)) != 1 {
			b.Fatal("not forwarded")
		}
	}
}

// BenchmarkGetPortInfo is a directed-route PortInfo Get answered by a
// switch.
func BenchmarkGetPortInfo(b *testing.B) {
	nd := benchSwitch(b)
	req, _ := mad.AppendDRRequest(nil, &mad.DRRequest{Method: mad.MethodGet, AttrID: mad.AttrPortInfo, AttrModifier: 3, Path: []uint8{0, 1}})
	mad.DRSMP(req).SetHopPointer(1)
	in := lidDR(req)
	b.ReportAllocs()
	for b.Loop() {
		if len(nd.a.HandleMAD(in)) != 1 {
			b.Fatal("not answered")
		}
	}
}
