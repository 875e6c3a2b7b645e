package hca_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ibfab/agent"
	"ibfab/hca"
	"ibfab/link"
	"ibfab/port"
	"ibfab/wire"
	"ibfab/wire/mad"
)

// programCC sets h's port 1 congestion control: sl reacts with
// increase inc and recovers every timer units; the table's entry i is
// IPD i packet times, up to limit.
func programCC(t *testing.T, h *hca.HCA, sl uint8, timer uint16, inc uint8, limit uint16) {
	t.Helper()
	var s mad.CACongestionSettingFields
	s.PortControl, s.ControlMap = 1, 1<<sl
	s.Entries[sl] = mad.CACongestionEntry{CCTITimer: timer, CCTIIncrease: inc}
	var tb mad.CongestionControlTableFields
	tb.CCTILimit = limit
	for i := range tb.Entries {
		tb.Entries[i] = mad.CCTEntry(0, uint16(i))
	}
	for _, m := range []struct {
		attr mad.AttrID
		data []byte
	}{
		{mad.AttrCACongestionSetting, mad.AppendCACongestionSetting(nil, &s)},
		{mad.AttrCongestionControlTable, mad.AppendCongestionControlTable(nil, &tb)},
	} {
		f := mad.CCMADFields{Method: mad.MethodSet, TransactionID: 7, AttrID: m.attr}
		copy(f.Data[:], m.data)
		outs := h.Agent().HandleMAD(agent.Inbound{Port: 1, SLID: 9, DLID: h.LID(1), SrcQP: 1, DstQP: 1,
			PKey: mad.DefaultPKey, MAD: mad.AppendCCMAD(nil, &f)})
		require.Len(t, outs, 1)
		require.Equal(t, mad.Status(0), mad.MAD(outs[0].MAD).Status(), "CC Set of %v", m.attr)
	}
	got := h.Agent().CCCASettings(1)
	require.Equal(t, timer, got.SL[sl].CCTITimer)
	require.Equal(t, limit, got.Limit)
}

// marker stands for a congested switch between a and b: it sets FECN on
// the data packets a sends on the SLs it is told and records the CNPs b
// sends back.
type marker struct {
	mu     sync.Mutex
	sls    map[uint8]bool
	marked map[uint16]int // by DLID
	cnps   [][]byte
}

func newMarker(p *pair, sls ...uint8) *marker {
	m := &marker{sls: map[uint8]bool{}, marked: map[uint16]int{}}
	for _, sl := range sls {
		m.sls[sl] = true
	}
	p.ea.SetMutate(func(k link.Kind, b []byte) bool {
		if k != link.KindData || wire.LRH(b).LNH() != wire.LNHLocal {
			return false
		}
		bth := wire.BTH(b[wire.LRHSize:])
		m.mu.Lock()
		defer m.mu.Unlock()
		if bth.OpCode().IsUD() && bth.DestQP() == hca.DataQP && m.sls[wire.LRH(b).SL()] {
			bth.SetFECN(true)
			_ = wire.SealVCRC(b)
			m.marked[wire.LRH(b).DLID()]++
		}
		return false
	})
	p.eb.SetMutate(func(k link.Kind, b []byte) bool {
		if k == link.KindData && len(b) > wire.LRHSize && wire.BTH(b[wire.LRHSize:]).OpCode() == wire.CNP {
			m.mu.Lock()
			m.cnps = append(m.cnps, slices.Clone(b))
			m.mu.Unlock()
		}
		return false
	})
	return m
}

// TestCNPAnswersFECN: b answers every FECN-marked data packet with a CNP
// back to a: DLID a's LID, SLID the DLID the packet came to (an alias
// too), the same SL and P_Key, DestQP a's data QP, BECN set, CRCs valid.
// Unmarked packets get none. a's CCA raises its CCTI for the destination
// and paces the flow there, which shows at the source.
func TestCNPAnswersFECN(t *testing.T) {
	p := flowPair(t, 0)
	programCC(t, p.a, 1, 0xffff, 1, 10) // a timer far longer than the test
	m := newMarker(p, 1)
	rate := p.a.Port(1).Rate()
	for _, fc := range []hca.FlowConfig{
		{ID: 1, DLID: 2, SL: 1, Rate: rate / 4},
		{ID: 2, DLID: 3, SL: 1, Rate: rate / 8, Payload: 256}, // an alias of b's (b takes every DLID)
		{ID: 3, DLID: 2, SL: 2, Rate: rate / 8},               // not marked
	} {
		_, err := p.a.StartFlow(1, fc)
		require.NoError(t, err)
	}
	// Best effort to the throttled destination: without a source queue,
	// what the IPD holds back counts as backlogged.
	_, err := p.a.StartTraffic(1, hca.TrafficConfig{SL: 1, GeneratorConfig: hca.GeneratorConfig{Load: 10, Payload: 256, Dests: []uint16{2}, Seed: 1}})
	require.NoError(t, err)
	p.runFor(t, 2*time.Millisecond)
	gen, _ := p.a.StopTraffic(1)
	sent := map[uint32]hca.FlowStats{}
	for _, id := range []uint32{1, 2, 3} {
		s, err := p.a.StopFlow(id)
		require.NoError(t, err)
		sent[id] = s
	}
	p.runFor(t, 200*time.Microsecond)

	m.mu.Lock()
	defer m.mu.Unlock()
	marked := m.marked[2] + m.marked[3]
	require.Positive(t, m.marked[2])
	require.Positive(t, m.marked[3])
	require.Len(t, m.cnps, marked, "one CNP per marked packet")
	bySLID := map[uint16]int{}
	for _, b := range m.cnps {
		require.NoError(t, wire.Verify(b))
		c, err := wire.ParseCNP(b)
		require.NoError(t, err)
		assert.Equal(t, wire.CNPPacket{VL: c.VL, SL: 1, DLID: 1, SLID: c.SLID, PKey: uint16(mad.DefaultPKey), DestQP: hca.DataQP, BECN: true}, c)
		bySLID[c.SLID]++
	}
	assert.Equal(t, map[uint16]int{2: m.marked[2], 3: m.marked[3]}, bySLID, "SLID: the DLID each marked packet came to")

	bs, as := p.b.CCAStatus(), p.a.CCAStatus()
	assert.Equal(t, uint64(marked), bs.CNPSent)
	assert.Equal(t, uint64(marked), as.CNPReceived)
	assert.Equal(t, uint64(marked), as.BECNReceived)
	assert.Zero(t, as.CNPSent)
	assert.Equal(t, hca.CCIBA, as.Mode)
	require.Len(t, as.Dests, 2)
	for i, dlid := range []uint16{2, 3} {
		d := as.Dests[i]
		assert.Equal(t, dlid, d.DLID)
		assert.Equal(t, uint8(1), d.SL)
		assert.Equal(t, uint16(min(m.marked[dlid], 10)), d.CCTI)
		assert.Positive(t, d.IPDNs)
	}
	assert.Positive(t, as.Paced, "a's flows waited for their IPD")
	assert.Positive(t, as.Throttled, "the generator's arrivals held back")
	assert.Positive(t, gen.Backlogged)
	assert.Less(t, sent[1].Sent, sent[1].Offered, "the throttled flow keeps packets at the source")
	assert.Equal(t, sent[3].Offered, sent[3].Sent, "the unmarked flow is not throttled")
	for _, h := range []*hca.HCA{p.a, p.b} {
		ps := h.Stats().Ports[0]
		assert.Zero(t, ps.Drops[port.DropMalformed.String()], "CNPs are not malformed")
		require.NotNil(t, ps.CC)
	}
	assert.Equal(t, uint64(marked), p.b.Stats().Ports[0].CC.CNPSent)
}

// TestCNPNotAnswered: a CNP, even one with FECN, is never answered, and
// an HCA in mode off counts notifications without acting.
func TestCNPNotAnswered(t *testing.T) {
	p := flowPair(t, 0)
	programCC(t, p.a, 1, 0xffff, 1, 10)
	newMarker(p, 1)
	require.NoError(t, p.a.SetCCA(hca.CCOff, 0))
	_, err := p.a.StartFlow(1, hca.FlowConfig{ID: 1, DLID: 2, SL: 1, Rate: p.a.Port(1).Rate() / 4})
	require.NoError(t, err)
	p.runFor(t, time.Millisecond)
	s, _ := p.a.StopFlow(1)
	p.runFor(t, 100*time.Microsecond)
	// A CNP with FECN (a switch must not mark one, but): a must not
	// answer it.
	before := p.a.CCAStatus().CNPReceived
	require.NoError(t, p.b.Port(1).Send(cnpPacket(2, 1)))
	p.runFor(t, 100*time.Microsecond)
	require.Equal(t, before+1, p.a.CCAStatus().CNPReceived)

	as, bs := p.a.CCAStatus(), p.b.CCAStatus()
	assert.Equal(t, hca.CCOff, as.Mode)
	assert.Positive(t, as.CNPReceived)
	assert.Equal(t, as.CNPReceived, as.Ignored)
	assert.Empty(t, as.Dests)
	assert.Zero(t, as.CNPSent, "a answered a CNP")
	assert.Equal(t, s.Offered, s.Sent, "mode off does not throttle")
	assert.Equal(t, bs.CNPSent, s.Sent, "every packet was marked and answered")
}

// cnpPacket is a CNP from slid to dlid on SL 1, marked with FECN.
func cnpPacket(slid, dlid uint16) *port.Packet {
	pkt := port.AllocPacket(wire.CNPSize)
	pkt.Bytes = wire.AppendCNP(pkt.Bytes[:0], &wire.CNPFields{SL: 1, DLID: dlid, SLID: slid, PKey: 0xffff, DestQP: hca.DataQP})
	wire.BTH(pkt.Bytes[wire.LRHSize:]).SetFECN(true)
	_ = wire.SealVCRC(pkt.Bytes)
	return pkt
}
